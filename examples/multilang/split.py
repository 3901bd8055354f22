"""A pystorm split bolt for examples/shell_word_count.rs: one [word] per word of a sentence
(auto-anchored and auto-acked by pystorm)."""
from pystorm import Bolt


class SplitBolt(Bolt):
    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


if __name__ == "__main__":
    SplitBolt().run()
