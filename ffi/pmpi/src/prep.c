/* From an MPI call's arguments to one commcore call: buffers, lengths, counts in elements of
 * commcore's type (bytes for the operations that only move data), roots, MPI_IN_PLACE (the
 * library copies the in-place operand so a schedule's send and receive buffers never
 * overlap). Each returns 0 with the job started, or -1 when the call goes to the host. */
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
    if (!p)
        return NULL;
    if (len)
        memcpy(p, src, len);
    cc_job_own(job, p);
    return p;
}

/* `len` bytes owned by the job, contents undefined; NULL on failure. */
static void *scratch_of(cc_job *job, size_t len) {
    void *p = malloc(len ? len : 1);
    if (p)
        cc_job_own(job, p);
    return p;
}

/* Bytes of `count` elements of `type`, or (size_t)-1 when the library does not move it. */
static size_t bytes_of(int count, MPI_Datatype type) {
    size_t elem = cc_type_bytes(type);
    if (!elem || count < 0)
        return (size_t)-1;
    return (size_t)count * elem;
}

/* Per-rank counts and displacements (MPI's, in elements of a type of `elem` bytes) as
 * commcore's, scaled to bytes by `scale`; `extent` receives the bytes the layout spans. */
static size_t *blocks_of(cc_job *job, int n, const int *counts, const int *displs, size_t scale,
                         size_t *extent) {
    size_t *out = malloc(2 * (size_t)(n ? n : 1) * sizeof *out);
    if (!out)
        return NULL;
    size_t end = 0;
    for (int i = 0; i < n; i++) {
        if (counts[i] < 0 || (displs && displs[i] < 0)) {
            free(out);
            return NULL;
        }
        out[i] = (size_t)counts[i] * scale;
        out[n + i] = displs ? (size_t)displs[i] * scale : (i ? out[n + i - 1] + out[i - 1] : 0);
        if (out[i] && out[n + i] + out[i] > end)
            end = out[n + i] + out[i];
    }
    *extent = end;
    cc_job_own(job, out);
    return out;
}

int cc_prep_barrier(cc_job *job, cc_comm *cs, int slot) {
    cc_call call = {.op = CC_BARRIER, .dtype = CC_U8};
    return cc_job_start(job, cs, slot, &call, NULL, 0, NULL, 0);
}

int cc_prep_bcast(cc_job *job, cc_comm *cs, int slot, void *buf, int count, MPI_Datatype type,
                  int root) {
    size_t n = bytes_of(count, type);
    cc_call call = {.op = CC_BCAST, .count = n, .dtype = CC_U8};
    if (n == (size_t)-1 || set_root(&call, cs, root) < 0)
        return -1;
    return cc_job_start(job, cs, slot, &call, NULL, 0, buf, n);
}

/* Reduce, allreduce, scan, exscan: `count` elements; `root` < 0 for the unrooted ones. */
int cc_prep_reduction(cc_job *job, cc_comm *cs, int slot, enum cc_op op, const void *send,
                      void *recv, int count, MPI_Datatype type, MPI_Op mop, int root) {
    if (count < 0 || cc_reduction_of(mop, type, &job->red) < 0)
        return -1;
    size_t items = (size_t)count * job->red.per_item, n = items * job->red.elem;
    cc_call call = {.op = op, .count = items, .dtype = job->red.dtype,
                    .rop = job->red.rop, .commutative = job->red.commutative};
    int holds_result = 1;
    if (op == CC_REDUCE) {
        if (set_root(&call, cs, root) < 0)
            return -1;
        holds_result = is_root(cs, root);
    }
    if (send == MPI_IN_PLACE) {
        if (cs->inter || !holds_result || !(send = copy_of(job, recv, n)))
            return -1;
    }
    if (cs->inter && op == CC_REDUCE && root == MPI_PROC_NULL)
        n = 0;
    return cc_job_start(job, cs, slot, &call, send, cs->inter && root == MPI_ROOT ? 0 : n,
                        holds_result ? recv : NULL, holds_result ? n : 0);
}

int cc_prep_allgather(cc_job *job, cc_comm *cs, int slot, const void *send, int scount,
                      MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype) {
    size_t block = bytes_of(rcount, rtype);
    if (block == (size_t)-1)
        return -1;
    if (send == MPI_IN_PLACE) {
        if (cs->inter || !(send = copy_of(job, (char *)recv + (size_t)cs->rank * block, block)))
            return -1;
    } else if (bytes_of(scount, stype) != block) {
        return -1;
    }
    cc_call call = {.op = CC_ALLGATHER, .count = block, .dtype = CC_U8};
    return cc_job_start(job, cs, slot, &call, send, block, recv,
                        (size_t)blocks_n(cs) * block);
}

