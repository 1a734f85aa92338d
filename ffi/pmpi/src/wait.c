/* The Wait/Test family and the blocking point-to-point calls a program may wait in: while a
 * nonblocking collective of ours is in flight they test and progress it in turn, as a host
 * MPI progresses its own inside every call. Without one they pass straight through. */
#include <stdlib.h>

#include "serve.h"

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    if (cc_jobs_in_flight())
        cc_progress_all();
    return PMPI_Test(req, flag, status);
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
    if (cc_jobs_in_flight())
        cc_progress_all();
    return PMPI_Testall(n, reqs, flag, statuses);
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
    if (cc_jobs_in_flight())
        cc_progress_all();
    return PMPI_Testany(n, reqs, index, flag, status);
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
    if (cc_jobs_in_flight())
        cc_progress_all();
    return PMPI_Testsome(n, reqs, outcount, indices, statuses);
}

int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *status) {
    if (cc_jobs_in_flight())
        cc_progress_all();
    return PMPI_Request_get_status(req, flag, status);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
    if (cc_jobs_in_flight())
        cc_progress_all();
    return PMPI_Iprobe(source, tag, comm, flag, status);
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status) {
    if (cc_jobs_in_flight())
        cc_progress_all();
    return PMPI_Improbe(source, tag, comm, flag, message, status);
}

/* Loops `TEST` (which sets `done_`) with progress until done. */
#define CC_WAIT_LOOP(TEST, DONE)                                                               \
    do {                                                                                   \
        for (;;) {                                                                         \
            cc_progress_all();                                                             \
            int rc_ = (TEST);                                                              \
            if (rc_ != MPI_SUCCESS || (DONE))                                              \
                return rc_;                                                                \
        }                                                                                  \
    } while (0)

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    int flag = 0;
    if (!cc_jobs_in_flight())
        return PMPI_Wait(req, status);
    CC_WAIT_LOOP(PMPI_Test(req, &flag, status), flag);
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    int flag = 0;
    if (!cc_jobs_in_flight())
        return PMPI_Waitall(n, reqs, statuses);
    CC_WAIT_LOOP(PMPI_Testall(n, reqs, &flag, statuses), flag);
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
    int flag = 0;
    if (!cc_jobs_in_flight())
        return PMPI_Waitany(n, reqs, index, status);
    CC_WAIT_LOOP(PMPI_Testany(n, reqs, index, &flag, status), flag);
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
    if (!cc_jobs_in_flight())
        return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
    CC_WAIT_LOOP(PMPI_Testsome(n, reqs, outcount, indices, statuses), *outcount != 0);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
    MPI_Request req;
    int flag = 0, rc;
    if (!cc_jobs_in_flight())
        return PMPI_Recv(buf, count, type, source, tag, comm, status);
    if ((rc = PMPI_Irecv(buf, count, type, source, tag, comm, &req)) != MPI_SUCCESS)
        return rc;
    CC_WAIT_LOOP(PMPI_Test(&req, &flag, status), flag);
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    MPI_Request req;
    int flag = 0, rc;
    if (!cc_jobs_in_flight())
        return PMPI_Send(buf, count, type, dest, tag, comm);
    if ((rc = PMPI_Isend(buf, count, type, dest, tag, comm, &req)) != MPI_SUCCESS)
        return rc;
    CC_WAIT_LOOP(PMPI_Test(&req, &flag, MPI_STATUS_IGNORE), flag);
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
    int flag = 0;
    if (!cc_jobs_in_flight())
        return PMPI_Probe(source, tag, comm, status);
    CC_WAIT_LOOP(PMPI_Iprobe(source, tag, comm, &flag, status), flag);
}

/* The other blocking point-to-point calls: their nonblocking form, waited for in a loop. */
int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    MPI_Request req;
    int flag = 0, rc;
    if (!cc_jobs_in_flight())
        return PMPI_Ssend(buf, count, type, dest, tag, comm);
    if ((rc = PMPI_Issend(buf, count, type, dest, tag, comm, &req)) != MPI_SUCCESS)
        return rc;
    CC_WAIT_LOOP(PMPI_Test(&req, &flag, MPI_STATUS_IGNORE), flag);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    MPI_Request req;
    int flag = 0, rc;
    if (!cc_jobs_in_flight())
        return PMPI_Bsend(buf, count, type, dest, tag, comm);
    if ((rc = PMPI_Ibsend(buf, count, type, dest, tag, comm, &req)) != MPI_SUCCESS)
        return rc;
    CC_WAIT_LOOP(PMPI_Test(&req, &flag, MPI_STATUS_IGNORE), flag);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    MPI_Request req;
    int flag = 0, rc;
    if (!cc_jobs_in_flight())
        return PMPI_Rsend(buf, count, type, dest, tag, comm);
    if ((rc = PMPI_Irsend(buf, count, type, dest, tag, comm, &req)) != MPI_SUCCESS)
        return rc;
    CC_WAIT_LOOP(PMPI_Test(&req, &flag, MPI_STATUS_IGNORE), flag);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                 MPI_Comm comm, MPI_Status *status) {
    MPI_Request reqs[2];
    MPI_Status st[2];
    int flag = 0, rc;
    if (!cc_jobs_in_flight())
        return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
                             comm, status);
    if ((rc = PMPI_Irecv(rbuf, rcount, rtype, source, rtag, comm, &reqs[0])) != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Isend(sbuf, scount, stype, dest, stag, comm, &reqs[1])) != MPI_SUCCESS) {
        PMPI_Cancel(&reqs[0]);
        PMPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
        return rc;
    }
    for (;;) {
        cc_progress_all();
        if ((rc = PMPI_Testall(2, reqs, &flag, st)) != MPI_SUCCESS || flag)
            break;
    }
    if (status != MPI_STATUS_IGNORE)
        *status = st[0];
    return rc;
}

/* The message goes out packed (MPI_PACKED matches any receive of its signature), so the
 * buffer can take the reply while it travels. */
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag,
                         int source, int rtag, MPI_Comm comm, MPI_Status *status) {
    int size = 0, at = 0, rc;
    if (!cc_jobs_in_flight())
        return PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status);
    if ((rc = PMPI_Pack_size(count, type, comm, &size)) != MPI_SUCCESS)
        return rc;
    void *packed = malloc(size ? (size_t)size : 1);
    if (!packed)
        return cc_error(comm, MPI_ERR_INTERN);
    if ((rc = PMPI_Pack(buf, count, type, packed, size, &at, comm)) == MPI_SUCCESS)
        rc = MPI_Sendrecv(packed, at, MPI_PACKED, dest, stag, buf, count, type, source, rtag,
                          comm, status);
    free(packed);
    return rc;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
    int flag = 0;
    if (!cc_jobs_in_flight())
        return PMPI_Mprobe(source, tag, comm, message, status);
    CC_WAIT_LOOP(PMPI_Improbe(source, tag, comm, &flag, message, status), flag);
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
              MPI_Status *status) {
    MPI_Request req;
    int flag = 0, rc;
    if (!cc_jobs_in_flight())
        return PMPI_Mrecv(buf, count, type, message, status);
    if ((rc = PMPI_Imrecv(buf, count, type, message, &req)) != MPI_SUCCESS)
        return rc;
    CC_WAIT_LOOP(PMPI_Test(&req, &flag, status), flag);
}
