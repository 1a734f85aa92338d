#!/usr/bin/env bash
# Measures commcore against Open MPI and MPICH on this machine, figure by figure.
#
#   scripts/compare-peers.sh [--json] [--runs N] [--only GROUPS]
#
# --only takes a comma-separated list of figure groups to measure, of pt2pt, split, coll2,
# coll4 and coll8 (the collectives at 2, 4 or 8 processes), tcp (ping-pong and bandwidth over
# TCP against Open MPI's TCP BTL; printed first, as its own JSON list) and dpm (dynamic processes:
# Open MPI's side only, see scripts/peers/dpm.sh); default all. A full pass of
# 5 runs takes 10 to 15 minutes, mostly MPICH's split and collectives at 8 processes.
#
# Installs Debian's Open MPI and MPICH (and jq) when missing, builds our C programs under
# scripts/peers/ with each, then runs commcore and both peers in turn, interleaved (the order
# rotates every round), N runs each (default 5), and prints the median of each figure side by
# side with the ratio commcore / better peer. Figures: point-to-point between 2 processes
# (`commcore bench pt2pt`, scripts/peers/pt2pt.c) and the split stress benchmark on 8
# (`commcore bench split`, scripts/peers/split.c; SPLIT_ITERATIONS, default 200, each;
# MPICH busy-polls when oversubscribed, so its split runs take tens of seconds), and
# barrier, bcast, allreduce and alltoall at 8 B and 64 KiB on 2, 4 and 8 processes
# (`commcore bench coll-procs`, scripts/peers/coll.c). For latencies lower is better; for bandwidth and
# message rate higher is better. With --json it prints one JSON list of
# {figure, procs, commcore, openmpi, mpich, commcore_mpi, unit, ratio_to_best_peer, better}.
# commcore_mpi is the MPICH-built binary on commcore's MPI library (ffi/mpi, release) under
# `commcore run`, and library_over_native its figure / commcore's. Last, on
# stderr, how many of each one's point-to-point jobs got this host's fast vCPU placement.
#
# Peer settings, measured on this machine: Open MPI needs --allow-run-as-root --oversubscribe,
# and pml=ob1 with btl=self,vader,tcp skips a ~200 ms libfabric probe per process. MPICH 4.0.2
# (ch4:ucx) busy-polls with no yield setting.
set -euo pipefail
cd "$(dirname "$0")/.."

json=0
runs=5
only=pt2pt,split,coll2,coll4,coll8,dpm
while [ $# -gt 0 ]; do
    case "$1" in
        --json) json=1 ;;
        --runs) runs=${2:?--runs needs a value}; shift ;;
        --only) only=${2:?--only needs a list}; shift ;;
        *) echo "usage: $0 [--json] [--runs N] [--only pt2pt,split,coll2,coll4,coll8,dpm]" >&2; exit 2 ;;
    esac
    shift
done
wants() { [[ ",$only," == *",$1,"* ]]; }
for group in ${only//,/ }; do
    case "$group" in
        pt2pt | split | coll2 | coll4 | coll8 | dpm | tcp) ;;
        *) echo "--only: unknown group $group" >&2; exit 2 ;;
    esac
done
case "$runs" in '' | *[!0-9]* | 0) echo "--runs must be a positive count" >&2; exit 2 ;; esac

log() { echo "compare-peers: $*" >&2; }

if ! command -v mpicc.openmpi >/dev/null || ! command -v mpicc.mpich >/dev/null ||
    ! command -v jq >/dev/null; then
    log "installing openmpi-bin libopenmpi-dev mpich libmpich-dev jq"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        openmpi-bin libopenmpi-dev mpich libmpich-dev jq >&2
fi