int cc_prep_allgatherv(cc_job *job, cc_comm *cs, int slot, const void *send, int scount,
                       MPI_Datatype stype, void *recv, const int *rcounts, const int *displs,
                       MPI_Datatype rtype) {
    size_t elem = cc_type_bytes(rtype), extent = 0;
    size_t *b = elem ? blocks_of(job, blocks_n(cs), rcounts, displs, elem, &extent) : NULL;
    if (!b)
        return -1;
    size_t n;
    if (send == MPI_IN_PLACE) {
        n = b[cs->rank];
        if (cs->inter || !(send = copy_of(job, (char *)recv + b[cs->size + cs->rank], n)))
            return -1;
    } else if ((n = bytes_of(scount, stype)) == (size_t)-1) {
        return -1;
    }
    cc_call call = {.op = CC_ALLGATHERV, .count = n, .dtype = CC_U8, .recv_counts = b,
                    .recv_displs = b + blocks_n(cs), .nblocks = (uint32_t)blocks_n(cs)};
    return cc_job_start(job, cs, slot, &call, send, n, recv, extent);
}

int cc_prep_alltoall(cc_job *job, cc_comm *cs, int slot, const void *send, int scount,
                     MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype) {
    size_t block = bytes_of(rcount, rtype), all;
    if (block == (size_t)-1)
        return -1;
    all = (size_t)blocks_n(cs) * block;
    if (send == MPI_IN_PLACE) {
        if (cs->inter || !(send = copy_of(job, recv, all)))
            return -1;
    } else if (bytes_of(scount, stype) != block) {
        return -1;
    }
    cc_call call = {.op = CC_ALLTOALL, .count = block, .dtype = CC_U8};
    return cc_job_start(job, cs, slot, &call, send, all, recv, all);
}

int cc_prep_alltoallv(cc_job *job, cc_comm *cs, int slot, const void *send, const int *scounts,
                      const int *sdispls, MPI_Datatype stype, void *recv, const int *rcounts,
                      const int *rdispls, MPI_Datatype rtype) {
    int n = blocks_n(cs);
    size_t relem = cc_type_bytes(rtype), rext = 0, sext = 0;
    size_t *r = relem ? blocks_of(job, n, rcounts, rdispls, relem, &rext) : NULL, *s = r;
    if (!r)
        return -1;
    if (send == MPI_IN_PLACE) {
        if (cs->inter || !(send = copy_of(job, recv, rext)))
            return -1;
        sext = rext;
    } else {
        size_t selem = cc_type_bytes(stype);
        if (!selem || !(s = blocks_of(job, n, scounts, sdispls, selem, &sext)))
            return -1;
    }
    cc_call call = {.op = CC_ALLTOALLV, .count = s[cs->inter ? 0 : cs->rank], .dtype = CC_U8,
                    .send_counts = s, .send_displs = s + n, .recv_counts = r,
                    .recv_displs = r + n, .nblocks = (uint32_t)n};
    return cc_job_start(job, cs, slot, &call, send, sext, recv, rext);
}

/* Gather (scatter = 0) and scatter: the root's side is `many`, a block per rank. */
int cc_prep_gather_scatter(cc_job *job, cc_comm *cs, int slot, int scatter, const void *send,
                           int scount, MPI_Datatype stype, void *recv, int rcount,
                           MPI_Datatype rtype, int root) {
    cc_call call = {.op = scatter ? CC_SCATTER : CC_GATHER, .dtype = CC_U8};
    if (set_root(&call, cs, root) < 0)
        return -1;
    size_t sbytes = send == MPI_IN_PLACE ? 0 : bytes_of(scount, stype);
    size_t rbytes = recv == MPI_IN_PLACE ? 0 : bytes_of(rcount, rtype);
    int root_here = is_root(cs, root), n = blocks_n(cs);
    /* The root's block size comes from its per-rank count on the `many` side. */
    size_t block = root_here ? (scatter ? sbytes : rbytes) : (scatter ? rbytes : sbytes);
    if (cs->inter && root == MPI_PROC_NULL)
        block = 0;
    if (block == (size_t)-1)
        return -1;
    call.count = block;
    const void *s = send;
    void *r = recv;
    size_t slen = 0, rlen = 0;
    if (cs->inter && root == MPI_PROC_NULL) {
        /* nothing moves here */
    } else if (root_here) {
        size_t many = (size_t)n * block;
        const void *in_place = scatter ? (const void *)recv : send;
        if (in_place == MPI_IN_PLACE && cs->inter)
            return -1;
        if (!scatter) {
            rlen = many;
            slen = cs->inter ? 0 : block;
            if (send == MPI_IN_PLACE)
                s = copy_of(job, (char *)recv + (size_t)cs->rank * block, block);
            else if (!cs->inter && sbytes != block)
                return -1;
        } else {
            slen = many;
            rlen = cs->inter ? 0 : block;
            if (recv == MPI_IN_PLACE)
                r = scratch_of(job, block);
            else if (!cs->inter && rbytes != block)
                return -1;
        }
        if ((!s && slen) || (!r && rlen))
            return -1;
    } else if (scatter) {
        rlen = block;
    } else {
        slen = block;
    }
    return cc_job_start(job, cs, slot, &call, s, slen, r, rlen);
}

