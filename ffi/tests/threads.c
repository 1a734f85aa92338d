/*
 * N threads of one process act as N ranks: each runs CID agreements (its own allreduce
 * over shared memory) and collectives (its own eager point-to-point over shared-memory
 * mailboxes), stepping commcore's schedules, and checks every result.
 *
 * Usage: threads N   (N ranks, 2..16)
 */
#define _POSIX_C_SOURCE 200809L
#include <commcore.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_RANKS 16
#define TIMEOUT_S 20

static int nranks;

static void fail(int rank, const char *what, commcore_result rc) {
    fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, what, commcore_strerror(rc), commcore_last_error());
    exit(1);
}
#define CHECK(rank, call)                      \
    do {                                       \
        commcore_result rc_ = (call);          \
        if (rc_ != COMMCORE_OK) fail(rank, #call, rc_); \
    } while (0)
#define EXPECT(rank, cond)                                                   \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "rank %d: expected %s (line %d)\n", rank, #cond, __LINE__); \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* ---- a barrier that fails the test after TIMEOUT_S instead of hanging ---- */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t turned;
    int members, count;
    unsigned generation;
} barrier;

static void barrier_init(barrier *b, int members) {
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->turned, NULL);
    b->members = members, b->count = 0, b->generation = 0;
}

static void barrier_wait(barrier *b) {
    pthread_mutex_lock(&b->lock);
    unsigned generation = b->generation;
    if (++b->count == b->members) {
        b->count = 0;
        b->generation++;
        pthread_cond_broadcast(&b->turned);
    } else {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += TIMEOUT_S;
        while (generation == b->generation)
            if (pthread_cond_timedwait(&b->turned, &b->lock, &deadline) == ETIMEDOUT) {
                fprintf(stderr, "a barrier of %d threads timed out after %d s\n", b->members, TIMEOUT_S);
                exit(1);
            }
    }
    pthread_mutex_unlock(&b->lock);
}

/* ---- shared-memory allreduce over a team of threads ---- */
#define SHARED_THREADS 3 /* threads per process in the shared-space test */

typedef struct {
    barrier barrier;
    uint32_t slots[MAX_RANKS][2049];
} team;

static team world_team, pair_team, shared_pairs[SHARED_THREADS];

static void team_allreduce(team *t, int index, int members, commcore_cid_op op, const uint32_t *words,
                           size_t n, uint32_t *out) {
    memcpy(t->slots[index], words, n * sizeof *words);
    barrier_wait(&t->barrier);
    for (size_t w = 0; w < n; w++) {
        uint32_t acc = t->slots[0][w];
        for (int m = 1; m < members; m++) {
            uint32_t v = t->slots[m][w];
            acc = op == COMMCORE_CID_OP_MAX ? (v > acc ? v : acc) : op == COMMCORE_CID_OP_MIN ? (v < acc ? v : acc) : (acc & v);
        }
        out[w] = acc;
    }
    barrier_wait(&t->barrier);
}

static uint32_t agree(int rank, team *t, int index, int members, commcore_cid_space *space,
                      commcore_cid_algorithm algorithm, uint32_t parent, uint32_t tag) {
    commcore_cid_request *request = NULL;
    commcore_cid_step step;
    static _Thread_local uint32_t reduced[2049];
    CHECK(rank, commcore_cid_request_create(space, algorithm, parent, tag, &request));
    for (int guard = 0; guard < 10000000; guard++) {
        CHECK(rank, commcore_cid_request_poll(request, &step));
        if (step.kind == COMMCORE_CID_DONE) {
            CHECK(rank, commcore_cid_request_free(request));
            return step.cid;
        }
        if (step.kind == COMMCORE_CID_WAIT) { /* another thread of this process has priority */
            sched_yield();
            continue;
        }
        EXPECT(rank, step.kind == COMMCORE_CID_ALLREDUCE);
        team_allreduce(t, index, members, step.op, step.words, step.nwords, reduced);
        CHECK(rank, commcore_cid_request_handle_allreduce(request, reduced, step.nwords));
    }
    fail(rank, "agreement did not finish", COMMCORE_ERR_STATE);
    return 0;
}

