/* Ranks that describe one collective differently, as MPI allows: the same data as plain
 * MPI_INTs on one rank, one contiguous type or a strided vector on another (and a pair type
 * with holes against a packed struct); v-operations whose own counts differ (half the ranks
 * send 16 KiB, half nothing); inter-communicators whose groups send blocks of different
 * sizes; a derived type freed and a communicator freed while a nonblocking call runs; a
 * negative displacement. Every call must be served by commcore on every rank: a rank that
 * handed its call to the host, or picked another algorithm, while the others ran commcore's
 * schedule would hang (run.sh checks the report shows no host call). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long failures;
static char where[160];
static int wrank;
#define FAIL(...)                                                                            \
    do {                                                                                   \
        failures++;                                                                        \
        fprintf(stderr, "[%d] %s: ", wrank, where);                                        \
        fprintf(stderr, __VA_ARGS__);                                                      \
        fputc('\n', stderr);                                                               \
    } while (0)

#define K 5       /* ints per block */
#define GAP (-1)  /* what positions outside the data hold */

/* One rank's way to describe a block of K ints: plain ints, a contiguous type, or a vector
 * with a hole after each int (packed and unpacked by the library). */
typedef struct {
    MPI_Datatype t;
    int count;  /* of `t` per block */
    int span;   /* ints from one block to the next */
    int stride; /* ints between a block's elements */
} shape;

static shape shape_of(int kind) {
    shape s = {MPI_INT, K, K, 1};
    if (kind == 1) {
        MPI_Type_contiguous(K, MPI_INT, &s.t);
        s.count = 1;
    } else if (kind == 2) {
        MPI_Type_vector(K, 1, 2, MPI_INT, &s.t);
        s.count = 1, s.span = 2 * K - 1, s.stride = 2;
    }
    if (kind)
        MPI_Type_commit(&s.t);
    return s;
}

static void shape_free(shape *s) {
    if (s->t != MPI_INT)
        MPI_Type_free(&s->t);
}

static int *blocks(const shape *s, int n) {
    int *b = malloc(sizeof(int) * (size_t)(n * s->span + 1));
    for (int i = 0; i < n * s->span + 1; i++)
        b[i] = GAP;
    return b;
}

static int *slot(const shape *s, int *buf, int block, int j) {
    return &buf[block * s->span + j * s->stride];
}

static void fill(const shape *s, int *buf, int block, int base) {
    for (int j = 0; j < K; j++)
        *slot(s, buf, block, j) = base + j;
}

/* Block `block` holds base + j, and every position between elements still holds GAP. */
static void expect_block(const shape *s, int *buf, int block, int base) {
    for (int j = 0; j < K; j++)
        if (*slot(s, buf, block, j) != base + j)
            FAIL("block %d element %d: got %d want %d", block, j, *slot(s, buf, block, j),
                 base + j);
    for (int j = 0; s->stride > 1 && j < K - 1; j++)
        if (slot(s, buf, block, j)[1] != GAP)
            FAIL("block %d: the hole after element %d was written", block, j);
}

/* Ends a nonblocking call after freeing the type it names (MPI lets the user). */
static void finish(MPI_Request *req, int nb, shape *s) {
    if (!nb)
        return;
    MPI_Datatype t = s->t;
    if (t != MPI_INT)
        MPI_Type_dup(t, &s->t), MPI_Type_free(&t); /* the call named `t`; it goes now */
    MPI_Wait(req, MPI_STATUS_IGNORE);
}