/* Gatherv (scatter = 0) and scatterv: the root's side has per-rank counts and displacements. */
int cc_prep_gatherv_scatterv(cc_job *job, cc_comm *cs, int slot, int scatter, const void *send,
                             const int *scounts, int scount, const int *displs,
                             MPI_Datatype stype, void *recv, const int *rcounts, int rcount,
                             MPI_Datatype rtype, int root) {
    cc_call call = {.op = scatter ? CC_SCATTERV : CC_GATHERV, .dtype = CC_U8};
    if (set_root(&call, cs, root) < 0)
        return -1;
    int root_here = is_root(cs, root), n = blocks_n(cs);
    const void *s = send;
    void *r = recv;
    size_t slen = 0, rlen = 0;
    if (cs->inter && root == MPI_PROC_NULL)
        return cc_job_start(job, cs, slot, &call, NULL, 0, NULL, 0);
    if (!root_here) {
        size_t own = scatter ? bytes_of(rcount, rtype) : bytes_of(scount, stype);
        if (own == (size_t)-1)
            return -1;
        call.count = own;
        *(scatter ? &rlen : &slen) = own;
        return cc_job_start(job, cs, slot, &call, s, slen, r, rlen);
    }
    /* The root: blocks on the `many` side, its own block on the other (not inter). */
    MPI_Datatype many_type = scatter ? stype : rtype;
    size_t elem = cc_type_bytes(many_type), extent = 0;
    size_t *b = elem ? blocks_of(job, n, scatter ? scounts : rcounts, displs, elem, &extent)
                     : NULL;
    if (!b)
        return -1;
    call.nblocks = (uint32_t)n;
    if (scatter) {
        call.send_counts = b, call.send_displs = b + n, slen = extent;
    } else {
        call.recv_counts = b, call.recv_displs = b + n, rlen = extent;
    }
    if (!cs->inter) {
        size_t own = b[cs->rank];
        const void *in_place = scatter ? (const void *)recv : send;
        if (in_place == MPI_IN_PLACE) {
            if (scatter)
                r = scratch_of(job, own);
            else
                s = copy_of(job, (char *)recv + b[n + cs->rank], own);
            if (scatter ? !r : !s)
                return -1;
        } else if ((scatter ? bytes_of(rcount, rtype) : bytes_of(scount, stype)) != own) {
            return -1;
        }
        call.count = own;
        *(scatter ? &rlen : &slen) = own;
    }
    return cc_job_start(job, cs, slot, &call, s, slen, r, rlen);
}

/* Reduce_scatter (rcounts per rank) and reduce_scatter_block (rcounts NULL, rcount each). */
int cc_prep_reduce_scatter(cc_job *job, cc_comm *cs, int slot, const void *send, void *recv,
                           const int *rcounts, int rcount, MPI_Datatype type, MPI_Op mop) {
    /* On an inter-communicator too, the vector is as long as this group's blocks together. */
    if (cc_reduction_of(mop, type, &job->red) < 0)
        return -1;
    size_t elem = job->red.elem, per = job->red.per_item;
    cc_call call = {.dtype = job->red.dtype, .rop = job->red.rop,
                    .commutative = job->red.commutative};
    size_t total, own;
    if (rcounts) {
        size_t extent = 0;
        size_t *b = blocks_of(job, cs->size, rcounts, NULL, per, &extent);
        if (!b)
            return -1;
        call.op = CC_REDUCE_SCATTER;
        call.recv_counts = b, call.recv_displs = b + cs->size;
        call.nblocks = (uint32_t)cs->size;
        total = b[cs->size + cs->size - 1] + b[cs->size - 1];
        call.count = total;
        own = b[cs->rank];
    } else {
        if (rcount < 0)
            return -1;
        call.op = CC_REDUCE_SCATTER_BLOCK;
        call.count = (size_t)rcount * per;
        own = call.count;
        total = own * (size_t)cs->size;
    }
    if (send == MPI_IN_PLACE) {
        if (cs->inter || !(send = copy_of(job, recv, total * elem)))
            return -1;
    }
    return cc_job_start(job, cs, slot, &call, send, total * elem, recv, own * elem);
}
