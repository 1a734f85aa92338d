/* Nonblocking collectives: each is a generalized request (MPI_Grequest_start) whose job this
 * library progresses inside the Wait/Test family and inside its own blocking calls, and
 * completes with MPI_Grequest_complete. While any is in flight, waits become test loops
 * that progress them, so a call that waits for a peer never starves a collective the peer
 * waits for. */
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* Jobs from their start until the host frees their request, in start order; `inflight` of
 * them are not done yet. Under MPI_THREAD_MULTIPLE any thread's wait progresses every
 * thread's jobs: the list and the jobs on it are touched under `jobs_lock` only (a thread
 * that finds it taken leaves the progress to the thread holding it). */
static cc_job *jobs;
static int inflight;
static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;

static int query(void *extra, MPI_Status *status) {
    cc_job *job = extra;
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = job->failed ? job->err : MPI_SUCCESS;
    return status->MPI_ERROR;
}

/* Takes `job` off the list and frees it; the caller holds the list. */
static void forget(cc_job *job) {
    for (cc_job **p = &jobs; *p; p = &(*p)->next) {
        if (*p == job) {
            __atomic_store_n(p, job->next, __ATOMIC_RELEASE); /* p may be &jobs */
            break;
        }
    }
    cc_job_release(job);
    free(job);
}

/* Frees the jobs whose requests the host freed while another thread held the list. */
static void forget_released(void) {
    for (cc_job *job = jobs, *next; job; job = next) {
        next = job->next;
        if (__atomic_load_n(&job->released, __ATOMIC_ACQUIRE))
            forget(job);
    }
}

/* The host frees the request. Under threads it calls this holding its own lock, while a
 * thread progressing jobs holds the list and calls the host: so only a list that is free
 * is taken here, else the job is left for that thread to forget. */
static int release(void *extra) {
    cc_job *job = extra;
    if (cc_threaded && pthread_mutex_trylock(&jobs_lock) != 0) {
        __atomic_store_n(&job->released, 1, __ATOMIC_RELEASE);
        return MPI_SUCCESS;
    }
    forget(job);
    cc_unlock(&jobs_lock);
    return MPI_SUCCESS;
}

static int cancel(void *extra, int complete) {
    (void)extra, (void)complete; /* not reached: MPI_Cancel refuses our requests */
    return MPI_SUCCESS;
}

static int ours(const MPI_Request *request) {
    int found = 0;
    cc_lock(&jobs_lock);
    for (cc_job *job = jobs; job && request && !found; job = job->next)
        found = job->greq == *request && !__atomic_load_n(&job->released, __ATOMIC_ACQUIRE);
    cc_unlock(&jobs_lock);
    return found;
}

/* Freeing or cancelling the request of a nonblocking collective is erroneous in MPI; both
 * hosts raise MPI_ERR_REQUEST (on MPI_COMM_WORLD, as errors of no communicator are) and
 * leave the request as it was, and so does this library. */
int MPI_Request_free(MPI_Request *request) {
    if (__atomic_load_n(&jobs, __ATOMIC_ACQUIRE) && ours(request)) /* done jobs too */
        return cc_error(MPI_COMM_WORLD, MPI_ERR_REQUEST);
    return PMPI_Request_free(request);
}

int MPI_Cancel(MPI_Request *request) {
    if (__atomic_load_n(&jobs, __ATOMIC_ACQUIRE) && ours(request)) /* done jobs too */
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
    cc_lock(&jobs_lock);
    forget_released();
    cc_job **tail = &jobs;
    while (*tail)
        tail = &(*tail)->next;
    __atomic_store_n(tail, job, __ATOMIC_RELEASE);
    __atomic_fetch_add(&inflight, 1, __ATOMIC_RELEASE);
    if (cc_job_advance(job, CC_ADVANCE_START) != 0) { /* done or failed without transfers */
        job->done = 1;
        __atomic_fetch_sub(&inflight, 1, __ATOMIC_RELEASE);
        cc_job_quiesce(job);
        PMPI_Grequest_complete(job->greq);
    }
    cc_unlock(&jobs_lock);
    return MPI_SUCCESS;
}

/* Tests the transfers of every job in flight at once: each test of the host runs its
 * progress engine, so a test per job ran it once per job (20 calls in flight, 20 times per
 * MPI_Test of the user). Returns 0 when it could not (then each job tests its own). */
static int test_together(void) {
    enum { FEW = 64 };
    MPI_Request few[FEW], *all = few;
    MPI_Status few_st[FEW], *st = few_st;
    int few_idx[FEW], *idx = few_idx, n = 0, at = 0, out = 0;
    for (cc_job *job = jobs; job; job = job->next)
        n += job->done ? 0 : job->nreq;
    if (n < 2)
        return 0;
    if (n > FEW) {
        all = malloc((size_t)n * sizeof *all);
        st = malloc((size_t)n * sizeof *st);
        idx = malloc((size_t)n * sizeof *idx);
    }
    int ok = all && st && idx;
    for (cc_job *job = jobs; ok && job; job = job->next)
        if (!job->done && job->nreq) {
            memcpy(all + at, job->reqs, (size_t)job->nreq * sizeof *all);
            at += job->nreq;
        }
    int rc = ok ? PMPI_Testsome(n, all, &out, idx, st) : MPI_ERR_INTERN;
    at = 0;
    for (cc_job *job = jobs; ok && job; job = job->next) {
        if (job->done || !job->nreq)
            continue;
        memcpy(job->reqs, all + at, (size_t)job->nreq * sizeof *all);
        for (int k = 0; rc == MPI_ERR_IN_STATUS && k < out; k++)
            if (idx[k] >= at && idx[k] < at + job->nreq && st[k].MPI_ERROR != MPI_SUCCESS)
                cc_job_fail(job, st[k].MPI_ERROR);
        at += job->nreq;
    }
    if (all != few)
        free(all), free(st), free(idx);
    return ok && (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS);
}

int cc_progress_all(void) {
    if (cc_threaded && pthread_mutex_trylock(&jobs_lock) != 0)
        return 0; /* another thread is progressing every job */
    forget_released();
    int progressed = 0, together = test_together();
    for (cc_job *job = jobs, *next; job && inflight; job = next) {
        next = job->next; /* completing may free the job (through release) */
        /* Tested together: only jobs whose round is complete go on (a test of their own
         * would run the progress engine again). */
        if (job->done || (together && !job->failed && !cc_job_round_done(job)) ||
            cc_job_advance(job, 0) == 0)
            continue;
        /* Done or failed: the user's wait reports it. */
        job->done = 1;
        __atomic_fetch_sub(&inflight, 1, __ATOMIC_RELEASE);
        progressed = 1;
        cc_job_quiesce(job);
        PMPI_Grequest_complete(job->greq);
    }
    cc_unlock(&jobs_lock);
    return progressed;
}

int cc_jobs_in_flight(void) {
    return __atomic_load_n(&inflight, __ATOMIC_ACQUIRE) != 0;
}

void cc_nonblocking_finalize(void) {
    while (cc_jobs_in_flight())
        cc_progress_all();
    cc_lock(&jobs_lock);
    forget_released();
    cc_unlock(&jobs_lock);
}
