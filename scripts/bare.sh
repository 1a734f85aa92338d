#!/usr/bin/env bash
# Builds the commcore-bare test kernel (platform-bare/kernel), checks that it links no
# allocator and no libc, boots it under QEMU (TCG, no KVM) and reports its figures.
#   scripts/bare.sh           a readable table
#   scripts/bare.sh --json    one JSON object: the kernel's own line under "kernel", .text
#                             bytes of the hot paths and the kernel, boot-to-exit time
# Fails when a forbidden symbol appears, when QEMU's status is not the kernel's success
# (33), when the kernel's line lacks "ok": true, or when the job with its splits needs more
# than 9.5 MB. QEMU is stopped after 60 s.
set -euo pipefail
cd "$(dirname "$0")/.."
json=${1:-}
limit_bytes=9500000

fail() {
    echo "bare.sh: $*" >&2
    exit 1
}

command -v qemu-system-x86_64 >/dev/null ||
    fail "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
(cd platform-bare/kernel && cargo build --release --locked -q)
kernel=platform-bare/kernel/target/x86_64-unknown-none/release/commcore-bare-kernel

# No heap and no libc: nothing left undefined, no dynamic section, no allocator symbol.
undefined=$(nm -u "$kernel" | wc -l)
[ "$undefined" -eq 0 ] || fail "the kernel leaves $undefined symbols undefined: $(nm -u "$kernel")"
readelf -d "$kernel" | grep -q "no dynamic section" || fail "the kernel has a dynamic section"
forbidden='^(malloc|free|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|__libc_.*|__rust_alloc.*|__rust_dealloc|__rust_realloc|__rust_no_alloc_shim_is_unstable.*|__rg_.*|__rdl_.*|_ZN5alloc.*|_RN.*5alloc.*)$'
found=$(nm --format=posix "$kernel" | cut -d' ' -f1 | grep -E "$forbidden" || true)
[ -z "$found" ] || fail "allocator or libc symbols in the kernel: $found"
symbols=$(nm "$kernel" | wc -l)

size_of() { # symbol -> bytes of its code
    local hex
    hex=$(nm -S "$kernel" | awk -v s="$1" '$4 == s { print $2; exit }')
    [ -n "$hex" ] || fail "symbol $1 missing from the kernel"
    echo $((16#$hex))
}

# A function and every function it calls directly or through its callees (panics left
# out): the code one call may run.
reach_bytes() {
    local todo=("$1") seen=" " total=0 sym callee
    while [ ${#todo[@]} -gt 0 ]; do
        sym=${todo[0]}
        todo=("${todo[@]:1}")
        case "$seen" in *" $sym "*) continue ;; esac
        seen="$seen$sym "
        total=$((total + $(size_of "$sym")))
        for callee in $(objdump -d --no-show-raw-insn --disassemble="$sym" "$kernel" |
            sed -n 's/.*call *[0-9a-f]* <\([^>+]*\)>.*/\1/p' | sort -u | grep -v panic || true); do
            todo+=("$callee")
        done
    done
    echo "$total"
}

translate=$(size_of commcore_hot_translate)
lookup=$(size_of commcore_hot_cid_lookup)
step=$(size_of commcore_hot_schedule_step)
translate_reach=$(reach_bytes commcore_hot_translate)
lookup_reach=$(reach_bytes commcore_hot_cid_lookup)
step_reach=$(reach_bytes commcore_hot_schedule_step)
text=$(size -A "$kernel" | awk '$1 == ".text" { print $2 }')
bss=$(size -A "$kernel" | awk '$1 == ".bss" { print $2 }')

log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s%N)
status=0
timeout 60 qemu-system-x86_64 -accel tcg -kernel "$kernel" -m 64M -display none \
    -serial stdio -monitor none -no-reboot \
    -device isa-debug-exit,iobase=0xf4,iosize=0x04 >"$log" 2>&1 || status=$?
end=$(date +%s%N)
elapsed_ms=$(((end - start) / 1000000))
line=$(grep '^{' "$log" | tail -1 || true)
[ "$status" -eq 33 ] || {
    cat "$log" >&2
    fail "QEMU exited with status $status, not 33 (the kernel's success); 124 is the timeout"
}
case "$line" in *'"ok": true}') ;; *)
    cat "$log" >&2
    fail "the kernel did not report ok"
    ;;
esac
field() { echo "$line" | sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p"; }
job_bytes=$(field job_with_splits_bytes)
[ "$job_bytes" -le "$limit_bytes" ] ||
    fail "the job with its splits takes $job_bytes bytes, more than $limit_bytes"

if [ "$json" = "--json" ]; then
    printf '{"kernel": %s, "job_with_splits_limit_bytes": %d, "text_bytes": {"kernel": %d, "translate": %d, "translate_with_callees": %d, "cid_lookup": %d, "cid_lookup_with_callees": %d, "schedule_step": %d, "schedule_step_with_callees": %d}, "bss_bytes": %d, "symbols": %d, "allocator_or_libc_symbols": 0, "undefined_symbols": 0, "qemu_status": %d, "boot_to_exit_ms": %d, "ok": true}\n' \
        "$line" "$limit_bytes" "$text" "$translate" "$translate_reach" "$lookup" "$lookup_reach" \
        "$step" "$step_reach" "$bss" "$symbols" "$status" "$elapsed_ms"
    exit 0
fi
printf '%-52s %12s\n' "figure" "value"
printf '%-52s %12d\n' "address vector bytes ($(field processes) processes)" "$(field av_bytes)" \
    "rank maps of world + $(field splits) odd/even splits, bytes" "$(field split_map_bytes)" \
    "job with its splits, bytes (limit $limit_bytes)" "$job_bytes" \
    "reversed communicator, bytes" "$(field reversed_bytes)" \
    "random communicator, bytes" "$(field random_bytes)" \
    "ranks translated and checked" "$(field translations_checked)" \
    "CID creations (and frees) per algorithm, 64 ranks" "$(field cid_creations_per_algorithm)" \
    "collectives run (17 ranks)" "$(field coll_runs)" \
    ".text of translate (with callees)" "$translate_reach" \
    ".text of CID store lookup (with callees)" "$lookup_reach" \
    ".text of one schedule step (wrapper)" "$step" \
    ".text of one schedule step (with callees)" "$step_reach" \
    ".text of the kernel" "$text" \
    ".bss of the kernel" "$bss" \
    "boot to exit under TCG, ms" "$elapsed_ms"
echo "no allocator or libc symbol among $symbols; QEMU exit status $status; ok"
