#!/usr/bin/env bash
# The threads test under ThreadSanitizer, with commcore and the PMPI library instrumented:
#   ffi/pmpi/tests/tsan.sh [ITERATIONS] [PROCS]      (default 400 iterations, 3 processes)
# Open MPI only: Debian's MPICH 4.0.2 segfaults under libtsan without this library too.
# The hosts are not instrumented, so their synchronization (request completion, progress by
# another thread) is invisible: a report whose two accesses are the host's and ours (the
# host's progress unpacked into a buffer a thread then reads) is the host's edge, not a
# race of ours. The script fails on a data race whose two accesses are both in this
# library, or a lock-order inversion through a mutex it takes; it prints the rest by kind.
# Needs nightly with rust-src (-Zbuild-std instruments std's locks and atomics too).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../../.."
iterations=${1:-400} procs=${2:-3}
out="$root/target/tsan"
mkdir -p "$out/logs"
rm -f "$out"/logs/*
RUSTFLAGS="-Zsanitizer=thread -Cdebuginfo=1" cargo +nightly build -Zbuild-std --release --locked \
    --target x86_64-unknown-linux-gnu -p commcore-ffi --target-dir "$out/cargo" \
    --manifest-path "$root/Cargo.toml" >&2
# gcc 12's libtsan has no __tsan_memcpy family, which rustc's instrumentation calls; its
# memcpy interceptor does the same checks.
cat >"$out/shim.c" <<'EOF'
#include <string.h>
void *__tsan_memcpy(void *d, const void *s, size_t n) { return memcpy(d, s, n); }
void *__tsan_memmove(void *d, const void *s, size_t n) { return memmove(d, s, n); }
void *__tsan_memset(void *d, int c, size_t n) { return memset(d, c, n); }
EOF
mpicc.openmpi -std=gnu11 -O1 -g -fPIC -fsanitize=thread -I"$here/../../include" -shared \
    -o "$out/libcommcore_pmpi.so" "$here"/../src/*.c "$out/shim.c" \
    "$out/cargo/x86_64-unknown-linux-gnu/release/libcommcore.a" -Wl,--exclude-libs,ALL \
    -Wl,--version-script="$here/../exports.map" -lpthread -ldl -lm
mpicc.openmpi -std=gnu11 -O1 -g -pthread -o "$out/threads" "$here/threads.c"
tsan=$(gcc -print-file-name=libtsan.so)
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
# Exit code 66 is TSan's "reports were made"; the logs decide.
LD_PRELOAD="$tsan:$out/libcommcore_pmpi.so" TSAN_OPTIONS="log_path=$out/logs/r history_size=5" \
    COMMCORE_PMPI_REPORT=1 timeout 900 mpirun.openmpi --allow-run-as-root --oversubscribe \
    -np "$procs" -x LD_PRELOAD -x TSAN_OPTIONS -x COMMCORE_PMPI_REPORT "$out/threads" \
    "$iterations" 2>"$out/logs/mpirun.err" | grep '^threads:' || true
python3 - "$out"/logs/r.* <<'PY'
import collections, re, sys
kinds, ours = collections.Counter(), []
frame = re.compile(r"#\d+ (\S+) (\S+) \(([^)]+)\)")
def first(section):  # the first frame that is not the sanitizer's or the shim's
    for f in frame.findall(section):
        if "libtsan" not in f[2] and "shim.c" not in f[1]:
            return f
for path in sys.argv[1:]:
    for rep in open(path).read().split("==================")[1:]:
        m = re.search(r"WARNING: ThreadSanitizer: (.+?) \(pid", rep)
        if not m:
            continue
        sections = re.split(r"\n\s*\n", rep)
        tops = [first(s) for s in sections[:2]]
        mine = [bool(t) and "libcommcore_pmpi" in t[2] for t in tops]
        if m.group(1) == "data race" and all(mine):
            ours.append(rep)
        locked = re.findall(r"#0 pthread_mutex_(?:try)?lock[^\n]*\n\s*#1 \S+ \S+ \(([^)]+)\)", rep)
        if m.group(1).startswith("lock-order") and any("libcommcore_pmpi" in l for l in locked):
            ours.append(rep)
        kinds[(m.group(1), "ours" if all(mine) else "ours and host's" if any(mine) else "host's")] += 1
for (kind, whose), n in sorted(kinds.items()):
    print(f"tsan: {n:6} {kind}: {whose}")
for rep in ours[:5]:
    print(rep)
print(f"tsan: {len(ours)} reports of this library's own")
sys.exit(1 if ours else 0)
PY