out=target/peers
mkdir -p "$out"
# The groups measured in interleaved rounds (all but dpm, which has no commcore side yet).
rounds_wanted=0
for group in ${only//,/ }; do [ "$group" = dpm ] || [ "$group" = tcp ] || rounds_wanted=1; done
log "building commcore (release) and the peer programs"
if [ "$rounds_wanted" = 1 ] || wants tcp || wants dpm; then
    cargo build --release --locked -q -p commcore-cli --bin commcore >&2
fi
if [ "$rounds_wanted" = 1 ]; then
    ffi/mpi/build.sh target/mpi-release --release >&2
fi
for program in scripts/peers/*.c; do
    name=$(basename "$program" .c)
    mpicc.openmpi -O2 -Wall -Werror -o "$out/$name-openmpi" "$program"
    mpicc.mpich -O2 -Wall -Werror -o "$out/$name-mpich" "$program"
done

split_iterations=${SPLIT_ITERATIONS:-200}
# Collective calls per batch at 8 B (a quarter at 64 KiB) and batches, by process count:
# at 8 processes on this 2-core machine MPICH's busy polling makes each call take ticks, so
# fewer there, but not fewer than 100: a batch of 20 calls measured how ranks start a batch
# (their skew, cells not yet in any cache) more than the calls.
coll_params() { if [ "$1" -ge 8 ]; then echo "100 3"; else echo "200 5"; fi; }
coll_procs=()
for p in 2 4 8; do if wants "coll$p"; then coll_procs+=("$p"); fi; done
openmpi() {
    OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp \
        mpirun.openmpi --allow-run-as-root --oversubscribe "$@"
}

# Group tcp: point-to-point over TCP, commcore's transport (`bench pt2pt --transport tcp`,
# one host) against Open MPI's TCP BTL (pml ob1, btl self,tcp), interleaved, N runs each.
# Prints one JSON list of {figure, procs, commcore, openmpi, unit, better, ratio}.
if wants tcp; then
    tcp_results="$out/tcp-results.jsonl"
    : >"$tcp_results"
    for ((round = 0; round < runs; round++)); do
        log "tcp round $((round + 1))/$runs"
        ./target/release/commcore bench pt2pt --transport tcp --rounds 1 --json |
            jq -c '{peer: "commcore", figures: ([.figures[] | {key: .figure, value: .tcp}] | from_entries)}' \
                >>"$tcp_results"
        OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,tcp \
            mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 "$out/pt2pt-openmpi" |
            tail -n 1 | jq -c '{peer: "openmpi", figures: {
                pingpong_latency_8B: .latency_us["8"], pingpong_latency_64KiB: .latency_us["65536"],
                pingpong_latency_1MiB: .latency_us["1048576"], bandwidth_1MiB: .bandwidth_mbps}}' \
                >>"$tcp_results"
    done
    tcp_report=$(jq -s -c '
        def median: sort | if length == 0 then null else .[(length / 2 | floor)] end;
        def med($peer; $f): [.[] | select(.peer == $peer) | .figures[$f] | select(. != null)] | median;
        . as $all
        | [["pingpong_latency_8B", "us", "lower"], ["pingpong_latency_64KiB", "us", "lower"],
           ["pingpong_latency_1MiB", "us", "lower"], ["bandwidth_1MiB", "MB/s", "higher"]]
        | map(. as [$f, $unit, $better]
            | {figure: ("tcp_" + $f), procs: 2, commcore: ($all | med("commcore"; $f)),
               openmpi: ($all | med("openmpi"; $f)), unit: $unit, better: $better}
            | .ratio = (if .commcore and .openmpi then .commcore / .openmpi else null end))' \
        "$tcp_results")
    if [ "$json" = 1 ]; then jq -c . <<<"$tcp_report"; else jq . <<<"$tcp_report"; fi
    if [ "$only" = tcp ]; then exit 0; fi
fi

# Each prints one JSON object of figures by name for one run; collective figures are
# named FIGURE@PROCS.
coll_figures() { # peer-json procs
    jq -c --arg p "$2" '[.figures[] | {key: (.figure + "@" + $p), value: .latency}] | from_entries' <<<"$1"
}

figures_commcore() {
    local pt2pt='{"figures": []}' large='{}' small='{}' coll=() p params
    if wants pt2pt; then pt2pt=$(./target/release/commcore bench pt2pt --json); fi
    if wants split; then
        large=$(./target/release/commcore bench split --procs 8 --scenario large_comm \
            --iterations "$split_iterations" --json)
        small=$(./target/release/commcore bench split --procs 8 --scenario small_comm \
            --iterations "$split_iterations" --json)
    fi
    for p in "${coll_procs[@]}"; do
        read -r -a params <<<"$(coll_params "$p")"
        coll+=("$(coll_figures "$(./target/release/commcore bench coll-procs --procs "$p" \
            --iterations "${params[0]}" --batches "${params[1]}" --json)" "$p")")
    done
    jq -c -n --argjson p "$pt2pt" --argjson l "$large" --argjson s "$small" '
        ([$p.figures[] | {key: .figure, value: .single_copy}]
         + [$p.figures[] | select(.figure == "pingpong_latency_1MiB")
            | {key: "pingpong_latency_1MiB_two_copy", value: .two_copy}] | from_entries)
        + {split_median_large_comm: $l.median_us, split_p99_over_median_large_comm:
           (if $l.median_us then $l.p99_us / $l.median_us else null end),
           split_median_small_comm: $s.median_us, split_p99_over_median_small_comm:
           (if $s.median_us then $s.p99_us / $s.median_us else null end)}' |
        jq -c -s 'add' - <(printf '%s\n' "${coll[@]}")
}

figures_peer() { # launcher-function [build: the programs' suffix, default the launcher's]
    local peer=$1 build=${2:-$1} pt2pt='{}' large='{}' small='{}' coll=() p params
    if wants pt2pt; then pt2pt=$($peer -np 2 "$out/pt2pt-$build" | tail -n 1); fi
    if wants split; then
        large=$($peer -np 8 "$out/split-$build" large_comm "$split_iterations" | tail -n 1)
        small=$($peer -np 8 "$out/split-$build" small_comm "$split_iterations" | tail -n 1)
    fi
    for p in "${coll_procs[@]}"; do
        read -r -a params <<<"$(coll_params "$p")"
        coll+=("$(coll_figures "$($peer -np "$p" "$out/coll-$build" "${params[@]}" | tail -n 1)" "$p")")
    done
    jq -c -n --argjson p "$pt2pt" --argjson l "$large" --argjson s "$small" '{
        pingpong_latency_8B: $p.latency_us["8"]?,
        pingpong_latency_64KiB: $p.latency_us["65536"]?,
        pingpong_latency_1MiB: $p.latency_us["1048576"]?,
        bandwidth_1MiB: $p.bandwidth_mbps,
        message_rate_8B: $p.message_rate_mmsgs,
        split_median_large_comm: $l.median_us,
        split_p99_over_median_large_comm:
            (if $l.median_us then $l.p99_us / $l.median_us else null end),
        split_median_small_comm: $s.median_us,
        split_p99_over_median_small_comm:
            (if $s.median_us then $s.p99_us / $s.median_us else null end)}' |
        jq -c -s 'add' - <(printf '%s\n' "${coll[@]}")
}
mpich() { mpirun.mpich "$@"; }
# The MPICH-built programs on commcore's library.
commcore_mpi() { # -np N program args...
    COMMCORE_MPI_LIBRARY="$PWD/target/mpi-release" ./target/release/commcore run -n "$2" -- "${@:3}"
}

# One line per run: {"peer": ..., "figures": {figure: value}}.
results="$out/results.jsonl"
: >"$results"
peers=(commcore openmpi mpich commcore_mpi)
for ((round = 0; round < runs * rounds_wanted; round++)); do
    for ((k = 0; k < 4; k++)); do
        peer=${peers[$(((round + k) % 4))]}
        log "round $((round + 1))/$runs: $peer"
        if [ "$peer" = commcore ]; then
            figures=$(figures_commcore)
        elif [ "$peer" = commcore_mpi ]; then
            figures=$(figures_peer commcore_mpi mpich)
        else
            figures=$(figures_peer "$peer")
        fi
        jq -c --arg peer "$peer" '{peer: $peer, figures: .}' <<<"$figures" >>"$results"
    done
done

report=$(jq -s '
    def median: sort | if length == 0 then null else .[(length / 2 | floor)] end;
    def med($peer; $figure): [.[] | select(.peer == $peer) | .figures[$figure]
                              | select(. != null)] | median;
    . as $all
    | [ ["pingpong_latency_8B", "us", "lower", 2],
        ["pingpong_latency_64KiB", "us", "lower", 2],
        ["pingpong_latency_1MiB", "us", "lower", 2],
        ["pingpong_latency_1MiB_two_copy", "us", "lower", 2],
        ["bandwidth_1MiB", "MB/s", "higher", 2],
        ["message_rate_8B", "Mmsg/s", "higher", 2],
        ["split_median_large_comm", "us", "lower", 8],
        ["split_p99_over_median_large_comm", "p99/median", "lower", 8],
        ["split_median_small_comm", "us", "lower", 8],
        ["split_p99_over_median_small_comm", "p99/median", "lower", 8] ]
      + [ (2, 4, 8) as $p
          | ("barrier", "bcast_8B", "bcast_64KiB", "allreduce_8B", "allreduce_64KiB",
             "alltoall_8B", "alltoall_64KiB") as $f
          | ["\($f)@\($p)", "us", "lower", $p] ]
    | map(. as [$key, $unit, $better, $procs]
        | ($key | split("@") | .[0]) as $figure
        | {figure: $figure, procs: $procs,
           commcore: ($all | med("commcore"; $key)),
           openmpi: ($all | med("openmpi"; $key)),
           mpich: ($all | med("mpich"; $key)),
           commcore_mpi: ($all | med("commcore_mpi"; $key)),
           unit: $unit, better: $better}
        | .library_over_native = (if .commcore_mpi and .commcore then .commcore_mpi / .commcore
                                  else null end)
        | . as $row
        | ([$row.openmpi, $row.mpich] | map(select(. != null))) as $peers
        | .ratio_to_best_peer = (
            if ($peers | length) == 0 or $row.commcore == null then null
            elif $better == "lower" then $row.commcore / ($peers | min)
            else $row.commcore / ($peers | max) end))
    | . + [{figure: "single_copy_speedup_1MiB", procs: 2,
            commcore: (($all | med("commcore"; "pingpong_latency_1MiB_two_copy")) as $two
                       | ($all | med("commcore"; "pingpong_latency_1MiB")) as $one
                       | if $two and $one then $two / $one else null end),
            openmpi: null, mpich: null, commcore_mpi: null, library_over_native: null,
            unit: "x (two-copy / single-copy time)",
            better: "higher", ratio_to_best_peer: null}]
    | if ($all | length) == 0 then [] else . end
' "$results")
if wants dpm; then
    source scripts/peers/dpm.sh
    log "dpm: commcore bench dpm, then Open MPI's series (MPICH 4.0.2 cannot spawn)"
    commcore_dpm=$(./target/release/commcore bench dpm --json | tail -n 1)
    report=$(jq -c --argjson dpm "$(dpm_rows)" --argjson ours "$commcore_dpm" '
        def pick($rows; cond): ($rows // []) | map(select(cond)) | .[0];
        def dpm_figure($o; $f):
            if ($f | test("^spawn_(first|median|p90)_")) then
                ($f | capture("^spawn_(?<k>[a-z0-9]+)_(?<c>[0-9]+)$")) as $m
                | pick($o.spawn; .children == ($m.c | tonumber))[$m.k + "_ms"]
            elif $f == "spawn_rate" then $o.spawn_rate_per_s
            elif ($f | test("^merge_")) then
                ($f | capture("^merge_(?<how>[a-z]+)_(?<a>[0-9]+)\\+")) as $m
                | pick($o.merge; .how == $m.how and .group_a == ($m.a | tonumber)).median_us
            elif ($f | test("^pingpong_")) then
                ($f | capture("^pingpong_(?<mode>.+)_(?<b>[0-9]+)B$")) as $m
                | pick($o.pingpong; .mode == $m.mode and .bytes == ($m.b | tonumber)).median_us
            elif $f == "accept_connect_median" then $o.accept_connect_median_us
            elif ($f | test("^intercomm_")) then
                ($f | capture("^intercomm_(?<op>[a-z]+)(_(?<b>[0-9]+))?@")) as $m
                | pick($o.intercomm_coll; .op == $m.op and .bytes == (($m.b // "0") | tonumber))
                  .median_us
            elif $f == "hangs" then $o.hangs
            else null end;
        . + ($dpm | map(. + {commcore: (dpm_figure($ours; .figure))}
            | . + {ratio_to_best_peer: (if .commcore and .openmpi and .openmpi != 0
                                         then .commcore / .openmpi else null end)}
            | del(.note)))' <<<"$report")
fi

if [ "$json" = 1 ]; then
    jq -c . <<<"$report"
else
    echo "medians of $runs interleaved runs each (ratio = commcore / better peer)"
    echo "(commcore_mpi: the MPICH-built binary on commcore's library; lib/native: its ratio)"
    jq -r '(["figure", "procs", "commcore", "openmpi", "mpich", "commcore_mpi", "unit", "ratio",
             "lib/native"] | @tsv),
        (.[] | [.figure, .procs,
                (.commcore, .openmpi, .mpich, .commcore_mpi, .ratio_to_best_peer,
                 .library_over_native
                 | if . == null then "-" else (. * 1000 | round / 1000 | tostring) end),
                .unit] | [.[0], .[1], .[2], .[3], .[4], .[5], .[8], .[6], .[7]] | @tsv)' <<<"$report" |
        column -t -s $'\t'
fi

# This machine's host places its two vCPUs in one of two ways per job: 8 B ping-pong takes
# about 0.1 µs in the fast placement and 0.3–0.7 µs in the slow one, for every
# implementation. Medians compare whichever placement most of each one's jobs got, so say
# how many got the fast one.
if wants pt2pt; then
    log "$(jq -r -s '[group_by(.peer)[]
        | "\(.[0].peer) \(map(select((.figures.pingpong_latency_8B // 1) < 0.2)) | length)/\(length)"]
        | "jobs whose 8 B ping-pong took < 0.2 us (the fast vCPU placement): " + join(", ")' \
        "$results")"
fi
