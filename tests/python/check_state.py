#!/usr/bin/env python3
"""Parse a topology's state nodes with Heron's own protobuf modules (heronpy.proto).

Usage: check_state.py <state-root> <topology-name>

Reads <root>/{topologies,packingplans,executionstate,pplans,tmanagers}/<name> (and
statefulcheckpoints/<name> when it exists), parses each with the matching heronpy message, checks that every required field is present, that no field is
unknown to Heron, and that the nodes agree with each other. Prints a JSON summary on success;
exits 1 naming the first problem otherwise.
"""
import json
import os
import sys

os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

from heronpy.proto import (  # noqa: E402
    ckptmgr_pb2,
    execution_state_pb2,
    packing_plan_pb2,
    physical_plan_pb2,
    tmanager_pb2,
    topology_pb2,
)

NODES = [
    ("topologies", topology_pb2.Topology),
    ("packingplans", packing_plan_pb2.PackingPlan),
    ("executionstate", execution_state_pb2.ExecutionState),
    ("pplans", physical_plan_pb2.PhysicalPlan),
    ("tmanagers", tmanager_pb2.TManagerLocation),
]


def fail(msg):
    print("check_state: " + msg, file=sys.stderr)
    sys.exit(1)


def unknown_fields(msg, path="") -> list:
    """Paths of fields Heron's definitions do not know, anywhere in the message."""
    found = []
    if len(msg.UnknownFields()) > 0:
        found.append(path or msg.DESCRIPTOR.full_name)
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        items = value if field.label == field.LABEL_REPEATED else [value]
        for i, item in enumerate(items):
            found += unknown_fields(item, "%s.%s[%d]" % (path, field.name, i))
    return found


def main():
    if len(sys.argv) != 3:
        fail("usage: check_state.py <state-root> <topology-name>")
    root, name = sys.argv[1], sys.argv[2]
    parsed = {}
    for directory, cls in NODES:
        path = os.path.join(root, directory, name)
        if not os.path.exists(path):
            fail("missing node %s" % path)
        with open(path, "rb") as f:
            data = f.read()
        msg = cls()
        msg.ParseFromString(data)
        if not msg.IsInitialized():
            fail("%s lacks required fields: %s" % (path, msg.FindInitializationErrors()))
        unknown = unknown_fields(msg)
        if unknown:
            fail("%s has fields Heron does not know: %s" % (path, unknown))
        parsed[directory] = msg

    checkpoints = None
    path = os.path.join(root, "statefulcheckpoints", name)
    if os.path.exists(path):
        msg = ckptmgr_pb2.StatefulConsistentCheckpoints()
        with open(path, "rb") as f:
            msg.ParseFromString(f.read())
        if not msg.IsInitialized():
            fail("%s lacks required fields: %s" % (path, msg.FindInitializationErrors()))
        unknown = unknown_fields(msg)
        if unknown:
            fail("%s has fields Heron does not know: %s" % (path, unknown))
        if len(msg.consistent_checkpoints) > 5:
            fail("%s keeps %d checkpoints, more than 5" % (path, len(msg.consistent_checkpoints)))
        checkpoints = [c.checkpoint_id for c in msg.consistent_checkpoints]

    topo = parsed["topologies"]
    plan = parsed["packingplans"]
    state = parsed["executionstate"]
    pplan = parsed["pplans"]
    loc = parsed["tmanagers"]
    if topo.name != name:
        fail("topology name %r != %r" % (topo.name, name))
    for what, tid in [("executionstate", state.topology_id), ("tmanagers", loc.topology_id),
                      ("pplans", pplan.topology.id)]:
        if tid != topo.id:
            fail("%s topology id %r != %r" % (what, tid, topo.id))
    planned = sorted(ip.task_id for cp in plan.container_plans for ip in cp.instance_plans)
    running = sorted(i.info.task_id for i in pplan.instances)
    if planned != running:
        fail("packing plan tasks %s != physical plan tasks %s" % (planned, running))
    stmgrs = sorted(s.id for s in pplan.stmgrs)
    expected = sorted("stmgr-%d" % cp.id for cp in plan.container_plans)
    if stmgrs != expected:
        fail("physical plan stmgrs %s != %s" % (stmgrs, expected))
    if loc.server_port <= 0:
        fail("tmanager location has no server port")
    summary = {
        "topology": topo.name,
        "id": topo.id,
        "spouts": [s.comp.name for s in topo.spouts],
        "bolts": [b.comp.name for b in topo.bolts],
        "containers": len(plan.container_plans),
        "instances": len(pplan.instances),
        "stmgrs": stmgrs,
        "cluster": state.cluster,
        "role": state.role,
        "tmanager": "%s:%d" % (loc.host, loc.server_port),
        "consistent_checkpoints": checkpoints,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
