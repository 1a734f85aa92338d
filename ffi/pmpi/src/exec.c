/* The executor: runs one call's commcore schedule with PMPI_Isend/PMPI_Irecv on the
 * communicator's shadow. Transfers of a round are all started; a local step (reduce, copy)
 * or a WAIT first completes them, as core/src/coll/step.rs prescribes. */
#include <stdlib.h>
#include <string.h>

#include "pmpi.h"

int cc_job_own(cc_job *job, void *ptr) {
    if (job->nowned == CC_OWNED)
        return -1; /* more than any call needs */
    job->owned[job->nowned++] = ptr;
    return 0;
}

int cc_error(MPI_Comm comm, int code) {
    if (comm != MPI_COMM_NULL)
        PMPI_Comm_call_errhandler(comm, code);
    return code;
}

/* Marks the job failed with MPI error `code` (the host's, or ours). */
static int failed(cc_job *job, int code) {
    job->failed = 1;
    if (!job->err)
        job->err = code == MPI_SUCCESS ? MPI_ERR_INTERN : code;
    return -1;
}

int cc_job_start(cc_job *job, cc_comm *cs, int slot, const cc_call *call, const void *send,
                 size_t send_len, void *recv, size_t recv_len) {
    const char *module = "?", *algorithm = "?";
    size_t scratch = 0;
    job->cs = cs;
    job->slot = slot;
    if (CC_IS_NONBLOCKING(slot))
        cc_comm_ref(cs); /* until the job is quiesced */
    job->sched = cc_schedule(cs->coll, call, &scratch, &module, &algorithm);
    if (!job->sched)
        return CC_PREP_HOST;
    if (scratch && !cs->scratch_busy && !CC_IS_NONBLOCKING(slot)) {
        /* A blocking call borrows the communicator's scratch, grown as needed. */
        if (cs->scratch_len < scratch) {
            char *grown = realloc(cs->scratch, scratch);
            if (grown)
                cs->scratch = grown, cs->scratch_len = scratch;
        }
        if (cs->scratch_len >= scratch) {
            job->scratch = cs->scratch;
            job->borrowed_scratch = cs->scratch_busy = 1;
        }
    }
    if (scratch && !job->scratch && !(job->scratch = malloc(scratch))) {
        cc_sched_free(job->sched);
        job->sched = NULL;
        return CC_PREP_FAIL;
    }
    job->scratch_len = scratch;
    job->send = send;
    job->send_len = send_len;
    job->recv = recv;
    job->recv_len = recv_len;
    job->tag = cc_next_tag(cs);
    job->module = module, job->algorithm = algorithm;
    cc_count_served(slot, module, algorithm);
    return 0;
}

/* The memory of `r`, or NULL when it does not lie in its buffer. */
char *cc_job_resolve(cc_job *job, cc_region r) {
    char *base;
    size_t len;
    switch (r.buf) {
    case CC_BUF_SEND:
        base = (char *)job->send;
        len = job->send_len;
        break;
    case CC_BUF_RECV:
        base = job->recv;
        len = job->recv_len;
        break;
    default:
        base = job->scratch;
        len = job->scratch_len;
        break;
    }
    if (r.len == 0) /* an empty block may sit past a buffer's end (a v layout's last ones) */
        return (char *)job;
    if (r.offset > len || r.len > len - r.offset)
        return NULL;
    return base + r.offset;
}

int cc_shadow_rank(const cc_job *job, const cc_step *s) {
    const cc_comm *cs = job->cs;
    if (cs->shadow_ranks)
        return cs->shadow_ranks[s->peer];
    return (int)s->peer + (s->remote ? cs->remote_offset : cs->local_offset);
}

static int post(cc_job *job, const cc_step *s) {
    char *mem = cc_job_resolve(job, s->a);
    if (!mem || s->a.len > (size_t)INT32_MAX)
        return -1;
    if (!job->reqs) {
        job->reqs = job->few;
        job->cap = CC_FEW_REQUESTS;
    }
    if (job->nreq == job->cap) {
        int cap = 2 * job->cap;
        MPI_Request *reqs = malloc((size_t)cap * sizeof *reqs);
        if (!reqs)
            return -1;
        memcpy(reqs, job->reqs, (size_t)job->nreq * sizeof *reqs);
        if (job->reqs != job->few)
            free(job->reqs);
        job->reqs = reqs;
        job->cap = cap;
    }
    MPI_Request *req = &job->reqs[job->nreq];
    int peer = cc_shadow_rank(job, s), len = (int)s->a.len;
    int rc = s->kind == CC_STEP_SEND
                 ? PMPI_Isend(mem, len, MPI_BYTE, peer, job->tag, job->cs->shadow, req)
                 : PMPI_Irecv(mem, len, MPI_BYTE, peer, job->tag, job->cs->shadow, req);
    if (rc != MPI_SUCCESS)
        return failed(job, rc);
    job->nreq++;
    return 0;
}

