#!/usr/bin/env bash
# `scripts/instructions.sh ffi`: callgrind instruction counts of the C ABI's hot calls against
# core's Rust calls doing the same work, and the shared library's exports and size. Prints
# one JSON object:
#   translate.MODEL: {rust, c_abi, extra}: instructions a call of the Rust probe
#       (RankMap::translate) and of commcore_rankmap_translate, and the difference;
#   step.OP_ALG_64: {rust, c_abi, ratio}: instructions a call of the Rust probe
#       (Schedule::next) and of commcore_schedule_next, averaged over every rank's
#       schedule at 64 ranks (the call returning the end included);
#   exports: {symbols, outside_commcore}; library_bytes: {so, so_stripped, a}.
set -euo pipefail
cd "$(dirname "$0")/../.."
calls=${CALLS:-1000000}
reps=${REPS:-200}

command -v valgrind >/dev/null || {
    echo "instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
}
cargo build --release --locked -q -p commcore-ffi --lib --example probe
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -std=c11 -Wall -Wextra -Werror -Iffi/include ffi/bench/probe.c -L"$PWD/target/release" \
    -lcommcore -Wl,-rpath,"$PWD/target/release" -o "$out/probe-c"
rust=target/release/examples/probe

# count NAME SYMBOL PROGRAM ARGS...: instructions inside SYMBOL per call (the program prints
# its number of calls for `step`; for `translate` it is $calls).
count() {
    local name=$1 symbol=$2 divisor=$3
    shift 3
    local file="$out/$name.out"
    valgrind --tool=callgrind --callgrind-out-file="$file" --toggle-collect="$symbol" \
        "$@" >"$out/$name.stdout" 2>"$out/$name.log" || {
        cat "$out/$name.log" >&2
        exit 1
    }
    [ "$divisor" = printed ] && divisor=$(cat "$out/$name.stdout")
    local total
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$file")
    [ -n "$total" ] || {
        echo "instructions.sh: no instruction total for $name" >&2
        exit 1
    }
    awk -v t="$total" -v c="$divisor" 'BEGIN { printf "%.2f", t / c }'
}

json="{\"translate\": {"
sep=""
for model in direct offset stride blockstride lut mlut; do
    r=$(count "rust-$model" '*probe_translate*' "$calls" "$rust" translate "$model" "$calls")
    c=$(count "c-$model" 'commcore_rankmap_translate' "$calls" "$out/probe-c" translate "$model" "$calls")
    extra=$(awk -v r="$r" -v c="$c" 'BEGIN { printf "%.2f", c - r }')
    json="$json$sep\"$model\": {\"rust\": $r, \"c_abi\": $c, \"extra\": $extra}"
    sep=", "
done
json="$json}, \"step\": {"
sep=""
for op in allreduce bcast; do
    alg=$([ "$op" = allreduce ] && echo recursive_doubling || echo binomial)
    r=$(count "rust-$op" '*probe_step*' printed "$rust" step "$op" 64 "$reps")
    c=$(count "c-$op" 'commcore_schedule_next' printed "$out/probe-c" step "$op" 64 "$reps")
    ratio=$(awk -v r="$r" -v c="$c" 'BEGIN { printf "%.3f", c / r }')
    json="$json$sep\"${op}_${alg}_64\": {\"rust\": $r, \"c_abi\": $c, \"ratio\": $ratio}"
    sep=", "
done
lib=target/release/libcommcore.so
symbols=$(nm -D --defined-only "$lib" | awk '{ print $NF }')
outside=$(grep -vc '^commcore_' <<<"$symbols" || true)
strip -o "$out/stripped.so" "$lib"
json="$json}, \"exports\": {\"symbols\": $(wc -l <<<"$symbols"), \"outside_commcore\": $outside}"
json="$json, \"library_bytes\": {\"so\": $(stat -c %s "$lib"), \"so_stripped\": $(stat -c %s "$out/stripped.so"), \"a\": $(stat -c %s target/release/libcommcore.a)}}"
echo "$json"
