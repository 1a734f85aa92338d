/* The dynamic-process figures of `commcore bench dpm`, measured the same way over MPI.
 *
 *   dpm spawn CHILDREN REPS      (1 process) REPS times: spawn CHILDREN children that init,
 *                                get the parent and disconnect; the parent disconnects too.
 *                                One line per repetition: {"ms": spawn + disconnect time},
 *                                or {"hang": 1} when one takes over DPM_REP_TIMEOUT s.
 *   dpm rate N                   (1 process) N back-to-back spawn + disconnect of 1 child:
 *                                {"per_s": N / total time}.
 *   dpm merge_spawned B REPS     (A processes) spawn B children, then REPS times an
 *                                inter-communicator merge and free: {"median_us": ...}.
 *   dpm merge_static REPS        (A + B processes, A = B) the same between the two halves
 *                                of the world joined by MPI_Intercomm_create.
 *   dpm pingpong_intra           (2 processes) half round-trip at 8 B and 64 KiB within the
 *   dpm pingpong_spawned         world, or (1 process) with one spawned child:
 *                                {"8": us, "65536": us}.
 *   dpm connect_server FILE REPS (1 process, a separate job) opens a port, writes it to FILE
 *   dpm connect_client FILE REPS and accepts REPS connections; the client connects and
 *                                disconnects REPS times, then ping-pongs over one more:
 *                                {"accept_connect_median_us": ..., "8": us, "65536": us}.
 *   dpm intercomm_coll           (2 processes) spawn 2 children; barrier, bcast and
 *                                allreduce at 8 B and 64 KiB over the inter-communicator:
 *                                {"barrier": us, "bcast_8": us, ...}.
 *
 * Rank 0 of the measuring side prints; lines are flushed as they are made, so a job
 * killed by its timeout still shows what finished. Children are this same program. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#define BATCHES 7
#define MAX_REPS 1000
#define LARGE 65536

static const int sizes[2] = {8, LARGE};

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int n) {
    qsort(values, n, sizeof(double), compare);
    return values[n / 2];
}

static int reps_arg(const char *text) {
    int reps = atoi(text);
    if (reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "dpm: repetitions must be 1 to %d\n", MAX_REPS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return reps;
}

/* Spawns `children` copies of this program with `args` (NULL-terminated). */
static MPI_Comm spawn(const char *self, char **args, int children, MPI_Comm parents) {
    MPI_Comm inter;
    MPI_Comm_spawn(self, args, children, MPI_INFO_NULL, 0, parents, &inter, MPI_ERRCODES_IGNORE);
    return inter;
}

/* Half round-trip in microseconds between rank 0 of `comm` (`first`) and rank `peer` on
 * the other side (an intra- or inter-communicator): median of BATCHES batches. */
static double pingpong(MPI_Comm comm, int first, int peer, int size) {
    char *buf = calloc(size, 1);
    int iterations = size > 1024 ? 200 : 2000;
    double batch[BATCHES];
    for (int b = -1; b < BATCHES; b++) { /* batch -1 warms up */
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iterations; i++) {
            if (first) {
                MPI_Send(buf, size, MPI_BYTE, peer, 1, comm);
                MPI_Recv(buf, size, MPI_BYTE, peer, 1, comm, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, size, MPI_BYTE, peer, 1, comm, MPI_STATUS_IGNORE);
                MPI_Send(buf, size, MPI_BYTE, peer, 1, comm);
            }
        }
        if (b >= 0) batch[b] = (MPI_Wtime() - t0) * 1e6 / iterations / 2;
    }
    free(buf);
    return median(batch, BATCHES);
}

static void print_pingpong(MPI_Comm comm, int first, int peer, const char *prefix) {
    double us[2];
    for (int s = 0; s < 2; s++) us[s] = pingpong(comm, first, peer, sizes[s]);
    if (first) {
        printf("{%s\"8\": %.3f, \"65536\": %.3f}\n", prefix, us[0], us[1]);
        fflush(stdout);
    }
}

