#!/usr/bin/env bash
# Instructions executed per lookup on the hot path, counted by callgrind (repeatable where
# wall-clock time is not).
#   scripts/instructions.sh rankmap    {"baseline": n, "direct": n, ..., "address_word":
#                                      {"direct": n, ...}}: one translation plus the load of
#                                      the entry's address, per model, through
#                                      RankMap::entry (top level) and RankMap::address_word
#   scripts/instructions.sh verbs      {"verbs_send": n, "verbs_recv": n}: one 8 B send, and one
#                                      receive of an 8 B message already there, on the verbs
#                                      transport over the in-process fabric, the fabric's own
#                                      instructions excluded (collection is off inside it)
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
rankmap | verbs) ;;
ffi) exec ffi/bench/instructions.sh ;;
*)
    echo "usage: scripts/instructions.sh rankmap|verbs|ffi" >&2
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

if [ "$what" = verbs ]; then
    vcalls=${CALLS:-100000}
    verbs_count() { # send|recv: the probe's instructions less the fabric's inside it
        local file="$out/verbs-$1.out"
        valgrind --tool=callgrind --dump-line=no --callgrind-out-file="$file" --toggle-collect="*probe_verbs_$1*" \
            "$bin" bench verbs --probe "$1" --calls "$vcalls" --json >/dev/null 2>"$out/verbs.log" || {
            cat "$out/verbs.log" >&2
            exit 1
        }
        local total fabric
        # The probe's total, and the inclusive cost of its calls into the fabric's device
        # (from the call arcs of the profile; callgrind's names are compressed as "(id) name").
        read -r total fabric < <(python3 - "$file" <<'PY'
import re, sys
names, fn, cfn, arc, total, fabric = {}, "", "", False, 0, 0
def name(tok):
    m = re.match(r"\((\d+)\)(?: (.*))?", tok)
    if not m:
        return tok
    if m.group(2):
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), "?")
for line in open(sys.argv[1]):
    if line.startswith("fn="):
        fn = name(line[3:].strip())
    elif line.startswith("cfn="):
        cfn = name(line[4:].strip())
    elif line.startswith("calls="):
        arc = True
    elif line.startswith(("summary:", "totals:")):
        total = int(line.split()[1])
    elif arc:
        arc = False
        cost = line.split()
        if "FabricDevice as" in cfn and "FabricDevice as" not in fn and len(cost) > 1:
            fabric += int(cost[1])
print(total, fabric)
PY
        )
        awk -v t="$total" -v f="$fabric" -v c="$vcalls" 'BEGIN { printf "%.1f", (t - f) / c }'
    }
    echo "{\"verbs_send\": $(verbs_count send), \"verbs_recv\": $(verbs_count recv)}"
    exit 0
fi

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
