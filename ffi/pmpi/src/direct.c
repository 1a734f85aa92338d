/* A blocking call whose schedule is recorded runs straight from the recording, the path of
 * a program that repeats its collectives: no step goes through commcore, and each round of
 * transfers is run by the host's blocking calls (xfer.c). Only with no nonblocking job in
 * flight: a host call that blocks does not progress ours. */
#include <stdlib.h>

#include "pmpi.h"

int cc_step_is_transfer(const cc_step *s) {
    return s->kind == CC_STEP_SEND || s->kind == CC_STEP_RECV;
}

int cc_xfer_of(cc_job *job, const cc_step *s, cc_xfer *out) {
    char *mem = cc_job_resolve(job, s->a);
    if (!mem || s->a.len > (size_t)INT32_MAX)
        return -1;
    *out = (cc_xfer){.recv = s->kind == CC_STEP_RECV, .peer = cc_shadow_rank(job, s),
                     .mem = mem, .len = (int)s->a.len};
    return 0;
}

/* The transfers [s, end) as one round: 0, or -1 with the job failed. */
static int run_round(cc_job *job, const cc_step *s, const cc_step *end) {
    int n = (int)(end - s), rc, i = 0;
    cc_xfer few[CC_FEW_REQUESTS] = {{0}}; /* cleared: gcc cannot see the loop fill it */
    cc_xfer *x = n > CC_FEW_REQUESTS ? malloc((size_t)n * sizeof *x) : few;
    if (!x) {
        rc = MPI_ERR_NO_MEM;
    } else {
        while (i < n && cc_xfer_of(job, &s[i], &x[i]) == 0)
            i++;
        rc = i < n ? MPI_ERR_INTERN : cc_xfers_run(job->cs->shadow, job->tag, x, n);
        if (x != few)
            free(x);
    }
    if (rc == MPI_SUCCESS)
        return 0;
    cc_job_fail(job, rc);
    return -1;
}

int cc_job_run_recorded(cc_job *job, const cc_step *steps) {
    if (job->failed)
        return -1;
    for (const cc_step *s = steps;;) {
        const cc_step *end = s;
        while (cc_step_is_transfer(end))
            end++;
        if (end > s && run_round(job, s, end) < 0)
            return -1;
        if (end->kind == CC_STEP_END)
            break;
        if (cc_job_apply(job, end) < 0) {
            cc_job_fail(job, MPI_ERR_INTERN);
            return -1;
        }
        s = end + 1;
    }
    job->ended = 1;
    if (job->unpack && cc_unpack_run(job) < 0) {
        cc_job_fail(job, MPI_ERR_INTERN);
        return -1;
    }
    if (job->mismatch) {
        cc_job_fail(job, MPI_ERR_TRUNCATE);
        return -1;
    }
    return 1;
}
