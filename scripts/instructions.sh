#!/usr/bin/env bash
# Instructions executed per lookup on the hot path, counted by callgrind (repeatable where
# wall-clock time is not).
#   scripts/instructions.sh rankmap    {"baseline": n, "direct": n, ..., "address_word":
#                                      {"direct": n, ...}, "batch": {"direct": n, ...}}: one
#                                      translation plus the load of the entry's address, per
#                                      model, through RankMap::entry (top level) and
#                                      RankMap::address_word; and instructions per rank of
#                                      RankMap::translate_batch over windows of 64 ranks
#   scripts/instructions.sh verbs      {"verbs_send": n, "verbs_recv": n, "shm_send": n,
#                                      "shm_recv": n}: one 8 B send, and one receive of an 8 B
#                                      message already there, on the verbs transport over the
#                                      in-process fabric (the fabric's own instructions
#                                      excluded), and the same through the runtime over shared
#                                      memory (as `peers` counts commcore)
#   scripts/instructions.sh peers      (or pt2pt, the issue's name for it)
#                                      {"commcore": {...}, "open_mpi": {...}, "mpich": {...}}, each
#                                      {"send", "recv", "window_send", "window_recv"}: the
#                                      library's instructions per 8 B message, two ranks on one
#                                      node (scripts/peers/msgpath.c, examples/msgpath.rs):
#                                      a send, a receive of a message already there, and
#                                      per message of a 64-message isend or irecv window;
#                                      posted_recv: per message of a window of irecv posted
#                                      before the sends, and its wait, the barriers between
#                                      having moved the messages; posted_in_ring: the same with
#                                      the window still in the transport when the wait starts
#                                      (the message-rate benchmark's receive side)
#   scripts/instructions.sh cidmask    {"ours": {op: {fill: n}}, "bitvec": {...}}: the CID space's
#                                      mask operations (scan, claim, lookup, release; see
#                                      cli/src/bench/cidmask.rs) on a 2,048-CID space at
#                                      fills empty, half and full, written on core's words
#                                      and on bitvec; a readable table goes to stderr
#   scripts/instructions.sh guest      {"home": {"send": n, "recv": n}, "spawned": {...}}: one 8 B
#                                      send, and one receive of an 8 B message already there,
#                                      to a rank of this job and to a spawned child (a guest,
#                                      through a bridge), on rank 0 (examples/msgpath_guest.rs)
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
rankmap | verbs | peers | cidmask | guest) ;;
pt2pt) what=peers ;;
ffi) exec ffi/bench/instructions.sh ;;
*)
    echo "usage: scripts/instructions.sh rankmap|verbs|peers|pt2pt|cidmask|guest|ffi" >&2
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

count() { # model probe-symbol-pattern [via [calls [ranks-per-call]]]
    local model=$1 symbol=$2 via=${3:-entry} file="$out/$1-${3:-entry}.out"
    local n=${4:-$calls} per=${5:-1}
    valgrind --tool=callgrind --callgrind-out-file="$file" --toggle-collect="$symbol" \
        "$bin" bench rankmap --probe "$model" --via "$via" --calls "$n" --json \
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
    awk -v t="$total" -v c="$n" -v p="$per" 'BEGIN { printf "%.2f", t / (c * p) }'
}

# The per-message probes of msgpath (peers, and the shared-memory side of verbs).
grind() { # name rank-variable launcher...: runs both modes, prints the JSON object
    local name=$1 rank_var=$2
    shift 2
    for mode in single window posted posted-ring; do
        timeout 300 "$@" valgrind -q --tool=callgrind --toggle-collect='*probe_*' \
            --callgrind-out-file="$out/$name-$mode.%q{$rank_var}" \
            "$(msgpath_of "$name")" "$mode" >/dev/null 2>"$out/$name.log" || {
            cat "$out/$name.log" >&2
            exit 1
        }
    done
    per() { awk -v n="$2" '/^totals:/ { printf "%.0f", $2 / n; exit }' "$out/$name-$1"; }
    printf '{"send": %s, "recv": %s, "window_send": %s, "window_recv": %s, "posted_recv": %s, "posted_in_ring": %s}' \
        "$(per single.0 2000)" "$(per single.1 2000)" "$(per window.0 12800)" \
        "$(per window.1 12800)" "$(per posted.1 12800)" "$(per posted-ring.1 12800)"
}
msgpath_of() {
    case $1 in
    commcore) echo target/release/examples/msgpath ;;
    open_mpi) echo "$out/msgpath-ompi" ;;
    mpich) echo "$out/msgpath-mpich" ;;
    esac
}