/* ---- eager point-to-point through per-pair FIFO mailboxes ---- */
typedef struct message {
    struct message *next;
    size_t len;
    unsigned char bytes[];
} message;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t arrived;
    message *head, *tail;
} mailbox;

static mailbox boxes[MAX_RANKS][MAX_RANKS]; /* [from][to] */

static void post(int from, int to, const void *bytes, size_t len) {
    message *m = malloc(sizeof *m + len);
    if (!m) exit(2);
    m->next = NULL;
    m->len = len;
    if (len) memcpy(m->bytes, bytes, len);
    mailbox *b = &boxes[from][to];
    pthread_mutex_lock(&b->lock);
    if (b->tail) b->tail->next = m; else b->head = m;
    b->tail = m;
    pthread_cond_signal(&b->arrived);
    pthread_mutex_unlock(&b->lock);
}

static void take(int rank, int from, void *into, size_t len) {
    mailbox *b = &boxes[from][rank];
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += TIMEOUT_S;
    pthread_mutex_lock(&b->lock);
    while (!b->head) {
        if (pthread_cond_timedwait(&b->arrived, &b->lock, &deadline) == ETIMEDOUT) {
            fprintf(stderr, "rank %d: no message from %d within %d s\n", rank, from, TIMEOUT_S);
            exit(1);
        }
    }
    message *m = b->head;
    b->head = m->next;
    if (!b->head) b->tail = NULL;
    pthread_mutex_unlock(&b->lock);
    EXPECT(rank, m->len == len);
    if (len) memcpy(into, m->bytes, len);
    free(m);
}

/* ---- a schedule executor ---- */
typedef struct {
    unsigned char *send, *recv, *scratch;
    size_t send_len, recv_len, scratch_len;
} buffers;

static unsigned char *resolve(int rank, const buffers *b, commcore_region r) {
    unsigned char *base = r.buf == COMMCORE_BUF_SEND ? b->send : r.buf == COMMCORE_BUF_RECV ? b->recv : b->scratch;
    size_t cap = r.buf == COMMCORE_BUF_SEND ? b->send_len : r.buf == COMMCORE_BUF_RECV ? b->recv_len : b->scratch_len;
    EXPECT(rank, r.buf <= COMMCORE_BUF_SCRATCH);
    EXPECT(rank, r.offset <= cap && r.len <= cap - r.offset);
    return r.len ? base + r.offset : base;
}

/* One reusable schedule per rank. */
static commcore_schedule *schedules[MAX_RANKS];

typedef struct {
    int from;
    unsigned char *into;
    size_t len;
} pending;

static void run(int rank, const commcore_coll *coll, const commcore_coll_args *args, buffers *b,
                const commcore_user_op *user_op) {
    static _Thread_local pending recvs[4 * MAX_RANKS + 64];
    commcore_schedule *schedule = schedules[rank];
    CHECK(rank, commcore_coll_schedule(coll, args, schedule));
    CHECK(rank, commcore_schedule_scratch_bytes(schedule, &b->scratch_len));
    b->scratch = malloc(b->scratch_len ? b->scratch_len : 1);
    int npending = 0;
    commcore_step step;
    for (;;) {
        CHECK(rank, commcore_schedule_next(schedule, &step));
        if (step.kind == COMMCORE_STEP_SEND) {
            EXPECT(rank, step.group == COMMCORE_GROUP_LOCAL && (int)step.rank < nranks);
            post(rank, (int)step.rank, resolve(rank, b, step.src), step.src.len);
            continue;
        }
        if (step.kind == COMMCORE_STEP_RECV) {
            EXPECT(rank, npending < (int)(sizeof recvs / sizeof recvs[0]));
            recvs[npending++] = (pending){(int)step.rank, resolve(rank, b, step.dst), step.dst.len};
            continue;
        }
        for (int i = 0; i < npending; i++) take(rank, recvs[i].from, recvs[i].into, recvs[i].len);
        npending = 0;
        if (step.kind == COMMCORE_STEP_END) break;
        if (step.kind == COMMCORE_STEP_COPY) {
            EXPECT(rank, step.src.len == step.dst.len);
            memmove(resolve(rank, b, step.dst), resolve(rank, b, step.src), step.src.len);
        } else if (step.kind == COMMCORE_STEP_REDUCE) {
            unsigned char *src = resolve(rank, b, step.src), *dst = resolve(rank, b, step.dst);
            if (step.op == COMMCORE_OP_USER)
                CHECK(rank, commcore_reduce_user(user_op, step.dtype, src, dst, step.src.len, (int32_t)step.src_left));
            else
                CHECK(rank, commcore_reduce(step.op, step.dtype, src, dst, step.src.len, (int32_t)step.src_left));
        } else {
            EXPECT(rank, step.kind == COMMCORE_STEP_WAIT);
        }
    }
    free(b->scratch);
    b->scratch = NULL;
}

