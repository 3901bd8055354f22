"""Counts words: emits [word, count] for every input."""
from collections import Counter

from pystorm import Bolt


class CountBolt(Bolt):
    def initialize(self, conf, ctx):
        self.counts = Counter()

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] += 1
        self.emit([word, self.counts[word]])


if __name__ == "__main__":
    CountBolt().run()
