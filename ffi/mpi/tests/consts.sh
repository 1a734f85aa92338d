#!/bin/sh
# Proves that the library's constants (src/consts.rs) equal those of MPICH's mpi.h: writes
# a C program that compares each of ours with the header's, builds it with mpicc.mpich and
# runs it. Exits non-zero on any difference.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
    echo '#include <mpi.h>'
    echo '#include <stdio.h>'
    echo '#include <stddef.h>'
    echo 'static int bad = 0, n = 0;'
    echo 'static void same(const char *name, long theirs, long ours) {'
    printf '%s\n' '    n++; if (theirs != ours) { bad++; printf("%s: mpi.h %#lx, ours %#lx\n", name, theirs, ours); } }'
    echo 'int main(void) {'
    # Rust literals to C: no digit separators; `0x..._u32 as c_int` is an int of that bit pattern.
    sed -nE 's/^ *pub const (MPIX?_[A-Z0-9_]+): (c_int|usize) = ([-0-9a-fx_]+)(_u32 as c_int)?;.*/\1 \3/p' \
        "$here/../src/consts.rs" |
        while read -r name value; do
            value=$(echo "$value" | tr -d _)
            echo "    same(\"$name\", (long)($name), (long)(int)(${value}u));"
        done
    echo '    same("MPI_IN_PLACE", (long)MPI_IN_PLACE, -1L);'
    echo '    same("MPI_BOTTOM", (long)MPI_BOTTOM, 0L);'
    echo '    same("MPI_STATUS_IGNORE", (long)MPI_STATUS_IGNORE, 1L);'
    echo '    same("MPI_STATUSES_IGNORE", (long)MPI_STATUSES_IGNORE, 1L);'
    echo '    same("sizeof(MPI_Status)", sizeof(MPI_Status), 20);'
    echo '    same("MPI_Status.count_lo", offsetof(MPI_Status, count_lo), 0);'
    echo '    same("MPI_Status.count_hi_and_cancelled", offsetof(MPI_Status, count_hi_and_cancelled), 4);'
    echo '    same("MPI_Status.MPI_SOURCE", offsetof(MPI_Status, MPI_SOURCE), 8);'
    echo '    same("MPI_Status.MPI_TAG", offsetof(MPI_Status, MPI_TAG), 12);'
    echo '    same("MPI_Status.MPI_ERROR", offsetof(MPI_Status, MPI_ERROR), 16);'
    echo '    same("sizeof(MPI_Comm)", sizeof(MPI_Comm), sizeof(int));'
    printf '%s\n' '    printf("consts: %s (%d compared, %d differ)\n", bad ? "FAIL" : "PASS", n, bad);'
    echo '    return bad != 0; }'
} >"$work/consts.c"
mpicc.mpich -o "$work/consts" "$work/consts.c"
# The program calls nothing in the library: it runs without one.
"$work/consts"
