"""Emits 4 sentences asking for their task ids (as Storm's own storm.py always does), then
reports each answer on stream "acks" as ["tasks", JSON list, "list"] (unreliable)."""
import json

from pystorm import Spout


class TaskIdsSpout(Spout):
    def initialize(self, conf, ctx):
        self.n = 0

    def next_tuple(self):
        if self.n >= 4:
            return
        self.n += 1
        tasks = self.emit(["s%d" % self.n], tup_id=self.n, need_task_ids=True)
        self.emit(["tasks", json.dumps(tasks), "list"], stream="acks", need_task_ids=False)


if __name__ == "__main__":
    TaskIdsSpout().run()
