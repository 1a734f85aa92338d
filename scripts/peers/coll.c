/* The figures of `commcore bench coll-procs`, measured the same way over MPI: barrier,
 * bcast, allreduce (u64 sum) and alltoall at 8 B and 64 KiB (alltoall: per block). Usage:
 * coll [ITERATIONS [BATCHES]] (default 200 and 5). Each figure: a warm-up batch of a tenth,
 * then BATCHES batches of ITERATIONS calls at 8 B or a quarter as many at 64 KiB; a batch's
 * figure is the mean over ranks of each rank's mean time per call; the median batch is
 * reported. Rank 0 prints one JSON object. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BATCHES 64

static int size, rank;

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void call(const char *op, char *send, char *recv, int bytes) {
    if (strcmp(op, "barrier") == 0)
        MPI_Barrier(MPI_COMM_WORLD);
    else if (strcmp(op, "bcast") == 0)
        MPI_Bcast(recv, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (strcmp(op, "allreduce") == 0)
        MPI_Allreduce(send, recv, bytes / 8, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Alltoall(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, MPI_COMM_WORLD);
}

static double batch(const char *op, char *send, char *recv, int bytes, int iterations) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < iterations; i++) call(op, send, recv, bytes);
    double mine = (MPI_Wtime() - start) * 1e6 / iterations, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / size;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int base = argc > 1 ? atoi(argv[1]) : 200, batches = argc > 2 ? atoi(argv[2]) : 5;
    if (base < 4) base = 4;
    if (batches < 1) batches = 1;
    if (batches > MAX_BATCHES) batches = MAX_BATCHES;
    const char *ops[4] = {"barrier", "bcast", "allreduce", "alltoall"};
    const int sizes[2] = {8, 64 * 1024};
    char *send = malloc((size_t)64 * 1024 * size), *recv = malloc((size_t)64 * 1024 * size);
    memset(send, 1, (size_t)64 * 1024 * size);
    memset(recv, 0, (size_t)64 * 1024 * size);
    if (rank == 0) printf("{\"figures\":[");
    int first = 1;
    for (int o = 0; o < 4; o++) {
        for (int s = 0; s < 2; s++) {
            if (o == 0 && s > 0) continue;
            int iterations = sizes[s] <= 8 ? base : base / 4;
            double samples[MAX_BATCHES];
            batch(ops[o], send, recv, sizes[s], (iterations + 9) / 10);
            for (int b = 0; b < batches; b++) samples[b] = batch(ops[o], send, recv, sizes[s], iterations);
            qsort(samples, batches, sizeof(double), compare);
            if (rank == 0) {
                char label[64];
                if (o == 0)
                    snprintf(label, sizeof label, "barrier");
                else
                    snprintf(label, sizeof label, "%s_%s", ops[o], sizes[s] == 8 ? "8B" : "64KiB");
                printf("%s{\"figure\":\"%s\",\"unit\":\"us\",\"latency\":%.4f}", first ? "" : ",", label,
                       samples[batches / 2]);
                first = 0;
            }
        }
    }
    if (rank == 0) printf("]}\n");
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
