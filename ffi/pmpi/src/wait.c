/* The Wait/Test family and the blocking point-to-point calls a program may wait in: while a
 * nonblocking collective of ours is in flight they test and progress it in turn, as a host
 * MPI progresses its own inside every call. Without one they pass straight through. */
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
