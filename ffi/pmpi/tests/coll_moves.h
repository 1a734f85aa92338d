/* The data-moving collectives (gather, scatter, allgather, alltoall and their v forms),
 * checked element by element. Block layouts of the v forms vary in size and leave gaps. */
#ifndef COMMCORE_PMPI_TEST_COLL_MOVES_H
#define COMMCORE_PMPI_TEST_COLL_MOVES_H

#include "coll_ops.h"

/* Per-rank counts c + (r + shift) % 2 and displacements with a one-element gap. */
static size_t layout(int n, size_t c, int shift, int vary, int *counts, int *displs) {
    size_t at = 0;
    for (int r = 0; r < n; r++) {
        counts[r] = (int)c + (vary ? (r + shift) % 2 : 0);
        displs[r] = (int)at;
        at += (size_t)counts[r] + (vary ? 1 : 0);
    }
    return at;
}

/* Allgather(v): block r of the result comes from rank r (of the remote group when inter). */
static void t_allgather(const tcomm *t, const tcase *k, int v) {
    int n = t->inter ? t->rsize : t->size, g = t->inter ? t->rg : t->g;
    int *counts = malloc(sizeof(int) * (size_t)n), *displs = malloc(sizeof(int) * (size_t)n);
    size_t total = layout(n, k->c, 0, v, counts, displs);
    /* My own count: in an inter-communicator the remote group's layout names mine too
     * (the test uses the same pattern in both groups). */
    int mine = (int)k->c + (v ? t->rank % 2 : 0);
    void *send = alloc(k->d, (size_t)mine), *recv = alloc(k->d, total);
    size_t es = (size_t)type_size(k->d);
    fill_data(k->d, send, t->g, t->rank, (size_t)mine);
    const void *s = send;
    if (k->in_place && !t->inter) {
        memcpy((char *)recv + (size_t)displs[t->rank] * es, send, (size_t)mine * es);
        s = MPI_IN_PLACE;
    }
    MPI_Request req;
    if (v)
        k->nb ? MPI_Iallgatherv(s, mine, k->d->t, recv, counts, displs, k->d->t, t->comm, &req)
              : MPI_Allgatherv(s, mine, k->d->t, recv, counts, displs, k->d->t, t->comm);
    else
        k->nb ? MPI_Iallgather(s, mine, k->d->t, recv, (int)k->c, k->d->t, t->comm, &req)
              : MPI_Allgather(s, mine, k->d->t, recv, (int)k->c, k->d->t, t->comm);
    finish(&req, k->nb);
    for (int r = 0; r < n; r++)
        check_data(k->d, (char *)recv + (size_t)displs[r] * es, g, r, (size_t)counts[r],
                   v ? "allgatherv" : "allgather");
    free(counts), free(displs), free(send), free(recv);
}

/* Alltoall(v): the block rank a sends rank b holds datum(g, 8a + b). */
static void t_alltoall(const tcomm *t, const tcase *k, int v) {
    int n = t->inter ? t->rsize : t->size, g = t->inter ? t->rg : t->g;
    int *sc = malloc(sizeof(int) * (size_t)n), *sd = malloc(sizeof(int) * (size_t)n);
    int *rc = malloc(sizeof(int) * (size_t)n), *rd = malloc(sizeof(int) * (size_t)n);
    size_t stotal = layout(n, k->c, t->rank, v, sc, sd);
    size_t rtotal = layout(n, k->c, t->rank, v, rc, rd);
    size_t es = (size_t)type_size(k->d);
    void *send = alloc(k->d, stotal), *recv = alloc(k->d, rtotal);
    for (int j = 0; j < n; j++)
        fill_data(k->d, (char *)send + (size_t)sd[j] * es, t->g, 8 * t->rank + j, (size_t)sc[j]);
    const void *s = send;
    if (k->in_place && !t->inter) {
        memcpy(recv, send, stotal * es);
        s = MPI_IN_PLACE;
    }
    MPI_Request req;
    if (v)
        k->nb ? MPI_Ialltoallv(s, sc, sd, k->d->t, recv, rc, rd, k->d->t, t->comm, &req)
              : MPI_Alltoallv(s, sc, sd, k->d->t, recv, rc, rd, k->d->t, t->comm);
    else
        k->nb ? MPI_Ialltoall(s, (int)k->c, k->d->t, recv, (int)k->c, k->d->t, t->comm, &req)
              : MPI_Alltoall(s, (int)k->c, k->d->t, recv, (int)k->c, k->d->t, t->comm);
    finish(&req, k->nb);
    for (int j = 0; j < n; j++)
        check_data(k->d, (char *)recv + (size_t)rd[j] * es, g, 8 * j + t->rank, (size_t)rc[j],
                   v ? "alltoallv" : "alltoall");
    free(sc), free(sd), free(rc), free(rd), free(send), free(recv);
}

