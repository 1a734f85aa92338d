#!/usr/bin/env bash
# The runtime started by the launchers clusters run, as a user would start it:
#   scripts/launchers.sh hydra      MPICH's mpiexec (PMI-1), on one host and across 2 and 3
#                                    network-namespace hosts (its rsh launcher enters them)
#   scripts/launchers.sh openmpi    Open MPI's mpirun (PMIx; the binaries must be built with
#                                    --features commcore-linux/pmix), likewise
#   scripts/launchers.sh slurm      Slurm's srun --mpi=pmix on a one-node cluster this script
#                                    starts and stops (scripts/slurm-node.sh); one host only
# Every job runs under a timeout; each suite must pass, each fault must end the job with a
# non-zero status and the expected words, and nothing may be left behind (processes,
# /dev/shm entries, namespaces). Binaries come from `cargo build -p commcore-tests --bins`
# and `cargo build -p commcore-linux --examples` (debug).
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-hydra}
bin=${BIN_DIR:-target/debug}
rank=$bin/runtime_rank
intercomm=$bin/runtime_intercomm_rank
dpm=$bin/dpm_rank
launched=$bin/examples/launched
work=$(mktemp -d)
failures=0

# --- hosts: network namespaces on a bridge of this machine, entered by an rsh-like agent ---
tag=cc$$
bridge=${tag}b
hosts=()
links=()
drop_hosts() {
    # The host ends of the links first: the kernel removes a namespace's links lazily.
    for link in "${links[@]}"; do ip link del "$link" 2>/dev/null || true; done
    for h in "${hosts[@]}"; do ip netns del "$h" 2>/dev/null || true; done
    links=()
    ip link del "$bridge" 2>/dev/null || true
    hosts=()
}
make_hosts() { # make_hosts K: namespaces $tag-K-1..K on 10.79.0.0/24, the bridge at .254
    drop_hosts
    ip link add "$bridge" type bridge
    ip addr add 10.79.0.254/24 dev "$bridge"
    ip link set "$bridge" up
    for i in $(seq 1 "$1"); do
        local h=$tag-$1-$i link=${tag}h$1v$i
        ip netns add "$h"
        hosts+=("$h")
        ip link add "$link" type veth peer name eth0 netns "$h"
        links+=("$link")
        ip link set "$link" master "$bridge" up
        ip -n "$h" addr add "10.79.0.$i/24" dev eth0
        ip -n "$h" link set eth0 up
        ip -n "$h" link set lo up
    done
}
agent=$work/netns-rsh
cat >"$agent" <<'EOF'
#!/bin/sh
# An rsh for launchers: `netns-rsh HOST COMMAND...` runs COMMAND in network namespace HOST,
# with a temporary directory of its own (the hosts share this machine's /tmp, where Open
# MPI's daemons would race for one session directory).
host=$1
shift
export TMPDIR="${TMPDIR:-/tmp}/$host"
mkdir -p "$TMPDIR"
exec ip netns exec "$host" sh -c "$*"
EOF
chmod +x "$agent"
shm_before=$(ls /dev/shm | wc -l)
cleanup() {
    [ -z "${cluster:-}" ] || scripts/slurm-node.sh stop "$cluster" >/dev/null 2>&1 || true
    drop_hosts
    rm -rf "$work" "${TMPDIR:-/tmp}/$tag"-*
}
trap cleanup EXIT

# --- the launcher under test ---
case $which in
hydra)
    exited_3="rank 1 exited with status 3"
    left="rank 0 exited with status 0 without finalizing"
    launch() { # launch N PROGRAM ARGS...
        local n=$1
        shift
        mpiexec.mpich -n "$n" "$@"
    }
    launch_on() { # launch_on HOSTS N PROGRAM ARGS...
        local on=$1 n=$2
        shift 2
        mpiexec.mpich -launcher rsh -launcher-exec "$agent" -iface "$bridge" -hosts "$on" \
            -n "$n" "$@"
    }
    differing() { # the last of N ranks runs with VARIABLE=VALUE
        local n=$1 variable=$2 value=$3
        shift 3
        mpiexec.mpich -n $((n - 1)) "$@" : -n 1 -env "$variable" "$value" "$@"
    }
    ;;
openmpi)
    # mpirun names the rank itself: process [[job,1],1] and its code; a rank that left.
    exited_3="Process name: \[\[[0-9]*,1\],1\]"
    left="due to process rank 0"
    export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
    launch() {
        local n=$1
        shift
        mpirun.openmpi --allow-run-as-root --oversubscribe -n "$n" "$@"
    }
    launch_on() {
        local on=$1 n=$2
        shift 2
        mpirun.openmpi --allow-run-as-root --oversubscribe --mca plm_rsh_agent "$agent" \
            --mca oob_tcp_if_include 10.79.0.0/24 \
            --host "$(echo "$on" | sed 's/\([^,]*\)/\1:8/g')" --map-by node -n "$n" "$@"
    }
    differing() {
        local n=$1 variable=$2 value=$3
        shift 3
        mpirun.openmpi --allow-run-as-root --oversubscribe -n $((n - 1)) "$@" : \
            -n 1 -x "$variable=$value" "$@"
    }
    ;;
