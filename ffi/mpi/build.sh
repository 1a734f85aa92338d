#!/bin/sh
# Builds the MPI library and places it in OUT_DIR under the names MPICH programs load:
#   ffi/mpi/build.sh OUT_DIR [--release]
# then: LD_LIBRARY_PATH=OUT_DIR ./program
set -eu
out=${1:?usage: build.sh OUT_DIR [--release]}
profile=debug
flag=
if [ "${2:-}" = "--release" ]; then profile=release; flag=--release; fi
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
nice -n 10 cargo build -q -p commcore-mpi $flag
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$out"
cp "$target/$profile/libcommcore_mpi.so" "$out/libmpich.so.12"
for name in libmpi.so.12 libmpich.so libmpi.so; do
    ln -sf libmpich.so.12 "$out/$name"
done
