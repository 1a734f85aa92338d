/* The standard's corner cases, each checked: MPI_COMM_SELF, size-1 communicators,
 * inter-communicators with a side of size 1, zero counts with NULL buffers, user ops
 * (commutative and not), communicators made by constructors the library does not wrap,
 * nonblocking collectives interleaved with point-to-point, derived datatypes (moved packed),
 * user ops and predefined pairs on elements no core type has (reduced whole), a first
 * nonblocking call on a communicator without state (the one call the host serves). Prints
 * the number of calls it expects the host to serve (summed over ranks), which the test
 * script compares with the report. */
#include <stdlib.h>

#include "coll_moves.h"

static long host_expected; /* this rank's calls that must go to the host */

/* A non-commutative associative op: 2x2 integer matrix product, inout = in x inout. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        int r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                    a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    for (int i = 0; i < *len; i++)
        ((long *)inout)[i] += ((long *)in)[i];
}

/* Rank r's matrix: [[1, r+1], [0, 1]] (upper unitriangular; products add the corners, so
 * the order shows only through a non-commutative twist: element 2 is r % 2). */
static void mat_of(int r, int *m) {
    m[0] = 1, m[1] = r + 1, m[2] = r % 2, m[3] = 1;
}

static void mat_fold(int lo, int hi, int *acc) {
    mat_of(lo, acc);
    for (int r = lo + 1; r < hi; r++) {
        int m[4], one = 1;
        mat_of(r, m);
        matmul(acc, m, &one, NULL); /* m = acc x m */
        memcpy(acc, m, sizeof m);
    }
}

static void user_ops(MPI_Comm comm, const char *name) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Op mat, sum;
    MPI_Op_create(matmul, 0, &mat);
    MPI_Op_create(user_sum, 1, &sum);
    MPI_Datatype m4;
    MPI_Type_contiguous(4, MPI_INT, &m4);
    MPI_Type_commit(&m4);
    /* A non-commutative op on a contiguous derived type, then a commutative user op on
     * MPI_LONG (commcore serves both). */
    int mine[4], got[4], want[4];
    mat_of(rank, mine);
    snprintf(where, sizeof where, "%s user matmul allreduce (derived type)", name);
    MPI_Allreduce(mine, got, 1, m4, mat, comm);
    mat_fold(0, size, want);
    if (memcmp(got, want, sizeof want))
        FAIL("got [%d %d %d %d] want [%d %d %d %d]", got[0], got[1], got[2], got[3], want[0],
             want[1], want[2], want[3]);
    long v[7], out[7];
    for (int i = 0; i < 7; i++)
        v[i] = rank * 10 + i;
    const char *what[] = {"allreduce", "reduce", "scan", "exscan"};
    for (int w = 0; w < 4; w++) {
        snprintf(where, sizeof where, "%s user sum %s", name, what[w]);
        memset(out, 0, sizeof out);
        if (w == 0) MPI_Allreduce(v, out, 7, MPI_LONG, sum, comm);
        if (w == 1) MPI_Reduce(v, out, 7, MPI_LONG, sum, size - 1, comm);
        if (w == 2) MPI_Scan(v, out, 7, MPI_LONG, sum, comm);
        if (w == 3) MPI_Exscan(v, out, 7, MPI_LONG, sum, comm);
        int hi = w == 2 ? rank + 1 : w == 3 ? rank : size;
        if ((w == 1 && rank != size - 1) || hi == 0)
            continue;
        for (int i = 0; i < 7; i++) {
            long e = 0;
            for (int r = 0; r < hi; r++)
                e += r * 10 + i;
            if (out[i] != e)
                FAIL("element %d: got %ld want %ld", i, out[i], e);
        }
    }
    MPI_Type_free(&m4);
    MPI_Op_free(&mat);
    MPI_Op_free(&sum);
}

/* Affine maps x -> a x + b composed in rank order, with a count of maps: elements of 24
 * bytes, a size no core type has, so the schedule moves bytes and must keep elements
 * whole (an algorithm that splits the vector would cut one). */
static void compose(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    long *f = in, *g = inout;
    for (int i = 0; i < *len; i++, f += 3, g += 3) {
        long a = f[0] * g[0], b = f[0] * g[1] + f[1];
        g[0] = a, g[1] = b, g[2] += f[2];
    }
}

