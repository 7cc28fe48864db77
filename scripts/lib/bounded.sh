# run_bounded: a step of scripts/test that cannot hold CI past its budget.
# shellcheck shell=bash
#
#   run_bounded SECONDS LABEL COMMAND [ARGS…]
#
# Runs COMMAND in the foreground with line-buffered stdout and stderr (glibc's stdio, through
# stdbuf, inherited by the processes it starts: a test binary's last line is in the log even if
# it hangs). If it has not ended after SECONDS, prints every thread's stack of each process
# it started (gdb; the kernel's own stacks where gdb cannot attach), ends them, and returns 124.
# Otherwise returns COMMAND's status.

# The processes below PID, deepest first.
descendants_of() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do
        descendants_of "$child"
        echo "$child"
    done
}

# Prints what PID and each process below it are doing: the command line, then every thread's stack.
dump_stacks() {
    local pid stacks
    for pid in "$1" $(descendants_of "$1"); do
        [ -d "/proc/$pid" ] || continue
        echo "---- process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-300)"
        stacks=""
        if command -v gdb >/dev/null; then
            stacks=$(timeout 120 gdb -p "$pid" -batch -nx -ex 'set pagination off' -ex 'thread apply all bt 30' 2>/dev/null |
                grep -E '^(Thread|#)' | cut -c1-240 | head -3000)
        fi
        if [ -n "$stacks" ]; then
            echo "$stacks"
        else
            local task
            for task in /proc/"$pid"/task/*; do
                echo "thread ${task##*/} ($(cat "$task/comm" 2>/dev/null)): waiting in $(cat "$task/wchan" 2>/dev/null)"
                sed 's/^/    /' "$task/stack" 2>/dev/null | head -20
            done
        fi
    done
}

# Ends PID and every process below it: TERM, then KILL to what is left after 10 s.
end_tree() {
    local pids
    pids=$(descendants_of "$1"; echo "$1")
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null
    local waited=0
    while [ $waited -lt 10 ] && kill -0 "$1" 2>/dev/null; do
        sleep 1
        waited=$((waited + 1))
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
}

run_bounded() {
    local limit=$1 label=$2
    shift 2
    local status=0 flag
    flag=$(mktemp)
    rm -f "$flag"
    stdbuf -oL -eL "$@" &
    local pid=$!
    # The watcher: at the deadline it reports and ends the step's processes.
    (
        sleeper=""
        trap '[ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null; exit 0' TERM
        sleep "$limit" </dev/null >/dev/null 2>&1 &
        sleeper=$!
        wait "$sleeper"
        touch "$flag"
        log "$label: still running after ${limit}s; the stacks of its processes follow, then they are ended"
        dump_stacks "$pid" >&2
        end_tree "$pid"
    ) &
    local watcher=$!
    wait "$pid" || status=$?
    kill "$watcher" 2>/dev/null || true
    wait "$watcher" 2>/dev/null || true
    if [ -e "$flag" ]; then
        rm -f "$flag"
        log "$label: FAILED: did not end within ${limit}s"
        return 124
    fi
    return "$status"
}