slurm)
    # srun names the task (rank) that failed; Slurm's PMIx plugin names a rank that left.
    exited_3="task 1: Exited with exit code 3"
    left="slurm.pmix.[0-9]*.[0-9]*:0\]"
    no_spawn="the PMIx server does not serve PMIx_Spawn"
    cluster=$work/cluster
    scripts/slurm-node.sh start "$cluster" >"$work/slurm-start" 2>&1 ||
        { cat "$work/slurm-start" >&2; exit 1; }
    export cluster
    launch() {
        local n=$1
        shift
        scripts/slurm-node.sh run "$cluster" -- srun --mpi=pmix -n "$n" "$@"
    }
    launch_on() { echo "one Slurm node here: no namespace hosts" >&2; return 1; }
    differing() {
        local n=$1 variable=$2 value=$3
        shift 3
        launch "$n" sh -c "[ \"\$SLURM_PROCID\" != $((n - 1)) ] || export $variable=$value; exec \"\$@\"" \
            _ "$@"
    }
    ;;
*)
    echo "usage: $0 hydra|openmpi|slurm" >&2
    exit 2
    ;;
esac
# The checks run launchers under `timeout`, which needs them as commands.
export agent bridge
export -f launch launch_on differing
run() { timeout "$1" bash -c '"$@"' _ "${@:2}"; }

fail() {
    echo "FAILED: $*" >&2
    failures=$((failures + 1))
}

# expect_ok NAME COMMAND...: passes within 120 s.
expect_ok() {
    local name=$1
    shift
    local out=$work/out rc=0
    run 120 "$@" >"$out" 2>&1 || rc=$?
    if [ "$rc" = 0 ]; then
        printf '  ok    %-44s %s\n' "$name" "$(tail -1 "$out" | cut -c1-60)"
    else
        fail "$name (exit $rc)"
        tail -20 "$out" >&2
    fi
}

# expect_ok_retrying NAME COMMAND...: as expect_ok, with up to four attempts.
expect_ok_retrying() {
    local name=$1 attempt
    shift
    for attempt in 1 2 3 4; do
        if run 60 "$@" >"$work/out" 2>&1; then
            printf '  ok    %-44s (attempt %s)\n' "$name" "$attempt"
            return
        fi
        echo "  again $name: attempt $attempt failed: $(grep -m1 -o 'TimedOut([^)]*)\|Exit code: *[0-9]*' "$work/out" || true)"
    done
    fail "$name: four attempts failed"
    tail -20 "$work/out" >&2
}

# expect_failure NAME WORDS COMMAND...: ends within 60 s, not with status 0, and says WORDS.
expect_failure() {
    local name=$1 words=$2
    shift 2
    local out=$work/out rc=0 start end
    start=$(date +%s.%N)
    run 60 "$@" >"$out" 2>&1 || rc=$?
    end=$(date +%s.%N)
    local took
    took=$(printf '%.2f s' "$(echo "$end - $start" | bc)")
    if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then
        fail "$name: exit $rc (0: reported success; 124: hung)"
        tail -20 "$out" >&2
    elif ! grep -q -- "$words" "$out"; then
        fail "$name: exit $rc, but nothing says \"$words\""
        tail -20 "$out" >&2
    else
        printf '  ok    %-44s exit %s after %s\n' "$name" "$rc" "$took"
    fi
}

echo "== $which: the runtime suites at 4 ranks on one host"
for scenario in ordering any-source unexpected truncation bad-input nonblocking exchange \
    communicators splits threads collectives area-reuse noncommutative \
    isend-across-collectives; do
    expect_ok "$scenario" launch 4 "$rank" "$scenario"
done
for scenario in "create-group" "create-group-threads" "intercomm 1" "intercomm 2" "bad-input"; do
    # shellcheck disable=SC2086
    expect_ok "inter-communicators: $scenario" launch 4 "$intercomm" $scenario