/* REPS merges and frees of `inter`; rank 0 of the low group prints the median. */
static void merges(MPI_Comm inter, int high, int reps) {
    double us[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        MPI_Comm merged;
        MPI_Barrier(inter);
        double t0 = MPI_Wtime();
        MPI_Intercomm_merge(inter, high, &merged);
        us[r] = (MPI_Wtime() - t0) * 1e6;
        MPI_Comm_free(&merged);
    }
    int rank;
    MPI_Comm_rank(inter, &rank);
    if (!high && rank == 0) {
        printf("{\"median_us\": %.3f}\n", median(us, reps));
        fflush(stdout);
    }
}

/* Barrier, bcast and allreduce over `inter` from the parents' rank 0 (root of bcast). */
static void inter_collectives(MPI_Comm inter, int parent) {
    int rank;
    MPI_Comm_rank(inter, &rank);
    double *in = calloc(LARGE / 8, 8), *out = calloc(LARGE / 8, 8);
    double figures[5];
    for (int f = 0; f < 5; f++) {
        int count = (f == 0) ? 0 : sizes[(f - 1) % 2] / 8;
        int iterations = count > 1 ? 100 : 1000;
        double batch[BATCHES];
        for (int b = -1; b < BATCHES; b++) {
            MPI_Barrier(inter);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iterations; i++) {
                if (f == 0) {
                    MPI_Barrier(inter);
                } else if (f <= 2) {
                    int root = parent ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
                    MPI_Bcast(in, count, MPI_DOUBLE, root, inter);
                } else {
                    MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, inter);
                }
            }
            if (b >= 0) batch[b] = (MPI_Wtime() - t0) * 1e6 / iterations;
        }
        figures[f] = median(batch, BATCHES);
    }
    if (parent && rank == 0) {
        printf("{\"barrier\": %.3f, \"bcast_8\": %.3f, \"bcast_65536\": %.3f, "
               "\"allreduce_8\": %.3f, \"allreduce_65536\": %.3f}\n",
               figures[0], figures[1], figures[2], figures[3], figures[4]);
        fflush(stdout);
    }
    free(in);
    free(out);
}

/* A spawned child: argv = [self, "child", KIND, REPS]. */
static void child(MPI_Comm parent, int argc, char **argv) {
    const char *kind = argc > 2 ? argv[2] : "init";
    if (strcmp(kind, "merge") == 0) merges(parent, 1, reps_arg(argv[3]));
    if (strcmp(kind, "pingpong") == 0) print_pingpong(parent, 0, 0, "");
    if (strcmp(kind, "coll") == 0) inter_collectives(parent, 0);
    MPI_Comm_disconnect(&parent);
}

/* A spawn that takes longer than DPM_REP_TIMEOUT seconds (default 10) is a hang: say so
 * and end the job, so a hung repetition is counted as one and not waited out. */
static void on_hang(int signal) {
    static const char line[] = "{\"hang\": 1}\n";
    (void)signal;
    if (write(STDOUT_FILENO, line, sizeof line - 1) < 0) _exit(4);
    _exit(3);
}

static unsigned rep_timeout(void) {
    const char *text = getenv("DPM_REP_TIMEOUT");
    int seconds = text ? atoi(text) : 10;
    signal(SIGALRM, on_hang);
    return seconds > 0 ? (unsigned)seconds : 10;
}

static void spawn_reps(const char *self, int children, int reps) {
    char *args[] = {"child", "init", NULL};
    unsigned timeout = rep_timeout();
    for (int r = 0; r < reps; r++) {
        alarm(timeout);
        double t0 = MPI_Wtime();
        MPI_Comm inter = spawn(self, args, children, MPI_COMM_SELF);
        MPI_Comm_disconnect(&inter);
        alarm(0);
        printf("{\"ms\": %.3f}\n", (MPI_Wtime() - t0) * 1e3);
        fflush(stdout);
    }
}

