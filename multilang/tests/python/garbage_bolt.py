"""Echoes its input; on "garbage" writes a non-JSON message straight to the real stdout."""
import os

from pystorm import Bolt


class GarbageBolt(Bolt):
    def process(self, tup):
        if tup.values[0] == "garbage":
            os.write(1, b"this is not json\nend\n")
            return
        if tup.values[0] == "undeclared":
            self.emit(["x"], stream="nowhere")
            return
        self.emit([tup.values[0]])


if __name__ == "__main__":
    GarbageBolt().run()
