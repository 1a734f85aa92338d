#!/bin/sh
# The MPI library's tests: its constants against MPICH's mpi.h, the generated list of
# calls not provided yet, then our C programs (built with mpicc.mpich, unmodified) on
# commcore's library under `commcore run` at 1, 2, 3 and 4 ranks and under MPICH's
# mpiexec at 4, each with a timeout. Exits non-zero on any failure.
#   ffi/mpi/tests/run.sh [OUT_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$root/target/mpi}
bin="$out/tests"
failed=0
fail() { echo "FAILED: $*"; failed=$((failed + 1)); }

cd "$root"
"$here/consts.sh" || fail "constants differ from mpi.h"

# The stubs are up to date with the sources and the header.
cp ffi/mpi/src/unsupported.rs "$out.unsupported.rs" 2>/dev/null || { mkdir -p "$(dirname "$out")"; cp ffi/mpi/src/unsupported.rs "$out.unsupported.rs"; }
ffi/mpi/gen-unsupported.sh >/dev/null
cmp -s ffi/mpi/src/unsupported.rs "$out.unsupported.rs" ||
    fail "src/unsupported.rs was stale: rerun ffi/mpi/gen-unsupported.sh and commit it"
rm -f "$out.unsupported.rs"
cp ffi/mpi/src/type_names.rs "$out.type_names.rs"
ffi/mpi/gen-type-names.sh >/dev/null
cmp -s ffi/mpi/src/type_names.rs "$out.type_names.rs" ||
    fail "src/type_names.rs was stale: rerun ffi/mpi/gen-type-names.sh and commit it"
rm -f "$out.type_names.rs"

ffi/mpi/build.sh "$out"
# Every function MPICH's headers declare is there: no program fails to load for a symbol.
inc=$(mpicc.mpich -show | tr ' ' '\n' | sed -n 's/^-I//p' | head -n 1)
cat "$inc/mpi_proto.h" "$inc/mpio.h" | grep -v '^typedef' |
    sed -nE 's/^[A-Za-z_][A-Za-z0-9_ ]*[ *](P?MPI_[A-Za-z0-9_]+) *\(.*/\1/p' | sort -u >"$out.declared"
nm -D --defined-only "$out/libmpich.so.12" | awk '{print $3}' | sort -u >"$out.exported"
missing=$(comm -23 "$out.declared" "$out.exported")
if [ -n "$missing" ]; then
    fail "not exported: $(echo "$missing" | head -n 5 | tr '\n' ' ')"
else
    echo "symbols: PASS ($(wc -l <"$out.declared") MPI_/PMPI_ functions of mpi.h exported)"
fi
rm -f "$out.declared" "$out.exported"

[ -x target/debug/commcore ] || nice -n 10 cargo build -q -p commcore-cli
mkdir -p "$bin"
for prog in p2p coll icoll comm env types negative_bounds inter topo threads spawn ports sessions large_count fatal; do
    mpicc.mpich -Wall -Wno-stringop-overflow -pthread -o "$bin/$prog" "$here/$prog.c"
done
# The programs load MPICH's soname and find ours first.
LD_LIBRARY_PATH="$out" ldd "$bin/p2p" | grep -q "libmpich.so.12 => $out/" ||
    fail "p2p does not load $out/libmpich.so.12"

# Spawn and the name service need commcore's launcher.
for n in 1 2 3 4; do
    for prog in p2p coll icoll comm env types negative_bounds inter topo threads spawn ports sessions large_count; do
        LD_LIBRARY_PATH="$out" timeout 120 target/debug/commcore run -n "$n" "$bin/$prog" ||
            fail "$prog at $n ranks"
    done
done

# MPI_ERRORS_ARE_FATAL: the job ends, the message names the call.
if LD_LIBRARY_PATH="$out" timeout 60 target/debug/commcore run -n 2 "$bin/fatal" 2>"$bin/fatal.err"; then
    fail "fatal: an error under MPI_ERRORS_ARE_FATAL did not end the job"
elif ! grep -q "MPI_Send: rank" "$bin/fatal.err" || grep -q "reached the end" "$bin/fatal.err"; then
    cat "$bin/fatal.err"
    fail "fatal: the message does not name MPI_Send"
else
    echo "fatal: PASS (job aborted naming MPI_Send)"
fi

# MPICH's own launcher starts the same binaries on our library (the runtime joins hydra's
# PMI-1 job).
if command -v mpiexec.mpich >/dev/null; then
    for prog in p2p coll icoll comm env types negative_bounds inter topo threads spawn ports sessions large_count; do
        timeout 120 mpiexec.mpich -n 4 -genv LD_LIBRARY_PATH "$out" "$bin/$prog" ||
            fail "$prog under mpiexec.mpich -n 4"
    done
fi

# Open MPI's mpirun starts them too, on the library built with PMIx.
if command -v mpirun.openmpi >/dev/null && dpkg -s libpmix-dev >/dev/null 2>&1; then
    ffi/mpi/build.sh "$out-pmix" --pmix
    for prog in p2p coll comm inter spawn; do
        OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp timeout -k 5 120 mpirun.openmpi \
            --allow-run-as-root --oversubscribe -x LD_LIBRARY_PATH="$out-pmix" -n 4 "$bin/$prog" ||
            fail "$prog under mpirun.openmpi -n 4"
    done
fi

if [ "$failed" -ne 0 ]; then
    echo "MPI library tests: $failed failed"
    exit 1
fi
echo "MPI library tests: all passed"
