/* One call of each collective with buffers filled and results checked against values
 * computed locally (check.h), on an intra- or inter-communicator, in place or not,
 * blocking or not. */
#ifndef COMMCORE_PMPI_TEST_COLL_OPS_H
#define COMMCORE_PMPI_TEST_COLL_OPS_H

#include <stdlib.h>

#include "check.h"

typedef struct {
    MPI_Comm comm;
    const char *name;
    int inter, g, rg; /* inter: this group's and the remote group's number */
    int rank, size, rsize;
} tcomm;

typedef struct {
    const tdesc *d;
    int o;        /* index into ops[] for reductions */
    size_t c;     /* count */
    int root;     /* intra: the root; inter: the root's rank in group 0 */
    int in_place;
    int nb;       /* nonblocking form + MPI_Wait */
} tcase;

/* The test's view of `comm`; `g` numbers this process's group. */
static inline tcomm describe(MPI_Comm comm, const char *name, int g) {
    tcomm t = {comm, name, 0, g, !g, 0, 0, 0};
    MPI_Comm_test_inter(comm, &t.inter);
    MPI_Comm_rank(comm, &t.rank);
    MPI_Comm_size(comm, &t.size);
    if (t.inter)
        MPI_Comm_remote_size(comm, &t.rsize);
    return t;
}

static long failures;
static char where[256];

#define FAIL(...)                                                                        \
    do {                                                                                 \
        if (failures++ < 10) {                                                           \
            fprintf(stderr, "FAIL %s: ", where);                                         \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
        }                                                                                \
    } while (0)

static void *alloc(const tdesc *d, size_t n) {
    size_t b = n * (size_t)type_size(d);
    void *p = malloc(b ? b : 1);
    memset(p, 0x5a, b ? b : 1);
    return p;
}

static void finish(MPI_Request *req, int nb) {
    if (nb)
        MPI_Wait(req, MPI_STATUS_IGNORE);
}

/* Checks element i of buf against value v and pair index idx (-1: any). */
static void expect_at(const tdesc *d, const void *buf, size_t i, long v, int idx,
                      const char *what) {
    int got_idx;
    long got = get(d, buf, i, &got_idx);
    if (got != v || (d->k == K_PAIR && idx >= 0 && got_idx != idx))
        FAIL("%s element %zu: got %ld/%d, want %ld/%d", what, i, got, got_idx, v, idx);
}

static void fill_data(const tdesc *d, void *buf, int g, int r, size_t n) {
    for (size_t i = 0; i < n; i++)
        put(d, buf, i, datum(d, g, r, i), (int)(i % 97));
}

static void check_data(const tdesc *d, const void *buf, int g, int r, size_t n, const char *w) {
    for (size_t i = 0; i < n; i++)
        expect_at(d, buf, i, datum(d, g, r, i), (int)(i % 97), w);
}

/* Whether this process is the root, and the root argument it passes. */
static int root_arg(const tcomm *t, int root, int *is_root, int root_group) {
    if (!t->inter) {
        *is_root = t->rank == root;
        return root;
    }
    *is_root = t->g == root_group && t->rank == root;
    if (t->g == root_group)
        return *is_root ? MPI_ROOT : MPI_PROC_NULL;
    return root;
}

static void t_bcast(const tcomm *t, const tcase *k) {
    int me_root, root = root_arg(t, k->root, &me_root, 0);
    void *buf = alloc(k->d, k->c);
    MPI_Request req;
    int src_g = t->inter ? 0 : t->g;
    if (me_root)
        fill_data(k->d, buf, src_g, k->root, k->c);
    if (k->nb)
        MPI_Ibcast(buf, (int)k->c, k->d->t, root, t->comm, &req);
    else
        MPI_Bcast(buf, (int)k->c, k->d->t, root, t->comm);
    finish(&req, k->nb);
    if (!t->inter || t->g == 1)
        check_data(k->d, buf, src_g, k->root, k->c, "bcast");
    free(buf);
}

