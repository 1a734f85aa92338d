#!/usr/bin/env bash
# Instructions executed per lookup on the hot path, counted by callgrind (repeatable where
# wall-clock time is not).
#   scripts/instructions.sh rankmap    {"baseline": n, "direct": n, ..., "address_word":
#                                      {"direct": n, ...}}: one translation plus the load of
#                                      the entry's address, per model, through
#                                      RankMap::entry (top level) and RankMap::address_word
#   scripts/instructions.sh ffi        the C ABI's hot calls against the Rust calls doing the
#                                      same work, exports and library size (see
#                                      ffi/bench/instructions.sh)
# Builds what it needs (release commcore), then runs each model's non-inlined probe a
# million times under callgrind, collecting only inside the probe, and divides.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-}
calls=${CALLS:-1000000}

case "$what" in
rankmap) ;;
ffi) exec ffi/bench/instructions.sh ;;
*)
    echo "usage: scripts/instructions.sh rankmap|ffi" >&2
    exit 2
    ;;
esac

command -v valgrind >/dev/null || {
    echo "instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
}
cargo build --release --locked -q -p commcore-cli --bin commcore
bin=target/release/commcore
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

count() { # model probe-symbol-pattern [via]
    local model=$1 symbol=$2 via=${3:-entry} file="$out/$1-${3:-entry}.out"
    valgrind --tool=callgrind --callgrind-out-file="$file" --toggle-collect="$symbol" \
        "$bin" bench rankmap --probe "$model" --via "$via" --calls "$calls" --json \
        >/dev/null 2>"$out/$model.log" || {
        cat "$out/$model.log" >&2
        exit 1
    }
    local total
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$file")
    [ -n "$total" ] || {
        echo "instructions.sh: no instruction total for $model" >&2
        exit 1
    }
    awk -v t="$total" -v c="$calls" 'BEGIN { printf "%.2f", t / c }'
}

models="direct offset stride blockstride lut mlut"
json="{\"baseline\": $(count baseline '*probe_vc_vcrt*')"
for model in $models; do
    json="$json, \"$model\": $(count "$model" '*::probe_rankmap')"
done
sep=""
json="$json, \"address_word\": {"
for model in $models; do
    json="$json$sep\"$model\": $(count "$model" '*::probe_rankmap_address' address_word)"
    sep=", "
done
echo "$json}}"
