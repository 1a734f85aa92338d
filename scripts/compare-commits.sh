#!/usr/bin/env bash
# Compares the point-to-point and collective figures of two commits, built side by side and
# run interleaved.
#
#   ./scripts/compare-commits.sh OLD NEW      # e.g. main~3 HEAD
#
# Each commit is checked out in its own git worktree under $COMPARE_DIR (default
# ${TMPDIR:-/tmp}/commcore-compare) and built in release mode with a target directory of its
# own (kept there, so a second comparison builds nothing). Then, RUNS times (default 5),
# OLD and NEW take turns: `commcore bench pt2pt` (over shared memory and over TCP) and
# `commcore bench coll-procs --procs P` for P in $PROCS (default "2 4 8"). With
# KEEP_RESULTS=FILE, every run's figures are kept there, one JSON line each. It prints, per
# figure, the median of each side, NEW/OLD, and "worse" where NEW is more than 5 % slower
# (higher latency, or lower bandwidth or message rate); "-" where one side has no figure.
# Timing on a loaded machine is noisy: read the ratios with that in mind.
# Needs git, cargo and jq.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 OLD NEW (two commits, e.g. main~3 HEAD)" >&2
    exit 2
fi
command -v jq >/dev/null || { echo "$0: needs jq (apt-get install jq)" >&2; exit 2; }

repo=$(git rev-parse --show-toplevel)
runs=${RUNS:-5}
procs=${PROCS:-2 4 8}
work=${COMPARE_DIR:-${TMPDIR:-/tmp}/commcore-compare}
mkdir -p "$work"
results=$(mktemp "$work/results.XXXXXX")

resolve() {
    git -C "$repo" rev-parse --verify --quiet "$1^{commit}" ||
        { echo "$0: $1 is not a commit of $repo" >&2; exit 2; }
}
old=$(resolve "$1")
new=$(resolve "$2")

worktrees=()
cleanup() {
    for dir in "${worktrees[@]}"; do
        git -C "$repo" worktree remove --force "$dir" 2>/dev/null || true
    done
    if [ -n "${KEEP_RESULTS:-}" ]; then cp "$results" "$KEEP_RESULTS"; fi
    rm -f "$results"
}
trap cleanup EXIT

# Builds commit $1 and prints the path of its commcore binary.
build() {
    local dir="$work/tree-$1" target="$work/target-$1"
    if [ ! -d "$dir" ]; then
        git -C "$repo" worktree add --detach --quiet "$dir" "$1" >&2
    fi
    echo "building $1 in $dir" >&2
    (cd "$dir" && CARGO_TARGET_DIR="$target" cargo build --release --quiet -p commcore-cli --bin commcore >&2)
    echo "$target/release/commcore"
}
# Listed here, not in build(): that runs in a subshell.
worktrees=("$work/tree-$old" "$work/tree-$new")
old_bin=$(build "$old")
new_bin=$(build "$new")

# Appends one line {side, key, unit, value} per number of a benchmark's JSON.
record() {
    local side=$1 name=$2 json=$3
    jq -c --arg side "$side" --arg name "$name" '.figures[] | . as $f | to_entries[]
        | select((.value | type == "number") and .key != "bytes")
        | {side: $side, key: ($name + " " + $f.figure + (if .key == "latency" then "" else " " + .key end)),
           unit: $f.unit, value: .value}' <<<"$json" >>"$results"
}

for run in $(seq 1 "$runs"); do
    for side in old new; do
        bin=$old_bin
        [ "$side" = new ] && bin=$new_bin
        echo "run $run/$runs: $side" >&2
        record "$side" pt2pt "$(timeout 600 "$bin" bench pt2pt --json --rounds 1)"
        record "$side" pt2pt-tcp "$(timeout 600 "$bin" bench pt2pt --transport tcp --json --rounds 1)"
        for p in $procs; do
            record "$side" "coll-procs@$p" "$(timeout 600 "$bin" bench coll-procs --procs "$p" --json)"
        done
    done
done

echo "OLD $old"
echo "NEW $new"
echo "runs $runs (medians); ratio = NEW/OLD; worse = more than 5 % slower"
jq -r -s '
    def median: sort | if length == 0 then null
                       elif length % 2 == 1 then .[length / 2 | floor]
                       else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    def shown: if . == null then "-" else (. * 1000 | round / 1000) end;
    group_by(.key)[]
    | . as $rows
    | ($rows[0].unit) as $unit
    | ([$rows[] | select(.side == "old") | .value] | median) as $old
    | ([$rows[] | select(.side == "new") | .value] | median) as $new
    | (if $old == null or $new == null or $old == 0 then null else $new / $old end) as $ratio
    | (if $ratio == null then false
       elif ($unit == "us") then $ratio > 1.05 else $ratio < 0.95 end) as $worse
    | [$rows[0].key, $unit, ($old | shown), ($new | shown), ($ratio | shown),
       (if $worse then "worse" else "" end)]
    | @tsv' "$results" | column -t -s $'\t'