/* "keep the left operand": associative, not commutative; a reduction yields rank 0's value. */
static void keep_left(const void *src, void *dst, size_t count, commcore_datatype dtype, int32_t src_left, void *ctx) {
    (void)dtype;
    (void)ctx;
    if (src_left) memcpy(dst, src, count * sizeof(int32_t));
}

static int32_t *ints(size_t n) {
    int32_t *p = calloc(n ? n : 1, sizeof *p);
    if (!p) exit(2);
    return p;
}

static void collectives(int rank, const char *control, const commcore_user_op *keep) {
    uint32_t nodes[MAX_RANKS];
    for (int r = 0; r < nranks; r++) nodes[r] = (uint32_t)(r / 2);
    commcore_coll_config config = {(uint32_t)rank, (uint32_t)nranks, 0, COMMCORE_THREAD_MULTIPLE, nodes, NULL, control};
    commcore_coll *coll = NULL;
    CHECK(rank, commcore_coll_create(&config, &coll));
    const int n = nranks, count = 5;
    int32_t *send = ints((size_t)(n * count * 2)), *recv = ints((size_t)(n * count * 2));
    buffers b = {(unsigned char *)send, (unsigned char *)recv, NULL, (size_t)(n * count * 2) * 4, (size_t)(n * count * 2) * 4, 0};
    commcore_coll_args a;

    for (int in_place = 0; in_place < 2; in_place++) { /* allreduce SUM */
        memset(&a, 0, sizeof a);
        a.coll_op = COMMCORE_COLL_ALLREDUCE, a.dtype = COMMCORE_DT_I32, a.reduce_op = COMMCORE_OP_SUM;
        a.count = (size_t)count, a.in_place = (uint32_t)in_place;
        for (int i = 0; i < count; i++) (in_place ? recv : send)[i] = rank * 100 + i;
        run(rank, coll, &a, &b, NULL);
        for (int i = 0; i < count; i++) EXPECT(rank, recv[i] == 100 * n * (n - 1) / 2 + n * i);
        const char *module = NULL, *algorithm = NULL, *built_module = NULL, *built_algorithm = NULL;
        CHECK(rank, commcore_coll_provider(coll, &a, &module, &algorithm));
        EXPECT(rank, module && algorithm && strcmp(algorithm, "unknown") != 0);
        CHECK(rank, commcore_schedule_provider(schedules[rank], &built_module, &built_algorithm));
        EXPECT(rank, strcmp(module, built_module) == 0 && strcmp(algorithm, built_algorithm) == 0);
    }
    { /* allreduce with a non-commutative user op: everyone gets rank 0's vector */
        memset(&a, 0, sizeof a);
        a.coll_op = COMMCORE_COLL_ALLREDUCE, a.dtype = COMMCORE_DT_I32, a.user_op = keep, a.count = (size_t)count;
        for (int i = 0; i < count; i++) send[i] = rank * 100 + i;
        run(rank, coll, &a, &b, keep);
        for (int i = 0; i < count; i++) EXPECT(rank, recv[i] == i);
    }
    for (int root = 0; root < n; root += n - 1) { /* bcast, reduce, gather, scatter */
        memset(&a, 0, sizeof a);
        a.coll_op = COMMCORE_COLL_BCAST, a.dtype = COMMCORE_DT_I32, a.count = (size_t)count, a.root = root;
        for (int i = 0; i < count; i++) recv[i] = rank == root ? 7 * i + root : -1;
        run(rank, coll, &a, &b, NULL);
        for (int i = 0; i < count; i++) EXPECT(rank, recv[i] == 7 * i + root);

        a.coll_op = COMMCORE_COLL_REDUCE, a.reduce_op = COMMCORE_OP_MAX;
        for (int i = 0; i < count; i++) send[i] = rank * i;
        run(rank, coll, &a, &b, NULL);
        if (rank == root)
            for (int i = 0; i < count; i++) EXPECT(rank, recv[i] == (n - 1) * i);

        a.coll_op = COMMCORE_COLL_GATHER;
        for (int i = 0; i < count; i++) send[i] = rank * 10 + i;
        run(rank, coll, &a, &b, NULL);
        if (rank == root)
            for (int r = 0; r < n; r++)
                for (int i = 0; i < count; i++) EXPECT(rank, recv[r * count + i] == r * 10 + i);

        a.coll_op = COMMCORE_COLL_SCATTER;
        for (int r = 0; r < n; r++)
            for (int i = 0; i < count; i++) send[r * count + i] = r * 1000 + i;
        run(rank, coll, &a, &b, NULL);
        for (int i = 0; i < count; i++) EXPECT(rank, recv[i] == rank * 1000 + i);
        if (rank == root) { /* in place at the root: its receive buffer is left alone */
            a.in_place = 1;
            for (int i = 0; i < count; i++) recv[i] = -5;
        }
        run(rank, coll, &a, &b, NULL);
        for (int i = 0; i < count; i++) EXPECT(rank, recv[i] == (rank == root ? -5 : rank * 1000 + i));
        a.in_place = 0;
    }
    { /* allgather, allgatherv (rank r contributes r + 1 elements), alltoall */
        memset(&a, 0, sizeof a);
        a.coll_op = COMMCORE_COLL_ALLGATHER, a.dtype = COMMCORE_DT_I32, a.count = (size_t)count;
        for (int i = 0; i < count; i++) send[i] = rank * 10 + i;
        run(rank, coll, &a, &b, NULL);
        for (int r = 0; r < n; r++)
            for (int i = 0; i < count; i++) EXPECT(rank, recv[r * count + i] == r * 10 + i);

        a.in_place = 1; /* each rank's block already in place */
        for (int i = 0; i < n * count; i++) recv[i] = i / count == rank ? rank * 10 + i % count : -1;
        run(rank, coll, &a, &b, NULL);
        for (int r = 0; r < n; r++)
            for (int i = 0; i < count; i++) EXPECT(rank, recv[r * count + i] == r * 10 + i);
        a.in_place = 0;

        int32_t counts[MAX_RANKS], displs[MAX_RANKS];
        for (int r = 0, at = 0; r < n; r++) counts[r] = r + 1, displs[r] = at, at += r + 1;
        a.coll_op = COMMCORE_COLL_ALLGATHERV, a.count = (size_t)(rank + 1);
        a.nrecv = (uint32_t)n, a.recv_counts = counts, a.recv_displs = displs;
        for (int i = 0; i <= rank; i++) send[i] = rank * 10 + i;
        run(rank, coll, &a, &b, NULL);
        for (int r = 0; r < n; r++)
            for (int i = 0; i <= r; i++) EXPECT(rank, recv[displs[r] + i] == r * 10 + i);

        memset(&a, 0, sizeof a);
        a.coll_op = COMMCORE_COLL_ALLTOALL, a.dtype = COMMCORE_DT_I32, a.count = 2;
        for (int r = 0; r < n; r++) send[2 * r] = rank * 100 + r, send[2 * r + 1] = -r;
        run(rank, coll, &a, &b, NULL);
        for (int r = 0; r < n; r++) EXPECT(rank, recv[2 * r] == r * 100 + rank && recv[2 * r + 1] == -rank);
    }
    { /* reduce_scatter_block, scan, exscan */
        memset(&a, 0, sizeof a);
        a.coll_op = COMMCORE_COLL_REDUCE_SCATTER_BLOCK, a.dtype = COMMCORE_DT_I32, a.reduce_op = COMMCORE_OP_SUM, a.count = 2;
        for (int i = 0; i < 2 * n; i++) send[i] = i + rank;
        run(rank, coll, &a, &b, NULL);
        for (int i = 0; i < 2; i++) EXPECT(rank, recv[i] == n * (2 * rank + i) + n * (n - 1) / 2);

        a.in_place = 1; /* the input vector in the receive buffer */
        for (int i = 0; i < 2 * n; i++) recv[i] = i + rank;
        run(rank, coll, &a, &b, NULL);
        for (int i = 0; i < 2; i++) EXPECT(rank, recv[i] == n * (2 * rank + i) + n * (n - 1) / 2);
        a.in_place = 0;

        a.coll_op = COMMCORE_COLL_SCAN, a.count = 1;
        send[0] = rank + 1;
        run(rank, coll, &a, &b, NULL);
        EXPECT(rank, recv[0] == (rank + 1) * (rank + 2) / 2);
        a.coll_op = COMMCORE_COLL_EXSCAN;
        run(rank, coll, &a, &b, NULL);
        if (rank > 0) EXPECT(rank, recv[0] == rank * (rank + 1) / 2);
    }
    { /* MINLOC over {double, int} pairs */
        struct { double v; int32_t i; } pair_send[2], pair_recv[2];
        buffers pb = {(unsigned char *)pair_send, (unsigned char *)pair_recv, NULL, sizeof pair_send, sizeof pair_recv, 0};
        pair_send[0].v = (double)(rank % 2), pair_send[0].i = rank;
        pair_send[1].v = -(double)rank, pair_send[1].i = rank;
        memset(&a, 0, sizeof a);
        a.coll_op = COMMCORE_COLL_ALLREDUCE, a.dtype = COMMCORE_DT_PAIR_F64_I32, a.reduce_op = COMMCORE_OP_MINLOC, a.count = 2;
        run(rank, coll, &a, &pb, NULL);
        EXPECT(rank, pair_recv[0].v == 0.0 && pair_recv[0].i == 0);
        EXPECT(rank, pair_recv[1].v == -(double)(n - 1) && pair_recv[1].i == n - 1);
    }
    memset(&a, 0, sizeof a);
    a.coll_op = COMMCORE_COLL_BARRIER;
    run(rank, coll, &a, &b, NULL);
    free(send);
    free(recv);
    CHECK(rank, commcore_coll_free(coll));
}

