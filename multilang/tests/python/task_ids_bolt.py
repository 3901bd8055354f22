"""Emits [word, task ids as JSON text] after asking for the task ids of a first emit."""
import json

from pystorm import Bolt


class TaskIdsBolt(Bolt):
    def process(self, tup):
        tasks = self.emit([tup.values[0], ""], need_task_ids=True)
        self.emit([tup.values[0], json.dumps(sorted(tasks))], stream="answers", need_task_ids=False)


if __name__ == "__main__":
    TaskIdsBolt().run()