/* Every data-moving operation with rank r describing its blocks by shape (r + v) % 3. */
static void mixed_shapes(int v, int nb, int root) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    shape s = shape_of((rank + v) % 3);
    int *one = blocks(&s, 1), *all = blocks(&s, size), *out = blocks(&s, size);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++)
        counts[i] = s.count, displs[i] = i * s.count;
    MPI_Request req = MPI_REQUEST_NULL;
    const char *tag = nb ? "nonblocking " : "";

    snprintf(where, sizeof where, "%sbcast root %d shapes %d", tag, root, v);
    if (rank == root)
        fill(&s, one, 0, 100);
    nb ? MPI_Ibcast(one, s.count, s.t, root, MPI_COMM_WORLD, &req)
       : MPI_Bcast(one, s.count, s.t, root, MPI_COMM_WORLD);
    finish(&req, nb, &s);
    expect_block(&s, one, 0, 100);

    for (int w = 0; w < 4; w++) { /* gather, gatherv, allgather, allgatherv */
        const char *name[] = {"gather", "gatherv", "allgather", "allgatherv"};
        snprintf(where, sizeof where, "%s%s root %d shapes %d", tag, name[w], root, v);
        int *r = blocks(&s, size);
        fill(&s, one, 0, 1000 * rank);
        if (w == 0)
            nb ? MPI_Igather(one, s.count, s.t, r, s.count, s.t, root, MPI_COMM_WORLD, &req)
               : MPI_Gather(one, s.count, s.t, r, s.count, s.t, root, MPI_COMM_WORLD);
        if (w == 1)
            nb ? MPI_Igatherv(one, s.count, s.t, r, counts, displs, s.t, root, MPI_COMM_WORLD,
                              &req)
               : MPI_Gatherv(one, s.count, s.t, r, counts, displs, s.t, root, MPI_COMM_WORLD);
        if (w == 2)
            nb ? MPI_Iallgather(one, s.count, s.t, r, s.count, s.t, MPI_COMM_WORLD, &req)
               : MPI_Allgather(one, s.count, s.t, r, s.count, s.t, MPI_COMM_WORLD);
        if (w == 3)
            nb ? MPI_Iallgatherv(one, s.count, s.t, r, counts, displs, s.t, MPI_COMM_WORLD, &req)
               : MPI_Allgatherv(one, s.count, s.t, r, counts, displs, s.t, MPI_COMM_WORLD);
        finish(&req, nb, &s);
        for (int b = 0; b < size && (w >= 2 || rank == root); b++)
            expect_block(&s, r, b, 1000 * b);
        free(r);
    }

    for (int w = 0; w < 2; w++) { /* scatter, scatterv */
        snprintf(where, sizeof where, "%s%s root %d shapes %d", tag, w ? "scatterv" : "scatter",
                 root, v);
        int *r = blocks(&s, 1);
        for (int b = 0; b < size && rank == root; b++)
            fill(&s, all, b, 1000 * b + 7);
        if (w == 0)
            nb ? MPI_Iscatter(all, s.count, s.t, r, s.count, s.t, root, MPI_COMM_WORLD, &req)
               : MPI_Scatter(all, s.count, s.t, r, s.count, s.t, root, MPI_COMM_WORLD);
        else
            nb ? MPI_Iscatterv(all, counts, displs, s.t, r, s.count, s.t, root, MPI_COMM_WORLD,
                               &req)
               : MPI_Scatterv(all, counts, displs, s.t, r, s.count, s.t, root, MPI_COMM_WORLD);
        finish(&req, nb, &s);
        expect_block(&s, r, 0, 1000 * rank + 7);
        free(r);
    }

    for (int w = 0; w < 2; w++) { /* alltoall, alltoallv: block b of rank r is 1000r + 10b */
        snprintf(where, sizeof where, "%s%s shapes %d", tag, w ? "alltoallv" : "alltoall", v);
        for (int b = 0; b < size; b++)
            fill(&s, all, b, 1000 * rank + 10 * b);
        if (w == 0)
            nb ? MPI_Ialltoall(all, s.count, s.t, out, s.count, s.t, MPI_COMM_WORLD, &req)
               : MPI_Alltoall(all, s.count, s.t, out, s.count, s.t, MPI_COMM_WORLD);
        else
            nb ? MPI_Ialltoallv(all, counts, displs, s.t, out, counts, displs, s.t,
                                MPI_COMM_WORLD, &req)
               : MPI_Alltoallv(all, counts, displs, s.t, out, counts, displs, s.t,
                               MPI_COMM_WORLD);
        finish(&req, nb, &s);
        for (int b = 0; b < size; b++)
            expect_block(&s, out, b, 1000 * b + 10 * rank);
    }
    shape_free(&s);
    free(one), free(all), free(out), free(counts), free(displs);
}

/* Allgatherv where the first half of the ranks send `bytes` each and the rest nothing. */
static void half_full(int bytes) {
    int rank, size, total = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) {
        counts[i] = i < (size + 1) / 2 ? bytes : 0;
        displs[i] = total;
        total += counts[i];
    }
    unsigned char *s = malloc((size_t)bytes + 1), *r = malloc((size_t)total + 1);
    memset(s, rank + 1, (size_t)bytes);
    snprintf(where, sizeof where, "allgatherv, half the ranks %d bytes, half none", bytes);
    MPI_Allgatherv(s, counts[rank], MPI_BYTE, r, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        for (int j = 0; j < counts[i]; j++)
            if (r[displs[i] + j] != i + 1) {
                FAIL("block %d byte %d: got %d", i, j, r[displs[i] + j]);
                break;
            }
    free(s), free(r), free(counts), free(displs);
}

/* Inter-communicator allgather and alltoall where group 0 sends nothing and receives K ints
 * per remote rank, and group 1 sends K ints and receives nothing. */