int cc_job_apply(cc_job *job, const cc_step *s) {
    if (s->kind == CC_STEP_WAIT)
        return 0;
    char *src = cc_job_resolve(job, s->a), *dst = cc_job_resolve(job, s->b);
    if (!src || !dst || s->a.len != s->b.len)
        return -1;
    if (s->a.len == 0 || src == dst)
        return 0;
    if (s->kind == CC_STEP_COPY) {
        memmove(dst, src, s->a.len);
        return 0;
    }
    const cc_reduction *r = &job->red;
    if (r->rop == CC_ROP_CALLBACK) {
        size_t elem = r->user_elem ? r->user_elem : r->elem;
        if (s->a.len % elem)
            return -1;
        r->apply(r, src, dst, s->a.len / elem, s->src_left);
        return 0;
    }
    return cc_reduce(r->rop, r->dtype, src, dst, s->a.len, s->src_left);
}

int cc_job_round_done(const cc_job *job) {
    for (int i = 0; i < job->nreq; i++)
        if (job->reqs[i] != MPI_REQUEST_NULL)
            return 0;
    return 1;
}

void cc_job_fail(cc_job *job, int code) {
    failed(job, code);
}

/* Completes the round's transfers: waits, or tests once; 1 when complete. */
static int complete_round(cc_job *job, int blocking) {
    if (job->nreq == 0)
        return 1;
    int rc, flag = 0;
    /* Statuses name the error of a failed transfer (a truncation, say) where MPI_ERR_IN_STATUS
     * alone would not; rounds of more transfers go without. */
    MPI_Status few[CC_FEW_REQUESTS], *st = job->nreq <= CC_FEW_REQUESTS ? few : MPI_STATUSES_IGNORE;
    if (blocking && !cc_jobs_in_flight()) {
        rc = PMPI_Waitall(job->nreq, job->reqs, st);
    } else if (blocking) { /* nonblocking calls in flight progress while this one waits */
        do
            rc = PMPI_Testall(job->nreq, job->reqs, &flag, st);
        while (rc == MPI_SUCCESS && !flag && (cc_progress_all(), 1));
    } else if (cc_job_round_done(job)) { /* the progress engine tested them all at once */
        rc = MPI_SUCCESS;
    } else {
        rc = PMPI_Testall(job->nreq, job->reqs, &flag, st);
        if (rc == MPI_SUCCESS && !flag)
            return 0;
    }
    for (int i = 0; rc == MPI_ERR_IN_STATUS && st != MPI_STATUSES_IGNORE && i < job->nreq; i++)
        if (st[i].MPI_ERROR != MPI_SUCCESS && st[i].MPI_ERROR != MPI_ERR_PENDING)
            rc = st[i].MPI_ERROR;
    if (rc != MPI_SUCCESS)
        return failed(job, rc); /* requests that failed are freed; the others stay listed */
    job->nreq = 0;
    return 1;
}

int cc_job_advance(cc_job *job, int blocking) {
    if (job->failed)
        return -1;
    for (;;) {
        /* Starting: the first transfers are posted, not tested (see pmpi.h). */
        if (blocking == CC_ADVANCE_START && job->nreq)
            return 0;
        int done = complete_round(job, blocking == 1);
        if (done <= 0)
            return done;
        if (job->has_pending) {
            job->has_pending = 0;
            if (cc_job_apply(job, &job->pending) < 0)
                break;
        }
        if (job->ended) {
            if (job->unpack && cc_unpack_run(job) < 0)
                break;
            return job->mismatch ? failed(job, MPI_ERR_TRUNCATE) : 1;
        }
        /* Start the next round: transfers up to the next local step or the end. */
        for (;;) {
            cc_step s;
            if (cc_next(job->sched, &s) < 0)
                goto fail;
            if (s.kind == CC_STEP_END) {
                job->ended = 1;
                break;
            }
            if (s.kind == CC_STEP_SEND || s.kind == CC_STEP_RECV) {
                if (post(job, &s) < 0)
                    return -1;
                continue;
            }
            job->pending = s;
            job->has_pending = 1;
            break;
        }
    }
fail:
    return failed(job, MPI_ERR_INTERN);
}

void cc_job_quiesce(cc_job *job) {
    /* A failed job may leave transfers started: receives are cancelled, then all are
     * completed, so no buffer is freed under the host MPI. */
    for (int i = 0; i < job->nreq; i++)
        if (job->reqs[i] != MPI_REQUEST_NULL)
            PMPI_Cancel(&job->reqs[i]);
    if (job->nreq)
        PMPI_Waitall(job->nreq, job->reqs, MPI_STATUSES_IGNORE);
    job->nreq = 0;
    if (job->sched)
        cc_sched_free(job->sched);
    job->sched = NULL;
    if (job->borrowed_scratch) {
        job->cs->scratch_busy = 0;
        job->scratch = NULL;
        job->borrowed_scratch = 0;
    }
    if (job->cs && CC_IS_NONBLOCKING(job->slot))
        cc_comm_unref(job->cs);
    job->cs = NULL;
}

void cc_job_release(cc_job *job) {
    cc_job_quiesce(job);
    if (job->reqs && job->reqs != job->few)
        free(job->reqs);
    if (job->scratch)
        free(job->scratch);
    if (job->unpack)
        cc_unpack_free(job);
    for (int i = 0; i < job->nowned; i++)
        free(job->owned[i]);
    /* Not cleared: the job goes with its caller's frame or is freed. */
}
