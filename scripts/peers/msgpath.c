/* The per-message path counted under callgrind: one 8-byte MPI_Send, one MPI_Recv of an
 * 8-byte message that is already at the receiver, and a window of 64 MPI_Isend (or
 * MPI_Irecv) and one MPI_Waitall, each inside a function of its own for callgrind's
 * --toggle-collect (scripts/instructions.sh peers). `msgpath single` runs the first two
 * (in rounds of 25: rank 0 sends, a barrier, rank 1 receives them), `msgpath window` the third
 * (rank 0's window of sends, a barrier, then rank 1's window of receives), `msgpath posted`
 * the message-rate benchmark's receive side (rank 1 posts its 64 MPI_Irecv, rank 0 sends its
 * window, then rank 1's MPI_Waitall; the barriers between may already move the messages), and
 * `msgpath posted-ring` the same with rank 1 sleeping instead of entering a barrier before its
 * wait, so that the wait finds the window still in the transport, as the benchmark's does. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define N 2000
/* Messages per round: few enough that no queue between the two ranks fills, so a send
 * never waits for the receiver (callgrind would count the waiting). */
#define ROUND 25
#define WINDOW 64
#define WINDOWS 200

__attribute__((noinline)) void probe_send(const char *buf, int i) {
    MPI_Send(buf, 8, MPI_BYTE, 1, i & 1023, MPI_COMM_WORLD);
}

__attribute__((noinline)) void probe_recv(char *buf, int i) {
    MPI_Recv(buf, 8, MPI_BYTE, 0, i & 1023, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

__attribute__((noinline)) void probe_window(int rank, char *bufs) {
    MPI_Request requests[WINDOW];
    MPI_Status statuses[WINDOW];
    for (int i = 0; i < WINDOW; i++) {
        if (rank == 0)
            MPI_Isend(bufs + 8 * i, 8, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &requests[i]);
        else
            MPI_Irecv(bufs + 8 * i, 8, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &requests[i]);
    }
    MPI_Waitall(WINDOW, requests, statuses);
}

__attribute__((noinline)) void probe_post(char *bufs, MPI_Request *requests) {
    for (int i = 0; i < WINDOW; i++)
        MPI_Irecv(bufs + 8 * i, 8, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &requests[i]);
}

__attribute__((noinline)) void probe_wait_posted(MPI_Request *requests) {
    MPI_Status statuses[WINDOW];
    MPI_Waitall(WINDOW, requests, statuses);
}

int main(int argc, char **argv) {
    int rank;
    char buf[8 * WINDOW];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(buf, 1, sizeof buf);
    int window = argc > 1 && strcmp(argv[1], "window") == 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 1 && strcmp(argv[1], "posted-ring") == 0) {
        MPI_Request requests[WINDOW];
        /* Long enough for rank 0's window, even under callgrind. */
        struct timespec pause = {0, 20 * 1000 * 1000};
        for (int w = 0; w < WINDOWS; w++) {
            if (rank == 1) probe_post(buf, requests);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) probe_window(rank, buf);
            if (rank == 1) {
                nanosleep(&pause, NULL);
                probe_wait_posted(requests);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    } else if (argc > 1 && strcmp(argv[1], "posted") == 0) {
        MPI_Request requests[WINDOW];
        for (int w = 0; w < WINDOWS; w++) {
            if (rank == 1) probe_post(buf, requests);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) probe_window(rank, buf);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 1) probe_wait_posted(requests);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    } else if (!window) {
        for (int round = 0; round < N / ROUND; round++) {
            if (rank == 0)
                for (int i = 0; i < ROUND; i++) probe_send(buf, i);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 1)
                for (int i = 0; i < ROUND; i++) probe_recv(buf, i);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    } else {
        /* The sender's window completes without the receiver (eager); the receiver's
         * window then finds its messages there, so neither side counts waiting. */
        for (int w = 0; w < WINDOWS; w++) {
            if (rank == 0) probe_window(rank, buf);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 1) probe_window(rank, buf);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}