static const char *controls[] = {
    "", "coll=^hier", "allreduce:ring", "allreduce:rabenseifner; bcast:scatter_allgather",
    "allreduce:recursive_doubling; allgather:bruck; alltoall:pairwise", "coll=basic",
    "allgather:recursive_doubling; reduce:binomial; scan:linear; bcast:linear",
};

static void *rank_main(void *arg) {
    int rank = (int)(intptr_t)arg;
    const commcore_cid_algorithm algorithms[3] = {COMMCORE_CID_LOWEST, COMMCORE_CID_MASK, COMMCORE_CID_HIGHEST};
    for (int a = 0; a < 3; a++) {
        commcore_cid_space *space = NULL;
        CHECK(rank, commcore_cid_space_create(2048, 64, 0, &space));
        for (uint32_t c = 0; c <= (uint32_t)rank; c++) CHECK(rank, commcore_cid_space_claim(space, c));
        /* Rank r holds CIDs 0..r, so the first CID free everywhere is nranks. */
        uint32_t cid = agree(rank, &world_team, rank, nranks, space, algorithms[a], 0, 0);
        EXPECT(rank, cid == (uint32_t)nranks);
        uint32_t next = agree(rank, &world_team, rank, nranks, space, algorithms[a], cid, 0);
        EXPECT(rank, next != cid);
        if (rank == 0 || rank == 2) { /* a group-collective request over ranks {0, 2}, tag 7 */
            uint32_t group_cid = agree(rank, &pair_team, rank / 2, 2, space, algorithms[a], 0, 7);
            int is_free = 1;
            CHECK(rank, commcore_cid_space_is_free(space, group_cid, &is_free));
            EXPECT(rank, !is_free);
            CHECK(rank, commcore_cid_space_release(space, group_cid));
        }
        CHECK(rank, commcore_cid_space_release(space, next));
        CHECK(rank, commcore_cid_space_free(space));
    }
    commcore_user_op *keep = NULL;
    CHECK(rank, commcore_user_op_create(keep_left, NULL, 0, &keep));
    CHECK(rank, commcore_schedule_create(&schedules[rank]));
    for (size_t c = 0; c < sizeof controls / sizeof controls[0]; c++) collectives(rank, controls[c], keep);
    CHECK(rank, commcore_user_op_free(keep));
    CHECK(rank, commcore_schedule_free(schedules[rank]));
    return NULL;
}

