#!/usr/bin/env bash
# A private Slurm cluster for the tests: munged (shared, started when not running), one
# slurmctld and emulated slurmd nodes (two by default, n1 and n2) on this machine, in DIR and
# reached through SLURM_CONF=DIR/slurm.conf (no file under /etc/slurm is touched).
#
#   scripts/slurm.sh start DIR   # prints SLURM_CONF=DIR/slurm.conf once both nodes are idle
#   scripts/slurm.sh stop DIR    # stops the daemons started for DIR (munged stays)
#
# Needs root (slurmd runs the job steps as their users) and Debian's slurm-wlm and munge;
# installs them when missing unless SLURM_NO_INSTALL=1. See ../../shared/reference/infra.md §5.
# Other nodes (the multi-host test's, each in a network namespace of its own):
#   SLURM_NODES="na@198.51.100.1@NETNS ..."  name@address[@netns] per node (default
#                                            "n1@127.0.0.1 n2@127.0.0.1"); a node with a netns
#                                            runs its slurmd in /run/netns/NETNS (nsenter: only
#                                            the network is its own, /sys stays mounted)
#   SLURM_CTLD_ADDR=198.51.100.254           the address slurmctld is reached at (127.0.0.1)
set -euo pipefail

cmd="${1:-}"
dir="${2:-}"
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 2
fi

stop() {
  for f in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid; do
    [ -f "$f" ] || continue
    pid="$(cat "$f" 2>/dev/null || true)"
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  for _ in $(seq 50); do
    alive=0
    for f in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid; do
      [ -f "$f" ] || continue
      pid="$(cat "$f" 2>/dev/null || true)"
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && alive=1
    done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for f in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid; do
    [ -f "$f" ] || continue
    pid="$(cat "$f" 2>/dev/null || true)"
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

if [ "$cmd" = stop ]; then
  stop
  exit 0
fi
[ "$cmd" = start ] || { echo "unknown command $cmd" >&2; exit 2; }

if [ "$(id -u)" != 0 ]; then
  echo "scripts/slurm.sh: slurmd must run as root" >&2
  exit 3
fi
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  if [ "${SLURM_NO_INSTALL:-0}" = 1 ]; then
    echo "scripts/slurm.sh: slurm-wlm and munge are not installed" >&2
    exit 3
  fi
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge >&2
fi

# munged: one per machine, shared by every Slurm cluster on it
if ! (munge -n 2>/dev/null | unmunge >/dev/null 2>&1); then
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do
    (munge -n | unmunge >/dev/null 2>&1) && break
    sleep 0.1
  done
fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

mkdir -p "$dir/state" "$dir/log"
host="$(hostname -s)"
ctl_port="$(free_port)"
cat > "$dir/slurm.conf" <<EOF
# written by scripts/slurm.sh: emulated nodes on this machine
ClusterName=heronrs
SlurmctldHost=$host(${SLURM_CTLD_ADDR:-127.0.0.1})
SlurmctldPort=$ctl_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
EOF
nodes="${SLURM_NODES:-n1@127.0.0.1 n2@127.0.0.1}"
count=0
for node in $nodes; do
  IFS=@ read -r name addr _ <<<"$node"
  echo "NodeName=$name NodeHostname=$host NodeAddr=$addr Port=$(free_port) CPUs=1" >> "$dir/slurm.conf"
  count=$((count + 1))
done
echo "PartitionName=heronrs Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE" >> "$dir/slurm.conf"
export SLURM_CONF="$dir/slurm.conf"
slurmctld
for node in $nodes; do
  IFS=@ read -r name _ netns <<<"$node"
  if [ -n "$netns" ]; then
    nsenter --net="/run/netns/$netns" slurmd -N "$name"
  else
    slurmd -N "$name"
  fi
done
for _ in $(seq 100); do
  idle="$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle' || true)"
  [ "$idle" = "$count" ] && { echo "SLURM_CONF=$SLURM_CONF"; exit 0; }
  sleep 0.1
done
echo "scripts/slurm.sh: the nodes did not come up; sinfo says:" >&2
sinfo -N >&2 || true
tail -n 20 "$dir"/log/*.log >&2 || true
stop
exit 1
