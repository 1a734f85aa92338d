#!/usr/bin/env bash
# Compares MPI collectives native and with libcommcore_pmpi in front (LD_PRELOAD), under
# Debian's Open MPI and MPICH, at 2, 4 and 8 processes:
#   scripts/compare-pmpi.sh [--json] [--runs N] [--procs "2 4 8"] [--modes "native commcore off"]
#                           [--mpis "openmpi mpich"] [--raw FILE] [--programs "bench threads"]
#                           [--baseline DIR]
# Two benchmarks of ours: ffi/pmpi/bench/pmpi_bench.c (collectives: barrier; bcast,
# allreduce, alltoall at 8 B and 64 KiB; allgather at 8 B; v-collectives: alltoallv and
# allgatherv at 8 B and 64 KiB per peer; creation: dup + free, split + free, intercomm
# create + merge + free) and, at 2 processes, pmpi_bench_threads.c (MPI_THREAD_MULTIPLE:
# 4 threads dup, allreduce 8 B and free at once; then dup and free alone, the host's own
# creation under threads, which bounds the first from below). Runs alternate native / commcore /
# COMMCORE_PMPI=off, N times each (default 5); each row is the median over the runs. Prints
# one row per figure {figure, group, procs, mpi, native_us, commcore_us, ratio}, then per
# MPI and group (collective, v, creation, threads) the geometric mean of the ratios, the
# largest ratio, and the same for the COMMCORE_PMPI=off runs (the library loaded but passing
# everything through) against native. Timing figures: the machine may be shared; they are
# not asserted. --raw FILE keeps every run's figure ("mpi procs mode figure us" lines), so
# the spread behind a median can be read. --programs threads runs the threaded row alone.
# --baseline DIR adds a mode "before": DIR/{openmpi,mpich}/libcommcore_pmpi.so (an earlier
# build) interleaved with the others, so a change is judged against runs on the same load;
# its rows gain before_us and before_ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
json=0 runs=5 procs="2 4 8" modes="native commcore off" mpis="openmpi mpich" keep=""
programs="bench threads" baseline=""
usage="usage: scripts/compare-pmpi.sh [--json] [--runs N] [--procs LIST] [--modes LIST] [--mpis LIST] [--raw FILE] [--programs LIST] [--baseline DIR]"
while [ $# -gt 0 ]; do
    case $1 in
    --json) json=1 ;;
    --runs) runs=${2:?--runs needs a number}; shift ;;
    --procs) procs=${2:?--procs needs a list}; shift ;;
    --modes) modes=${2:?--modes needs a list}; shift ;; # native and commcore at least
    --mpis) mpis=${2:?--mpis needs a list}; shift ;;
    --raw) keep=${2:?--raw needs a file}; shift ;;
    --programs) programs=${2:?--programs needs a list}; shift ;;
    --baseline) baseline=$(cd "${2:?--baseline needs a directory}" && pwd); shift ;;
    *) echo "$usage" >&2; exit 2 ;;
    esac
    shift
done
[ -z "$baseline" ] || modes="$modes before"
for prog in $programs; do
    case $prog in bench | threads) ;; *) echo "compare-pmpi: --programs takes bench and threads, not $prog" >&2; exit 2 ;; esac
done
build=target/pmpi
cargo build --release --locked -p commcore-ffi >&2
ffi/pmpi/build.sh target/release/libcommcore.a "$build" >&2
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/raw"

run() { # mpi procs mode(native|commcore|off|before) [program] -> "figure us" lines
    local mpi=$1 np=$2 mode=$3 prog=${4:-bench} lib="$PWD/$build/$1/libcommcore_pmpi.so" pre=""
    [ "$mode" = before ] && lib="$baseline/$1/libcommcore_pmpi.so"
    [ "$mode" != native ] && pre=$lib
    local off=on; [ "$mode" = off ] && off=off
    if [ "$mpi" = openmpi ]; then
        LD_PRELOAD=$pre COMMCORE_PMPI=$off timeout 300 mpirun.openmpi --allow-run-as-root \
            --oversubscribe -np "$np" -x LD_PRELOAD -x COMMCORE_PMPI "$tmp/$prog.$mpi"
    else
        LD_PRELOAD=$pre COMMCORE_PMPI=$off timeout 300 mpiexec.mpich -np "$np" "$tmp/$prog.$mpi"
    fi
}

