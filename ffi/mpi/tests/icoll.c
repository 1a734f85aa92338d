/* Nonblocking collectives: overlapped with point-to-point, several in flight on one
 * communicator, completed by the wait and test families, mixed with blocking ones. */
#include <mpi.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int tri = size * (size - 1) / 2;
    MPI_Request req, reqs[4];

    /* A barrier in flight while a message goes from the last rank to rank 0. */
    CHECK_RC(MPI_Ibarrier(MPI_COMM_WORLD, &req), MPI_SUCCESS);
    if (size > 1 && rank == 0) {
        int v = -1;
        MPI_Recv(&v, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(v == 99);
    } else if (size > 1 && rank == size - 1) {
        int v = 99;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    CHECK_RC(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS);
    CHECK(req == MPI_REQUEST_NULL);

    /* Four in flight on one communicator, completed together. */
    int a = rank, b = 1, c = rank, bc = rank == 0 ? 7 : 0;
    int ra = -1, rb = -1, rc = -1;
    MPI_Iallreduce(&a, &ra, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
    MPI_Iallreduce(&b, &rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[1]);
    MPI_Iallreduce(&c, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &reqs[2]);
    MPI_Ibcast(&bc, 1, MPI_INT, 0, MPI_COMM_WORLD, &reqs[3]);
    CHECK_RC(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    CHECK(ra == tri && rb == size && rc == size - 1 && bc == 7);

    /* Test until done; then a blocking collective after a nonblocking one. */
    int all[64];
    MPI_Iallgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &req);
    int flag = 0;
    while (!flag) CHECK_RC(MPI_Test(&req, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    for (int i = 0; i < size; i++) CHECK(all[i] == i);
    int s1 = -1, s2 = -1;
    MPI_Iallreduce(&a, &s1, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Allreduce(&b, &s2, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(s1 == tri && s2 == size);

    /* Gather, scatter, alltoall, reduce, scan. */
    int g[64], sc = -1, at[64], atr[64], red = -1, scan = -1;
    for (int i = 0; i < size; i++) { g[i] = -1; at[i] = rank * 100 + i; }
    MPI_Igather(&rank, 1, MPI_INT, g, 1, MPI_INT, 0, MPI_COMM_WORLD, &reqs[0]);
    MPI_Ialltoall(at, 1, MPI_INT, atr, 1, MPI_INT, MPI_COMM_WORLD, &reqs[1]);
    MPI_Ireduce(&a, &red, 1, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD, &reqs[2]);
    MPI_Iscan(&b, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[3]);
    int index, done = 0;
    while (done < 4) {
        CHECK_RC(MPI_Waitany(4, reqs, &index, MPI_STATUS_IGNORE), MPI_SUCCESS);
        done++;
    }
    if (rank == 0) for (int i = 0; i < size; i++) CHECK(g[i] == i);
    for (int i = 0; i < size; i++) CHECK(atr[i] == i * 100 + rank);
    if (rank == size - 1) CHECK(red == tri);
    CHECK(scan == rank + 1);
    MPI_Iscatter(g, 1, MPI_INT, &sc, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(sc == rank);

    /* On a duplicate: its own order, beside the world's. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int d = -1;
    MPI_Iallreduce(&a, &d, 1, MPI_INT, MPI_SUM, dup, &reqs[0]);
    MPI_Ibarrier(MPI_COMM_WORLD, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    CHECK(d == tri);
    MPI_Comm_free(&dup);

    /* An error of a nonblocking collective shows at its start or its completion. */
    double x = 1, y;
    int rc_start = MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD, &req);
    int rc_wait = rc_start == MPI_SUCCESS ? MPI_Wait(&req, MPI_STATUS_IGNORE) : rc_start;
    CHECK(rc_wait == MPI_ERR_OP);
    FINISH("icoll");
}
