#!/bin/sh
# Builds the MPI library and places it in OUT_DIR under the names MPICH programs load:
#   ffi/mpi/build.sh OUT_DIR [--release] [--pmix]
# (--pmix: ranks that mpirun.openmpi or srun --mpi=pmix start join through PMIx)
# then: LD_LIBRARY_PATH=OUT_DIR ./program
set -eu
out=${1:?usage: build.sh OUT_DIR [--release]}
profile=debug
flag=
features=
shift
for option in "$@"; do
    case $option in
    --release) profile=release flag=--release ;;
    --pmix) features="--features pmix" ;;
    *) echo "build.sh: unknown option $option" >&2; exit 2 ;;
    esac
done
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# shellcheck disable=SC2086
cargo build -q -p commcore-mpi $flag $features
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$out"
# Replaced, not overwritten: programs running on the old library keep their copy.
cp "$target/$profile/libcommcore_mpi.so" "$out/.libmpich.so.12.new"
mv -f "$out/.libmpich.so.12.new" "$out/libmpich.so.12"
for name in libmpi.so.12 libmpich.so libmpi.so; do
    ln -sf libmpich.so.12 "$out/$name"
done
