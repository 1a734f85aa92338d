/* The v-collectives remembered by their arguments: allgatherv and alltoallv repeated with
 * the same buffers and count arrays run as the first was prepared, and a program that
 * changes its arrays in place between calls (same pointers, new counts or displacements)
 * gets the new blocks. Also in place, and with displacements that leave gaps. This rank's
 * own block is what the remembered allgatherv sends from the send buffer while copying it
 * into the result after the round. Values checked; the test script checks the report. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long failures;
#define FAIL(...)                                                                          \
    do {                                                                                   \
        failures++;                                                                        \
        fprintf(stderr, "remembered_v: " __VA_ARGS__);                                     \
        fputc('\n', stderr);                                                               \
    } while (0)

/* Element k of rank r's block (to peer p) in round i. */
static int value(int r, int p, int k, int i) {
    return 1000000 * i + 10000 * r + 100 * p + k;
}

/* Rank r's block size in round i: rounds 0-3 alike (remembered from round 2), then new
 * contents in the same arrays every round. */
static int count_of(int r, int i) {
    return i < 4 ? 3 : 1 + (r + i) % 4;
}

static void allgatherv_rounds(MPI_Comm comm, const char *name) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    int send[8], *recv = malloc(sizeof(int) * 8 * (size_t)size);
    for (int i = 0; i < 8; i++) {
        int at = 0;
        for (int r = 0; r < size; r++) {
            counts[r] = count_of(r, i);
            displs[r] = at + (i >= 6); /* a gap before each block from round 6 on */
            at = displs[r] + counts[r];
        }
        for (int k = 0; k < counts[rank]; k++)
            send[k] = value(rank, 0, k, i);
        memset(recv, 0xff, sizeof(int) * 8 * (size_t)size);
        MPI_Allgatherv(send, counts[rank], MPI_INT, recv, counts, displs, MPI_INT, comm);
        for (int r = 0; r < size; r++)
            for (int k = 0; k < counts[r]; k++)
                if (recv[displs[r] + k] != value(r, 0, k, i))
                    FAIL("%s allgatherv round %d: rank %d's element %d is %d", name, i, r, k,
                         recv[displs[r] + k]);
    }
    free(counts);
    free(displs);
    free(recv);
}

/* Alltoallv; in place, one array pair serves both ways (the counts are symmetric). */
static void alltoallv_rounds(MPI_Comm comm, int in_place, const char *name) {
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    int *sc = malloc(sizeof(int) * (size_t)n), *sd = malloc(sizeof(int) * (size_t)n);
    int *rc = malloc(sizeof(int) * (size_t)n), *rd = malloc(sizeof(int) * (size_t)n);
    int *send = malloc(sizeof(int) * 8 * (size_t)n), *recv = malloc(sizeof(int) * 8 * (size_t)n);
    for (int i = 0; i < 8; i++) {
        /* What p sends to q in round i: count_of(p + q, i) elements. */
        int sat = 0, rat = 0;
        for (int p = 0; p < n; p++) {
            sc[p] = count_of(rank + p, i), rc[p] = count_of(p + rank, i);
            sd[p] = sat + (i >= 6), rd[p] = rat + (i >= 6);
            sat = sd[p] + sc[p], rat = rd[p] + rc[p];
        }
        for (int p = 0; p < n; p++)
            for (int k = 0; k < sc[p]; k++)
                (in_place ? recv : send)[sd[p] + k] = value(rank, p, k, i);
        if (!in_place)
            memset(recv, 0xff, sizeof(int) * 8 * (size_t)n);
        if (in_place)
            MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, recv, rc, rd, MPI_INT,
                          comm);
        else
            MPI_Alltoallv(send, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, comm);
        for (int p = 0; p < n; p++)
            for (int k = 0; k < rc[p]; k++)
                if (recv[rd[p] + k] != value(p, rank, k, i))
                    FAIL("%s alltoallv round %d: from %d element %d is %d", name, i, p, k,
                         recv[rd[p] + k]);
    }
    free(sc), free(sd), free(rc), free(rd), free(send), free(recv);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    allgatherv_rounds(MPI_COMM_WORLD, "world");
    alltoallv_rounds(MPI_COMM_WORLD, 0, "world");
    alltoallv_rounds(MPI_COMM_WORLD, 1, "world in place");
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    allgatherv_rounds(dup, "dup");
    alltoallv_rounds(dup, 0, "dup");
    MPI_Comm_free(&dup);
    long all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("remembered_v: %d processes, %ld checks failed\n", size, all);
    MPI_Finalize();
    return all != 0;
}
