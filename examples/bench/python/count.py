"""The bench's pystorm count: [word, ts] -> [word, count, ts] (fields grouping on word)."""
from collections import Counter

from pystorm import Bolt


class CountBolt(Bolt):
    def initialize(self, storm_conf, context):
        self.counts = Counter()

    def process(self, tup):
        word, ts = tup.values
        self.counts[word] += 1
        self.emit([word, self.counts[word], ts])


if __name__ == "__main__":
    CountBolt().run()
