"""Emits numbered sentences with string ids; reports acks and fails on stream "acks"
as [kind, repr(id), type name] (unreliable)."""
from pystorm import Spout

SENTENCES = ["the cow jumped", "over the moon"]


class StringIdSpout(Spout):
    def initialize(self, conf, ctx):
        self.n = 0

    def next_tuple(self):
        if self.n >= int(self.storm_conf.get("test.sentences", 4)):
            return
        self.n += 1
        self.emit([SENTENCES[self.n % 2]], tup_id="s-%d" % self.n)

    def ack(self, tup_id):
        self.emit(["ack", repr(tup_id), type(tup_id).__name__], stream="acks")

    def fail(self, tup_id):
        self.emit(["fail", repr(tup_id), type(tup_id).__name__], stream="acks")


if __name__ == "__main__":
    StringIdSpout().run()