/* ---- two processes of SHARED_THREADS threads each, one CID space per process ----
 * Thread t of process 0 and thread t of process 1 form a communicator (parent CID 1 + t)
 * and agree on a new CID while the other pairs do the same through the same two spaces. */
static commcore_cid_space *shared_spaces[2];
static uint32_t shared_cids[2][SHARED_THREADS];
static barrier shared_all;

static void *shared_main(void *arg) {
    int index = (int)(intptr_t)arg, process = index / SHARED_THREADS, t = index % SHARED_THREADS;
    const commcore_cid_algorithm algorithms[3] = {COMMCORE_CID_LOWEST, COMMCORE_CID_MASK, COMMCORE_CID_HIGHEST};
    for (int a = 0; a < 3; a++) {
        if (t == 0) {
            CHECK(index, commcore_cid_space_create(2048, 64, 1, &shared_spaces[process]));
            for (uint32_t c = 0; c <= SHARED_THREADS; c++) CHECK(index, commcore_cid_space_claim(shared_spaces[process], c));
        }
        barrier_wait(&shared_all);
        shared_cids[process][t] = agree(index, &shared_pairs[t], process, 2, shared_spaces[process], algorithms[a], 1 + (uint32_t)t, 0);
        barrier_wait(&shared_all);
        if (t == 0) {
            for (int u = 0; u < SHARED_THREADS; u++) {
                EXPECT(index, shared_cids[0][u] == shared_cids[1][u]);
                EXPECT(index, shared_cids[process][u] > SHARED_THREADS);
                for (int v = 0; v < u; v++) EXPECT(index, shared_cids[process][u] != shared_cids[process][v]);
                int is_free = 1;
                CHECK(index, commcore_cid_space_is_free(shared_spaces[process], shared_cids[process][u], &is_free));
                EXPECT(index, !is_free);
            }
            CHECK(index, commcore_cid_space_free(shared_spaces[process]));
        }
        barrier_wait(&shared_all);
    }
    return NULL;
}

