"""streamparse components run with `streamparse_run [-s msgpack] components.<Class>`."""
from streamparse import Bolt


class UpperBolt(Bolt):
    outputs = ["word", "nested"]

    def process(self, tup):
        word = tup.values[0]
        self.emit([word.upper(), {"len": len(word), "chars": list(word)}])