for mpi in $mpis; do
    case $mpi in openmpi | mpich) ;; *) echo "compare-pmpi: --mpis takes openmpi and mpich, not $mpi" >&2; exit 2 ;; esac
    "mpicc.$mpi" -O2 -o "$tmp/bench.$mpi" ffi/pmpi/bench/pmpi_bench.c
    "mpicc.$mpi" -O2 -pthread -o "$tmp/threads.$mpi" ffi/pmpi/bench/pmpi_bench_threads.c
    for np in $procs; do
        for ((i = 0; i < runs; i++)); do
            for mode in $modes; do
                # A run that fails or times out leaves its figures out (said on stderr).
                for prog in $programs; do
                    [ "$prog" = bench ] || [ "$np" = 2 ] || continue
                    run "$mpi" "$np" "$mode" "$prog" | sed "s/^/$mpi $np $mode /" >>"$tmp/raw" ||
                        echo "compare-pmpi: $mpi $np $mode $prog: a run failed" >&2
                done
            done
        done
    done
done

[ -z "$keep" ] || cp "$tmp/raw" "$keep"
python3 - "$tmp/raw" "$json" <<'PY'
import json, math, statistics, sys
raw, as_json = sys.argv[1], sys.argv[2] == "1"
times = {}
for line in open(raw):
    mpi, np, mode, figure, us = line.split()
    times.setdefault((mpi, int(np), figure), {}).setdefault(mode, []).append(float(us))
def group(figure):
    if figure.startswith("threads"):
        return "threads"
    if figure in ("dup_free", "split_free", "intercomm_merge_free"):
        return "creation"
    return "v" if "v_" in figure else "collective"
rows, summary = [], {}
for (mpi, np, figure), by in times.items():
    if "native" not in by or "commcore" not in by:
        continue
    med = {m: statistics.median(v) for m, v in by.items()}
    ratio = med["commcore"] / med["native"] if med["native"] > 0 else float("inf")
    med.setdefault("off", float("nan"))
    off = med["off"] / med["native"] if med["native"] > 0 else float("inf")
    if "before" in med:
        extra = {"before_us": round(med["before"], 3),
                 "before_ratio": round(med["before"] / med["native"], 3) if med["native"] > 0
                 else float("inf")}
    else:
        extra = {}
    rows.append({**extra, "figure": figure, "group": group(figure), "procs": np, "mpi": mpi,
                 "native_us": round(med["native"], 3),
                 "commcore_us": round(med["commcore"], 3), "ratio": round(ratio, 3),
                 "off_us": round(med["off"], 3), "off_ratio": round(off, 3)})
    s = summary.setdefault(mpi + " " + group(figure), {"ratios": [], "off": []})
    s["ratios"].append(ratio)
    s["off"].append(off)
def gmean(v):
    v = [x for x in v if x == x]  # no "off" runs: nan
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")
out = {"rows": rows, "summary": {mpi: {
    "geomean_ratio": round(gmean(s["ratios"]), 3), "max_ratio": round(max(s["ratios"]), 3),
    "off_geomean_ratio": round(gmean(s["off"]), 3),
    "off_max_ratio": round(max([x for x in s["off"] if x == x] or [float("nan")]), 3),
    "rows": len(s["ratios"])} for mpi, s in summary.items()}}
if as_json:
    print(json.dumps(out, indent=1))
else:
    for r in rows:
        before = "  before {before_us:10.2f} us ratio {before_ratio:6.2f}".format(**r) if "before_us" in r else ""
        print("{mpi:8} {procs} {figure:26} native {native_us:10.2f} us  commcore {commcore_us:10.2f} us  ratio {ratio:6.2f}  off {off_ratio:5.2f}".format(**r) + before)
    for mpi, s in out["summary"].items():
        print(mpi, s)
PY
