#!/usr/bin/env bash
# A private, loopback-only Kafka-protocol broker (tansu 0.6.0 from crates.io, in-memory
# storage) for the heron-kafka tests and CI.
#
#   scripts/kafka.sh install                   build the broker into the tool cache (once)
#   scripts/kafka.sh bin                       print the broker binary's path (installs it)
#   scripts/kafka.sh start <dir> <port>        install if needed, start, wait until it serves
#   scripts/kafka.sh stop <dir>                stop it (TERM, up to 10 s, then KILL)
#
# The cache is outside any checkout, so a machine builds the broker once (about 8 minutes
# on 2 cores): ${HERONRS_TOOLS:-$HOME/.cache/heron-rs/tools}/tansu-0.6.0/bin/tansu.
# <dir> holds broker.out (its output) and broker.pid. Environment:
#   KAFKA_OWNER_PID=<pid>   also stop the broker when that process is gone (checked every 2 s).
#   KAFKA_NO_INSTALL=1      fail instead of building the broker when it is missing.
set -euo pipefail

VERSION=0.6.0
TOOLS=${HERONRS_TOOLS:-$HOME/.cache/heron-rs/tools}
ROOT=$TOOLS/tansu-$VERSION
BIN=$ROOT/bin/tansu

die() { echo "kafka.sh: $*" >&2; exit 1; }
say() { echo "kafka.sh: $*" >&2; }

usage() {
    sed -n '2,16p' "$0" >&2
    exit 2
}

listening() {
    timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# alive, watch_owner, stop_pid
source "$(dirname "${BASH_SOURCE[0]}")/daemon.sh"

read_pid() {
    local pid
    [[ -f "$1/broker.pid" ]] || return 0
    pid=$(cat "$1/broker.pid")
    if [[ $pid =~ ^[0-9]+$ ]] && [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$BIN"; then
        echo "$pid"
    fi
}

install() {
    [[ -x $BIN ]] && return
    [[ "${KAFKA_NO_INSTALL:-}" == 1 ]] && die "$BIN is missing and KAFKA_NO_INSTALL=1 (run: $0 install)"
    command -v cargo >/dev/null || die "cargo is needed to build the broker"
    say "building tansu $VERSION (a Kafka-protocol broker) into $ROOT; this takes several minutes"
    mkdir -p "$TOOLS"
    local build
    build=$(mktemp -d "${TMPDIR:-/tmp}/heronrs-tansu-build.XXXXXX")
    # memory storage only (the `dynostore` feature); --locked: tansu's own lock file
    if ! cargo install tansu --version "$VERSION" --locked --no-default-features \
        --features dynostore --root "$ROOT" --target-dir "$build" >&2; then
        rm -rf "$build"
        die "cargo install tansu failed"
    fi
    rm -rf "$build"
    [[ -x $BIN ]] || die "cargo install did not produce $BIN"
}

start() {
    local dir=$1 port=$2
    [[ $port =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "bad port: $port"
    mkdir -p "$dir" || die "cannot create $dir"
    dir=$(cd "$dir" && pwd -P)
    local pid
    pid=$(read_pid "$dir")
    if alive "$pid"; then
        listening "$port" || die "a broker from $dir (pid $pid) runs but not on port $port"
        say "already running in $dir (pid $pid, port $port)"
        echo "$pid"
        return 0
    fi
    install
    listening "$port" && die "port $port on 127.0.0.1 is already in use"

    "$BIN" broker --listener-url "tcp://127.0.0.1:$port" \
        --advertised-listener-url "tcp://127.0.0.1:$port" \
        --storage-engine "memory://tansu/" >"$dir/broker.out" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/broker.pid"
    local waited=0
    until listening "$port"; do
        if ! alive "$pid"; then
            rm -f "$dir/broker.pid"
            say "the broker exited during start-up; last lines of $dir/broker.out:"
            tail -n 20 "$dir/broker.out" >&2 || true
            exit 1
        fi
        if ((waited >= 300)); then
            say "not serving on port $port after 30 s; stopping it"
            stop "$dir"
            exit 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    if [[ -n "${KAFKA_OWNER_PID:-}" ]]; then
        watch_owner "$KAFKA_OWNER_PID" "$pid"
    fi
    say "started in $dir (pid $pid, 127.0.0.1:$port)"
    echo "$pid"
}

stop() {
    local dir pid
    [[ -d $1 ]] || { say "not running in $1 (no such directory)"; return 0; }
    dir=$(cd "$1" && pwd -P)
    pid=$(read_pid "$dir")
    if ! alive "$pid"; then
        rm -f "$dir/broker.pid"
        return 0
    fi
    stop_pid "$pid"
    rm -f "$dir/broker.pid"
    say "stopped (pid $pid)"
}

case "${1:-}" in
install) [[ $# == 1 ]] || usage; install ;;
bin) [[ $# == 1 ]] || usage; install; echo "$BIN" ;;
start) [[ $# == 3 ]] || usage; start "$2" "$3" ;;
stop) [[ $# == 2 ]] || usage; stop "$2" ;;
*) usage ;;
esac
