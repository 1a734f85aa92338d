/* The point-to-point figures of `commcore bench pt2pt`, measured the same way over MPI:
 * ping-pong half round-trip at 8 B, 64 KiB and 1 MiB (warm-up of a tenth, median of 7
 * batches), bandwidth with windows of 16 nonblocking 1 MiB sends acknowledged by a 4-byte
 * reply (8 windows a batch), and message rate with windows of 64 8-byte sends (200 windows).
 * Rank 0 prints one JSON object; ranks beyond 1 only wait in the final barrier. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCHES 7
#define BANDWIDTH_BYTES (1024 * 1024)
#define BANDWIDTH_WINDOW 16
#define RATE_WINDOW 64

static int rank;

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int n) {
    qsort(values, n, sizeof(double), compare);
    return values[n / 2];
}

static void exchange(char *buf, int size) {
    if (rank == 0) {
        MPI_Send(buf, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
}

static double pingpong(int size, int iterations) {
    char *buf = malloc(size);
    memset(buf, 1, size);
    for (int i = 0; i < iterations / 10; i++) exchange(buf, size);
    double start = MPI_Wtime();
    for (int i = 0; i < iterations; i++) exchange(buf, size);
    double us = (MPI_Wtime() - start) / iterations / 2.0 * 1e6;
    free(buf);
    return us;
}

/* Buffers come from the caller, allocated and touched once outside the timed batches. */
static double window(const char *send, char *recv, int size, int window, int repeats) {
    MPI_Request requests[RATE_WINDOW > BANDWIDTH_WINDOW ? RATE_WINDOW : BANDWIDTH_WINDOW];
    MPI_Status statuses[RATE_WINDOW > BANDWIDTH_WINDOW ? RATE_WINDOW : BANDWIDTH_WINDOW];
    char ack[4] = {0};
    double start = MPI_Wtime();
    for (int repeat = 0; repeat < repeats + 1; repeat++) {
        if (repeat == 1) start = MPI_Wtime();
        if (rank == 0) {
            for (int i = 0; i < window; i++)
                MPI_Isend((void *)send, size, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &requests[i]);
            MPI_Waitall(window, requests, statuses);
            MPI_Recv(ack, 4, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int i = 0; i < window; i++)
                MPI_Irecv(recv + (size_t)i * size, size, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &requests[i]);
            MPI_Waitall(window, requests, statuses);
            MPI_Send(ack, 4, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - start;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int sizes[3] = {8, 64 * 1024, 1024 * 1024};
    double latency[3] = {0}, bandwidth = 0, rate = 0, samples[BATCHES];
    if (rank < 2) {
        for (int s = 0; s < 3; s++) {
            int iterations = sizes[s] <= 1024 ? 10000 : sizes[s] <= 65536 ? 1000 : 200;
            for (int b = 0; b < BATCHES; b++) samples[b] = pingpong(sizes[s], iterations);
            latency[s] = median(samples, BATCHES);
        }
        char *send = malloc(BANDWIDTH_BYTES);
        char *recv = malloc((size_t)BANDWIDTH_BYTES * BANDWIDTH_WINDOW);
        memset(send, 2, BANDWIDTH_BYTES);
        memset(recv, 1, (size_t)BANDWIDTH_BYTES * BANDWIDTH_WINDOW);
        for (int b = 0; b < BATCHES; b++)
            samples[b] = window(send, recv, BANDWIDTH_BYTES, BANDWIDTH_WINDOW, 8);
        bandwidth = (double)BANDWIDTH_BYTES * BANDWIDTH_WINDOW * 8 / median(samples, BATCHES) / 1e6;
        for (int b = 0; b < BATCHES; b++) samples[b] = window(send, recv, 8, RATE_WINDOW, 200);
        rate = (double)RATE_WINDOW * 200 / median(samples, BATCHES) / 1e6;
        free(send);
        free(recv);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"latency_us\":{\"8\":%.4f,\"65536\":%.4f,\"1048576\":%.4f},"
               "\"bandwidth_mbps\":%.2f,\"message_rate_mmsgs\":%.4f}\n",
               latency[0], latency[1], latency[2], bandwidth, rate);
    MPI_Finalize();
    return 0;
}
