/* Blocking calls remembered by their arguments. A program repeats a collective with the
 * same buffers, counts, types and root; once such a call ran from its recorded steps, the
 * next one with the same arguments skips its preparation (layouts, the reduction's mapping,
 * the schedule's lookup) and runs the steps at once (direct.c). Only calls whose
 * preparation depends on nothing but their arguments are remembered: data moved in place
 * (no packing, no in-place copy, no block of another size) and reductions commcore applies.
 * A handle freed (MPI_Type_free, MPI_Op_free) may come back naming another type or op, so
 * every remembered call is forgotten then. */
#include <stdlib.h>
#include <string.h>

#include "pmpi.h"

#define CC_MEMOS 4 /* per communicator: the calls of a loop body */

uint64_t cc_handles_freed;

typedef struct {
    cc_key key;             /* all zero: unused */
    uint64_t freed;         /* cc_handles_freed when it was remembered */
    cc_sched *sched;        /* the kept schedule, while its entry has generation `gen` */
    uint64_t gen;
    const char *send;
    char *recv;
    size_t send_len, recv_len, scratch_len;
    const char *module, *algorithm;
    cc_reduction red;       /* reductions only */
} memo;

struct cc_memos {
    memo at[CC_MEMOS];
    unsigned next;          /* the entry to replace next */
};

static int reduces(int slot) {
    switch (slot) {
    case CC_REDUCE: case CC_ALLREDUCE: case CC_SCAN: case CC_EXSCAN: case CC_REDUCE_SCATTER:
    case CC_REDUCE_SCATTER_BLOCK:
        return 1;
    default:
        return 0;
    }
}

static memo *find(struct cc_memos *memos, const cc_key *key) {
    for (int i = 0; memos && i < CC_MEMOS; i++)
        if (!memcmp(&memos->at[i].key, key, sizeof *key))
            return &memos->at[i];
    return NULL;
}

void cc_memo_note(const cc_key *key, const cc_job *job) {
    cc_comm *cs = job->cs;
    int slot = job->slot;
    uint64_t gen = cc_sched_generation(job->sched);
    if (!gen || job->nowned || job->unpack || job->mismatch ||
        (reduces(slot) && job->red.rop == CC_ROP_CALLBACK))
        return;
    if (!cs->memos && !(cs->memos = calloc(1, sizeof *cs->memos)))
        return; /* calls just stay unremembered */
    memo *m = find(cs->memos, key);
    if (!m)
        m = &cs->memos->at[cs->memos->next++ % CC_MEMOS];
    *m = (memo){.key = *key, .freed = cc_handles_freed, .sched = job->sched, .gen = gen,
                .send = job->send,
                .recv = job->recv, .send_len = job->send_len, .recv_len = job->recv_len,
                .scratch_len = job->scratch_len, .module = job->module,
                .algorithm = job->algorithm};
    if (reduces(slot))
        m->red = job->red;
}

int cc_memo_run(cc_comm *cs, const cc_key *key, MPI_Comm user) {
    memo *m = find(cs->memos, key);
    if (!m || m->freed != cc_handles_freed || cc_jobs_in_flight())
        return CC_MEMO_MISS;
    /* Scratch is the communicator's, grown by the call's first run. */
    if (m->scratch_len && (cs->scratch_busy || cs->scratch_len < m->scratch_len))
        return CC_MEMO_MISS;
    const cc_step *steps = cc_sched_again(m->sched, m->gen);
    if (!steps)
        return CC_MEMO_MISS;
    int slot = (int)key->w[0] - 1;
    cc_job job;
    cc_job_init(&job, user, slot);
    job.cs = cs;
    job.sched = m->sched;
    job.send = m->send, job.send_len = m->send_len;
    job.recv = m->recv, job.recv_len = m->recv_len;
    job.scratch_len = m->scratch_len;
    if (m->scratch_len) {
        job.scratch = cs->scratch;
        job.borrowed_scratch = cs->scratch_busy = 1;
    }
    if (reduces(slot))
        job.red = m->red;
    job.tag = cc_next_tag(cs);
    cc_count_served(slot, m->module, m->algorithm);
    cc_count_replayed(slot);
    cc_count_remembered(slot);
    int done = cc_job_run_recorded(&job, steps), err = job.err;
    cc_job_release(&job);
    return done == 1 ? MPI_SUCCESS : cc_error(user, err ? err : MPI_ERR_INTERN);
}

void cc_memo_free(cc_comm *cs) {
    free(cs->memos);
    cs->memos = NULL;
}
