"""Echoes its input; raises on "boom" (pystorm: error, sync, fail, exit 1)."""
from pystorm import Bolt


class RaisingBolt(Bolt):
    def process(self, tup):
        if tup.values[0] == "boom":
            raise ValueError("asked to explode")
        self.emit([tup.values[0]])


if __name__ == "__main__":
    RaisingBolt().run()
