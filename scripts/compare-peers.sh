#!/usr/bin/env bash
# Measures commcore against Open MPI and MPICH on this machine, figure by figure.
#
#   scripts/compare-peers.sh [--json] [--runs N]
#
# Installs Debian's Open MPI and MPICH (and jq) when missing, builds our C programs under
# scripts/peers/ with each, then runs commcore and both peers in turn, interleaved (the order
# rotates every round), N runs each (default 5), and prints the median of each figure side by
# side with the ratio commcore / better peer. For latencies lower is better; for bandwidth and
# message rate higher is better. With --json it prints one JSON list of
# {figure, procs, commcore, openmpi, mpich, unit, ratio_to_best_peer, better}.
#
# Peer settings, measured on this machine: Open MPI needs --allow-run-as-root --oversubscribe,
# and pml=ob1 with btl=self,vader,tcp skips a ~200 ms libfabric probe per process. MPICH 4.0.2
# (ch4:ucx) busy-polls with no yield setting.
set -euo pipefail
cd "$(dirname "$0")/.."

json=0
runs=5
while [ $# -gt 0 ]; do
    case "$1" in
        --json) json=1 ;;
        --runs) runs=${2:?--runs needs a value}; shift ;;
        *) echo "usage: $0 [--json] [--runs N]" >&2; exit 2 ;;
    esac
    shift
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
log "building commcore (release) and the peer programs"
cargo build --release --locked -q -p commcore-linux --bin commcore >&2
for program in scripts/peers/*.c; do
    name=$(basename "$program" .c)
    mpicc.openmpi -O2 -Wall -Werror -o "$out/$name-openmpi" "$program"
    mpicc.mpich -O2 -Wall -Werror -o "$out/$name-mpich" "$program"
done

run_commcore() { ./target/release/commcore bench pt2pt --json; }
run_openmpi() {
    OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp \
        mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 "$out/pt2pt-openmpi"
}
run_mpich() { mpirun.mpich -np 2 "$out/pt2pt-mpich"; }

# One line per run: {"peer": ..., "figures": {figure: value}}.
results="$out/results.jsonl"
: >"$results"
peers=(commcore openmpi mpich)
for ((round = 0; round < runs; round++)); do
    for ((k = 0; k < 3; k++)); do
        peer=${peers[$(((round + k) % 3))]}
        log "round $((round + 1))/$runs: $peer"
        output=$("run_$peer" | tail -n 1)
        if [ "$peer" = commcore ]; then
            jq -c '{peer: "commcore", figures: (
                    [.figures[] | {key: .figure, value: .single_copy}] +
                    [.figures[] | select(.figure == "pingpong_latency_1MiB")
                        | {key: "pingpong_latency_1MiB_two_copy", value: .two_copy}]
                    | from_entries)}' <<<"$output" >>"$results"
        else
            jq -c --arg peer "$peer" '{peer: $peer, figures: {
                    pingpong_latency_8B: .latency_us["8"],
                    pingpong_latency_64KiB: .latency_us["65536"],
                    pingpong_latency_1MiB: .latency_us["1048576"],
                    bandwidth_1MiB: .bandwidth_mbps,
                    message_rate_8B: .message_rate_mmsgs}}' <<<"$output" >>"$results"
        fi
    done
done

report=$(jq -s '
    def median: sort | if length == 0 then null else .[(length / 2 | floor)] end;
    def med($peer; $figure): [.[] | select(.peer == $peer) | .figures[$figure]
                              | select(. != null)] | median;
    . as $all
    | [ ["pingpong_latency_8B", "us", "lower"],
        ["pingpong_latency_64KiB", "us", "lower"],
        ["pingpong_latency_1MiB", "us", "lower"],
        ["pingpong_latency_1MiB_two_copy", "us", "lower"],
        ["bandwidth_1MiB", "MB/s", "higher"],
        ["message_rate_8B", "Mmsg/s", "higher"] ]
    | map(. as [$figure, $unit, $better]
        | {figure: $figure, procs: 2,
           commcore: ($all | med("commcore"; $figure)),
           openmpi: ($all | med("openmpi"; $figure)),
           mpich: ($all | med("mpich"; $figure)),
           unit: $unit, better: $better}
        | . as $row
        | ([$row.openmpi, $row.mpich] | map(select(. != null))) as $peers
        | .ratio_to_best_peer = (
            if ($peers | length) == 0 or $row.commcore == null then null
            elif $better == "lower" then $row.commcore / ($peers | min)
            else $row.commcore / ($peers | max) end))
    | . + [{figure: "single_copy_speedup_1MiB", procs: 2,
            commcore: (($all | med("commcore"; "pingpong_latency_1MiB_two_copy"))
                       / ($all | med("commcore"; "pingpong_latency_1MiB"))),
            openmpi: null, mpich: null, unit: "x (two-copy / single-copy time)",
            better: "higher", ratio_to_best_peer: null}]
' "$results")

if [ "$json" = 1 ]; then
    jq -c . <<<"$report"
else
    echo "medians of $runs interleaved runs each (ratio = commcore / better peer)"
    jq -r '(["figure", "procs", "commcore", "openmpi", "mpich", "unit", "ratio"] | @tsv),
        (.[] | [.figure, .procs,
                (.commcore, .openmpi, .mpich, .ratio_to_best_peer
                 | if . == null then "-" else (. * 1000 | round / 1000 | tostring) end),
                .unit] | [.[0], .[1], .[2], .[3], .[4], .[6], .[5]] | @tsv)' <<<"$report" |
        column -t -s $'\t'
fi
