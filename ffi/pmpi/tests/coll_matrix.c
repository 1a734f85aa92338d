/* The collective matrix: every operation × in place or not × every predefined datatype ×
 * several ops and roots × counts 0, 1, 7 and 100,000 × world, split, reversed and inter-
 * communicators, blocking and nonblocking, each result checked against values computed
 * locally. A blocking case runs twice: the second call takes the library's path for calls
 * it has seen (direct.c). Exits non-zero on any mismatch.
 *
 *   coll_matrix [STRIDE]
 *
 * Sampling (to keep CI short): at counts 1 and 7 every STRIDE-th (type, op) pair runs, the
 * selection shifted per communicator so that the four together cover STRIDE ≤ 4 fully;
 * counts 0 and 100,000 run one rotating pair per operation and communicator. Blocking and nonblocking
 * forms alternate case by case, and so do the roots (0 and the last rank). The two pairs the
 * library hands to the host (MINLOC/MAXLOC on MPI_LONG_DOUBLE_INT, PROD on
 * MPI_C_LONG_DOUBLE_COMPLEX: no commcore type of their size) run in corners.c instead. */
#include "coll_moves.h"

static long cases;

static int library_falls_back(const tdesc *d, int o) {
    return (d->t == MPI_LONG_DOUBLE_INT) || (d->t == MPI_C_LONG_DOUBLE_COMPLEX && o == 1);
}

enum { BARRIER, BCAST, REDUCE, ALLREDUCE, SCAN, EXSCAN, RS, RSB, ALLGATHER, ALLGATHERV,
       ALLTOALL, ALLTOALLV, GATHER, GATHERV, SCATTER, SCATTERV, NCOLL };
static const char *const coll_names[NCOLL] = {
    "barrier", "bcast", "reduce", "allreduce", "scan", "exscan", "reduce_scatter",
    "reduce_scatter_block", "allgather", "allgatherv", "alltoall", "alltoallv", "gather",
    "gatherv", "scatter", "scatterv"};

static int reduces(int c) { return c >= REDUCE && c <= RSB; }

static void run(const tcomm *t, int c, const tcase *k) {
    snprintf(where, sizeof where, "%s %s %s op=%s count=%zu root=%d in_place=%d nb=%d",
             t->name, coll_names[c], k->d->name, reduces(c) ? ops[k->o].name : "-", k->c,
             k->root, k->in_place, k->nb);
    cases++;
    switch (c) {
    case BARRIER: {
        MPI_Request req;
        k->nb ? MPI_Ibarrier(t->comm, &req) : MPI_Barrier(t->comm);
        finish(&req, k->nb);
        break;
    }
    case BCAST: t_bcast(t, k); break;
    case REDUCE: t_reduction(t, k, "reduce"); break;
    case ALLREDUCE: t_reduction(t, k, "allreduce"); break;
    case SCAN: t_reduction(t, k, "scan"); break;
    case EXSCAN: t_reduction(t, k, "exscan"); break;
    case RS: t_reduce_scatter(t, k, 1); break;
    case RSB: t_reduce_scatter(t, k, 0); break;
    case ALLGATHER: t_allgather(t, k, 0); break;
    case ALLGATHERV: t_allgather(t, k, 1); break;
    case ALLTOALL: t_alltoall(t, k, 0); break;
    case ALLTOALLV: t_alltoall(t, k, 1); break;
    case GATHER: t_rooted(t, k, 0, 0); break;
    case GATHERV: t_rooted(t, k, 0, 1); break;
    case SCATTER: t_rooted(t, k, 1, 0); break;
    default: t_rooted(t, k, 1, 1); break;
    }
}

/* Whether operation c runs on t at all (MPI defines no scan on inter-communicators). */
static int defined_on(const tcomm *t, int c) {
    return !t->inter || (c != SCAN && c != EXSCAN);
}

static void matrix(const tcomm *t, int which, int stride) {
    const size_t counts[] = {0, 1, 7, 100000};
    long serial = 0;
    for (int c = 0; c < NCOLL; c++) {
        if (!defined_on(t, c))
            continue;
        /* Every (type, op) pair this operation takes, numbered. */
        int pairs = 0;
        for (int ti = 0; ti < NTYPES; ti++)
            for (int o = 0; o < (reduces(c) ? NOPS : 1); o++)
                if ((!reduces(c) || op_allowed(&types[ti], o)) && !(reduces(c) && library_falls_back(&types[ti], o)))
                    pairs++;
        int rotate = (which * 7 + c * 13) % (pairs ? pairs : 1);
        for (int ci = 0; ci < 4; ci++) {
            int p = 0;
            for (int ti = 0; ti < NTYPES; ti++) {
                for (int o = 0; o < (reduces(c) ? NOPS : 1); o++) {
                    if ((reduces(c) && !op_allowed(&types[ti], o)) || (reduces(c) && library_falls_back(&types[ti], o)))
                        continue;
                    int idx = p++;
                    int take;
                    if (c == BARRIER)
                        take = idx == 0 && ci == 1;
                    else if (ci == 0 || ci == 3)
                        take = idx == rotate;
                    else
                        take = (idx + which) % stride == 0;
                    if (!take)
                        continue;
                    for (int in_place = 0; in_place < 2; in_place++) {
                        if (in_place && (t->inter || c == BCAST))
                            continue; /* barrier: in_place = 1 runs it once more */
                        serial++;
                        tcase k = {&types[ti], o, counts[ci], 0, in_place, (int)(serial % 2)};
                        int n = t->inter ? (c == BCAST || c == SCATTER || c == SCATTERV ? 0 : 1) : 0;
                        int root_side = t->inter ? (n == 0 ? (t->g == 0 ? t->size : t->rsize)
                                                           : (t->g == 1 ? t->size : t->rsize))
                                                 : t->size;
                        k.root = (serial / 2) % 2 ? root_side - 1 : 0;
                        run(t, c, &k);
                        if (!k.nb) /* again: the library runs it from its recorded steps */
                            run(t, c, &k);
                    }
                }
            }
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int stride = argc > 1 ? atoi(argv[1]) : 1;
    if (stride < 1)
        stride = 1;
    /* The library makes a communicator's state at its first blocking collective (a
     * nonblocking call before it goes to the host, as corners.c checks), so each
     * communicator made here starts with a barrier and every case is served. */
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    tcomm world = describe(MPI_COMM_WORLD, "world", 0);
    matrix(&world, 0, stride);

    MPI_Comm split, reversed;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
    MPI_Barrier(split);
    tcomm ts = describe(split, "split", rank % 2);
    matrix(&ts, 1, stride);

    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
    MPI_Barrier(reversed);
    tcomm tr = describe(reversed, "reversed", 0);
    matrix(&tr, 2, stride);

    if (size >= 2) {
        /* Group 0: the first half (rounded up), group 1: the rest. */
        int half = (size + 1) / 2, g = rank >= half;
        MPI_Comm local, inter;
        MPI_Comm_split(MPI_COMM_WORLD, g, rank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g ? 0 : half, 77, &inter);
        MPI_Barrier(inter);
        tcomm ti = describe(inter, "inter", g);
        matrix(&ti, 3, stride);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&local);
    }
    MPI_Comm_free(&split);
    MPI_Comm_free(&reversed);
    long all_failures = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("coll_matrix: %d processes, %ld cases on rank 0, %ld checks failed\n", size,
               cases, all_failures);
    MPI_Finalize();
    return all_failures != 0;
}
