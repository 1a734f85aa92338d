/* Duplicates taking their context ids from their parent's pool (pool.c), where members
 * disagree about which ids are parked: every rank keeps a different number of duplicates
 * alive (so at a window one member has parked an id another still uses), duplicates
 * outlive their parent, and a duplicate is freed with a nonblocking call still running (its
 * id is parked only when that call ends). Every duplicate runs collectives whose values
 * are checked; two live duplicates of one process sharing an id, or members taking
 * different ids, would fail a check or hang (run.sh runs it under `timeout`). The report
 * must show ids taken from the pool (`derived`). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 300
#define KEEP 6 /* duplicates a rank keeps alive at most */

static long failures;

static void check_sum(MPI_Comm comm, int base, const char *what, int round) {
    int me, n, mine, sum = -1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    mine = base + me;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (sum != n * base + n * (n - 1) / 2) {
        failures++;
        fprintf(stderr, "dup_pool: %s round %d: sum %d\n", what, round, sum);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm parent, live[KEEP];
    int nlive = 0, keep = rank % KEEP; /* each rank frees its duplicates this many rounds late */
    MPI_Comm_dup(MPI_COMM_WORLD, &parent);
    for (int i = 0; i < ROUNDS; i++) {
        MPI_Comm d;
        MPI_Comm_dup(parent, &d);
        check_sum(d, i, "duplicate", i);
        live[nlive++] = d;
        /* Free the oldest ones past this rank's count; MPI_Comm_free is collective, but
         * it need not synchronize: ranks freeing at different times is allowed. */
        while (nlive > keep) {
            MPI_Comm_free(&live[0]);
            for (int k = 1; k < nlive; k++)
                live[k - 1] = live[k];
            nlive--;
        }
        if (keep == 0 && i % 7 == 3) { /* a nonblocking call outlives its communicator */
            MPI_Comm e;
            MPI_Request req;
            int one = 1, all = 0;
            MPI_Comm_dup(parent, &e);
            check_sum(e, i, "duplicate freed while a call runs", i);
            MPI_Iallreduce(&one, &all, 1, MPI_INT, MPI_SUM, e, &req);
            MPI_Comm_free(&e);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (all != size) {
                failures++;
                fprintf(stderr, "dup_pool: iallreduce round %d: %d\n", i, all);
            }
        } else if (i % 7 == 3) {
            MPI_Comm e;
            MPI_Comm_dup(parent, &e); /* the same constructor on every member */
            check_sum(e, i, "duplicate freed while a call runs", i);
            int one = 1, all = 0;
            MPI_Request req;
            MPI_Iallreduce(&one, &all, 1, MPI_INT, MPI_SUM, e, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            MPI_Comm_free(&e);
        }
    }
    /* The parent goes first; duplicates every rank has run collectives after. */
    MPI_Comm tail[2];
    for (int k = 0; k < 2; k++) {
        MPI_Comm_dup(parent, &tail[k]);
        check_sum(tail[k], k, "last duplicate", ROUNDS);
    }
    MPI_Comm_free(&parent);
    for (int k = 0; k < 2; k++) {
        check_sum(tail[k], 7, "duplicate outliving its parent", ROUNDS);
        MPI_Comm_free(&tail[k]);
    }
    for (int k = 0; k < nlive; k++)
        MPI_Comm_free(&live[k]);
    long all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("dup_pool: %d processes, %d rounds, %ld checks failed\n", size, ROUNDS, all);
    MPI_Finalize();
    return all != 0;
}
