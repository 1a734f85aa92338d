/* Point-to-point: blocking, nonblocking, sendrecv, PROC_NULL, wildcards, statuses,
 * the wait and test families, cancel, and error codes under MPI_ERRORS_RETURN. */
#include <mpi.h>
#include <string.h>
#include "check.h"

/* A generalized request: the status from the query function, the state freed once. */
static int greq_query(void *extra, MPI_Status *status) {
    (void)extra;
    status->MPI_SOURCE = 7;
    status->MPI_TAG = 8;
    MPI_Status_set_cancelled(status, 0);
    return MPI_Status_set_elements(status, MPI_INT, 3);
}
static int greq_free(void *extra) {
    (*(int *)extra)++;
    return MPI_SUCCESS;
}
static int greq_cancel(void *extra, int complete) {
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}
static void generalized(void) {
    int frees = 0, flag = 1, count;
    MPI_Request req;
    MPI_Status st;
    CHECK_RC(MPI_Grequest_start(greq_query, greq_free, greq_cancel, &frees, &req), MPI_SUCCESS);
    MPI_Test(&req, &flag, &st);
    CHECK(flag == 0 && frees == 0);
    CHECK_RC(MPI_Grequest_complete(req), MPI_SUCCESS);
    CHECK_RC(MPI_Wait(&req, &st), MPI_SUCCESS);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(req == MPI_REQUEST_NULL && frees == 1 && st.MPI_SOURCE == 7 && count == 3);
    /* Freed before it completes: freed when it completes. */
    MPI_Grequest_start(greq_query, greq_free, greq_cancel, &frees, &req);
    MPI_Request held = req;
    CHECK_RC(MPI_Request_free(&req), MPI_SUCCESS);
    CHECK(frees == 1);
    CHECK_RC(MPI_Grequest_complete(held), MPI_SUCCESS);
    CHECK(frees == 2);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;
    int count;

    /* PROC_NULL: immediate, empty status. */
    int x = 5;
    CHECK_RC(MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK_RC(MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 0);

    /* Ring of doubles through Sendrecv. */
    double out[100], in[100];
    for (int i = 0; i < 100; i++) out[i] = rank * 1000 + i;
    CHECK_RC(MPI_Sendrecv(out, 100, MPI_DOUBLE, right, 7, in, 100, MPI_DOUBLE, left, 7,
                          MPI_COMM_WORLD, &st), MPI_SUCCESS);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7);
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    CHECK(count == 100);
    CHECK(in[99] == left * 1000 + 99);

    /* Sendrecv_replace. */
    long v = rank;
    CHECK_RC(MPI_Sendrecv_replace(&v, 1, MPI_LONG, right, 1, left, 1, MPI_COMM_WORLD,
                                  MPI_STATUS_IGNORE), MPI_SUCCESS);
    CHECK(v == left);

    /* Any source, any tag; Ssend and Rsend deliver as Send; a large message. */
    if (size > 1) {
        static int big[1 << 18];
        if (rank == 0) {
            for (int src = 1; src < size; src++) {
                CHECK_RC(MPI_Recv(big, 1 << 18, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                  MPI_COMM_WORLD, &st), MPI_SUCCESS);
                MPI_Get_count(&st, MPI_INT, &count);
                CHECK(count == (1 << 18) && st.MPI_TAG == st.MPI_SOURCE + 100);
                CHECK(big[12345] == st.MPI_SOURCE + 12345);
            }
        } else {
            for (int i = 0; i < (1 << 18); i++) big[i] = rank + i;
            CHECK_RC(MPI_Ssend(big, 1 << 18, MPI_INT, 0, rank + 100, MPI_COMM_WORLD), MPI_SUCCESS);
        }
    }
    /* No rank sends on to rank 0 before its wildcard receives are done. */
    MPI_Barrier(MPI_COMM_WORLD);

    /* Nonblocking ring: Irecv, Isend, Waitall; then Waitany, Testall, Waitsome. */
    MPI_Request reqs[4];
    int a = rank, b = -1;
    CHECK_RC(MPI_Irecv(&b, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &reqs[0]), MPI_SUCCESS);
    CHECK_RC(MPI_Isend(&a, 1, MPI_INT, right, 3, MPI_COMM_WORLD, &reqs[1]), MPI_SUCCESS);
    MPI_Status sts[2];
    CHECK_RC(MPI_Waitall(2, reqs, sts), MPI_SUCCESS);
    CHECK(b == left && sts[0].MPI_SOURCE == left && reqs[0] == MPI_REQUEST_NULL);

    b = -1;
    MPI_Irecv(&b, 1, MPI_INT, left, 4, MPI_COMM_WORLD, &reqs[0]);
    MPI_Issend(&a, 1, MPI_INT, right, 4, MPI_COMM_WORLD, &reqs[1]);
    int idx, done = 0;
    for (int k = 0; k < 2; k++) {
        CHECK_RC(MPI_Waitany(2, reqs, &idx, &st), MPI_SUCCESS);
        CHECK(idx == 0 || idx == 1);
        done |= 1 << idx;
    }
    CHECK(done == 3 && b == left);
    CHECK_RC(MPI_Waitany(2, reqs, &idx, &st), MPI_SUCCESS);
    CHECK(idx == MPI_UNDEFINED);

    b = -1;
    MPI_Irecv(&b, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&a, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &reqs[1]);
    int flag = 0;
    while (!flag) CHECK_RC(MPI_Testall(2, reqs, &flag, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    CHECK(b == left);

    b = -1;
    MPI_Irecv(&b, 1, MPI_INT, left, 6, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&a, 1, MPI_INT, right, 6, MPI_COMM_WORLD, &reqs[1]);
    int got = 0, outcount, indices[2];
    while (got < 2) {
        CHECK_RC(MPI_Waitsome(2, reqs, &outcount, indices, sts), MPI_SUCCESS);
        got += outcount;
    }
    CHECK(b == left);
    CHECK_RC(MPI_Testsome(2, reqs, &outcount, indices, sts), MPI_SUCCESS);
    CHECK(outcount == MPI_UNDEFINED);

    /* Test on a receive: poll until the message comes; Test on REQUEST_NULL is done. */
    b = -1;
    MPI_Irecv(&b, 1, MPI_INT, left, 8, MPI_COMM_WORLD, &reqs[0]);
    MPI_Send(&a, 1, MPI_INT, right, 8, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) CHECK_RC(MPI_Test(&reqs[0], &flag, &st), MPI_SUCCESS);
    CHECK(b == left && st.MPI_TAG == 8);
    CHECK_RC(MPI_Test(&reqs[0], &flag, &st), MPI_SUCCESS);
    CHECK(flag == 1);

    /* Probe and Iprobe: the status without the message, which a receive then takes. */
    int pv = rank * 3;
    MPI_Send(&pv, 1, MPI_INT, right, 11, MPI_COMM_WORLD);
    CHECK_RC(MPI_Probe(MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 11 && count == 1);
    flag = 0;
    while (!flag) CHECK_RC(MPI_Iprobe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st), MPI_SUCCESS);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 11);
    MPI_Recv(&pv, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(pv == left * 3);
    MPI_Iprobe(MPI_ANY_SOURCE, 12, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag == 0);
    MPI_Iprobe(MPI_PROC_NULL, 12, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag == 1 && st.MPI_SOURCE == MPI_PROC_NULL);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Buffered sends: the call returns before the receive is posted. */
    static char bsend_space[4 * (1024 + MPI_BSEND_OVERHEAD)];
    CHECK_RC(MPI_Buffer_attach(bsend_space, sizeof bsend_space), MPI_SUCCESS);
    char msg[1024];
    for (int k = 0; k < 3; k++) {
        memset(msg, 'a' + k, sizeof msg);
        CHECK_RC(MPI_Bsend(msg, sizeof msg, MPI_CHAR, right, 20 + k, MPI_COMM_WORLD), MPI_SUCCESS);
    }
    static char too_big[sizeof bsend_space];
    CHECK_RC(MPI_Bsend(too_big, sizeof too_big, MPI_CHAR, right, 30, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 2; k >= 0; k--) {
        MPI_Recv(msg, sizeof msg, MPI_CHAR, left, 20 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(msg[0] == 'a' + k && msg[1023] == 'a' + k);
    }
    void *detached;
    int detached_size;
    CHECK_RC(MPI_Buffer_detach(&detached, &detached_size), MPI_SUCCESS);
    CHECK(detached == bsend_space && detached_size == (int)sizeof bsend_space);

    /* Matched probes: the message found is the one received. */
    MPI_Message message;
    pv = rank * 5;
    MPI_Send(&pv, 1, MPI_INT, right, 13, MPI_COMM_WORLD);
    CHECK_RC(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &message, &st), MPI_SUCCESS);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 13);
    CHECK_RC(MPI_Mrecv(&pv, 1, MPI_INT, &message, &st), MPI_SUCCESS);
    CHECK(pv == left * 5 && message == MPI_MESSAGE_NULL);
    MPI_Send(&pv, 1, MPI_INT, right, 14, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Improbe(left, 14, MPI_COMM_WORLD, &flag, &message, &st);
    MPI_Request mreq;
    CHECK_RC(MPI_Imrecv(&pv, 1, MPI_INT, &message, &mreq), MPI_SUCCESS);
    MPI_Wait(&mreq, &st);
    CHECK(st.MPI_TAG == 14 && pv == ((left + size - 1) % size) * 5);
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &message, &st);
    CHECK(message == MPI_MESSAGE_NO_PROC);
    MPI_Mrecv(&pv, 1, MPI_INT, &message, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL);
    /* Request_get_status leaves the request; status fields set by hand. */
    MPI_Irecv(&b, 1, MPI_INT, left, 15, MPI_COMM_WORLD, &reqs[0]);
    MPI_Send(&a, 1, MPI_INT, right, 15, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Request_get_status(reqs[0], &flag, &st);
    CHECK(reqs[0] != MPI_REQUEST_NULL && st.MPI_TAG == 15);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    MPI_Status_set_elements(&st, MPI_DOUBLE, 3);
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    MPI_Status_set_cancelled(&st, 1);
    MPI_Test_cancelled(&st, &flag);
    CHECK(count == 3 && flag == 1);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Cancel an unmatched receive. */
    MPI_Irecv(&b, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &reqs[0]);
    CHECK_RC(MPI_Cancel(&reqs[0]), MPI_SUCCESS);
    CHECK_RC(MPI_Wait(&reqs[0], &st), MPI_SUCCESS);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 1);

    /* A send that completes is not cancelled; one no receive matches cannot complete, so
     * MPI_Cancel says it is not provided and leaves it active (here received after). */
    MPI_Isend(&a, 1, MPI_INT, rank, 998, MPI_COMM_WORLD, &reqs[1]);
    CHECK_RC(MPI_Cancel(&reqs[1]), MPI_SUCCESS);
    CHECK_RC(MPI_Wait(&reqs[1], &st), MPI_SUCCESS);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 0);
    MPI_Recv(&b, 1, MPI_INT, rank, 998, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    static char big_out[1 << 20], big_in[1 << 20];
    big_out[12345] = 7;
    MPI_Isend(big_out, sizeof big_out, MPI_CHAR, right, 997, MPI_COMM_WORLD, &reqs[1]);
    CHECK_RC(MPI_Cancel(&reqs[1]), MPI_ERR_UNSUPPORTED_OPERATION);
    /* No receive is posted before every rank's cancel has given up (a neighbour ahead
     * would match the send within its grace, and the cancel would rightly succeed). */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Recv(big_in, sizeof big_in, MPI_CHAR, left, 997, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK_RC(MPI_Wait(&reqs[1], &st), MPI_SUCCESS);
    CHECK(big_in[12345] == 7);

    /* MPI_Isendrecv around the ring, and its replace form on a strided buffer. */
    int ring_out = rank * 10, ring_in = -1, strided[6] = {rank, -1, rank + 1, -1, rank + 2, -1};
    MPI_Datatype every_other;
    MPI_Type_vector(3, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    CHECK_RC(MPI_Isendrecv(&ring_out, 1, MPI_INT, right, 60, &ring_in, 1, MPI_INT, left, 60,
                           MPI_COMM_WORLD, &reqs[0]), MPI_SUCCESS);
    CHECK_RC(MPI_Wait(&reqs[0], &st), MPI_SUCCESS);
    CHECK(ring_in == left * 10 && st.MPI_SOURCE == left && st.MPI_TAG == 60);
    CHECK_RC(MPI_Isendrecv_replace(strided, 1, every_other, right, 61, left, 61, MPI_COMM_WORLD,
                                   &reqs[0]), MPI_SUCCESS);
    flag = 0;
    while (!flag) MPI_Test(&reqs[0], &flag, &st);
    CHECK(strided[0] == left && strided[4] == left + 2 && strided[1] == -1);
    MPI_Type_free(&every_other);

    generalized();

    /* Request_free on a completed-later send. */
    MPI_Irecv(&b, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&a, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &reqs[1]);
    CHECK_RC(MPI_Request_free(&reqs[1]), MPI_SUCCESS);
    CHECK(reqs[1] == MPI_REQUEST_NULL);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    CHECK(b == left);

    /* Persistent requests: set up once, started five times, inactive between. */
    int pout = 0, pin = -1;
    MPI_Request preq[2];
    CHECK_RC(MPI_Recv_init(&pin, 1, MPI_INT, left, 40, MPI_COMM_WORLD, &preq[0]), MPI_SUCCESS);
    CHECK_RC(MPI_Send_init(&pout, 1, MPI_INT, right, 40, MPI_COMM_WORLD, &preq[1]), MPI_SUCCESS);
    for (int k = 0; k < 5; k++) {
        pout = rank * 10 + k;
        CHECK_RC(MPI_Startall(2, preq), MPI_SUCCESS);
        CHECK_RC(MPI_Waitall(2, preq, MPI_STATUSES_IGNORE), MPI_SUCCESS);
        CHECK(pin == left * 10 + k && preq[0] != MPI_REQUEST_NULL);
    }
    CHECK_RC(MPI_Wait(&preq[0], &st), MPI_SUCCESS);
    CHECK(preq[0] != MPI_REQUEST_NULL);
    MPI_Start(&preq[0]);
    MPI_Send(&a, 1, MPI_INT, right, 40, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Test(&preq[0], &flag, &st);
    CHECK(pin == left && st.MPI_TAG == 40 && preq[0] != MPI_REQUEST_NULL);
    CHECK_RC(MPI_Request_free(&preq[0]), MPI_SUCCESS);
    CHECK_RC(MPI_Request_free(&preq[1]), MPI_SUCCESS);
    CHECK(preq[0] == MPI_REQUEST_NULL);

    /* Synchronous mode: an Issend does not complete before its receive is posted (ranks
     * of one node with single-copy transfers, as here). */
    if (size > 1) {
        int sv = 7, rv = 0, early = 0;
        if (rank == 0) {
            MPI_Request sreq;
            MPI_Issend(&sv, 1, MPI_INT, 1, 50, MPI_COMM_WORLD, &sreq);
            for (int k = 0; k < 2000 && !early; k++) MPI_Test(&sreq, &early, MPI_STATUS_IGNORE);
            CHECK(early == 0);
            MPI_Barrier(MPI_COMM_WORLD);
            if (!early) MPI_Wait(&sreq, MPI_STATUS_IGNORE);
            /* A blocking Ssend returns once rank 1 took it. */
            CHECK_RC(MPI_Ssend(&sv, 1, MPI_INT, 1, 51, MPI_COMM_WORLD), MPI_SUCCESS);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 1) {
                MPI_Recv(&rv, 1, MPI_INT, 0, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(rv == 7);
                MPI_Recv(&rv, 1, MPI_INT, 0, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
    }

    /* Small sends complete as they start: their handles are still distinct and active,
     * and every request call takes them. */
    int small_in[4] = {-1, -1, -1, -1}, small_out = rank;
    MPI_Request sreqs[4], rreqs[4];
    for (int k = 0; k < 4; k++)
        MPI_Irecv(&small_in[k], 1, MPI_INT, left, 90 + k, MPI_COMM_WORLD, &rreqs[k]);
    for (int k = 0; k < 4; k++)
        CHECK_RC(MPI_Isend(&small_out, 1, MPI_INT, right, 90 + k, MPI_COMM_WORLD, &sreqs[k]),
                 MPI_SUCCESS);
    CHECK(sreqs[0] != sreqs[1] && sreqs[1] != sreqs[2] && sreqs[0] != sreqs[3]);
    CHECK(sreqs[0] != MPI_REQUEST_NULL && sreqs[3] != MPI_REQUEST_NULL);
    flag = 0;
    while (!flag) CHECK_RC(MPI_Request_get_status(sreqs[0], &flag, &st), MPI_SUCCESS);
    CHECK(sreqs[0] != MPI_REQUEST_NULL);
    flag = 0;
    while (!flag) CHECK_RC(MPI_Test(&sreqs[0], &flag, &st), MPI_SUCCESS);
    CHECK(sreqs[0] == MPI_REQUEST_NULL);
    CHECK_RC(MPI_Cancel(&sreqs[1]), MPI_SUCCESS);
    CHECK_RC(MPI_Wait(&sreqs[1], &st), MPI_SUCCESS);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 0 && sreqs[1] == MPI_REQUEST_NULL);
    CHECK_RC(MPI_Request_free(&sreqs[2]), MPI_SUCCESS);
    CHECK(sreqs[2] == MPI_REQUEST_NULL);
    CHECK_RC(MPI_Waitall(2, &sreqs[2], sts), MPI_SUCCESS);
    CHECK(sreqs[3] == MPI_REQUEST_NULL);
    CHECK_RC(MPI_Waitall(4, rreqs, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    CHECK(small_in[0] == left && small_in[3] == left);

    /* Long messages (their receives are waited for, not tested, so that the copy is split
     * with the sender): a window by MPI_Waitall, then one by MPI_Test, one by MPI_Wait and
     * one cancelled. */
    enum { LONG = 256 * 1024, NLONG = 4 };
    static char long_out[LONG], long_in[NLONG][LONG];
    MPI_Request lreqs[2 * NLONG];
    MPI_Status lsts[2 * NLONG];
    memset(long_out, rank + 1, LONG);
    for (int k = 0; k < NLONG; k++)
        MPI_Irecv(long_in[k], LONG, MPI_CHAR, left, 70 + k, MPI_COMM_WORLD, &lreqs[k]);
    for (int k = 0; k < NLONG; k++)
        MPI_Isend(long_out, LONG - k, MPI_CHAR, right, 70 + k, MPI_COMM_WORLD, &lreqs[NLONG + k]);
    CHECK_RC(MPI_Waitall(2 * NLONG, lreqs, lsts), MPI_SUCCESS);
    for (int k = 0; k < NLONG; k++) {
        int n = -1;
        MPI_Get_count(&lsts[k], MPI_CHAR, &n);
        CHECK(n == LONG - k && lsts[k].MPI_SOURCE == left && lsts[k].MPI_TAG == 70 + k);
        CHECK(long_in[k][0] == left + 1 && long_in[k][LONG - k - 1] == left + 1);
        CHECK(lreqs[k] == MPI_REQUEST_NULL);
    }
    memset(long_in, 0, sizeof long_in);
    for (int k = 0; k < 3; k++)
        MPI_Irecv(long_in[k], LONG, MPI_CHAR, left, 80 + k, MPI_COMM_WORLD, &lreqs[k]);
    MPI_Isend(long_out, LONG, MPI_CHAR, right, 80, MPI_COMM_WORLD, &lreqs[3]);
    MPI_Isend(long_out, LONG, MPI_CHAR, right, 81, MPI_COMM_WORLD, &lreqs[4]);
    flag = 0;
    while (!flag) CHECK_RC(MPI_Test(&lreqs[0], &flag, &st), MPI_SUCCESS);
    CHECK(st.MPI_TAG == 80 && long_in[0][LONG - 1] == left + 1);
    CHECK_RC(MPI_Wait(&lreqs[1], &st), MPI_SUCCESS);
    CHECK(st.MPI_TAG == 81 && long_in[1][LONG / 2] == left + 1);
    CHECK_RC(MPI_Cancel(&lreqs[2]), MPI_SUCCESS);
    CHECK_RC(MPI_Wait(&lreqs[2], &st), MPI_SUCCESS);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 1 && long_in[2][0] == 0);
    CHECK_RC(MPI_Waitall(2, &lreqs[3], MPI_STATUSES_IGNORE), MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Errors return their class. */
    CHECK_RC(MPI_Send(&a, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    CHECK_RC(MPI_Send(&a, 1, MPI_INT, right, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
    CHECK_RC(MPI_Send(&a, -1, MPI_INT, right, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    CHECK_RC(MPI_Send(&a, 1, MPI_DATATYPE_NULL, right, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    CHECK_RC(MPI_Send(&a, 1, MPI_INT, right, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    MPI_Request bogus = (MPI_Request)0x2c123456;
    CHECK_RC(MPI_Wait(&bogus, &st), MPI_ERR_REQUEST);
    /* Truncation: two ints into room for one. */
    int two[2] = {1, 2};
    MPI_Irecv(&b, 1, MPI_INT, left, 10, MPI_COMM_WORLD, &reqs[0]);
    MPI_Send(two, 2, MPI_INT, right, 10, MPI_COMM_WORLD);
    CHECK_RC(MPI_Wait(&reqs[0], &st), MPI_ERR_TRUNCATE);

    /* A message whose bytes end inside an int of a derived receive type: the signatures
     * differ (3 chars into ints), an error with its status; blocking and nonblocking. Two
     * whole ints of the same type are a legal short message. */
    MPI_Datatype spread;
    int lens[3] = {1, 2, 1}, at[3] = {4, 8, 16};
    MPI_Type_indexed(3, lens, at, MPI_INT, &spread);
    MPI_Type_commit(&spread);
    char three[3] = {1, 2, 3};
    int wide[24] = {0};
    MPI_Irecv(wide, 1, spread, left, 11, MPI_COMM_WORLD, &reqs[0]);
    MPI_Send(three, 3, MPI_CHAR, right, 11, MPI_COMM_WORLD);
    CHECK_RC(MPI_Wait(&reqs[0], &st), MPI_ERR_TYPE);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 11);
    CHECK_RC(MPI_Sendrecv(three, 3, MPI_CHAR, right, 12, wide, 1, spread, left, 12,
                          MPI_COMM_WORLD, &st), MPI_ERR_TYPE);
    MPI_Send(three, 3, MPI_CHAR, right, 13, MPI_COMM_WORLD);
    CHECK_RC(MPI_Recv(wide, 1, spread, left, 13, MPI_COMM_WORLD, &st), MPI_ERR_TYPE);
    MPI_Send(two, 2, MPI_INT, right, 14, MPI_COMM_WORLD);
    CHECK_RC(MPI_Recv(wide, 1, spread, left, 14, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    got = -1;
    MPI_Get_elements(&st, spread, &got);
    CHECK(got == 2 && wide[4] == 1 && wide[8] == 2);
    MPI_Type_free(&spread);

    MPI_Barrier(MPI_COMM_WORLD);
    FINISH("p2p");
}
