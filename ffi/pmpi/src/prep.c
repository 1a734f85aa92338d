/* From an MPI call's arguments to one commcore call: buffers, lengths, counts in elements of
 * commcore's type (bytes for the operations that only move data, any datatype: layout.c),
 * roots, MPI_IN_PLACE (the library copies the in-place operand so a schedule's send and
 * receive buffers never overlap). Each returns 0 with the job started, CC_PREP_HOST when
 * the call goes to the host (decided alike on every rank: an op or reduction type commcore
 * lacks, arguments the host must refuse), or CC_PREP_FAIL on an error here. */
#include <stdlib.h>
#include <string.h>

#include "prep.h"

/* The group blocks are numbered in: the remote group of an inter-communicator. */
static int blocks_n(const cc_comm *cs) {
    return cs->inter ? cs->remote_size : cs->size;
}

static int set_root(cc_call *call, const cc_comm *cs, int root) {
    if (!cs->inter) {
        if (root < 0 || root >= cs->size)
            return -1;
        call->root_kind = CC_ROOT_RANK;
        call->root = (uint32_t)root;
    } else if (root == MPI_ROOT) {
        call->root_kind = CC_ROOT_HERE;
    } else if (root == MPI_PROC_NULL) {
        call->root_kind = CC_ROOT_ELSEWHERE;
    } else {
        if (root < 0 || root >= cs->remote_size)
            return -1;
        call->root_kind = CC_ROOT_RANK;
        call->root = (uint32_t)root;
    }
    return 0;
}

/* Whether this process holds the root's buffers. */
static int is_root(const cc_comm *cs, int root) {
    return cs->inter ? root == MPI_ROOT : root == cs->rank;
}

/* A malloc'd copy of `len` bytes at `src`, owned by the job; NULL on failure. */
static void *copy_of(cc_job *job, const void *src, size_t len) {
    void *p = malloc(len ? len : 1);
    if (!p || cc_job_own(job, p) < 0) {
        free(p);
        return NULL;
    }
    if (len)
        memcpy(p, src, len);
    return p;
}

/* `len` bytes owned by the job, contents undefined; NULL on failure. */
static void *scratch_of(cc_job *job, size_t len) {
    void *p = malloc(len ? len : 1);
    if (p && cc_job_own(job, p) < 0) {
        free(p);
        return NULL;
    }
    return p;
}

/* Element `i` of a buffer of `l`'s type. */
static void *at(const cc_layout *l, const void *buf, MPI_Aint i) {
    return (char *)buf + i * l->extent;
}

/* Whether a buffer of `count` elements could be set up for `l` (a NULL view with data is
 * a failed allocation or pack: an error, never a fallback, which other ranks would not
 * take). */
#define VIEW_OK(view, count, l) ((view) != NULL || (size_t)(count) * (l)->unit == 0)

/* `n` blocks of `block` bytes made from `n` blocks of `have` bytes at `data` (what fits;
 * zeros after), for a rank whose own block differs in size from the call's: an erroneous
 * call that ends with MPI_ERR_TRUNCATE on this rank, as a host reports it, while every
 * rank still runs the same schedule (a rank that went to the host alone would hang them).
 * NULL on failure. */
static void *reblocked(cc_job *job, const void *data, int n, size_t have, size_t block) {
    char *p = scratch_of(job, (size_t)n * block);
    if (!p || (!data && have && n))
        return NULL;
    size_t fit = have < block ? have : block;
    for (int i = 0; i < n; i++) {
        if (fit)
            memcpy(p + (size_t)i * block, (const char *)data + (size_t)i * have, fit);
        memset(p + (size_t)i * block + fit, 0, block - fit);
    }
    job->mismatch = 1;
    return p;
}