static void connect_side(int server, const char *file, int reps) {
    char port[MPI_MAX_PORT_NAME] = {0};
    double us[MAX_REPS];
    if (server) {
        MPI_Open_port(MPI_INFO_NULL, port);
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", file);
        FILE *f = fopen(tmp, "w");
        if (!f || fputs(port, f) < 0 || fclose(f) != 0 || rename(tmp, file) != 0) {
            fprintf(stderr, "dpm: cannot write the port name to %s\n", file);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    } else {
        FILE *f = NULL;
        for (int tries = 0; tries < 3000 && !(f = fopen(file, "r")); tries++) usleep(10000);
        if (!f || !fgets(port, sizeof port, f)) {
            fprintf(stderr, "dpm: no port name in %s after 30 s\n", file);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        fclose(f);
    }
    for (int r = 0; r <= reps; r++) {
        MPI_Comm inter;
        double t0 = MPI_Wtime();
        if (server) {
            MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
        } else {
            MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
        }
        if (r < reps) {
            us[r] = (MPI_Wtime() - t0) * 1e6;
        } else {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "\"accept_connect_median_us\": %.3f, ",
                     median(us, reps));
            print_pingpong(inter, !server, 0, prefix);
        }
        MPI_Comm_disconnect(&inter);
    }
    if (server) MPI_Close_port(port);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        child(parent, argc, argv);
        MPI_Finalize();
        return 0;
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    const char *self = argv[0];
    if (strcmp(mode, "spawn") == 0 && argc == 4) {
        spawn_reps(self, atoi(argv[2]), reps_arg(argv[3]));
    } else if (strcmp(mode, "rate") == 0 && argc == 3) {
        int n = reps_arg(argv[2]);
        char *args[] = {"child", "init", NULL};
        double t0 = MPI_Wtime();
        for (int r = 0; r < n; r++) {
            MPI_Comm inter = spawn(self, args, 1, MPI_COMM_SELF);
            MPI_Comm_disconnect(&inter);
        }
        printf("{\"per_s\": %.3f}\n", n / (MPI_Wtime() - t0));
    } else if (strcmp(mode, "merge_spawned") == 0 && argc == 4) {
        char *args[] = {"child", "merge", argv[3], NULL};
        MPI_Comm inter = spawn(self, args, atoi(argv[2]), MPI_COMM_WORLD);
        merges(inter, 0, reps_arg(argv[3]));
        MPI_Comm_disconnect(&inter);
    } else if (strcmp(mode, "merge_static") == 0 && argc == 3 && size % 2 == 0) {
        int high = rank >= size / 2;
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, high, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, high ? 0 : size / 2, 7, &inter);
        merges(inter, high, reps_arg(argv[2]));
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    } else if (strcmp(mode, "pingpong_intra") == 0 && size == 2) {
        print_pingpong(MPI_COMM_WORLD, rank == 0, 1 - rank, "");
    } else if (strcmp(mode, "pingpong_spawned") == 0) {
        char *args[] = {"child", "pingpong", NULL};
        MPI_Comm inter = spawn(self, args, 1, MPI_COMM_WORLD);
        print_pingpong(inter, 1, 0, "");
        MPI_Comm_disconnect(&inter);
    } else if ((strcmp(mode, "connect_server") == 0 || strcmp(mode, "connect_client") == 0) &&
               argc == 4) {
        connect_side(strcmp(mode, "connect_server") == 0, argv[2], reps_arg(argv[3]));
    } else if (strcmp(mode, "intercomm_coll") == 0) {
        char *args[] = {"child", "coll", NULL};
        MPI_Comm inter = spawn(self, args, 2, MPI_COMM_WORLD);
        inter_collectives(inter, 1);
        MPI_Comm_disconnect(&inter);
    } else {
        if (rank == 0) fprintf(stderr, "dpm: unknown mode or arguments (see the file's header)\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Finalize();
    return 0;
}
