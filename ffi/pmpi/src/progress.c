/* Nonblocking collectives: each is a generalized request (MPI_Grequest_start) whose job this
 * library progresses inside the Wait/Test family and inside its own blocking calls, and
 * completes with MPI_Grequest_complete. While any is in flight, waits become test loops
 * that progress them, so a call that waits for a peer never starves a collective the peer
 * waits for. */
#include <stdlib.h>

#include "serve.h"

/* Jobs from their start until the host frees their request, in start order; `inflight` of
 * them are not done yet. */
static cc_job *jobs;
static int inflight;

static int query(void *extra, MPI_Status *status) {
    cc_job *job = extra;
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = job->failed ? job->err : MPI_SUCCESS;
    return status->MPI_ERROR;
}

static int release(void *extra) {
    cc_job *job = extra;
    for (cc_job **p = &jobs; *p; p = &(*p)->next) {
        if (*p == job) {
            *p = job->next;
            break;
        }
    }
    cc_job_release(job);
    free(job);
    return MPI_SUCCESS;
}

static int cancel(void *extra, int complete) {
    (void)extra, (void)complete; /* not reached: MPI_Cancel refuses our requests */
    return MPI_SUCCESS;
}

static int ours(const MPI_Request *request) {
    for (cc_job *job = jobs; job && request; job = job->next)
        if (job->greq == *request)
            return 1;
    return 0;
}

/* Freeing or cancelling the request of a nonblocking collective is erroneous in MPI; both
 * hosts raise MPI_ERR_REQUEST (on MPI_COMM_WORLD, as errors of no communicator are) and
 * leave the request as it was, and so does this library. */
int MPI_Request_free(MPI_Request *request) {
    if (jobs && ours(request))
        return cc_error(MPI_COMM_WORLD, MPI_ERR_REQUEST);
    return PMPI_Request_free(request);
}

int MPI_Cancel(MPI_Request *request) {
    if (jobs && ours(request))
        return cc_error(MPI_COMM_WORLD, MPI_ERR_REQUEST);
    return PMPI_Cancel(request);
}

int cc_nonblocking_start(cc_job *job, MPI_Request *request) {
    if (PMPI_Grequest_start(query, release, cancel, job, request) != MPI_SUCCESS) {
        MPI_Comm user = job->user;
        cc_job_release(job);
        free(job);
        return cc_error(user, MPI_ERR_INTERN);
    }
    job->greq = *request;
    cc_job **tail = &jobs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = job;
    inflight++;
    cc_progress_all();
    return MPI_SUCCESS;
}

int cc_progress_all(void) {
    int progressed = 0;
    for (cc_job *job = jobs, *next; job && inflight; job = next) {
        next = job->next; /* completing may free the job (through release) */
        if (job->done || cc_job_advance(job, 0) == 0)
            continue;
        /* Done or failed: the user's wait reports it. */
        job->done = 1;
        inflight--;
        progressed = 1;
        cc_job_quiesce(job);
        PMPI_Grequest_complete(job->greq);
    }
    return progressed;
}

int cc_jobs_in_flight(void) {
    return inflight != 0;
}

void cc_nonblocking_finalize(void) {
    while (inflight)
        cc_progress_all();
}
