#!/usr/bin/env bash
# A private, loopback-only ZooKeeper server (Debian's `zookeeper` package) for tests and CI.
#
#   scripts/zookeeper.sh start <dir> <port>   install if needed, start, wait until serving
#   scripts/zookeeper.sh stop <dir>           stop it (TERM, up to 10 s, then KILL)
#   scripts/zookeeper.sh status <dir>         exit 0 if it runs and serves
#
# <dir> holds everything: zoo.cfg, data/, zk.out (the server's output) and zk.pid.
# `start` is idempotent (a running server in <dir> is left alone) and refuses a port that
# something else is listening on. Environment:
#   ZK_OWNER_PID=<pid>   also stop the server when that process is gone (checked every 2 s),
#                        so a killed test run leaves no server behind.
#   ZK_START_TIMEOUT=<s> how long to wait for the server to serve (default 60).
#   ZK_NO_INSTALL=1      fail instead of installing the package when it is missing.
#   ZK_HOST=<ip>         the address to serve on (default 127.0.0.1; the multi-host test
#                        serves on a network namespace's own address).
set -euo pipefail

JAR=/usr/share/java/zookeeper.jar
CONF_DIR=/etc/zookeeper/conf
MAIN=org.apache.zookeeper.server.quorum.QuorumPeerMain

die() { echo "zookeeper.sh: $*" >&2; exit 1; }
say() { echo "zookeeper.sh: $*" >&2; }

usage() {
    sed -n '2,15p' "$0" >&2
    exit 2
}

# srvr <port>: the server's answer to the `srvr` four-letter command (empty if none).
srvr() {
    timeout 3 bash -c 'exec 3<>"/dev/tcp/${ZK_HOST:-127.0.0.1}/$1" && printf srvr >&3 && cat <&3' _ "$1" 2>/dev/null || true
}

# listening <port>: something accepts connections on ZK_HOST:<port>.
listening() {
    timeout 2 bash -c 'exec 3<>"/dev/tcp/${ZK_HOST:-127.0.0.1}/$1"' _ "$1" 2>/dev/null
}

# alive, watch_owner, stop_pid
source "$(dirname "${BASH_SOURCE[0]}")/daemon.sh"

# read_pid <dir>: the pid in <dir>/zk.pid if that process is our server (not a reused pid).
read_pid() {
    local pid
    [[ -f "$1/zk.pid" ]] || return 0
    pid=$(cat "$1/zk.pid")
    if [[ $pid =~ ^[0-9]+$ ]] && [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$1/zoo.cfg"; then
        echo "$pid"
    fi
}

ensure_installed() {
    if [[ -f $JAR ]]; then
        return
    fi
    [[ "${ZK_NO_INSTALL:-}" == 1 ]] && die "$JAR is missing and ZK_NO_INSTALL=1"
    [[ $(id -u) == 0 ]] || die "$JAR is missing; install Debian's zookeeper package (as root: apt-get install zookeeper)"
    say "installing Debian's zookeeper package"
    apt-get update -q >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends zookeeper >&2 \
        || die "apt-get install zookeeper failed"
    [[ -f $JAR ]] || die "the zookeeper package did not provide $JAR"
}

start() {
    local dir=$1 port=$2
    [[ $port =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "bad port: $port"
    mkdir -p "$dir" || die "cannot create $dir"
    dir=$(cd "$dir" && pwd -P)

    local pid
    pid=$(read_pid "$dir")
    if alive "$pid"; then
        if srvr "$port" | grep -q '^Mode: standalone'; then
            say "already running in $dir (pid $pid, port $port)"
            echo "$pid"
            return 0
        fi
        die "a server from $dir (pid $pid) runs but does not serve on port $port; run: $0 stop $dir"
    fi
    rm -f "$dir/zk.pid"

    ensure_installed
    command -v java >/dev/null || die "java is not installed (the zookeeper package depends on a JRE)"
    if listening "$port"; then
        die "port $port on ${ZK_HOST:-127.0.0.1} is already in use"
    fi

    mkdir -p "$dir/data"
    cat >"$dir/zoo.cfg" <<EOF
tickTime=2000
dataDir=$dir/data
clientPort=$port
clientPortAddress=${ZK_HOST:-127.0.0.1}
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok,stat,mntr
maxClientCnxns=0
forceSync=no
EOF

    local cp=$CONF_DIR:$JAR
    # Logs to zk.out when the simple SLF4J binding is there (otherwise the server is silent).
    [[ -f /usr/share/java/slf4j-simple.jar ]] && cp=$cp:/usr/share/java/slf4j-simple.jar

    # A plain background command on its own, so that $! is the JVM itself.
    java -Xmx256m -XX:+UseSerialGC -cp "$cp" "$MAIN" "$dir/zoo.cfg" \
        >"$dir/zk.out" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/zk.pid"

    local waited=0 limit=$((${ZK_START_TIMEOUT:-60} * 10))
    until srvr "$port" | grep -q '^Mode: standalone'; do
        if ! alive "$pid"; then
            rm -f "$dir/zk.pid"
            say "the server exited during start-up; last lines of $dir/zk.out:"
            tail -n 20 "$dir/zk.out" >&2 || true
            exit 1
        fi
        if ((waited >= limit)); then
            say "not serving on port $port after ${ZK_START_TIMEOUT:-60} s; stopping it"
            tail -n 20 "$dir/zk.out" >&2 || true
            stop "$dir"
            exit 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done

    if [[ -n "${ZK_OWNER_PID:-}" ]]; then
        watch_owner "$ZK_OWNER_PID" "$pid"
    fi

    say "started in $dir (pid $pid, ${ZK_HOST:-127.0.0.1}:$port)"
    echo "$pid"
}

stop() {
    local dir pid
    [[ -d $1 ]] || { say "not running in $1 (no such directory)"; return 0; }
    dir=$(cd "$1" && pwd -P)
    pid=$(read_pid "$dir")
    if ! alive "$pid"; then
        rm -f "$dir/zk.pid"
        say "not running in $dir"
        return 0
    fi
    stop_pid "$pid"
    rm -f "$dir/zk.pid"
    say "stopped (pid $pid)"
}

status() {
    local dir pid port
    [[ -d $1 ]] || die "no such directory: $1"
    dir=$(cd "$1" && pwd -P)
    pid=$(read_pid "$dir")
    alive "$pid" || die "not running in $dir"
    port=$(sed -n 's/^clientPort=//p' "$dir/zoo.cfg")
    srvr "$port" | grep -q '^Mode: standalone' || die "pid $pid runs but does not serve on port $port"
    echo "running: pid $pid, ${ZK_HOST:-127.0.0.1}:$port"
}

case "${1:-}" in
start) [[ $# == 3 ]] || usage; start "$2" "$3" ;;
stop) [[ $# == 2 ]] || usage; stop "$2" ;;
status) [[ $# == 2 ]] || usage; status "$2" ;;
*) usage ;;
esac
