# Shell helpers shared by the scripts that run a private test server (zookeeper.sh,
# kafka.sh); sourced, not run. Each caller defines `say` and `die`.

# alive <pid>: the process exists and is not a zombie.
alive() {
    [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null || return 1
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
    [[ -n $state && $state != Z ]]
}

# watch_owner <owner-pid> <pid>: in the background, stop <pid> (TERM, then KILL after 5 s)
# once <owner-pid> is gone, so a killed test run leaves no server behind.
watch_owner() {
    local owner=$1 pid=$2
    (
        while alive "$owner" && alive "$pid"; do sleep 2; done
        if alive "$pid"; then
            kill "$pid" 2>/dev/null || true
            sleep 5
            kill -9 "$pid" 2>/dev/null || true
        fi
    ) </dev/null >/dev/null 2>&1 &
    disown
}

# stop_pid <pid>: TERM, up to 10 s, then KILL (up to 5 s more); fails if it still runs.
stop_pid() {
    local pid=$1 i
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        alive "$pid" || return 0
        sleep 0.1
    done
    say "pid $pid ignored TERM for 10 s; killing it"
    kill -9 "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        alive "$pid" || return 0
        sleep 0.1
    done
    die "cannot stop pid $pid"
}
