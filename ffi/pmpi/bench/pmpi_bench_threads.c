/* The threaded rows of scripts/compare-pmpi.sh: at MPI_THREAD_MULTIPLE, THREADS threads per
 * process each duplicate their own parent communicator, run an 8-byte allreduce on the
 * duplicate and free it (threads_dup_allreduce_free); then the same without the allreduce
 * (threads_dup_free: the host's multithreaded creation alone, the floor of the first row,
 * as the library adds no communication to a duplicate without a collective). Each count is
 * calibrated to about TARGET seconds of the host's own (its PMPI_ names), then timed
 * through the MPI_ names; rank 0 prints "figure microseconds", the slowest rank's mean time
 * per iteration (all threads' iterations run at once). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define TARGET 0.2

static MPI_Comm parents[THREADS];
static int iterations, host, reduce;

static void *work(void *arg) {
    MPI_Comm parent = parents[(long)arg], dup;
    double in[1] = {1.0}, out[1];
    for (int i = 0; i < iterations; i++) {
        (host ? PMPI_Comm_dup : MPI_Comm_dup)(parent, &dup);
        if (reduce)
            (host ? PMPI_Allreduce : MPI_Allreduce)(in, out, 1, MPI_DOUBLE, MPI_SUM, dup);
        (host ? PMPI_Comm_free : MPI_Comm_free)(&dup);
    }
    return NULL;
}

/* Mean seconds per iteration, the slowest rank's. */
static double timed(int n, int through_host) {
    pthread_t threads[THREADS];
    iterations = n, host = through_host;
    PMPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (long i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, work, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    t = (MPI_Wtime() - t) / n;
    double slowest;
    PMPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided != MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr, "pmpi_bench_threads: no MPI_THREAD_MULTIPLE (%d)\n", provided);
        MPI_Finalize();
        return 1;
    }
    for (int i = 0; i < THREADS; i++)
        MPI_Comm_dup(MPI_COMM_WORLD, &parents[i]);
    const char *figures[] = {"threads_dup_allreduce_free", "threads_dup_free"};
    for (reduce = 1; reduce >= 0; reduce--) {
        double probe = timed(3, 1);
        int n = probe > 0 ? (int)(TARGET / probe) : 100;
        n = n < 5 ? 5 : n > 500 ? 500 : n;
        double t = timed(n, 0);
        if (rank == 0)
            printf("%s %.3f\n", figures[1 - reduce], t * 1e6);
    }
    for (int i = 0; i < THREADS; i++)
        MPI_Comm_free(&parents[i]);
    MPI_Finalize();
    return 0;
}