static void one_way_inter(int nb) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
        return;
    int g = rank >= size / 2;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, g, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g ? 0 : size / 2, 3, &inter);
    /* The library makes a communicator's state at its first blocking collective; before
     * it, a nonblocking call goes to the host on every rank alike (corners.c checks that). */
    MPI_Barrier(inter);
    int lrank, rsize;
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_remote_size(inter, &rsize);
    int *s = malloc(sizeof(int) * K * (size_t)size), *r = malloc(sizeof(int) * K * (size_t)size);
    for (int i = 0; i < K * size; i++)
        s[i] = 100 * lrank + i, r[i] = GAP;
    MPI_Request req = MPI_REQUEST_NULL;
    for (int w = 0; w < 2; w++) {
        snprintf(where, sizeof where, "%sinter %s, group %d one way", nb ? "nonblocking " : "",
                 w ? "alltoall" : "allgather", g);
        int sc = g ? K : 0, rc = g ? 0 : K;
        if (w == 0)
            nb ? MPI_Iallgather(s, sc, MPI_INT, r, rc, MPI_INT, inter, &req)
               : MPI_Allgather(s, sc, MPI_INT, r, rc, MPI_INT, inter);
        else
            nb ? MPI_Ialltoall(s, sc, MPI_INT, r, rc, MPI_INT, inter, &req)
               : MPI_Alltoall(s, sc, MPI_INT, r, rc, MPI_INT, inter);
        if (nb)
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int b = 0; b < rsize && !g; b++)
            for (int j = 0; j < K; j++) {
                int want = 100 * b + (w ? K * lrank : 0) + j;
                if (r[b * K + j] != want)
                    FAIL("block %d element %d: got %d want %d", b, j, r[b * K + j], want);
            }
        if (g && r[0] != GAP)
            FAIL("a group that receives nothing had its buffer written");
    }
    free(s), free(r);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

/* A pair type with a hole (MPI_SHORT_INT: 6 bytes in 8) at the root against a packed struct
 * of the same signature (6 bytes in 6) elsewhere. */
static void pair_against_packed(void) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Datatype packed, loose;
    int lens[2] = {1, 1};
    MPI_Aint at[2] = {0, 2};
    MPI_Datatype parts[2] = {MPI_SHORT, MPI_INT};
    MPI_Type_create_struct(2, lens, at, parts, &loose);
    MPI_Type_create_resized(loose, 0, 6, &packed);
    MPI_Type_commit(&packed);
    struct short_int {
        short v;
        int i;
    } pairs[3];
    unsigned char bytes[18];
    memset(bytes, 0, sizeof bytes);
    if (rank == 0)
        for (int i = 0; i < 3; i++)
            pairs[i] = (struct short_int){(short)(10 + i), 20 + i};
    snprintf(where, sizeof where, "bcast MPI_SHORT_INT against a packed struct");
    if (rank == 0)
        MPI_Bcast(pairs, 3, MPI_SHORT_INT, 0, MPI_COMM_WORLD);
    else
        MPI_Bcast(bytes, 3, packed, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 3 && rank; i++) {
        short v;
        int x;
        memcpy(&v, bytes + 6 * i, 2), memcpy(&x, bytes + 6 * i + 2, 4);
        if (v != 10 + i || x != 20 + i)
            FAIL("pair %d: got %d/%d", i, v, x);
    }
    MPI_Type_free(&packed);
    MPI_Type_free(&loose);
}

/* A communicator freed while a nonblocking call on it runs; gatherv into a buffer the
 * root addresses with a negative displacement. */
static void freed_and_negative(void) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Barrier(dup); /* the state exists: the ibcast below keeps it past the free */
    int x = rank == 0 ? 77 : 0;
    MPI_Request req;
    snprintf(where, sizeof where, "ibcast on a communicator freed before the wait");
    MPI_Ibcast(&x, 1, MPI_INT, 0, dup, &req);
    MPI_Comm_free(&dup);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (x != 77)
        FAIL("got %d", x);
    snprintf(where, sizeof where, "gatherv with a negative displacement");
    int *buf = malloc(sizeof(int) * (size_t)(size + 1)), *mid = buf + 1;
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++)
        counts[i] = 1, displs[i] = i - 1; /* rank 0's block sits just before `mid` */
    int mine = 500 + rank;
    MPI_Gatherv(&mine, 1, MPI_INT, mid, counts, displs, MPI_INT, size - 1, MPI_COMM_WORLD);
    for (int i = 0; i < size && rank == size - 1; i++)
        if (buf[i] != 500 + i)
            FAIL("block %d: got %d", i, buf[i]);
    free(buf), free(counts), free(displs);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int v = 0; v < 3; v++)
        for (int nb = 0; nb < 2; nb++)
            mixed_shapes(v, nb, (v + nb) % size);
    half_full(16384);
    half_full(100);
    one_way_inter(0);
    one_way_inter(1);
    pair_against_packed();
    freed_and_negative();
    long all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("mixed: %d processes, %ld checks failed\n", size, all);
    MPI_Finalize();
    return all != 0;
}