done
expect_ok "launched: transports and every pair" launch 3 "$launched"
expect_ok "dpm: join over a Unix socket" launch 2 "$dpm" join-unix
expect_ok "dpm: join over TCP" launch 2 "$dpm" join-tcp
expect_ok "dpm: bad ports" launch 2 "$dpm" bad-ports
port=$work/port
rm -f "$port"
launch 2 "$dpm" accept "$port" 2 >"$work/accept" 2>&1 &
acceptor=$!
expect_ok "dpm: two jobs accept and connect (2 cycles)" launch 3 "$dpm" connect "$port" 2
if wait "$acceptor"; then echo "  ok    dpm: the accepting job"; else fail "the accepting job"; fi
if [ "$which" = hydra ]; then
    # Hydra serves PMI-1's spawn: the children meet their parents over TCP.
    expect_ok "dpm: spawn 4 children, 3 times" launch 2 "$dpm" spawn 4 3
    expect_ok "dpm: nested spawns" launch 2 "$dpm" nested
    expect_ok "dpm: spawn_multiple" launch 2 "$dpm" multiple
    expect_ok "dpm: a missing program and maxprocs 0" launch 2 "$dpm" spawn-bad
elif [ "$which" = openmpi ]; then
    # mpirun serves PMIx_Spawn, but its spawned jobs sometimes never leave their first
    # fence (Open MPI's own spawning programs too, about one run in six here): each spawn
    # check gets four attempts, and every failed attempt is shown.
    expect_ok_retrying "dpm: spawn 2 children" launch 2 "$dpm" spawn 2 1
    expect_ok_retrying "dpm: spawn_multiple" launch 2 "$dpm" multiple
    expect_ok "dpm: a missing program and maxprocs 0" launch 2 "$dpm" spawn-bad
else
    expect_failure "dpm: spawn is one clear error" "$no_spawn" launch 2 "$dpm" spawn 1 1
fi

echo "== $which: faults"
expect_failure "a rank killed by a signal" "EXIT CODE: 9\|signal 9\|KILLED\|Killed" launch 3 "$rank" die-signal
expect_failure "a rank exits with code 3" "$exited_3" launch 3 "$rank" die-exit
expect_failure "a rank killed in a collective" "EXIT CODE: 9\|signal 9\|KILLED\|Killed" launch 3 "$rank" die-in-collective
expect_failure "rank 0 leaves (code 0) during a receive" "$left" \
    launch 3 "$rank" leave-in-recv 0
expect_failure "rank 0 leaves (code 0) during a barrier" "$left" \
    launch 3 "$rank" leave-in-collective 0
expect_failure "a rank aborts the job" "rank 2 aborts the job (code 7)" launch 3 "$launched" abort
expect_failure "settings differ between ranks" "COMMCORE_SHM_MAX differs" \
    differing 3 COMMCORE_SHM_MAX 0 "$launched"
expect_failure "a bad setting" "COMMCORE_TRANSPORT" launch 2 env COMMCORE_TRANSPORT=bogus "$launched"

hosts_counts="2 3"
[ "$which" != slurm ] || hosts_counts=""
for k in $hosts_counts; do
    echo "== $which: $k network-namespace hosts (TCP between hosts, shared memory on one)"
    make_hosts "$k"
    on=$(IFS=,; echo "${hosts[*]}")
    n=$((2 * k))
    out=$work/hosts
    if run 120 launch_on "$on" "$n" "$launched" >"$out" 2>&1; then
        if grep -q ":tcp" "$out" && grep -q ":shm" "$out" && grep -q "on $k node(s)" "$out"; then
            printf '  ok    %-44s\n' "launched on $k hosts: tcp and shm pairs"
            sed 's/^/          /' "$out"
        else
            fail "launched on $k hosts: expected tcp and shm pairs on $k nodes"
            cat "$out" >&2
        fi
    else
        fail "launched on $k hosts"
        tail -20 "$out" >&2
    fi
    for scenario in ordering any-source exchange communicators collectives; do
        expect_ok "$k hosts: $scenario" launch_on "$on" "$n" "$rank" "$scenario"
    done
    expect_ok "$k hosts: inter-communicators" launch_on "$on" "$n" "$intercomm" intercomm 1
    expect_failure "$k hosts: a rank killed in a collective" "EXIT CODE: 9\|signal 9\|KILLED\|Killed" \
        launch_on "$on" "$n" "$rank" die-in-collective
    drop_hosts
done

echo "== $which: nothing left behind"
sleep 0.5
left=$(pgrep -f "$rank|$intercomm|$dpm|$launched" || true)
[ -z "$left" ] || fail "processes left: $left"
shm_after=$(ls /dev/shm | wc -l)
[ "$shm_after" -le "$shm_before" ] || fail "/dev/shm has $((shm_after - shm_before)) new entries"
[ -z "$(ip netns list | grep "^$tag-" || true)" ] || fail "namespaces left"
if [ "$failures" != 0 ]; then
    echo "$which: $failures check(s) failed" >&2
    exit 1
fi
echo "$which: every suite passed and every fault ended the job"
