/* The figures of `commcore bench split`, measured the same way over MPI_Comm_split: the CID
 * allocation paper's stress benchmark scaled to this machine. Usage: split SCENARIO ITERATIONS
 * with SCENARIO large_comm (leave out 0 to a quarter of the parent's members) or small_comm
 * (keep an eighth to a quarter of the ranks, at least 2). Each iteration picks a live
 * communicator large enough, and its members split it keeping their order; every rank draws
 * the same choices from the same seed (splitmix64). Each member times its calls; rank 0
 * prints the median, p90, p99 and mean over all (process, call) pairs as one JSON object,
 * and the same calls timed from the moment their last member entered (after_last_arrival,
 * read from the system-wide monotonic clock), as `commcore bench split` does. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIVE 64

static uint64_t state = 0x0c1d;

static uint64_t next_random(void) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [low, high]. */
static int between(int low, int high) { return low + (int)(next_random() % (uint64_t)(high - low + 1)); }

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Microseconds of CLOCK_MONOTONIC, which every process of the machine reads alike. */
static double monotonic_us(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1e6 + now.tv_nsec / 1e3;
}

static int compare_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

struct live_comm {
    int size;
    int *members; /* world ranks */
    MPI_Comm comm; /* MPI_COMM_NULL when this rank is not a member */
};

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int small = argc > 1 && strcmp(argv[1], "small_comm") == 0;
    int iterations = argc > 2 ? atoi(argv[2]) : 1000;
    int quarter = size / 4 > 1 ? size / 4 : 1;
    int small_min = size / 8 > 2 ? size / 8 : 2, small_max = quarter > 2 ? quarter : 2;
    if (small_min > size) small_min = size;
    if (small_max > size) small_max = size;
    int needed = small ? small_max : size - quarter;

    struct live_comm live[LIVE + 1];
    int count = 1;
    live[0].size = size;
    live[0].members = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) live[0].members[i] = i;
    live[0].comm = MPI_COMM_WORLD;
    /* Per call: iteration, entry and exit (µs). */
    double *records = malloc(sizeof(double) * 3 * (iterations > 0 ? iterations : 1));
    int calls = 0;
    int *order = malloc(sizeof(int) * size);
    int candidates[LIVE + 1];

    for (int it = 0; it < iterations; it++) {
        int ncand = 0;
        for (int i = 0; i < count; i++)
            if (live[i].size >= needed) candidates[ncand++] = i;
        int parent = candidates[between(0, ncand - 1)];
        int n = live[parent].size;
        int keep = small ? between(small_min, small_max) : n - between(0, quarter < n - 1 ? quarter : n - 1);
        if (keep > n) keep = n;
        for (int i = 0; i < n; i++) order[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = between(0, i), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        int *kept = malloc(sizeof(int) * (keep > 0 ? keep : 1));
        for (int i = 0; i < keep; i++) kept[i] = live[parent].members[order[i]];
        qsort(kept, keep, sizeof(int), compare_int);
        MPI_Comm child = MPI_COMM_NULL;
        if (live[parent].comm != MPI_COMM_NULL) {
            int member = 0, rank;
            for (int i = 0; i < keep; i++) member |= kept[i] == me;
            MPI_Comm_rank(live[parent].comm, &rank);
            double entered = monotonic_us();
            MPI_Comm_split(live[parent].comm, member ? 0 : MPI_UNDEFINED, rank, &child);
            records[3 * calls] = it;
            records[3 * calls + 1] = entered;
            records[3 * calls + 2] = monotonic_us();
            calls++;
        }
        live[count].size = keep;
        live[count].members = kept;
        live[count].comm = child;
        count++;
        if (count > LIVE) {
            if (live[1].comm != MPI_COMM_NULL) MPI_Comm_free(&live[1].comm);
            free(live[1].members);
            memmove(&live[1], &live[2], sizeof(struct live_comm) * (count - 2));
            count--;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int *counts = malloc(sizeof(int) * size), *offsets = malloc(sizeof(int) * size);
    MPI_Gather(&calls, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int total = 0;
    if (me == 0)
        for (int i = 0; i < size; i++) counts[i] *= 3, offsets[i] = total, total += counts[i];
    double *gathered = malloc(sizeof(double) * (total > 0 ? total : 1));
    MPI_Gatherv(records, 3 * calls, MPI_DOUBLE, gathered, counts, offsets, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
    total /= 3;
    double *all = malloc(sizeof(double) * (total > 0 ? total : 1));
    double *after = malloc(sizeof(double) * (total > 0 ? total : 1));
    if (me == 0) {
        double *last_entry = calloc(iterations > 0 ? iterations : 1, sizeof(double));
        for (int i = 0; i < total; i++) {
            int it = (int)gathered[3 * i];
            if (gathered[3 * i + 1] > last_entry[it]) last_entry[it] = gathered[3 * i + 1];
        }
        double sum = 0;
        for (int i = 0; i < total; i++) {
            all[i] = gathered[3 * i + 2] - gathered[3 * i + 1];
            after[i] = gathered[3 * i + 2] - last_entry[(int)gathered[3 * i]];
            sum += all[i];
        }
        qsort(all, total, sizeof(double), compare);
        qsort(after, total, sizeof(double), compare);
#define AT(v, q) v[(int)(total * (q)) < total ? (int)(total * (q)) : total - 1]
        printf("{\"calls\":%d,\"median_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"mean_us\":%.3f,"
               "\"after_last_arrival\":{\"median_us\":%.3f,\"p99_us\":%.3f,\"p99_over_median\":%.3f}}\n",
               total, AT(all, 0.5), AT(all, 0.9), AT(all, 0.99), sum / total, AT(after, 0.5),
               AT(after, 0.99), AT(after, 0.99) / AT(after, 0.5));
        free(last_entry);
    }
    for (int i = 1; i < count; i++) {
        if (live[i].comm != MPI_COMM_NULL) MPI_Comm_free(&live[i].comm);
        free(live[i].members);
    }
    free(live[0].members);
    free(records), free(order), free(counts), free(offsets), free(gathered), free(all), free(after);
    MPI_Finalize();
    return 0;
}
