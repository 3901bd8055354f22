"""The bench's pass-through pystorm bolt: emits each tuple's values unchanged (auto-anchored,
auto-acked). Python does as little as pystorm allows: the cost of the multi-lang boundary."""
from pystorm import Bolt


class PassBolt(Bolt):
    def process(self, tup):
        self.emit(tup.values)


if __name__ == "__main__":
    PassBolt().run()