static void whole_elements(MPI_Comm comm, const char *name) {
    enum { N = 701 }; /* 16.8 KB, not a multiple of ranks × 24: past where allreduce splits */
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Datatype affine;
    MPI_Type_contiguous(3, MPI_LONG, &affine);
    MPI_Type_commit(&affine);
    MPI_Op op;
    MPI_Op_create(compose, 0, &op);
    long *v = malloc(sizeof(long) * 3 * N), *out = malloc(sizeof(long) * 3 * N);
    for (int i = 0; i < N; i++)
        v[3 * i] = 1 + rank % 2, v[3 * i + 1] = rank + i % 5, v[3 * i + 2] = 1;
    for (int w = 0; w < 3; w++) {
        const char *what[] = {"allreduce", "reduce", "scan"};
        snprintf(where, sizeof where, "%s 24-byte user elements, %s", name, what[w]);
        memset(out, 0, sizeof(long) * 3 * N);
        if (w == 0) MPI_Allreduce(v, out, N, affine, op, comm);
        if (w == 1) MPI_Reduce(v, out, N, affine, op, 0, comm);
        if (w == 2) MPI_Scan(v, out, N, affine, op, comm);
        int hi = w == 2 ? rank + 1 : size;
        if (w == 1 && rank != 0)
            continue;
        for (int i = 0; i < N; i++) {
            long a = 1, b = 0; /* fold x_0 op x_1 op ... in rank order */
            for (int r = hi - 1; r >= 0; r--) {
                long ra = 1 + r % 2, rb = r + i % 5;
                b = ra * b + rb, a = ra * a;
            }
            if (out[3 * i] != a || out[3 * i + 1] != b || out[3 * i + 2] != hi) {
                FAIL("element %d: got (%ld %ld %ld) want (%ld %ld %d)", i, out[3 * i],
                     out[3 * i + 1], out[3 * i + 2], a, b, hi);
                break;
            }
        }
    }
    free(v), free(out);
    MPI_Op_free(&op);
    MPI_Type_free(&affine);
}

/* A non-commutative op on a predefined type: a ∘ b = a, whose result is the lowest rank's
 * value only when operands combine in rank order. */
static void first_of(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    memcpy(inout, in, (size_t)*len * sizeof(int)); /* a ∘ b = a: keeps the lowest rank's */
}

static void ordered_op(MPI_Comm comm, const char *name) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Op first;
    MPI_Op_create(first_of, 0, &first);
    int v[100], out[100];
    for (int i = 0; i < 100; i++)
        v[i] = rank * 1000 + i;
    snprintf(where, sizeof where, "%s non-commutative allreduce", name);
    MPI_Allreduce(v, out, 100, MPI_INT, first, comm);
    for (int i = 0; i < 100; i++)
        if (out[i] != i)
            FAIL("element %d: got %d want %d", i, out[i], i);
    snprintf(where, sizeof where, "%s non-commutative scan", name);
    MPI_Scan(v, out, 100, MPI_INT, first, comm);
    for (int i = 0; i < 100; i++)
        if (out[i] != i)
            FAIL("element %d: got %d want %d", i, out[i], i);
    MPI_Op_free(&first);
}

/* Every operation through the matrix helpers at counts 0 and 7 on one communicator. */
static void all_ops(const tcomm *t) {
    const tdesc *d = &types[4]; /* int */
    for (size_t c = 0; c < 8; c += 7) {
        for (int nb = 0; nb < 2; nb++) {
            tcase k = {d, 0, c, 0, 0, nb};
            snprintf(where, sizeof where, "%s count %zu nb %d", t->name, c, nb);
            t_bcast(t, &k);
            t_reduction(t, &k, "reduce");
            t_reduction(t, &k, "allreduce");
            t_allgather(t, &k, 0);
            t_allgather(t, &k, 1);
            t_alltoall(t, &k, 0);
            t_alltoall(t, &k, 1);
            for (int s = 0; s < 2; s++)
                for (int v = 0; v < 2; v++)
                    t_rooted(t, &k, s, v);
            if (!t->inter || t->size == t->rsize) {
                t_reduce_scatter(t, &k, 0);
                t_reduce_scatter(t, &k, 1);
            }
            if (!t->inter) {
                t_reduction(t, &k, "scan");
                t_reduction(t, &k, "exscan");
                k.in_place = 1;
                t_reduction(t, &k, "allreduce");
                t_allgather(t, &k, 0);
                t_alltoall(t, &k, 1);
                for (int s = 0; s < 2; s++)
                    t_rooted(t, &k, s, 1);
            }
        }
    }
}