/* Reduce, allreduce, scan, exscan. */
static void t_reduction(const tcomm *t, const tcase *k, const char *which) {
    int o = k->o, rooted = !strcmp(which, "reduce"), me_root = 1, root = 0;
    if (rooted)
        root = root_arg(t, k->root, &me_root, 1);
    void *send = alloc(k->d, k->c), *recv = alloc(k->d, k->c);
    for (size_t i = 0; i < k->c; i++)
        put(k->d, send, i, value(o, t->g, t->rank, i), t->rank);
    const void *s = send;
    if (k->in_place && me_root && !t->inter) {
        memcpy(recv, send, k->c * (size_t)type_size(k->d));
        s = MPI_IN_PLACE;
    }
    MPI_Request req;
    MPI_Datatype ty = k->d->t;
    MPI_Op op = ops[o].op;
    int n = (int)k->c;
    if (!strcmp(which, "allreduce"))
        k->nb ? MPI_Iallreduce(s, recv, n, ty, op, t->comm, &req)
              : MPI_Allreduce(s, recv, n, ty, op, t->comm);
    else if (rooted)
        k->nb ? MPI_Ireduce(s, recv, n, ty, op, root, t->comm, &req)
              : MPI_Reduce(s, recv, n, ty, op, root, t->comm);
    else if (!strcmp(which, "scan"))
        k->nb ? MPI_Iscan(s, recv, n, ty, op, t->comm, &req)
              : MPI_Scan(s, recv, n, ty, op, t->comm);
    else
        k->nb ? MPI_Iexscan(s, recv, n, ty, op, t->comm, &req)
              : MPI_Exscan(s, recv, n, ty, op, t->comm);
    finish(&req, k->nb);
    int lo = 0, hi = t->size, g = t->g;
    if (t->inter)
        hi = t->rsize, g = t->rg;
    if (!strcmp(which, "scan"))
        hi = t->rank + 1;
    if (!strcmp(which, "exscan"))
        hi = t->rank;
    if (me_root && hi > lo && !(rooted && t->inter && t->g != 1)) {
        for (size_t i = 0; i < k->c; i++) {
            int idx;
            long v = expect(o, g, lo, hi, i, &idx);
            expect_at(k->d, recv, i, v, idx, which);
        }
    }
    free(send), free(recv);
}

/* Reduce_scatter_block (vary = 0) and reduce_scatter (block r has c + r % 2 elements). */
static void t_reduce_scatter(const tcomm *t, const tcase *k, int vary) {
    /* Both groups' vectors must be equally long (MPI): between groups of different sizes each
     * member's block is the other group's size times the count, and blocks do not vary. */
    int uneven = t->inter && t->size != t->rsize, o = k->o;
    size_t per = uneven ? k->c * (size_t)t->rsize : k->c;
    int *counts = malloc(sizeof(int) * (size_t)t->size);
    size_t total = 0, mine_at = 0;
    for (int r = 0; r < t->size; r++) {
        counts[r] = (int)per + (vary && !uneven ? r % 2 : 0);
        if (r < t->rank)
            mine_at += (size_t)counts[r];
        total += (size_t)counts[r];
    }
    if (!vary)
        total = per * (size_t)t->size;
    void *send = alloc(k->d, total), *recv = alloc(k->d, total);
    for (size_t i = 0; i < total; i++)
        put(k->d, send, i, value(o, t->g, t->rank, i), t->rank);
    const void *s = send;
    if (k->in_place && !t->inter) {
        memcpy(recv, send, total * (size_t)type_size(k->d));
        s = MPI_IN_PLACE;
    }
    MPI_Request req;
    if (vary)
        k->nb ? MPI_Ireduce_scatter(s, recv, counts, k->d->t, ops[o].op, t->comm, &req)
              : MPI_Reduce_scatter(s, recv, counts, k->d->t, ops[o].op, t->comm);
    else
        k->nb ? MPI_Ireduce_scatter_block(s, recv, (int)per, k->d->t, ops[o].op, t->comm, &req)
              : MPI_Reduce_scatter_block(s, recv, (int)per, k->d->t, ops[o].op, t->comm);
    finish(&req, k->nb);
    int g = t->inter ? t->rg : t->g, hi = t->inter ? t->rsize : t->size;
    for (size_t i = 0; i < (size_t)counts[t->rank]; i++) {
        int idx;
        long v = expect(o, g, 0, hi, mine_at + i, &idx);
        expect_at(k->d, recv, i, v, idx, vary ? "reduce_scatter" : "reduce_scatter_block");
    }
    free(counts), free(send), free(recv);
}

#endif
