/* One round of a schedule's transfers, resolved to memory and ranks of the shadow, run with
 * the host's blocking calls: one transfer as PMPI_Send or PMPI_Recv, one send and one
 * receive as PMPI_Sendrecv (no request: Open MPI's ob1 sends a small message inline from
 * them), more as PMPI_Isend/PMPI_Irecv and PMPI_Waitall. Used by blocking calls only, with
 * no nonblocking job in flight: a host call that blocks does not progress ours. */
#include <stdlib.h>

#include "pmpi.h"

/* Completes or cancels what a failed round left posted, so no buffer is in use after it. */
static void drain(MPI_Request *reqs, int n) {
    for (int i = 0; i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL)
            PMPI_Cancel(&reqs[i]);
    PMPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
}

static int post(MPI_Comm shadow, int tag, const cc_xfer *x, MPI_Request *req) {
    return x->recv ? PMPI_Irecv(x->mem, x->len, MPI_BYTE, x->peer, tag, shadow, req)
                   : PMPI_Isend(x->mem, x->len, MPI_BYTE, x->peer, tag, shadow, req);
}

static int many(MPI_Comm shadow, int tag, const cc_xfer *x, int n) {
    MPI_Request few[CC_FEW_REQUESTS], *reqs = few;
    MPI_Status few_st[CC_FEW_REQUESTS], *st = n <= CC_FEW_REQUESTS ? few_st : MPI_STATUSES_IGNORE;
    if (n > CC_FEW_REQUESTS && !(reqs = malloc((size_t)n * sizeof *reqs)))
        return MPI_ERR_NO_MEM;
    int rc = MPI_SUCCESS, posted = 0;
    while (posted < n && (rc = post(shadow, tag, &x[posted], &reqs[posted])) == MPI_SUCCESS)
        posted++;
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Waitall(n, reqs, st);
        /* A status names the error of a failed transfer (a truncation, say). */
        for (int i = 0; rc == MPI_ERR_IN_STATUS && st != MPI_STATUSES_IGNORE && i < n; i++)
            if (st[i].MPI_ERROR != MPI_SUCCESS && st[i].MPI_ERROR != MPI_ERR_PENDING)
                rc = st[i].MPI_ERROR;
    }
    if (rc != MPI_SUCCESS)
        drain(reqs, posted);
    if (reqs != few)
        free(reqs);
    return rc;
}

int cc_xfers_run(MPI_Comm shadow, int tag, const cc_xfer *x, int n) {
    MPI_Status st;
    if (n == 1)
        return x->recv ? PMPI_Recv(x->mem, x->len, MPI_BYTE, x->peer, tag, shadow, &st)
                       : PMPI_Send(x->mem, x->len, MPI_BYTE, x->peer, tag, shadow);
    if (n == 2 && x[0].recv != x[1].recv) {
        const cc_xfer *s = x[0].recv ? &x[1] : &x[0], *r = x[0].recv ? &x[0] : &x[1];
        return PMPI_Sendrecv(s->mem, s->len, MPI_BYTE, s->peer, tag, r->mem, r->len, MPI_BYTE,
                             r->peer, tag, shadow, &st);
    }
    return n ? many(shadow, tag, x, n) : MPI_SUCCESS;
}
