"""The bench's pystorm split: [sentence, ts] -> one [word, ts] per word."""
from pystorm import Bolt


class SplitBolt(Bolt):
    def process(self, tup):
        sentence, ts = tup.values
        for word in sentence.split():
            self.emit([word, ts])


if __name__ == "__main__":
    SplitBolt().run()