/* Gather(v) (scatter = 0) and scatter(v): the root's side holds block r for rank r. */
static void t_rooted(const tcomm *t, const tcase *k, int scatter, int v) {
    int me_root, root = root_arg(t, k->root, &me_root, scatter ? 0 : 1);
    int n = t->inter ? t->rsize : t->size;
    int *counts = malloc(sizeof(int) * (size_t)n), *displs = malloc(sizeof(int) * (size_t)n);
    size_t total = layout(n, k->c, 0, v, counts, displs), es = (size_t)type_size(k->d);
    int mine = (int)k->c + (v ? t->rank % 2 : 0);
    void *many = alloc(k->d, total), *one = alloc(k->d, (size_t)mine);
    /* Groups: the root's side is group g_root; blocks come from or go to the other side. */
    int g_blocks = t->inter ? 0 : t->g;
    const void *sb = one;
    void *rb = many;
    int in_place = k->in_place && me_root && !t->inter;
    if (scatter) {
        if (me_root)
            for (int r = 0; r < n; r++)
                fill_data(k->d, (char *)many + (size_t)displs[r] * es, g_blocks, r, (size_t)counts[r]);
        sb = many, rb = in_place ? MPI_IN_PLACE : one;
    } else {
        fill_data(k->d, one, t->g, t->rank, (size_t)mine);
        if (in_place) {
            memcpy((char *)many + (size_t)displs[t->rank] * es, one, (size_t)mine * es);
            sb = MPI_IN_PLACE;
        }
    }
    MPI_Request req;
    MPI_Datatype ty = k->d->t;
    int c = (int)k->c;
    MPI_Comm cm = t->comm;
    if (scatter && v)
        k->nb ? MPI_Iscatterv(sb, counts, displs, ty, rb, mine, ty, root, cm, &req)
              : MPI_Scatterv(sb, counts, displs, ty, rb, mine, ty, root, cm);
    else if (scatter)
        k->nb ? MPI_Iscatter(sb, c, ty, rb, c, ty, root, cm, &req)
              : MPI_Scatter(sb, c, ty, rb, c, ty, root, cm);
    else if (v)
        k->nb ? MPI_Igatherv(sb, mine, ty, rb, counts, displs, ty, root, cm, &req)
              : MPI_Gatherv(sb, mine, ty, rb, counts, displs, ty, root, cm);
    else
        k->nb ? MPI_Igather(sb, c, ty, rb, c, ty, root, cm, &req)
              : MPI_Gather(sb, c, ty, rb, c, ty, root, cm);
    finish(&req, k->nb);
    const char *w = scatter ? (v ? "scatterv" : "scatter") : (v ? "gatherv" : "gather");
    int receives = scatter ? (!t->inter || t->g == 1) : me_root;
    if (scatter && receives && !in_place)
        check_data(k->d, one, g_blocks, t->rank, (size_t)mine, w);
    if (!scatter && receives)
        for (int r = 0; r < n; r++)
            check_data(k->d, (char *)many + (size_t)displs[r] * es, t->inter ? t->rg : t->g, r,
                       (size_t)counts[r], w);
    free(counts), free(displs), free(many), free(one);
}

#endif
