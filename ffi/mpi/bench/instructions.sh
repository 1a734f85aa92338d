#!/usr/bin/env bash
# Instructions per 8 B message through the MPI library, counted by callgrind exactly as
# `scripts/instructions.sh peers` counts the runtime: scripts/peers/msgpath.c built with
# mpicc.mpich, two ranks under `commcore run` on the release library, collecting only
# inside its probe_* functions.
#   ffi/mpi/bench/instructions.sh [LIBRARY_DIR]
#       {"send": n, "recv": n, "window_send": n, "window_recv": n, "posted_recv": n}
# posted_recv: per message of a window of MPI_Irecv posted before the sends, and its
# MPI_Waitall (the message-rate benchmark's receive side). LIBRARY_DIR: a library built
# already (ffi/mpi/build.sh DIR --release), to compare builds; default: build
# target/mpi-release.
set -euo pipefail
cd "$(dirname "$0")/../../.."
if [ $# -gt 0 ]; then
    lib=$(cd "$1" && pwd)
else
    lib=$PWD/target/mpi-release
    nice -n 10 ffi/mpi/build.sh "$lib" --release
fi
nice -n 10 cargo build --release --locked -q -p commcore-cli --bin commcore
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mpicc.mpich -O2 -Wall -o "$out/msgpath" scripts/peers/msgpath.c
for mode in single window posted; do
    COMMCORE_MPI_LIBRARY="$lib" timeout 300 target/release/commcore run -n 2 --timeout 250 -- \
        valgrind -q --tool=callgrind --toggle-collect='*probe_*' \
        --callgrind-out-file="$out/$mode.%q{COMMCORE_RANK}" "$out/msgpath" "$mode" \
        >/dev/null 2>"$out/log" || {
        cat "$out/log" >&2
        exit 1
    }
done
per() { awk -v n="$2" '/^totals:/ { printf "%.0f", $2 / n; exit }' "$out/$1"; }
printf '{"send": %s, "recv": %s, "window_send": %s, "window_recv": %s, "posted_recv": %s}\n' \
    "$(per single.0 2000)" "$(per single.1 2000)" "$(per window.0 12800)" \
    "$(per window.1 12800)" "$(per posted.1 12800)"
