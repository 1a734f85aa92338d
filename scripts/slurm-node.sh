#!/usr/bin/env bash
# A one-node Slurm cluster (munged, slurmctld, slurmd) that lives entirely in one directory,
# for tests that start ranks with `srun`. It reads nothing from /etc/slurm or /etc/munge.
#   scripts/slurm-node.sh start DIR            write the configuration into DIR, start the
#                                              daemons, wait until the node is idle
#   scripts/slurm-node.sh run DIR -- CMD...    run a client command (srun, sinfo, ...) against it
#   scripts/slurm-node.sh stop DIR             cancel every job, stop the daemons, remove DIR
# Debian 12 packages: slurmctld slurmd slurm-client munge libpmix-dev. The PMIx plugin
# (mpi_pmix_v4.so, `srun --mpi=pmix`) is in slurm-wlm-basic-plugins, which the daemons pull in.
#
# What it took to run Slurm here:
# - The node declares CPUs=8 on a 2-CPU machine so that 8 tasks fit; slurmd would report the
#   real count and the node would drain ("Low socket*core*thread count"), so
#   SlurmdParameters=config_overrides makes it report the configured one, and the partition
#   oversubscribes.
# - No cgroups: proctrack/linuxproc, task/none, no accounting gatherer.
# - Every path (state, spool, logs, pid files, munge's socket, key, seed and log) is under
#   DIR; clients find the munge socket through AuthInfo=socket=..., the daemons and clients
#   the configuration through -f and SLURM_CONF; PlugStackConfig points at an empty file so
#   /etc/slurm/plugstack.conf is not read.
# - The daemons run as root (SlurmUser=root). munged checks every directory above its key,
#   socket and logs and refuses a DIR under one writable by others without the sticky bit;
#   --force turns that into warnings. DIR is made searchable (711) for its socket.
# - The PMIx plugin opens .../pmix2/lib/libpmix.so, the unversioned name that libpmix-dev
#   ships, not libpmix2; without it srun says "Invalid MPI type 'pmix'".
# - Ports are picked free at start so two clusters or a system Slurm do not clash.
# - A step can outlive slurmd (a task ignoring TERM, slurmctld gone): stop kills what has a
#   file under DIR open or SLURM_CONF=DIR/slurm.conf in its environment, and waits until
#   init has reaped them (a zombie still shows in pgrep and answers kill -0).
set -euo pipefail

usage() {
    sed -n '4,7p' "$0" >&2
    exit 2
}
die() { printf 'slurm-node: %s\n' "$*" >&2; exit 1; }

