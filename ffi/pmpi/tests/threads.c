/* MPI_THREAD_MULTIPLE: THREADS threads per process, each with a parent communicator of its
 * own (a duplicate of the world), repeatedly duplicate and split it, run collectives on what
 * they made (values checked) and free it; every few iterations a nonblocking allreduce is
 * waited for, so threads progress each other's calls. Then the deadlock case of the
 * multithreaded context id paper (cid-multithreaded.txt, figure 1): at process p, thread p
 * first makes a duplicate of MPI_COMM_SELF, then every thread duplicates its thread
 * communicator; a barrier on each makes the library agree its context id there (its state
 * is made at a communicator's first blocking collective). Then each thread's MPI_Comm_idup,
 * which the host serves (loose_case). Prints one line; exits non-zero on a failed check.
 * run.sh runs it under `timeout` and checks the report shows commcore served it.
 *
 *   threads [ITERATIONS]     (default 1000) */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static int rank, size, iterations = 1000;
static MPI_Comm parents[THREADS];
static long failures[THREADS];

#define FAIL(t, ...)                                                                         \
    do {                                                                                   \
        failures[t]++;                                                                     \
        fprintf(stderr, "[%d.%d] ", rank, t);                                              \
        fprintf(stderr, __VA_ARGS__);                                                      \
        fputc('\n', stderr);                                                               \
    } while (0)

/* Allreduces `base + rank in comm` over `comm` (blocking or not) and checks the sum. */
static void check_allreduce(int t, MPI_Comm comm, int base, int nonblocking, const char *what) {
    int me, n, mine, sum = -1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    mine = base + me;
    if (nonblocking) {
        MPI_Request req;
        MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm);
    }
    if (sum != n * base + n * (n - 1) / 2)
        FAIL(t, "%s: allreduce got %d, want %d", what, sum, n * base + n * (n - 1) / 2);
}

static void *work(void *arg) {
    int t = (int)(long)arg;
    for (int i = 0; i < iterations; i++) {
        MPI_Comm dup, split;
        MPI_Comm_dup(parents[t], &dup);
        check_allreduce(t, dup, i, 0, "dup");
        if (i % 16 == 0)
            check_allreduce(t, dup, i + 1, 1, "dup, nonblocking");
        MPI_Comm_split(dup, rank % 2, size - rank, &split);
        check_allreduce(t, split, 2 * i, 0, "split");
        int root_value = -1, n;
        MPI_Comm_size(split, &n);
        int me;
        MPI_Comm_rank(split, &me);
        if (me == n - 1)
            root_value = 1000 * t + i;
        MPI_Bcast(&root_value, 1, MPI_INT, n - 1, split);
        if (root_value != 1000 * t + i)
            FAIL(t, "split: bcast got %d, want %d", root_value, 1000 * t + i);
        MPI_Comm_free(&split);
        MPI_Comm_free(&dup);
    }
    return NULL;
}

/* The paper's figure 1: thread `t` of process `t` holds the mask for its MPI_COMM_SELF
 * duplicate while the others agree on their thread communicators' duplicates. */
static void *paper_case(void *arg) {
    int t = (int)(long)arg;
    for (int i = 0; i < iterations / 10 + 1; i++) {
        MPI_Comm self_dup, thread_dup;
        if (t == rank % THREADS) {
            MPI_Comm_dup(MPI_COMM_SELF, &self_dup);
            MPI_Barrier(self_dup);
            MPI_Comm_free(&self_dup);
        }
        MPI_Comm_dup(parents[t], &thread_dup);
        MPI_Barrier(thread_dup);
        check_allreduce(t, thread_dup, i, 0, "paper case");
        MPI_Comm_free(&thread_dup);
    }
    return NULL;
}

/* Communicators from MPI_Comm_idup, which this library does not wrap: their members agree
 * on no priority for them, so under threads the host serves them (all four threads'
 * agreements had one priority, and commcore refuses a tie: the peers were left waiting). */
static void *loose_case(void *arg) {
    int t = (int)(long)arg;
    for (int i = 0; i < iterations / 10 + 1; i++) {
        MPI_Comm idup;
        MPI_Request req;
        MPI_Comm_idup(parents[t], &idup, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        check_allreduce(t, idup, i, 0, "idup");
        MPI_Comm_free(&idup);
    }
    return NULL;
}

static void run_threads(void *(*fn)(void *)) {
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, fn, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
}

int main(int argc, char **argv) {
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1)
        iterations = atoi(argv[1]) > 0 ? atoi(argv[1]) : 1;
    if (provided != MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            printf("threads: the host provides thread level %d, not MPI_THREAD_MULTIPLE\n",
                   provided);
        MPI_Finalize();
        return 1;
    }
    /* Made in one order on every process, before the threads start. */
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &parents[t]);
    double start = MPI_Wtime();
    run_threads(work);
    run_threads(paper_case);
    run_threads(loose_case);
    double elapsed = MPI_Wtime() - start;
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_free(&parents[t]);
    long mine = 0, all = 0;
    for (int t = 0; t < THREADS; t++)
        mine += failures[t];
    MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    /* Per process: every work iteration makes a duplicate and a split that run collectives;
     * every round of the paper's case one duplicate per thread and, at one thread, one of
     * MPI_COMM_SELF. The parents run none; each idup's allreduce goes to the host. */
    long rounds = iterations / 10 + 1;
    if (rank == 0)
        printf("threads: %d processes x %d threads, %d iterations, %.2f s, %ld checks failed, "
               "expected_dups_served=%ld expected_splits_served=%ld expected_host_calls=%ld\n",
               size, THREADS, iterations, elapsed, all,
               (long)size * (THREADS * iterations + (THREADS + 1) * rounds),
               (long)size * THREADS * iterations, (long)size * THREADS * rounds);
    MPI_Finalize();
    return all != 0;
}
