/* Inter-communicators: evens and odds joined by their leaders, point-to-point across,
 * collectives with MPI_ROOT and MPI_PROC_NULL, the remote group, and the merge. */
#include <mpi.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, s, r, flag;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    CHECK(parent == MPI_COMM_NULL);
    if (size < 2) FINISH("inter");

    int color = rank % 2, nmine = (size + 1 - color) / 2, nother = size - nmine;
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    CHECK_RC(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 5, &inter), MPI_SUCCESS);
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag == 1);
    MPI_Comm_size(inter, &s);
    MPI_Comm_rank(inter, &r);
    CHECK(s == nmine && r == rank / 2);
    MPI_Comm_remote_size(inter, &s);
    CHECK(s == nother);
    MPI_Group remote;
    MPI_Comm_remote_group(inter, &remote);
    MPI_Group_size(remote, &s);
    CHECK(s == nother);
    MPI_Group_free(&remote);

    /* Point-to-point across: rank i of one group with rank i of the other. */
    int me = rank / 2;
    if (me < nother) {
        int out = rank, in = -1;
        MPI_Status st;
        CHECK_RC(MPI_Sendrecv(&out, 1, MPI_INT, me, 1, &in, 1, MPI_INT, me, 1, inter, &st), MPI_SUCCESS);
        CHECK(in == (color ? rank - 1 : rank + 1) && st.MPI_SOURCE == me);
    }

    CHECK_RC(MPI_Barrier(inter), MPI_SUCCESS);
    /* Broadcast from the evens' rank 0 to the odds. */
    int v = color == 0 && me == 0 ? 42 : -1;
    int root = color == 0 ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_RC(MPI_Bcast(&v, 1, MPI_INT, root, inter), MPI_SUCCESS);
    if (color == 1) CHECK(v == 42);
    /* Allreduce: each group gets the other's sum. */
    int one = rank, other = -1, want = 0;
    for (int i = 1 - color; i < size; i += 2) want += i;
    CHECK_RC(MPI_Allreduce(&one, &other, 1, MPI_INT, MPI_SUM, inter), MPI_SUCCESS);
    CHECK(other == want);
    /* Gather the odds' ranks at the evens' rank 0. */
    int got[64];
    CHECK_RC(MPI_Gather(&rank, 1, MPI_INT, got, 1, MPI_INT, root, inter), MPI_SUCCESS);
    if (color == 0 && me == 0)
        for (int i = 0; i < nother; i++) CHECK(got[i] == 2 * i + 1);

    /* The v forms across: remote rank j's block holds j + 1 copies of its world rank. */
    int counts[64], displs[64], vin[256], vout[64], n = 0;
    for (int j = 0; j < nother; j++) { counts[j] = j + 1; displs[j] = n; n += j + 1; }
    for (int i = 0; i < 64; i++) vout[i] = rank;
    CHECK_RC(MPI_Gatherv(vout, me + 1, MPI_INT, vin, counts, displs, MPI_INT, root, inter), MPI_SUCCESS);
    if (color == 0 && me == 0)
        for (int j = 0; j < nother; j++) CHECK(vin[displs[j]] == 2 * j + 1 && vin[displs[j] + j] == 2 * j + 1);
    CHECK_RC(MPI_Allgatherv(vout, me + 1, MPI_INT, vin, counts, displs, MPI_INT, inter), MPI_SUCCESS);
    for (int j = 0; j < nother; j++) CHECK(vin[displs[j] + j] == 2 * j + 1 - color);
    /* All-to-all of one int each way, then blocks of another size each way: the evens send
     * two ints to every odd, the odds one to every even. */
    CHECK_RC(MPI_Alltoall(vout, 1, MPI_INT, vin, 1, MPI_INT, inter), MPI_SUCCESS);
    CHECK(vin[nother - 1] == 2 * (nother - 1) + 1 - color);
    int mine_n = color == 0 ? 2 : 1, theirs_n = color == 0 ? 1 : 2;
    CHECK_RC(MPI_Alltoall(vout, mine_n, MPI_INT, vin, theirs_n, MPI_INT, inter), MPI_SUCCESS);
    CHECK(vin[theirs_n * nother - 1] == 2 * (nother - 1) + 1 - color);
    CHECK_RC(MPI_Allgather(vout, mine_n, MPI_INT, vin, theirs_n, MPI_INT, inter), MPI_SUCCESS);
    CHECK(vin[0] == 1 - color && vin[theirs_n * nother - 1] == 2 * (nother - 1) + 1 - color);
    CHECK_RC(MPI_Scatterv(vout, counts, displs, MPI_INT, vin, me + 1, MPI_INT, root, inter), MPI_SUCCESS);
    if (color == 1) CHECK(vin[me] == 0);

    /* Merge: the evens (high = 0) first. */
    MPI_Comm merged;
    CHECK_RC(MPI_Intercomm_merge(inter, color, &merged), MPI_SUCCESS);
    MPI_Comm_size(merged, &s);
    MPI_Comm_rank(merged, &r);
    CHECK(s == size && r == (color ? nother : 0) + me);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    FINISH("inter");
}
