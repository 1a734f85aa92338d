#!/usr/bin/env bash
# Installs the C ABI under PREFIX: PREFIX/lib/libcommcore.{so,a}, PREFIX/include/commcore.h
# and PREFIX/lib/pkgconfig/commcore.pc, so that
#   PKG_CONFIG_PATH=PREFIX/lib/pkgconfig cc prog.c $(pkg-config --cflags --libs commcore)
# builds (add --static for the static library). Also builds and installs the PMPI library
# once per MPI, PREFIX/lib/openmpi/libcommcore_pmpi.so and PREFIX/lib/mpich/libcommcore_pmpi.so
# (installing Debian's Open MPI and MPICH first when they are missing), and the MPI library
# that MPICH-built programs load, PREFIX/lib/commcore-mpi/libmpich.so.12 (and libmpi.so.12):
#   LD_LIBRARY_PATH=PREFIX/lib/commcore-mpi commcore run -n 4 ./prog
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-}
if [ -z "$prefix" ]; then
    echo "usage: scripts/install-c.sh PREFIX" >&2
    exit 2
fi
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
cargo build --release --locked -q -p commcore-ffi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 target/release/libcommcore.so "$prefix/lib/"
install -m 0644 target/release/libcommcore.a "$prefix/lib/"
install -m 0644 ffi/include/commcore.h "$prefix/include/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" ffi/commcore.pc.in \
    >"$prefix/lib/pkgconfig/commcore.pc"
if ! command -v mpicc.openmpi >/dev/null || ! command -v mpicc.mpich >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        openmpi-bin libopenmpi-dev mpich libmpich-dev
fi
ffi/pmpi/build.sh target/release/libcommcore.a target/pmpi
for mpi in openmpi mpich; do
    install -d "$prefix/lib/$mpi"
    install -m 0755 "target/pmpi/$mpi/libcommcore_pmpi.so" "$prefix/lib/$mpi/"
done
ffi/mpi/build.sh "$prefix/lib/commcore-mpi" --release
echo "installed libcommcore $version under $prefix"
