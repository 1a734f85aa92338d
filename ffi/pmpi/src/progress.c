/* Nonblocking collectives: each is a generalized request (MPI_Grequest_start) whose job this
 * library progresses inside the Wait/Test family and inside its own blocking calls, and
 * completes with MPI_Grequest_complete. While any is in flight, waits become test loops
 * that progress them, so a call that waits for a peer never starves a collective the peer
 * waits for. */
#include <stdlib.h>

#include "serve.h"

static cc_job *active; /* jobs in flight, in start order */

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
    cc_job_release(extra);
    free(extra);
    return MPI_SUCCESS;
}

static int cancel(void *extra, int complete) {
    (void)extra, (void)complete; /* a collective cannot be cancelled; it runs to its end */
    return MPI_SUCCESS;
}

/* Freeing the request of a collective in flight is erroneous in MPI; it is kept harmless:
 * the job runs to its end (inside other calls, or at MPI_Finalize) and then goes. */
int MPI_Request_free(MPI_Request *request) {
    for (cc_job *job = active; job && request && *request != MPI_REQUEST_NULL; job = job->next) {
        if (job->greq == *request) {
            job->detached = 1;
            *request = MPI_REQUEST_NULL;
            return MPI_SUCCESS;
        }
    }
    return PMPI_Request_free(request);
}

int cc_nonblocking_start(cc_job *job, MPI_Request *request) {
    if (PMPI_Grequest_start(query, release, cancel, job, request) != MPI_SUCCESS) {
        cc_job_release(job);
        free(job);
        return MPI_ERR_INTERN;
    }
    job->greq = *request;
    cc_job **tail = &active;
    while (*tail)
        tail = &(*tail)->next;
    *tail = job;
    cc_progress_all();
    return MPI_SUCCESS;
}

int cc_progress_all(void) {
    int progressed = 0;
    for (cc_job **p = &active; *p;) {
        cc_job *job = *p;
        if (cc_job_advance(job, 0) == 0) {
            p = &job->next;
            continue;
        }
        *p = job->next; /* done or failed: the user's wait reports it */
        job->next = NULL;
        progressed = 1;
        cc_job_quiesce(job);
        MPI_Request greq = job->greq;
        int detached = job->detached;
        PMPI_Grequest_complete(greq); /* may free the job (through release) */
        if (detached)
            PMPI_Request_free(&greq);
    }
    return progressed;
}

int cc_jobs_in_flight(void) {
    return active != NULL;
}

void cc_nonblocking_finalize(void) {
    while (active)
        cc_progress_all();
}