static void zero_counts_null_buffers(void) {
    snprintf(where, sizeof where, "zero counts with NULL buffers");
    MPI_Bcast(NULL, 0, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, NULL, 0, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(NULL, 0, MPI_INT, NULL, 0, MPI_INT, MPI_COMM_WORLD);
    MPI_Reduce(NULL, NULL, 0, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
}

/* Rank 0 starts a barrier and then sends; rank 1 receives before it joins the barrier:
 * only a barrier progressed inside MPI_Send/MPI_Recv/MPI_Wait completes this. */
static void nonblocking_with_p2p(int rank, int size) {
    if (size < 2)
        return;
    snprintf(where, sizeof where, "nonblocking barrier interleaved with send/recv");
    MPI_Request req, reqs[3];
    int x = 42, y = 0;
    if (rank == 0) {
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        MPI_Send(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        if (rank == 1)
            MPI_Recv(&y, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank == 1 && y != 42)
            FAIL("got %d want 42", y);
    }
    /* Three in flight at once, completed in reverse order of starting. */
    int a = rank, b[64], c = 0;
    MPI_Iallreduce(&a, &c, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
    MPI_Iallgather(&a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD, &reqs[1]);
    MPI_Ibarrier(MPI_COMM_WORLD, &reqs[2]);
    MPI_Wait(&reqs[2], MPI_STATUS_IGNORE);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    if (c != size * (size - 1) / 2)
        FAIL("iallreduce got %d", c);
    for (int r = 0; r < size && r < 64; r++)
        if (b[r] != r)
            FAIL("iallgather block %d got %d", r, b[r]);
    /* The other blocking point-to-point calls while a collective runs (the library turns
     * them into test loops): their values arrive. */
    snprintf(where, sizeof where, "sendrecv, sendrecv_replace, ssend with a collective running");
    MPI_Iallreduce(&a, &c, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
    int peer = rank ^ 1, got = -1, rep[3] = {rank, rank + 1, rank + 2};
    if (peer < size) {
        MPI_Sendrecv(&a, 1, MPI_INT, peer, 6, &got, 1, MPI_INT, peer, 6, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv_replace(rep, 3, MPI_INT, peer, 7, peer, 7, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
        if (got != peer || rep[0] != peer || rep[2] != peer + 2)
            FAIL("got %d and [%d %d %d] from %d", got, rep[0], rep[1], rep[2], peer);
        if (rank & 1)
            MPI_Ssend(&a, 1, MPI_INT, peer, 8, MPI_COMM_WORLD);
        else if (MPI_Recv(&got, 1, MPI_INT, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                 got != peer)
            FAIL("ssend delivered %d", got);
    }
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    if (c != size * (size - 1) / 2)
        FAIL("iallreduce got %d", c);
}

/* Our requests in the host's whole Wait/Test family, among MPI_REQUEST_NULLs and with
 * MPI_Cancel (a collective runs to its end and is not cancelled); each call must progress
 * them, or a poll never ends. */
static void wait_family(int rank, int size) {
    enum { N = 4 };
    MPI_Request r[N + 1];
    int v = rank + 1, out[N], idx, n, flag, done, indices[N + 1];
    const int want = size * (size + 1) / 2;
#define START()                                                                              \
    for (int i = 0; i < N; i++) {                                                          \
        out[i] = 0;                                                                        \
        MPI_Iallreduce(&v, &out[i], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[i]);           \
    }                                                                                      \
    r[N] = MPI_REQUEST_NULL
#define CHECK(what)                                                                          \
    for (int i = 0; i < N; i++)                                                            \
        if (out[i] != want || r[i] != MPI_REQUEST_NULL)                                    \
            FAIL("%s: request %d got %d want %d", what, i, out[i], want)
    snprintf(where, sizeof where, "wait family");
    START();
    for (done = 0; done < N; done++) {
        MPI_Waitany(N + 1, r, &idx, MPI_STATUS_IGNORE);
        if (idx < 0 || idx >= N)
            FAIL("waitany index %d", idx);
    }
    MPI_Waitany(N + 1, r, &idx, MPI_STATUS_IGNORE);
    if (idx != MPI_UNDEFINED)
        FAIL("waitany over null requests gave %d", idx);
    CHECK("waitany");
    START();
    for (done = 0; done < N; done += n)
        MPI_Waitsome(N + 1, r, &n, indices, MPI_STATUSES_IGNORE);
    CHECK("waitsome");
    START();
    for (done = 0; done < N;) {
        MPI_Testany(N + 1, r, &idx, &flag, MPI_STATUS_IGNORE);
        done += flag && idx != MPI_UNDEFINED;
    }
    CHECK("testany");
    START();
    for (done = 0; done < N; done += n)
        MPI_Testsome(N + 1, r, &n, indices, MPI_STATUSES_IGNORE);
    CHECK("testsome");
    START();
    for (flag = 0; !flag;)
        MPI_Testall(N + 1, r, &flag, MPI_STATUSES_IGNORE);
    CHECK("testall");
    for (int i = 0; i < N; i++) { /* one at a time: only the poll can progress it */
        out[i] = 0;
        MPI_Iallreduce(&v, &out[i], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[i]);
        for (flag = 0; !flag;)
            MPI_Request_get_status(r[i], &flag, MPI_STATUS_IGNORE);
        MPI_Test(&r[i], &flag, MPI_STATUS_IGNORE);
    }
    CHECK("request_get_status, then test");
    START();
    MPI_Wait(&r[N], MPI_STATUS_IGNORE); /* a null request while ours run */
    /* Cancelling or freeing a collective's request is erroneous: an error (as both hosts
     * raise; Open MPI's own takes them at one process, where the call is done at once), the
     * request left as it was and the call run to its end. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if ((MPI_Cancel(&r[0]) == MPI_SUCCESS || MPI_Request_free(&r[1]) == MPI_SUCCESS ||
         r[0] == MPI_REQUEST_NULL || r[1] == MPI_REQUEST_NULL) &&
        size > 1)
        FAIL("cancel or free of a collective's request was taken");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Waitall(N, r, MPI_STATUSES_IGNORE);
    CHECK("cancel and free refused, then waitall");
#undef START
#undef CHECK
}

/* Communicators from MPI_Comm_idup (not wrapped) and MPI_Comm_dup (state made at the first
 * blocking call, so a nonblocking call before that goes to the host), and one from
 * MPI_Cart_create (state made at once: served from its first call on, nonblocking or not). */
static void first_call_nonblocking(int rank, int size) {
    MPI_Comm idup, dup, cart;
    MPI_Request rq;
    int x = rank, sum = -1, dims[1] = {size}, periods[1] = {0};
    MPI_Comm_idup(MPI_COMM_WORLD, &idup, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Comm comms[3] = {idup, dup, cart};
    const char *names[3] = {"comm_idup", "comm_dup", "cart_create"};
    for (int c = 0; c < 3; c++) {
        snprintf(where, sizeof where, "first calls on %s", names[c]);
        MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comms[c], &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        host_expected += c < 2;
        if (sum != size * (size - 1) / 2)
            FAIL("iallreduce got %d", sum);
        sum = -1;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comms[c]);
        if (sum != size * (size - 1) / 2)
            FAIL("allreduce got %d", sum);
    }
    MPI_Comm_free(&idup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&cart);
    /* Nonblocking collectives started between MPI_Comm_idup calls of one parent: a start
     * that ran the host's progress engine left one of Open MPI 4.1's idups never done. */
    enum { N = 8 };
    MPI_Comm dups[N];
    MPI_Request reqs[2 * N];
    int sums[N];
    snprintf(where, sizeof where, "iallreduce between comm_idup calls");
    for (int i = 0; i < N; i++) {
        MPI_Comm_idup(MPI_COMM_WORLD, &dups[i], &reqs[i]);
        MPI_Iallreduce(&x, &sums[i], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[N + i]);
    }
    MPI_Waitall(2 * N, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < N; i++) {
        if (sums[i] != size * (size - 1) / 2)
            FAIL("iallreduce %d got %d", i, sums[i]);
        MPI_Comm_free(&dups[i]);
    }
}

/* An erroneous gather whose root takes 1 int per rank while every rank sends 10: the root
 * reports the error (MPI_ERR_TRUNCATE, through the handler, as the hosts do) rather than
 * hand the call to the host alone, which left the others' messages to match its next call. */
static void erroneous_gather(int rank, int size) {
    int *all = malloc(sizeof(int) * 10 * (size_t)size), ten[10] = {0}, rc, cls = MPI_SUCCESS;
    snprintf(where, sizeof where, "gather whose root takes fewer than are sent");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Gather(ten, 10, MPI_INT, all, rank == 0 ? 1 : 10, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (rank == 0 && cls != MPI_ERR_TRUNCATE)
        FAIL("the root's gather returned class %d, not MPI_ERR_TRUNCATE", cls);
    int x = rank, sum = -1;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size * (size - 1) / 2)
        FAIL("the allreduce after it got %d", sum);
    free(all);
}

/* One call repeated with new data, blocking and nonblocking, with one in flight while the
 * next starts: the library keeps built schedules and replays their recorded steps. */
static void repeated_calls(int rank, int size) {
    snprintf(where, sizeof where, "repeated allreduce and bcast");
    for (int i = 0; i < 4; i++) {
        long v[3] = {rank + i, 2 * rank, i}, out[3], nb_out[3], b = rank == 0 ? 100 + i : 0;
        MPI_Request req;
        MPI_Iallreduce(v, nb_out, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Allreduce(v, out, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Bcast(&b, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        long s = (long)size * (size - 1) / 2;
        if (out[0] != s + (long)size * i || out[1] != 2 * s || out[2] != (long)size * i ||
            memcmp(out, nb_out, sizeof out) || b != 100 + i)
            FAIL("round %d: [%ld %ld %ld] [%ld %ld %ld] %ld", i, out[0], out[1], out[2],
                 nb_out[0], nb_out[1], nb_out[2], b);
    }
}

/* Calls repeated with the same arguments and new data, which the library runs as the first
 * was prepared; then a datatype freed and its handle, perhaps, made again as another type:
 * the call with the same arguments must move the new type's elements. */
static void remembered_calls(int rank, int size) {
    long v[2], sum[2], b = 0, *all = malloc(sizeof(long) * 2 * (size_t)size);
    int *blocks = malloc(sizeof(int) * (size_t)size), *got = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < 5; i++) {
        snprintf(where, sizeof where, "remembered calls, round %d", i);
        v[0] = rank + i, v[1] = -i;
        MPI_Allreduce(v, sum, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        b = rank == 0 ? 7 * i : -1;
        MPI_Bcast(&b, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        MPI_Allgather(v, 2, MPI_LONG, all, 2, MPI_LONG, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            blocks[r] = 100 * rank + r + i;
        MPI_Alltoall(blocks, 1, MPI_INT, got, 1, MPI_INT, MPI_COMM_WORLD);
        long s = (long)size * (size - 1) / 2 + (long)size * i;
        if (sum[0] != s || sum[1] != -(long)size * i || b != 7 * i)
            FAIL("allreduce %ld %ld, bcast %ld", sum[0], sum[1], b);
        for (int r = 0; r < size; r++)
            if (all[2 * r] != r + i || all[2 * r + 1] != -i || got[r] != 100 * r + rank + i)
                FAIL("rank %d's blocks: %ld %ld %d", r, all[2 * r], all[2 * r + 1], got[r]);
    }
    int buf[3];
    for (int round = 0; round < 2; round++) {
        MPI_Datatype t;
        if (round == 0)
            MPI_Type_contiguous(2, MPI_INT, &t);
        else
            MPI_Type_vector(2, 1, 2, MPI_INT, &t);
        MPI_Type_commit(&t);
        snprintf(where, sizeof where, "a freed type's handle made again, round %d", round);
        for (int i = 0; i < 3; i++) {
            for (int k = 0; k < 3; k++)
                buf[k] = rank == 0 ? 10 * round + k : -1;
            MPI_Bcast(buf, 1, t, 0, MPI_COMM_WORLD);
            int want1 = round == 0 || rank == 0 ? 10 * round + 1 : -1;
            int want2 = round == 1 || rank == 0 ? 10 * round + 2 : -1;
            if (buf[0] != 10 * round || buf[1] != want1 || buf[2] != want2)
                FAIL("got %d %d %d", buf[0], buf[1], buf[2]);
        }
        MPI_Type_free(&t);
    }
    free(all);
    free(blocks);
    free(got);
}

static void derived_and_long_pairs(int rank, int size) {
    /* A strided vector: commcore moves it packed (ranks may describe the data differently,
     * so every rank must take the same path whatever its type). */
    MPI_Datatype vec;
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int buf[5] = {0};
    if (rank == 0)
        for (int i = 0; i < 5; i++)
            buf[i] = 10 + i;
    snprintf(where, sizeof where, "derived vector bcast");
    MPI_Bcast(buf, 1, vec, 0, MPI_COMM_WORLD);
    if (buf[0] != 10 || buf[2] != 12 || buf[4] != 14 || (rank && buf[1]))
        FAIL("got %d %d %d %d %d", buf[0], buf[1], buf[2], buf[3], buf[4]);
    int *all = malloc(sizeof(int) * 5 * (size_t)size);
    snprintf(where, sizeof where, "derived vector allgather");
    MPI_Allgather(buf, 1, vec, all, 3, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        if (all[3 * r] != 10 || all[3 * r + 1] != 12 || all[3 * r + 2] != 14)
            FAIL("block %d wrong", r);
    free(all);
    MPI_Type_free(&vec);
    /* MINLOC on MPI_LONG_DOUBLE_INT and PROD on MPI_C_LONG_DOUBLE_COMPLEX: 32-byte elements
     * no core type has, reduced whole by the library's callbacks. */
    struct ldouble_int li = {(long double)(rank % 3), rank}, lo;
    snprintf(where, sizeof where, "minloc long_double_int");
    MPI_Allreduce(&li, &lo, 1, MPI_LONG_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
    if (lo.v != 0 || lo.i != 0)
        FAIL("got %Lg/%d", lo.v, lo.i);
    long double _Complex z = 1.0L + (rank == 0 ? 1.0L * I : 0), p;
    snprintf(where, sizeof where, "prod c_long_double_complex");
    MPI_Allreduce(&z, &p, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
    if (creall(p) != 1.0L || cimagl(p) != 1.0L)
        FAIL("got %Lg%+Lgi", creall(p), cimagl(p));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    tcomm self = describe(MPI_COMM_SELF, "self", 0);
    all_ops(&self);
    MPI_Comm alone, node, dup_info, inter, local;
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &alone);
    tcomm ta = describe(alone, "size-1 split", 0);
    all_ops(&ta);
    /* Constructors of communicators with hints or a topology. */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    tcomm tn = describe(node, "split_type", 0);
    all_ops(&tn);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &dup_info);
    tcomm td = describe(dup_info, "dup_with_info", 0);
    all_ops(&td);
    if (size >= 2) {
        int g = rank != 0; /* group 0: rank 0 alone */
        MPI_Comm_split(MPI_COMM_WORLD, g, rank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g ? 0 : 1, 9, &inter);
        tcomm ti = describe(inter, "inter 1:n-1", g);
        all_ops(&ti);
        MPI_Comm merged;
        MPI_Intercomm_merge(inter, g, &merged);
        tcomm tm = describe(merged, "merged", 0);
        all_ops(&tm);
        MPI_Comm_free(&merged);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&local);
    }
    zero_counts_null_buffers();
    user_ops(MPI_COMM_WORLD, "world");
    user_ops(alone, "size-1");
    ordered_op(MPI_COMM_WORLD, "world");
    whole_elements(MPI_COMM_WORLD, "world");
    nonblocking_with_p2p(rank, size);
    wait_family(rank, size);
    first_call_nonblocking(rank, size);
    erroneous_gather(rank, size);
    repeated_calls(rank, size);
    remembered_calls(rank, size);
    derived_and_long_pairs(rank, size);

    MPI_Comm_free(&alone);
    MPI_Comm_free(&node);
    MPI_Comm_free(&dup_info);
    long all_failures = 0, all_host = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&host_expected, &all_host, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("corners: %d processes, %ld checks failed, expected_host_calls=%ld\n", size,
               all_failures, all_host);
    MPI_Finalize();
    return all_failures != 0;
}
