#!/usr/bin/env bash
# Builds libcommcore_pmpi.so once against each installed MPI's mpi.h (their handle types
# differ: Open MPI's are pointers, MPICH's integers):
#   ffi/pmpi/build.sh LIBCOMMCORE_A OUTDIR   ->  OUTDIR/{openmpi,mpich}/libcommcore_pmpi.so
# commcore is linked in statically and its symbols stay hidden, so the library exports only
# the MPI functions it takes over.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib=${1:?usage: build.sh LIBCOMMCORE_A OUTDIR}
out=${2:?usage: build.sh LIBCOMMCORE_A OUTDIR}
cflags=(-std=gnu11 -O2 -g -fPIC -Wall -Wextra -Werror -I"$here/../include")
# MPICH's MPI_STATUSES_IGNORE is a cast constant that gcc 12 misreads as a 0-byte array.
extra_mpich=(-Wno-stringop-overflow)
for mpi in openmpi mpich; do
    cc=mpicc.$mpi
    command -v "$cc" >/dev/null || { echo "build.sh: $cc not found; install lib${mpi}-dev" >&2; exit 1; }
    mkdir -p "$out/$mpi"
    extra=(); [ "$mpi" = mpich ] && extra=("${extra_mpich[@]}")
    "$cc" "${cflags[@]}" "${extra[@]}" -shared -o "$out/$mpi/libcommcore_pmpi.so" "$here"/src/*.c "$lib" \
        -Wl,--exclude-libs,ALL -Wl,--version-script="$here/exports.map" -Wl,--no-undefined -lpthread -ldl -lm
done