int main(int argc, char **argv) {
    nranks = argc > 1 ? atoi(argv[1]) : 4;
    if (nranks < 3 || nranks > MAX_RANKS) {
        fprintf(stderr, "usage: threads N (3 <= N <= %d)\n", MAX_RANKS);
        return 2;
    }
    barrier_init(&world_team.barrier, nranks);
    barrier_init(&pair_team.barrier, 2);
    barrier_init(&shared_all, 2 * SHARED_THREADS);
    for (int t = 0; t < SHARED_THREADS; t++) barrier_init(&shared_pairs[t].barrier, 2);
    for (int i = 0; i < MAX_RANKS; i++)
        for (int j = 0; j < MAX_RANKS; j++) {
            pthread_mutex_init(&boxes[i][j].lock, NULL);
            pthread_cond_init(&boxes[i][j].arrived, NULL);
        }
    pthread_t threads[MAX_RANKS];
    for (int r = 0; r < nranks; r++) pthread_create(&threads[r], NULL, rank_main, (void *)(intptr_t)r);
    for (int r = 0; r < nranks; r++) pthread_join(threads[r], NULL);
    printf("threads: %d ranks agreed on CIDs (3 algorithms, a group request) and ran every collective under %zu control strings\n",
           nranks, sizeof controls / sizeof controls[0]);
    pthread_t shared[2 * SHARED_THREADS];
    for (int i = 0; i < 2 * SHARED_THREADS; i++) pthread_create(&shared[i], NULL, shared_main, (void *)(intptr_t)i);
    for (int i = 0; i < 2 * SHARED_THREADS; i++) pthread_join(shared[i], NULL);
    printf("threads: 2 processes of %d threads agreed on %d CIDs at once per algorithm through shared spaces\n",
           SHARED_THREADS, SHARED_THREADS);
    return 0;
}
