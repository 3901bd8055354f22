#!/usr/bin/env python3
"""Read a topology's nodes from ZooKeeper with kazoo and parse them with heronpy's protos.

Usage: check_zk.py <hosts> <root> <topology>            every node present and valid
       check_zk.py <hosts> <root> <topology> --absent   no node of the topology left

For each of <root>/{topologies,packingplans,executionstate,pplans,tmanagers}/<topology>: the
node parses with Heron's message, has every required field and no unknown one;
tmanagers/<topology> is ephemeral (has an owner session) and the others are persistent. The
nodes must agree with each other (check_state.py's rules). Prints a JSON summary; exits 1
naming the first problem.
"""
import json
import os
import sys

os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kazoo.client import KazooClient  # noqa: E402

from check_state import NODES, fail, unknown_fields  # noqa: E402

ALL_DIRS = ["tmanagers", "topologies", "packingplans", "pplans", "executionstate",
            "schedulers", "statefulcheckpoints", "metricscaches", "locks"]


def main():
    args = sys.argv[1:]
    absent = "--absent" in args
    args = [a for a in args if a != "--absent"]
    if len(args) != 3:
        fail("usage: check_zk.py <hosts> <root> <topology> [--absent]")
    hosts, root, name = args
    zk = KazooClient(hosts=hosts, timeout=20.0)
    zk.start(timeout=20)
    try:
        if absent:
            left = [d for d in ALL_DIRS if zk.exists("%s/%s/%s" % (root, d, name))]
            if left:
                fail("nodes of %s still exist in %s" % (name, left))
            print(json.dumps({"topology": name, "absent": True}))
            return
        parsed, owners = {}, {}
        for directory, cls in NODES:
            path = "%s/%s/%s" % (root, directory, name)
            if not zk.exists(path):
                fail("missing node %s" % path)
            data, stat = zk.get(path)
            msg = cls()
            msg.ParseFromString(data)
            if not msg.IsInitialized():
                fail("%s lacks required fields: %s" % (path, msg.FindInitializationErrors()))
            unknown = unknown_fields(msg)
            if unknown:
                fail("%s has fields Heron does not know: %s" % (path, unknown))
            parsed[directory] = msg
            owners[directory] = stat.ephemeralOwner
        if owners["tmanagers"] == 0:
            fail("tmanagers/%s is not ephemeral" % name)
        persistent_with_owner = [d for d, o in owners.items() if d != "tmanagers" and o != 0]
        if persistent_with_owner:
            fail("nodes %s are ephemeral but should be persistent" % persistent_with_owner)
        topo, plan = parsed["topologies"], parsed["packingplans"]
        pplan, loc = parsed["pplans"], parsed["tmanagers"]
        for what, tid in [("executionstate", parsed["executionstate"].topology_id),
                          ("tmanagers", loc.topology_id), ("pplans", pplan.topology.id)]:
            if tid != topo.id:
                fail("%s topology id %r != %r" % (what, tid, topo.id))
        planned = sorted(ip.task_id for cp in plan.container_plans for ip in cp.instance_plans)
        running = sorted(i.info.task_id for i in pplan.instances)
        if planned != running:
            fail("packing plan tasks %s != physical plan tasks %s" % (planned, running))
        print(json.dumps({
            "topology": topo.name,
            "id": topo.id,
            "instances": len(pplan.instances),
            "components": {c: sum(1 for i in pplan.instances if i.info.component_name == c)
                           for c in sorted({i.info.component_name for i in pplan.instances})},
            "state": pplan.topology.state,
            "tmanager_owner": owners["tmanagers"],
            "tmanager": "%s:%d" % (loc.host, loc.server_port),
            "controller_port": loc.controller_port,
        }))
    finally:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    main()