if [ "$what" = peers ]; then
    cargo build --release --locked -q -p commcore-linux --example msgpath
    mpicc.openmpi -O2 -Wall -o "$out/msgpath-ompi" scripts/peers/msgpath.c
    mpicc.mpich -O2 -Wall -o "$out/msgpath-mpich" scripts/peers/msgpath.c
    ours=$(grind commcore COMMCORE_RANK "$bin" run -n 2 --timeout 250 --)
    ompi=$(OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp grind open_mpi OMPI_COMM_WORLD_RANK \
        mpirun.openmpi --allow-run-as-root --oversubscribe -n 2)
    mpich=$(grind mpich PMI_RANK mpiexec.mpich -n 2)
    echo "{\"commcore\": $ours, \"open_mpi\": $ompi, \"mpich\": $mpich}"
    exit 0
fi

if [ "$what" = guest ]; then
    cargo build --release --locked -q -p commcore-linux --example msgpath_guest
    guest_count() { # mode probe: instructions per call of the probe on rank 0
        local file="$out/guest-$1-$2"
        timeout 300 "$bin" run -n "$([ "$1" = home ] && echo 2 || echo 1)" --timeout 250 -- \
            valgrind -q --tool=callgrind --toggle-collect="*probe_$2*" \
            --callgrind-out-file="$file.%q{COMMCORE_RANK}" target/release/examples/msgpath_guest \
            "$1" >/dev/null 2>"$out/guest.log" || {
            cat "$out/guest.log" >&2
            exit 1
        }
        awk '/^totals:/ { printf "%.0f", $2 / 2000; exit }' "$file.0"
    }
    json="{"
    for mode in home spawned; do
        json="$json\"$mode\": {\"send\": $(guest_count $mode send), \"recv\": $(guest_count $mode recv)}, "
    done
    echo "${json%, }}"
    exit 0
fi

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
    cargo build --release --locked -q -p commcore-linux --example msgpath
    shm=$(grind commcore COMMCORE_RANK "$bin" run -n 2 --timeout 250 --)
    shm_send=$(printf '%s' "$shm" | jq .send)
    shm_recv=$(printf '%s' "$shm" | jq .recv)
    echo "{\"verbs_send\": $(verbs_count send), \"verbs_recv\": $(verbs_count recv), \"shm_send\": $shm_send, \"shm_recv\": $shm_recv}"
    exit 0
fi

if [ "$what" = cidmask ]; then
    # Each call's count is exact (no data-dependent work between calls): few calls suffice.
    mcalls=${CALLS:-20000}
    mask_count() { # form fill op
        local file="$out/cidmask-$1-$2-$3.out"
        valgrind --tool=callgrind --dump-line=no --callgrind-out-file="$file" \
            --toggle-collect="*probe_cidmask_$3*" "$bin" bench cidmask --probe "$1" \
            --fill "$2" --calls "$mcalls" --json >/dev/null 2>"$out/cidmask.log" || {
            cat "$out/cidmask.log" >&2
            exit 1
        }
        awk -v c="$mcalls" '/^(summary|totals):/ { printf "%.1f", $2 / c; exit }' "$file"
    }
    "$bin" bench cidmask --json >/dev/null # the two forms must agree before they are counted
    json="{"
    for form in ours bitvec; do
        json="$json\"$form\": {"
        for op in scan claim lookup release; do
            json="$json\"$op\": {"
            for fill in empty half full; do
                json="$json\"$fill\": $(mask_count $form $fill $op), "
            done
            json="${json%, }}, "
        done
        json="${json%, }}, "
    done
    json="${json%, }}"
    echo "$json"
    # The table: per operation and fill, each form's count and what bitvec adds.
    printf '%s' "$json" | jq -r '
        def pad($n): tostring | (" " * $n) + . | .[-$n:];
        "op       fill      ours  bitvec  bitvec-ours",
        (["scan", "claim", "lookup", "release"][] as $op | ["empty", "half", "full"][] as $f
         | "\($op + " " * 9 | .[:9])\($f + " " * 7 | .[:7])\(.ours[$op][$f] | pad(6))\(
             .bitvec[$op][$f] | pad(8))\(.bitvec[$op][$f] - .ours[$op][$f] | pad(13))")' >&2
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
# The batch path: windows of 64 ranks, as many ranks in all as the single probes translate.
sep=""
json="$json}, \"batch\": {"
for model in $models; do
    json="$json$sep\"$model\": $(count "$model" '*::probe_rankmap_batch' batch $((calls / 64)) 64)"
    sep=", "
done
echo "$json}}"
