"""Splits sentences into words (auto-anchor, auto-ack)."""
from pystorm import Bolt


class SplitBolt(Bolt):
    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


if __name__ == "__main__":
    SplitBolt().run()
