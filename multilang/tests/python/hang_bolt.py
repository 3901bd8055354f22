"""Echoes its input; sleeps forever on "hang"."""
import time

from pystorm import Bolt


class HangBolt(Bolt):
    def process(self, tup):
        if tup.values[0] == "hang":
            while True:
                time.sleep(60)
        self.emit([tup.values[0]])


if __name__ == "__main__":
    HangBolt().run()