/* Counts then displacements of `n` blocks of `block` bytes one after another. */
static size_t *regular_blocks(cc_job *job, int n, size_t block) {
    size_t *b = malloc(2 * (size_t)(n ? n : 1) * sizeof *b);
    if (!b || cc_job_own(job, b) < 0) {
        free(b);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        b[i] = block, b[n + i] = (size_t)i * block;
    return b;
}

int cc_prep_barrier(cc_job *job, cc_comm *cs, int slot) {
    cc_call call = {.op = CC_BARRIER, .dtype = CC_U8};
    return cc_job_start(job, cs, slot, &call, NULL, 0, NULL, 0);
}

int cc_prep_bcast(cc_job *job, cc_comm *cs, int slot, void *buf, int count, MPI_Datatype type,
                  int root) {
    cc_call call = {.op = CC_BCAST, .dtype = CC_U8};
    cc_layout l;
    if (count < 0 || cc_layout_of(type, &l) < 0 || set_root(&call, cs, root) < 0)
        return CC_PREP_HOST;
    if (cs->inter && root == MPI_PROC_NULL)
        count = 0;
    void *view = buf;
    if (!l.direct && count)
        view = is_root(cs, root) ? (void *)cc_send_view(job, &l, buf, count, 0)
                                 : cc_recv_view(job, &l, buf, count);
    if (!VIEW_OK(view, count, &l))
        return CC_PREP_FAIL;
    call.count = (size_t)count * l.unit;
    return cc_job_start(job, cs, slot, &call, NULL, 0, view, call.count);
}

/* Reduce, allreduce, scan, exscan: `count` elements; `root` < 0 for the unrooted ones. */
int cc_prep_reduction(cc_job *job, cc_comm *cs, int slot, enum cc_op op, const void *send,
                      void *recv, int count, MPI_Datatype type, MPI_Op mop, int root) {
    if (count < 0 || cc_reduction_of(mop, type, &job->red) < 0)
        return CC_PREP_HOST;
    size_t items = (size_t)count * job->red.per_item, n = items * job->red.elem;
    cc_call call = {.op = op, .count = items, .dtype = job->red.dtype,
                    .rop = job->red.rop, .commutative = job->red.commutative,
                    .whole = job->red.whole};
    int holds_result = 1;
    if (op == CC_REDUCE) {
        if (set_root(&call, cs, root) < 0)
            return CC_PREP_HOST;
        holds_result = is_root(cs, root);
    }
    if (send == MPI_IN_PLACE) {
        if (cs->inter || !holds_result)
            return CC_PREP_HOST; /* not allowed: the host reports the error */
        if (!(send = copy_of(job, recv, n)))
            return CC_PREP_FAIL;
    }
    if (cs->inter && op == CC_REDUCE && root == MPI_PROC_NULL)
        n = 0;
    return cc_job_start(job, cs, slot, &call, send, cs->inter && root == MPI_ROOT ? 0 : n,
                        holds_result ? recv : NULL, holds_result ? n : 0);
}

int cc_prep_allgather(cc_job *job, cc_comm *cs, int slot, const void *send, int scount,
                      MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype) {
    cc_layout sl, rl;
    int n = blocks_n(cs);
    if (rcount < 0 || cc_layout_of(rtype, &rl) < 0 || (send == MPI_IN_PLACE && cs->inter) ||
        (send != MPI_IN_PLACE && (scount < 0 || cc_layout_of(stype, &sl) < 0)))
        return CC_PREP_HOST;
    size_t block = (size_t)rcount * rl.unit;
    const void *s;
    size_t own = block;
    cc_call call = {.op = CC_ALLGATHER, .count = block, .dtype = CC_U8};
    if (send == MPI_IN_PLACE) {
        s = cc_send_view(job, &rl, at(&rl, recv, (MPI_Aint)cs->rank * rcount), rcount, 1);
    } else {
        own = (size_t)scount * sl.unit;
        s = cc_send_view(job, &sl, send, scount, 0);
        if (own != block && !cs->inter) {
            s = reblocked(job, s, 1, own, block);
            own = block;
        } else if (own != block) {
            /* The groups of an inter-communicator send blocks of different sizes (one may
             * send none): an allgatherv whose blocks are all alike. */
            size_t *b = regular_blocks(job, n, block);
            if (!b)
                return CC_PREP_FAIL;
            call = (cc_call){.op = CC_ALLGATHERV, .count = own, .dtype = CC_U8,
                             .recv_counts = b, .recv_displs = b + n, .nblocks = (uint32_t)n};
        }
    }
    void *r = cc_recv_view(job, &rl, recv, n * rcount);
    if ((!s && own) || !VIEW_OK(r, n * rcount, &rl))
        return CC_PREP_FAIL;
    return cc_job_start(job, cs, slot, &call, s, own, r, (size_t)n * block);
}

int cc_prep_allgatherv(cc_job *job, cc_comm *cs, int slot, const void *send, int scount,
                       MPI_Datatype stype, void *recv, const int *rcounts, const int *displs,
                       MPI_Datatype rtype) {
    cc_layout sl, rl;
    int n = blocks_n(cs);
    if (cc_layout_of(rtype, &rl) < 0 || (send == MPI_IN_PLACE && cs->inter) ||
        (send != MPI_IN_PLACE && (scount < 0 || cc_layout_of(stype, &sl) < 0)))
        return CC_PREP_HOST;
    void *r;
    size_t rlen, own;
    size_t *b = cc_blocks_view(job, &rl, n, rcounts, displs, recv, CC_VIEW_RECV, &r, &rlen);
    if (!b)
        return CC_PREP_FAIL;
    const void *s;
    if (send == MPI_IN_PLACE) {
        own = b[cs->rank];
        s = cc_send_view(job, &rl, at(&rl, recv, displs[cs->rank]), rcounts[cs->rank], 1);
    } else {
        own = (size_t)scount * sl.unit;
        s = cc_send_view(job, &sl, send, scount, 0);
    }
    if (!s && own)
        return CC_PREP_FAIL;
    cc_call call = {.op = CC_ALLGATHERV, .count = own, .dtype = CC_U8, .recv_counts = b,
                    .recv_displs = b + n, .nblocks = (uint32_t)n};
    return cc_job_start(job, cs, slot, &call, s, own, r, rlen);
}

int cc_prep_alltoall(cc_job *job, cc_comm *cs, int slot, const void *send, int scount,
                     MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype) {
    cc_layout sl, rl;
    int n = blocks_n(cs);
    if (rcount < 0 || cc_layout_of(rtype, &rl) < 0 || (send == MPI_IN_PLACE && cs->inter) ||
        (send != MPI_IN_PLACE && (scount < 0 || cc_layout_of(stype, &sl) < 0)))
        return CC_PREP_HOST;
    size_t block = (size_t)rcount * rl.unit, all = (size_t)n * block, sall = all;
    cc_call call = {.op = CC_ALLTOALL, .count = block, .dtype = CC_U8};
    const void *s;
    if (send == MPI_IN_PLACE) {
        s = cc_send_view(job, &rl, recv, n * rcount, 1);
    } else {
        size_t sblock = (size_t)scount * sl.unit;
        s = cc_send_view(job, &sl, send, n * scount, 0);
        if (sblock != block && !cs->inter) {
            s = reblocked(job, s, n, sblock, block);
            sblock = block;
        } else if (sblock != block) { /* inter: each group's own block size, as an alltoallv */
            size_t *sb = regular_blocks(job, n, sblock), *rb = regular_blocks(job, n, block);
            if (!sb || !rb)
                return CC_PREP_FAIL;
            call = (cc_call){.op = CC_ALLTOALLV, .count = sblock, .dtype = CC_U8,
                             .send_counts = sb, .send_displs = sb + n, .recv_counts = rb,
                             .recv_displs = rb + n, .nblocks = (uint32_t)n};
        }
        sall = (size_t)n * sblock;
    }
    void *r = cc_recv_view(job, &rl, recv, n * rcount);
    if ((!s && sall) || (!r && all))
        return CC_PREP_FAIL;
    return cc_job_start(job, cs, slot, &call, s, sall, r, all);
}

int cc_prep_alltoallv(cc_job *job, cc_comm *cs, int slot, const void *send, const int *scounts,
                      const int *sdispls, MPI_Datatype stype, void *recv, const int *rcounts,
                      const int *rdispls, MPI_Datatype rtype) {
    cc_layout sl, rl;
    int n = blocks_n(cs);
    if (cc_layout_of(rtype, &rl) < 0 || (send == MPI_IN_PLACE && cs->inter) ||
        (send != MPI_IN_PLACE && cc_layout_of(stype, &sl) < 0))
        return CC_PREP_HOST;
    void *r, *s;
    size_t rlen, slen, *sb;
    size_t *rb = cc_blocks_view(job, &rl, n, rcounts, rdispls, recv, CC_VIEW_RECV, &r, &rlen);
    if (send == MPI_IN_PLACE)
        sb = cc_blocks_view(job, &rl, n, rcounts, rdispls, recv, CC_VIEW_COPY, &s, &slen);
    else
        sb = cc_blocks_view(job, &sl, n, scounts, sdispls, send, CC_VIEW_SEND, &s, &slen);
    if (!rb || !sb)
        return CC_PREP_FAIL;
    cc_call call = {.op = CC_ALLTOALLV, .count = sb[cs->inter ? 0 : cs->rank], .dtype = CC_U8,
                    .send_counts = sb, .send_displs = sb + n, .recv_counts = rb,
                    .recv_displs = rb + n, .nblocks = (uint32_t)n};
    return cc_job_start(job, cs, slot, &call, s, slen, r, rlen);
}

/* Gather (scatter = 0) and scatter: the root's side is `many`, a block per rank; every
 * other side is one block. */
int cc_prep_gather_scatter(cc_job *job, cc_comm *cs, int slot, int scatter, const void *send,
                           int scount, MPI_Datatype stype, void *recv, int rcount,
                           MPI_Datatype rtype, int root) {
    cc_call call = {.op = scatter ? CC_SCATTER : CC_GATHER, .dtype = CC_U8};
    if (set_root(&call, cs, root) < 0)
        return CC_PREP_HOST;
    if (cs->inter && root == MPI_PROC_NULL) /* nothing moves here */
        return cc_job_start(job, cs, slot, &call, NULL, 0, NULL, 0);
    int root_here = is_root(cs, root), n = blocks_n(cs);
    /* The one-block side: scatter's receive, gather's send. */
    const void *one_buf = scatter ? recv : send;
    int one_count = scatter ? rcount : scount;
    MPI_Datatype one_type = scatter ? rtype : stype;
    int one_here = !root_here || !cs->inter, in_place = root_here && one_buf == MPI_IN_PLACE;
    cc_layout one, many;
    if (in_place && cs->inter)
        return CC_PREP_HOST;
    if (one_here && !in_place && (one_count < 0 || cc_layout_of(one_type, &one) < 0))
        return CC_PREP_HOST;
    const void *s = NULL;
    void *r = NULL;
    size_t slen = 0, rlen = 0, block;
    if (!root_here) {
        block = (size_t)one_count * one.unit;
        if (scatter)
            r = cc_recv_view(job, &one, recv, rcount), rlen = block;
        else
            s = cc_send_view(job, &one, send, scount, 0), slen = block;
    } else {
        int many_count = scatter ? scount : rcount;
        if (many_count < 0 || cc_layout_of(scatter ? stype : rtype, &many) < 0)
            return CC_PREP_HOST;
        block = (size_t)many_count * many.unit;
        size_t mine = one_here && !in_place ? (size_t)one_count * one.unit : block;
        if (scatter) {
            s = cc_send_view(job, &many, send, n * scount, 0), slen = (size_t)n * block;
            if (in_place)
                r = scratch_of(job, block), rlen = block; /* the root keeps its block */
            else if (one_here && mine != block)
                r = reblocked(job, NULL, 1, 0, block), rlen = block;
            else if (one_here)
                r = cc_recv_view(job, &one, recv, rcount), rlen = block;
        } else {
            r = cc_recv_view(job, &many, recv, n * rcount), rlen = (size_t)n * block;
            if (in_place)
                s = cc_send_view(job, &many, at(&many, recv, (MPI_Aint)cs->rank * rcount),
                                 rcount, 1), slen = block;
            else if (one_here)
                s = cc_send_view(job, &one, send, scount, 0), slen = block;
            if (one_here && mine != block)
                s = reblocked(job, s, 1, mine, block);
        }
    }
    if ((!s && slen) || (!r && rlen))
        return CC_PREP_FAIL;
    call.count = block;
    return cc_job_start(job, cs, slot, &call, s, slen, r, rlen);
}

/* Gatherv (scatter = 0) and scatterv: the root's side has per-rank counts and displacements. */
int cc_prep_gatherv_scatterv(cc_job *job, cc_comm *cs, int slot, int scatter, const void *send,
                             const int *scounts, int scount, const int *displs,
                             MPI_Datatype stype, void *recv, const int *rcounts, int rcount,
                             MPI_Datatype rtype, int root) {
    cc_call call = {.op = scatter ? CC_SCATTERV : CC_GATHERV, .dtype = CC_U8};
    if (set_root(&call, cs, root) < 0)
        return CC_PREP_HOST;
    if (cs->inter && root == MPI_PROC_NULL)
        return cc_job_start(job, cs, slot, &call, NULL, 0, NULL, 0);
    int root_here = is_root(cs, root), n = blocks_n(cs);
    const void *one_buf = scatter ? recv : send;
    int one_count = scatter ? rcount : scount;
    MPI_Datatype one_type = scatter ? rtype : stype;
    int one_here = !root_here || !cs->inter, in_place = root_here && one_buf == MPI_IN_PLACE;
    cc_layout one, many;
    if (in_place && cs->inter)
        return CC_PREP_HOST;
    if (one_here && !in_place && (one_count < 0 || cc_layout_of(one_type, &one) < 0))
        return CC_PREP_HOST;
    const void *s = NULL;
    void *r = NULL;
    size_t slen = 0, rlen = 0, own = one_here && !in_place ? (size_t)one_count * one.unit : 0;
    if (!root_here) {
        if (scatter)
            r = cc_recv_view(job, &one, recv, rcount), rlen = own;
        else
            s = cc_send_view(job, &one, send, scount, 0), slen = own;
    } else {
        if (cc_layout_of(scatter ? stype : rtype, &many) < 0)
            return CC_PREP_HOST;
        void *view;
        size_t len;
        size_t *b = cc_blocks_view(job, &many, n, scatter ? scounts : rcounts, displs,
                                   scatter ? send : recv, scatter ? CC_VIEW_SEND : CC_VIEW_RECV,
                                   &view, &len);
        if (!b)
            return CC_PREP_FAIL;
        call.nblocks = (uint32_t)n;
        if (scatter)
            call.send_counts = b, call.send_displs = b + n, s = view, slen = len;
        else
            call.recv_counts = b, call.recv_displs = b + n, r = view, rlen = len;
        if (one_here) {
            size_t mine = own;
            own = b[cs->rank];
            if (scatter)
                r = in_place           ? scratch_of(job, own)
                    : mine != own      ? reblocked(job, NULL, 1, 0, own)
                                       : cc_recv_view(job, &one, recv, rcount);
            else
                s = in_place ? cc_send_view(job, &many, at(&many, recv, displs[cs->rank]),
                                            rcounts[cs->rank], 1)
                             : cc_send_view(job, &one, send, scount, 0);
            if (!scatter && !in_place && mine != own)
                s = reblocked(job, s, 1, mine, own);
            *(scatter ? &rlen : &slen) = own;
        }
    }
    if ((!s && slen) || (!r && rlen))
        return CC_PREP_FAIL;
    call.count = own;
    return cc_job_start(job, cs, slot, &call, s, slen, r, rlen);
}

/* Reduce_scatter (rcounts per rank) and reduce_scatter_block (rcounts NULL, rcount each). */
int cc_prep_reduce_scatter(cc_job *job, cc_comm *cs, int slot, const void *send, void *recv,
                           const int *rcounts, int rcount, MPI_Datatype type, MPI_Op mop) {
    /* On an inter-communicator too, the vector is as long as this group's blocks together. */
    /* Elements that must stay whole: reduce_scatter's algorithms may split blocks. */
    if (cc_reduction_of(mop, type, &job->red) < 0 || job->red.whole)
        return CC_PREP_HOST;
    size_t elem = job->red.elem, per = job->red.per_item;
    cc_call call = {.dtype = job->red.dtype, .rop = job->red.rop,
                    .commutative = job->red.commutative};
    size_t total = 0, own;
    int n = cs->size;
    if (rcounts) {
        size_t *b = malloc(2 * (size_t)n * sizeof *b);
        if (!b || cc_job_own(job, b) < 0) {
            free(b);
            return CC_PREP_FAIL;
        }
        for (int i = 0; i < n; i++) {
            if (rcounts[i] < 0)
                return CC_PREP_HOST;
            b[i] = (size_t)rcounts[i] * per;
            b[n + i] = total;
            total += b[i];
        }
        call.op = CC_REDUCE_SCATTER;
        call.recv_counts = b, call.recv_displs = b + n;
        call.nblocks = (uint32_t)n;
        call.count = total;
        own = b[cs->rank];
    } else {
        if (rcount < 0)
            return CC_PREP_HOST;
        call.op = CC_REDUCE_SCATTER_BLOCK;
        call.count = (size_t)rcount * per;
        own = call.count;
        total = own * (size_t)n;
    }
    if (send == MPI_IN_PLACE) {
        if (cs->inter)
            return CC_PREP_HOST;
        if (!(send = copy_of(job, recv, total * elem)))
            return CC_PREP_FAIL;
    }
    return cc_job_start(job, cs, slot, &call, send, total * elem, recv, own * elem);
}
