"""Counts words (fields grouping on word); on every tick tuple, and at most every 0.2 s while
tuples arrive, writes the counts to counts-<task>.json in the working directory."""
import json
import os
import time
from collections import Counter

from pystorm import Bolt


class CountBolt(Bolt):
    def initialize(self, storm_conf, context):
        self.counts = Counter()
        self.path = "counts-%d.json" % context["taskid"]
        self.last_write = 0.0
        self.dirty = True
        self.write()

    def write(self):
        self.last_write = time.time()
        if not self.dirty:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.counts, f)
        os.replace(tmp, self.path)
        self.dirty = False

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] += 1
        self.dirty = True
        self.emit([word, self.counts[word]])
        if time.time() - self.last_write > 0.2:
            self.write()

    def process_tick(self, tup):
        self.write()


if __name__ == "__main__":
    CountBolt().run()
