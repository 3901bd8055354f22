"""A finite sentence spout: this task's share of `wc.sentences` numbered sentences, each
emitted with its number as the message id; failed ids are emitted again. Progress goes to
spout-<task>.json in the working directory: emitted, acked and failed id counts, the most
ids ever in flight at once (emitted, not yet acked or failed: topology.max.spout.pending
bounds it), and whether the spout is active (activate/deactivate commands)."""
import json
import os
import time

from pystorm import Spout

WORDS = ["the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps",
         "doctor", "away", "four", "score", "and", "seven", "years", "ago", "snow", "white"]


def sentence(i):
    """The i-th sentence: five words picked from WORDS by i (tests/multilang.rs counts the same)."""
    return " ".join(WORDS[(i * k + k) % len(WORDS)] for k in range(1, 6))


class SentenceSpout(Spout):
    def initialize(self, storm_conf, context):
        total = int(storm_conf.get("wc.sentences", 1000))
        me = context["taskid"]
        mine = sorted(int(t) for t, c in context["task->component"].items()
                      if c == context["componentid"])
        index, n = mine.index(me), len(mine)
        self.todo = [i for i in range(total) if i % n == index]
        self.todo.reverse()
        self.retry = []
        self.acked = set()
        self.emitted = set()
        self.failed = 0
        self.in_flight = set()
        self.max_in_flight = 0
        self.active = True
        self.path = "spout-%d.json" % me
        self.last_write = 0.0
        self.write(force=True)

    def write(self, force=False):
        now = time.time()
        if not force and now - self.last_write < 0.2:
            return
        self.last_write = now
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"emitted": len(self.emitted), "acked": len(self.acked),
                       "failed": self.failed, "total": len(self.emitted) + len(self.todo),
                       "max_in_flight": self.max_in_flight, "active": self.active}, f)
        os.replace(tmp, self.path)

    def next_tuple(self):
        if self.retry:
            i = self.retry.pop()
        elif self.todo:
            i = self.todo.pop()
        else:
            self.write()
            time.sleep(0.01)
            return
        self.emitted.add(i)
        self.in_flight.add(i)
        self.max_in_flight = max(self.max_in_flight, len(self.in_flight))
        self.emit([sentence(i)], tup_id=i)
        self.write()

    def ack(self, tup_id):
        self.in_flight.discard(tup_id)
        self.acked.add(tup_id)
        self.write(force=len(self.acked) == len(self.emitted) and not self.todo)

    def fail(self, tup_id):
        self.in_flight.discard(tup_id)
        self.failed += 1
        self.retry.append(tup_id)

    def activate(self):
        self.active = True
        self.write(force=True)

    def deactivate(self):
        self.active = False
        self.write(force=True)


if __name__ == "__main__":
    SentenceSpout().run()
