"""Splits sentences into words (auto-anchored, auto-acked).

Fault switches for tests/multilang.rs (config keys; each fires once per working directory, a
marker file keeps it from firing again after the restart):
* `wc.boom` true: the first sentence with "moon" in it raises (pystorm reports the error and
  exits);
* `wc.hang` true: the first sentence with "snow" in it hangs the process (no more heartbeat
  replies); `hang.marker` holds the time it started hanging.
Every process writes the time it started to `split-started-<task>-<pid>.txt`; `hang.marker`
holds `<task> <time>`."""
import time

STARTED = time.time()

import os  # noqa: E402

from pystorm import Bolt  # noqa: E402


def flag(conf, key):
    return str(conf.get(key, "false")).lower() == "true"


class SplitBolt(Bolt):
    def initialize(self, storm_conf, context):
        self.boom = flag(storm_conf, "wc.boom")
        self.hang = flag(storm_conf, "wc.hang")
        self.task = context["taskid"]
        with open("split-started-%d-%d.txt" % (self.task, os.getpid()), "w") as f:
            f.write("%.3f" % STARTED)

    def process(self, tup):
        words = tup.values[0].split()
        if self.boom and "moon" in words and not os.path.exists("boom.marker"):
            open("boom.marker", "w").close()
            raise ValueError("boom: split refused a sentence with moon in it")
        if self.hang and "snow" in words and not os.path.exists("hang.marker"):
            with open("hang.marker.tmp", "w") as f:
                f.write("%d %.3f" % (self.task, time.time()))
            os.replace("hang.marker.tmp", "hang.marker")
            while True:
                time.sleep(60)
        for word in words:
            self.emit([word])


if __name__ == "__main__":
    SplitBolt().run()
