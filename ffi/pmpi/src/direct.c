/* A blocking call whose schedule is recorded runs straight from the recording, the path of
 * a program that repeats its collectives: no step goes through commcore, and a round of one
 * transfer, or of one send and one receive, is the host's PMPI_Send, PMPI_Recv or
 * PMPI_Sendrecv. Those need no request, and Open MPI's ob1 sends a small message inline
 * from them. Other rounds are posted and waited for as exec.c does. Only with no
 * nonblocking job in flight: a host call that blocks does not progress ours. */
#include "pmpi.h"

static int is_transfer(const cc_step *s) {
    return s->kind == CC_STEP_SEND || s->kind == CC_STEP_RECV;
}

/* The transfer `s` as the host's arguments; -1 when its region is not in its buffer. */
static int operands(cc_job *job, const cc_step *s, char **mem, int *len, int *peer) {
    *mem = cc_job_resolve(job, s->a);
    if (!*mem || s->a.len > (size_t)INT32_MAX)
        return -1;
    *len = (int)s->a.len;
    *peer = cc_shadow_rank(job, s);
    return 0;
}

/* The host's answer to one blocking transfer: its error class, read from the status where
 * the host put it there. */
static int outcome(cc_job *job, int rc) {
    if (rc == MPI_SUCCESS)
        return 0;
    cc_job_fail(job, rc);
    return -1;
}

/* One round, the transfers [s, end): 0, or -1 with the job failed. */
static int run_round(cc_job *job, const cc_step *s, const cc_step *end) {
    MPI_Comm shadow = job->cs->shadow;
    char *mem, *mem2;
    int len, len2, peer, peer2;
    MPI_Status st;
    if (end - s == 1) {
        if (operands(job, s, &mem, &len, &peer) < 0)
            return outcome(job, MPI_ERR_INTERN);
        return outcome(job, s->kind == CC_STEP_SEND
                                ? PMPI_Send(mem, len, MPI_BYTE, peer, job->tag, shadow)
                                : PMPI_Recv(mem, len, MPI_BYTE, peer, job->tag, shadow, &st));
    }
    if (end - s == 2 && s[0].kind != s[1].kind) {
        const cc_step *snd = s[0].kind == CC_STEP_SEND ? &s[0] : &s[1];
        const cc_step *rcv = snd == &s[0] ? &s[1] : &s[0];
        if (operands(job, snd, &mem, &len, &peer) < 0 ||
            operands(job, rcv, &mem2, &len2, &peer2) < 0)
            return outcome(job, MPI_ERR_INTERN);
        return outcome(job, PMPI_Sendrecv(mem, len, MPI_BYTE, peer, job->tag, mem2, len2,
                                          MPI_BYTE, peer2, job->tag, shadow, &st));
    }
    for (; s < end; s++)
        if (cc_job_post(job, s) < 0)
            return -1;
    return cc_job_complete_round(job, 1) == 1 ? 0 : -1;
}

int cc_job_run_recorded(cc_job *job, const cc_step *steps) {
    if (job->failed)
        return -1;
    for (const cc_step *s = steps;;) {
        const cc_step *end = s;
        while (is_transfer(end))
            end++;
        if (end > s && run_round(job, s, end) < 0)
            return -1;
        if (end->kind == CC_STEP_END)
            break;
        if (cc_job_apply(job, end) < 0)
            return outcome(job, MPI_ERR_INTERN);
        s = end + 1;
    }
    job->ended = 1;
    if (job->unpack && cc_unpack_run(job) < 0)
        return outcome(job, MPI_ERR_INTERN);
    if (job->mismatch)
        return outcome(job, MPI_ERR_TRUNCATE);
    return 1;
}