# The last lines of every log in DIR, for a failure's message.
logs() {
    local f
    for f in "$dir"/log/*.log "$dir"/log/*.out; do
        [ -s "$f" ] || continue
        printf '\n--- tail of %s\n' "$f" >&2
        tail -n 20 "$f" >&2
    done
}
fail() { printf 'slurm-node: %s\n' "$*" >&2; logs; exit 1; }

# A TCP port nothing on this machine listens on.
free_port() {
    local p
    for _ in $(seq 100); do
        p=$((20000 + RANDOM % 12000)) # below the ephemeral range
        if ! (: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null && [ "$p" != "${1:-}" ]; then
            echo "$p"
            return
        fi
    done
    die "no free TCP port found"
}

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
    local secs=$1 i
    shift
    for ((i = 0; i < secs * 5; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}

# Whether process $1 runs (a zombie that init has not reaped yet does not).
alive() {
    local stat
    stat=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $stat != Z* ]]
}

client_env() {
    export SLURM_CONF="$dir/slurm.conf"
    # The bootstrap variables of a launcher that started this script would mislead srun.
    unset SLURM_JOB_ID SLURM_JOBID SLURM_STEP_ID
}

node_idle() { sinfo -h -N -n "$node" -o '%T' | grep -qx idle; }

write_config() {
    mkdir -p "$dir"/{log,state,spool,munge}
    # Munge wants its socket's directory searchable by all and writable by its owner only.
    chmod 711 "$dir"
    chmod 755 "$dir/munge"
    # Munge's key: 1024 random bytes, readable by its owner alone.
    (umask 077 && head -c 1024 /dev/urandom >"$dir/munge/munge.key")
    : >"$dir/plugstack.conf"
    local ctld_port slurmd_port
    ctld_port=$(free_port)
    slurmd_port=$(free_port "$ctld_port")
    cat >"$dir/slurm.conf" <<EOF
ClusterName=commcore
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmdParameters=config_overrides
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MailProg=/bin/true
KillWait=2
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
}

start() {
    [ ! -e "$dir/slurm.conf" ] || die "$dir already holds a cluster; stop it first"
    mkdir -p "$dir"
    write_config
    # The daemons carry SLURM_CONF too: stop finds what they leave by it.
    client_env
    munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munged.pid" --seed-file="$dir/munge/munged.seed" \
        --log-file="$dir/log/munged.log" >"$dir/log/munged.out" 2>&1 ||
        fail "munged did not start"
    wait_for 10 test -S "$dir/munge/munge.socket" || fail "munged's socket did not appear"
    # -i: ignore any state (there is none; a fresh directory every time).
    slurmctld -i -f "$dir/slurm.conf" >"$dir/log/slurmctld.out" 2>&1 ||
        fail "slurmctld did not start"
    slurmd -f "$dir/slurm.conf" -N "$node" >"$dir/log/slurmd.out" 2>&1 ||
        fail "slurmd did not start"
    wait_for 30 node_idle || {
        sinfo -N -l >&2 || true
        fail "node $node not idle within 30 s"
    }
}

# Stops the daemon whose pid file is DIR/$1.pid: TERM, then KILL after 10 s.
stop_daemon() {
    local pidfile=$dir/$1.pid pid
    [ -s "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    stopped+=("$pid")
    alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_for 10 eval "! alive $pid"; then
        printf 'slurm-node: %s (%s) ignored TERM for 10 s; killing it\n' "$1" "$pid" >&2
        kill -KILL "$pid" 2>/dev/null || true
        wait_for 5 eval "! alive $pid" || die "$1 ($pid) survived KILL"
    fi
}

# This cluster's processes that outlived the daemons: any with a file or its working
# directory under DIR (steps), or with SLURM_CONF=DIR/slurm.conf in its environment
# (the daemons, the clients that `run` started and the tasks they launched). This script,
# its callers and its own children are not among them, even when a caller exported SLURM_CONF.
leftovers() {
    local marked
    marked=$({
        find /proc/[0-9]*/cwd /proc/[0-9]*/fd -maxdepth 1 \( -lname "$dir" -o -lname "$dir/*" \) \
            2>/dev/null | cut -d/ -f3
        grep -lzxF "SLURM_CONF=$dir/slurm.conf" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
    } | sort -u | tr '\n' ' ')
    [ -n "$marked" ] || return 0
    ps -e -o pid=,ppid= | awk -v self=$$ -v marked="$marked" '
        { parent[$1] = $2 }
        END {
            for (p = self; p > 1; p = parent[p]) skip[p] = 1
            n = split(marked, m, " ")
            for (i = 1; i <= n; i++) {
                if (!(m[i] in parent) || m[i] in skip) continue
                for (p = m[i]; p > 1 && p != self; p = parent[p]) {}
                if (p != self) print m[i]
            }
        }'
}

stopped=()
stop() {
    [ -d "$dir" ] || return 0
    # Removes only what start made: a directory without its configuration is left alone.
    grep -qx 'ClusterName=commcore' "$dir/slurm.conf" 2>/dev/null ||
        { rmdir "$dir" 2>/dev/null || die "$dir holds no cluster; left as it is"; return 0; }
    local ctld conf=$dir/slurm.conf
    ctld=$(cat "$dir/slurmctld.pid" 2>/dev/null || true)
    if [ -n "$ctld" ] && alive "$ctld"; then
        SLURM_CONF=$conf timeout 10 scancel --full --quiet --partition=local 2>/dev/null || true
        wait_for 15 eval '[ -z "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ]' ||
            printf 'slurm-node: jobs still listed after 15 s: %s\n' \
                "$(SLURM_CONF=$conf squeue -h -o '%i %T' | tr '\n' ' ')" >&2
    fi
    stop_daemon slurmd
    stop_daemon slurmctld
    stop_daemon munged
    local left
    left=$(leftovers)
    if [ -n "$left" ]; then
        printf 'slurm-node: killing leftover processes: %s\n' "$(echo $left)" >&2
        kill -KILL $left 2>/dev/null || true
        stopped+=($left)
        wait_for 5 eval '[ -z "$(leftovers)" ]' || die "processes still left: $(leftovers)"
    fi
    # Until init reaps them they would still show in pgrep, as zombies.
    wait_for 5 reaped "${stopped[@]}" || true
    rm -rf "$dir"
}

# Whether none of the processes given is in the process table any more.
reaped() {
    local p
    for p; do
        ! kill -0 "$p" 2>/dev/null || return 1
    done
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$(realpath -m "$2")
shift 2
node=$(hostname -s)
case $cmd in
start) start ;;
stop) stop ;;
run)
    [ "${1:-}" = "--" ] && shift
    [ $# -ge 1 ] || usage
    [ -e "$dir/slurm.conf" ] || die "no cluster in $dir"
    client_env
    exec "$@"
    ;;
*) usage ;;
esac
