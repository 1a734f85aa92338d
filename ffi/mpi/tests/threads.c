/* MPI_THREAD_MULTIPLE: threads of every rank communicate at once, each on its own
 * duplicate of the world (a ring, allreduces, windows of nonblocking messages, errors
 * returned), and create communicators at once. */
#include <mpi.h>
#include <pthread.h>
#include "check.h"

#define THREADS 3
static int rank, size;
static MPI_Comm comms[THREADS];

static void *work(void *arg) {
    int t = (int)(long)arg;
    MPI_Comm comm = comms[t];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < 50; i++) {
        int out = rank * 1000 + t * 100 + i, in = -1, sum = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, right, i, &in, 1, MPI_INT, left, i, comm, MPI_STATUS_IGNORE);
        CHECK(in == left * 1000 + t * 100 + i);
        MPI_Allreduce(&t, &sum, 1, MPI_INT, MPI_SUM, comm);
        CHECK(sum == t * size);
    }
    /* Windows of nonblocking messages, completed by MPI_Test and MPI_Waitall (a null
     * handle among them), while the other threads make and free communicators. */
    enum { WINDOW = 16 };
    int outs[WINDOW], ins[WINDOW], flag = 0;
    MPI_Request reqs[2 * WINDOW];
    for (int round = 0; round < 20; round++) {
        for (int k = 0; k < WINDOW; k++) {
            outs[k] = rank * 100000 + t * 1000 + round * WINDOW + k;
            ins[k] = -1;
            MPI_Irecv(&ins[k], 1, MPI_INT, left, k, comm, &reqs[k]);
            MPI_Isend(&outs[k], 1, MPI_INT, right, k, comm, &reqs[WINDOW + k]);
        }
        do MPI_Test(&reqs[0], &flag, MPI_STATUS_IGNORE); while (!flag);
        CHECK(reqs[0] == MPI_REQUEST_NULL);
        MPI_Waitall(2 * WINDOW, reqs, MPI_STATUSES_IGNORE);
        for (int k = 0; k < WINDOW; k++) CHECK(ins[k] == left * 100000 + t * 1000 + round * WINDOW + k);
        MPI_Comm made;
        MPI_Comm_dup(comm, &made);
        MPI_Comm_free(&made);
    }
    /* A call's error goes to the handler of its own communicator, whatever other threads
     * call meanwhile on communicators whose errors are fatal. */
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int i = 0; i < 50; i++) {
        int code = MPI_Send(&t, 1, MPI_INT, size + 5, 0, comm), class = -1;
        MPI_Error_class(code, &class);
        CHECK(class == MPI_ERR_RANK);
    }
    MPI_Comm dup;
    MPI_Comm_dup(comm, &dup);
    int s;
    MPI_Comm_size(dup, &s);
    CHECK(s == size);
    MPI_Comm_free(&dup);
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE);
    for (int t = 0; t < THREADS; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, work, (void *)(long)t);
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
    int main_thread;
    MPI_Is_thread_main(&main_thread);
    CHECK(main_thread == 1);
    for (int t = 0; t < THREADS; t++) MPI_Comm_free(&comms[t]);
    FINISH("threads");
}
