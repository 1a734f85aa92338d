/* cc_abi.h over commcore's C ABI (ffi/include/commcore.h): framework instances, schedules,
 * reductions, CID agreement and the CID store. The only file that includes commcore.h. */
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <commcore.h>

#include "cc_abi.h"

/* Live communicators per process: the CID space's and store's width. The mask agreement's
 * eager segment is half of it, cut into lanes of 32 ids: an agreement's first round holds
 * only the lane its ⟨parent, tag⟩ hashes to (alike on every member), so threads creating on
 * different parents at once agree in one round each. With one eager segment of 64 ids and
 * its single hold, 4 threads creating at once voided each other's rounds (2 processes:
 * 2.3-3.0 rounds an agreement in the threaded bench, 12 with the tests' splits under
 * MPICH; with lanes 1.00-1.03). Two agreements of a process at once on one lane (1 in 64
 * a pair), or a lane without an id free on every member, fall back to the base mask (the
 * other half) in ⟨parent, tag⟩ order, as before; that first round still proves every
 * member arrived, which keeps the agreement deadlock-free (see core's cid module). */
#define CC_CID_WIDTH CC_CID_LIMIT
#define CC_CID_EAGER (CC_CID_LIMIT / 2)
#define CC_CID_EAGER_LANES (CC_CID_EAGER / 32)
/* Schedule objects kept for reuse (commcore_schedule objects are reusable call after call). */
#define CC_SPARE_SCHEDULES 8
/* Built schedules kept per communicator, by call: a program calls a few collectives with
 * the same arguments over and over, and a rewind costs a few instructions where a build
 * costs about 1,100. A call with block lists (the v operations) is kept with a copy of its
 * lists and found again only when they are equal: programs repeat those too (an alltoallv
 * at 2 ranks spent half its time building). */
#define CC_CACHED 8 /* a power of two: lookups wrap with a mask */
#define CC_KEPT_BLOCKS 1024 /* longer block lists are built each time (compared, they cost) */
_Static_assert((CC_CACHED & (CC_CACHED - 1)) == 0, "CC_CACHED is a power of two");
/* A kept schedule's steps are recorded the first time it runs to its end, then replayed:
 * the same arguments give the same steps, and a replayed step costs a few instructions
 * where one through the ABI costs about a hundred. The recording grows with the schedule
 * (an alltoall at 8 ranks takes about 60 steps) up to CC_RECORDED; longer schedules are
 * not recorded. */
#define CC_RECORDED 4096
#define CC_RECORDED_FIRST 16

struct cc_sched {
    commcore_schedule *schedule;
    int cached; /* one of its communicator's kept schedules: cc_sched_free lets it go */
    int replay; /* steps come from the recording, `at` the next */
    int at;
};

typedef struct {
    cc_call key;
    cc_sched sched;
    size_t scratch;
    const char *module, *algorithm;
    int busy;     /* a call in flight runs it (freed on any thread: atomic) */
    int recorded; /* steps[0..nsteps) hold every step, END last */
    int nsteps;   /* while recording: steps so far; CC_RECORDED + 1: too many */
    cc_step *steps; /* room for `room` steps, kept across the entry's calls */
    int room;
    /* The call's block lists, which `key` points into the caller's memory for: send counts
     * and displacements, then receive counts and displacements, those the call has. */
    size_t *blocks;
    size_t nblock_words, block_room;
} kept;

/* Words of `call`'s block lists (nblocks per list present). */
static size_t block_words(const cc_call *call) {
    return (size_t)call->nblocks * (2 * (call->send_counts != NULL) + 2 * (call->recv_counts != NULL));
}

static int same_blocks(const kept *k, const cc_call *call) {
    size_t n = call->nblocks, at = 0;
    if (k->nblock_words != block_words(call) || (k->key.send_counts != NULL) !=
                                                    (call->send_counts != NULL))
        return 0;
    const size_t *lists[4] = {call->send_counts, call->send_displs, call->recv_counts,
                              call->recv_displs};
    for (int l = 0; l < 4; l++) {
        if (!lists[l])
            continue;
        if (memcmp(k->blocks + at, lists[l], n * sizeof *k->blocks))
            return 0;
        at += n;
    }
    return 1;
}

/* Copies `call`'s block lists into `k`; -1 when there is no room for them. */
static int keep_blocks(kept *k, const cc_call *call) {
    size_t n = call->nblocks, words = block_words(call), at = 0;
    if (words > k->block_room) {
        size_t *grown = realloc(k->blocks, words * sizeof *grown);
        if (!grown)
            return -1;
        k->blocks = grown, k->block_room = words;
    }
    const size_t *lists[4] = {call->send_counts, call->send_displs, call->recv_counts,
                              call->recv_displs};
    for (int l = 0; l < 4; l++) {
        if (!lists[l])
            continue;
        memcpy(k->blocks + at, lists[l], n * sizeof *k->blocks);
        at += n;
    }
    k->nblock_words = words;
    return 0;
}

/* Records step `s` into `k`; a recording that cannot grow is abandoned (the schedule then
 * runs through commcore each time). */
static void record(kept *k, const cc_step *s) {
    if (k->nsteps >= CC_RECORDED) {
        k->nsteps = CC_RECORDED + 1;
        return;
    }
    if (k->nsteps == k->room) {
        int room = k->room ? 2 * k->room : CC_RECORDED_FIRST;
        cc_step *grown = realloc(k->steps, (size_t)room * sizeof *grown);
        if (!grown) {
            k->nsteps = CC_RECORDED + 1;
            return;
        }
        k->steps = grown, k->room = room;
    }
    k->steps[k->nsteps++] = *s;
}

static kept *kept_of(cc_sched *sched) {
    return (kept *)((char *)sched - offsetof(kept, sched));
}

/* What a whole-element call forces ahead of the user's control string: algorithms that
 * never split a vector (ring, Rabenseifner and reduce-scatter-gather do). */
#define CC_WHOLE_CONTROL "allreduce:recursive_doubling;reduce:binomial"

struct cc_coll {
    commcore_coll *coll;
    commcore_coll *whole;    /* made at the first whole-element call */
    commcore_coll_config config;
    uint32_t *nodes;         /* the config's node ids (size, then remote_size) */
    kept cache[CC_CACHED];
    unsigned next; /* the entry to replace next */
    unsigned hit;  /* the entry found last: looked at first */
};

static char *control;
static commcore_cid_space *space;
static commcore_cid_store *store;
static commcore_cid_algorithm cid_algorithm = COMMCORE_CID_MASK;
static commcore_user_op *ordered_op, *commuting_op; /* stand-ins: this library reduces */
static cc_sched *spare[CC_SPARE_SCHEDULES];
static int nspare;
static int threaded;
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;

/* A spare schedule object, or NULL. */
static cc_sched *take_spare(void) {
    if (threaded)
        pthread_mutex_lock(&spare_lock);
    cc_sched *s = nspare ? spare[--nspare] : NULL;
    if (threaded)
        pthread_mutex_unlock(&spare_lock);
    return s;
}

/* Keeps `s` as a spare; 0, or -1 when there is no room. */
static int put_spare(cc_sched *s) {
    if (threaded)
        pthread_mutex_lock(&spare_lock);
    int kept = nspare < CC_SPARE_SCHEDULES;
    if (kept)
        spare[nspare++] = s;
    if (threaded)
        pthread_mutex_unlock(&spare_lock);
    return kept ? 0 : -1;
}
int cc_abi_names; /* ask commcore which module and algorithm serve each call */

/* Never called: REDUCE steps of a call with a callback reduction are applied by the
 * executor, which knows the MPI function and datatype. */
static void unused_user_fn(const void *src, void *dst, size_t count, commcore_datatype dtype,
                           int32_t src_left, void *ctx) {
    (void)src, (void)dst, (void)count, (void)dtype, (void)src_left, (void)ctx;
}

static int fail(char *why, size_t len, const char *what, commcore_result rc) {
    snprintf(why, len, "%s: %s (%s)", what, commcore_strerror(rc), commcore_last_error());
    return -1;
}

int cc_abi_init(const char *text, int threads, char *why, size_t why_len) {
    commcore_result rc;
    threaded = threads;
    const char *alg = getenv("COMMCORE_CID");
    if (alg && !strcmp(alg, "lowest"))
        cid_algorithm = COMMCORE_CID_LOWEST;
    else if (alg && !strcmp(alg, "highest"))
        cid_algorithm = COMMCORE_CID_HIGHEST;
    else if (alg && strcmp(alg, "mask")) {
        snprintf(why, why_len, "COMMCORE_CID=%s is not one of mask, lowest, highest", alg);
        return -1;
    }
    control = text && *text ? strdup(text) : NULL; /* empty: none given */
    /* A one-rank instance checks the control string once, naming a refused token. */
    commcore_coll_config config = {.rank = 0, .size = 1, .control = control};
    commcore_coll *probe = NULL;
    if ((rc = commcore_coll_create(&config, &probe)) != COMMCORE_OK)
        return fail(why, why_len, "COMMCORE_COLL refused", rc);
    commcore_coll_free(probe);
    if ((rc = commcore_cid_space_create_lanes(CC_CID_WIDTH, CC_CID_EAGER, CC_CID_EAGER_LANES,
                                               threads, &space)) ||
        (rc = commcore_cid_store_create(CC_CID_WIDTH, &store)) ||
        (rc = commcore_user_op_create(unused_user_fn, NULL, 0, &ordered_op)) ||
        (rc = commcore_user_op_create(unused_user_fn, NULL, 1, &commuting_op)))
        return fail(why, why_len, "commcore set-up failed", rc);
    return 0;
}

int cc_abi_default_control(const char *text) {
    if (control)
        return 0; /* the user's COMMCORE_COLL stands */
    commcore_coll_config config = {.rank = 0, .size = 1, .control = text};
    commcore_coll *probe = NULL;
    if (commcore_coll_create(&config, &probe) != COMMCORE_OK)
        return -1;
    commcore_coll_free(probe);
    control = strdup(text);
    return control ? 0 : -1;
}

void cc_abi_finalize(void) {
    while (nspare) {
        cc_sched *s = spare[--nspare];
        commcore_schedule_free(s->schedule);
        free(s);
    }
    commcore_user_op_free(ordered_op);
    commcore_user_op_free(commuting_op);
    commcore_cid_store_free(store);
    commcore_cid_space_free(space);
    free(control);
    control = NULL;
}

cc_coll *cc_coll_new(uint32_t rank, uint32_t size, int inter, uint32_t remote_size,
                     const uint32_t *nodes, const uint32_t *remote_nodes,
                     int thread_level) {
    cc_coll *c = calloc(1, sizeof *c);
    size_t n = size + (inter ? remote_size : 0);
    if (!c || !(c->nodes = malloc((n ? n : 1) * sizeof *c->nodes))) {
        free(c);
        return NULL;
    }
    memcpy(c->nodes, nodes, size * sizeof *nodes);
    if (inter)
        memcpy(c->nodes + size, remote_nodes, remote_size * sizeof *nodes);
    c->config = (commcore_coll_config){
        .rank = rank,
        .size = size,
        .remote_size = inter ? remote_size : 0,
        .thread_level = (commcore_thread_level)thread_level,
        .node_ids = c->nodes,
        .remote_node_ids = inter ? c->nodes + size : NULL,
        .control = control,
    };
    if (commcore_coll_create(&c->config, &c->coll) != COMMCORE_OK) {
        free(c->nodes);
        free(c);
        return NULL;
    }
    return c;
}

/* The instance for whole-element calls, made at the first (local: no communication, so
 * ranks may make it at different calls). NULL on failure. */
static commcore_coll *whole_of(cc_coll *c) {
    if (c->whole)
        return c->whole;
    size_t len = strlen(CC_WHOLE_CONTROL) + (control ? strlen(control) + 2 : 1);
    char *text = malloc(len);
    if (!text)
        return NULL;
    snprintf(text, len, "%s%s%s", CC_WHOLE_CONTROL, control ? ";" : "", control ? control : "");
    commcore_coll_config config = c->config;
    config.control = text;
    if (commcore_coll_create(&config, &c->whole) != COMMCORE_OK)
        c->whole = NULL;
    free(text);
    return c->whole;
}

void cc_coll_free(cc_coll *coll) {
    if (coll) {
        for (int i = 0; i < CC_CACHED; i++) {
            commcore_schedule_free(coll->cache[i].sched.schedule);
            free(coll->cache[i].steps);
            free(coll->cache[i].blocks);
        }
        commcore_coll_free(coll->coll);
        commcore_coll_free(coll->whole);
        free(coll->nodes);
        free(coll);
    }
}

static int same_call(const cc_call *a, const cc_call *b) {
    return a->op == b->op && a->count == b->count && a->dtype == b->dtype && a->rop == b->rop &&
           a->commutative == b->commutative && a->root_kind == b->root_kind &&
           a->root == b->root && a->whole == b->whole && a->nblocks == b->nblocks;
}

/* The kept schedule of `call`, rewound, or NULL. */
static cc_sched *kept_schedule(cc_coll *coll, const cc_call *call, size_t *scratch_bytes,
                               const char **module, const char **algorithm) {
    for (unsigned i = 0; i < CC_CACHED; i++) {
        unsigned at = (coll->hit + i) & (CC_CACHED - 1);
        kept *k = &coll->cache[at];
        if (k->sched.schedule && !__atomic_load_n(&k->busy, __ATOMIC_ACQUIRE) &&
            same_call(&k->key, call) &&
            (k->nblock_words == 0 ? block_words(call) == 0 : same_blocks(k, call)) &&
            (k->recorded || commcore_schedule_rewind(k->sched.schedule) == COMMCORE_OK)) {
            __atomic_store_n(&k->busy, 1, __ATOMIC_RELAXED);
            coll->hit = at;
            k->sched.replay = k->recorded, k->sched.at = 0;
            if (!k->recorded && k->nsteps <= CC_RECORDED)
                k->nsteps = 0; /* record this run */
            *scratch_bytes = k->scratch;
            *module = k->module, *algorithm = k->algorithm;
            return &k->sched;
        }
    }
    return NULL;
}

/* Keeps the schedule `s` just built for `call` (it is the caller's until cc_sched_free). */
static cc_sched *keep(cc_coll *coll, const cc_call *call, cc_sched *s, size_t scratch,
                      const char *module, const char *algorithm) {
    for (int tries = 0; tries < CC_CACHED; tries++) {
        kept *k = &coll->cache[coll->next++ % CC_CACHED];
        if (__atomic_load_n(&k->busy, __ATOMIC_ACQUIRE))
            continue;
        if (keep_blocks(k, call) != 0)
            return s; /* not kept: built again next time */
        commcore_schedule *old = k->sched.schedule;
        k->key = *call;
        k->sched = (cc_sched){s->schedule, 1, 0, 0};
        k->scratch = scratch, k->module = module, k->algorithm = algorithm;
        __atomic_store_n(&k->busy, 1, __ATOMIC_RELAXED);
        k->recorded = 0, k->nsteps = 0;
        s->schedule = old; /* the replaced object goes back to the spares */
        cc_sched_free(s);
        return &k->sched;
    }
    return s;
}

/* Counts and displacements as commcore takes them (int32 elements); NULL on overflow. */
static int32_t *narrow(const size_t *v, uint32_t n, int32_t *out) {
    for (uint32_t i = 0; i < n; i++) {
        if (v[i] > (size_t)INT32_MAX)
            return NULL;
        out[i] = (int32_t)v[i];
    }
    return out;
}

static cc_sched *build(cc_coll *coll, const cc_call *call, int keepable, size_t *scratch_bytes,
                       const char **module, const char **algorithm);

cc_sched *cc_schedule(cc_coll *coll, const cc_call *call, size_t *scratch_bytes,
                      const char **module, const char **algorithm) {
    int keepable = call->nblocks <= CC_KEPT_BLOCKS || (!call->send_counts && !call->recv_counts);
    cc_sched *found = keepable ? kept_schedule(coll, call, scratch_bytes, module, algorithm)
                               : NULL;
    return found ? found : build(coll, call, keepable, scratch_bytes, module, algorithm);
}

/* A new schedule for `call` (kept when `keepable`); out of line, so a call whose schedule
 * is kept does not pay for this one's stack frame. */
__attribute__((noinline)) static cc_sched *build(cc_coll *coll, const cc_call *call,
                                                 int keepable, size_t *scratch_bytes,
                                                 const char **module, const char **algorithm) {
    commcore_coll_args a = {0};
    a.coll_op = (uint32_t)call->op;
    a.dtype = (commcore_datatype)call->dtype;
    a.count = call->count;
    if (call->rop == CC_ROP_CALLBACK)
        a.user_op = call->commutative ? commuting_op : ordered_op;
    else
        a.reduce_op = (commcore_reduce_op)call->rop;
    a.root = call->root_kind == CC_ROOT_HERE        ? COMMCORE_ROOT_HERE
             : call->root_kind == CC_ROOT_ELSEWHERE ? COMMCORE_ROOT_ELSEWHERE
                                                    : (int32_t)call->root;
    uint32_t nblocks = call->nblocks;
    int32_t stack[4 * 64], *arrays = stack;
    if ((call->send_counts || call->recv_counts) && nblocks > 64 &&
        !(arrays = malloc(4 * (size_t)nblocks * sizeof *arrays)))
        return NULL;
    int ok = 1;
    if (call->send_counts) {
        a.nsend = nblocks;
        a.send_counts = narrow(call->send_counts, nblocks, arrays);
        a.send_displs = narrow(call->send_displs, nblocks, arrays + nblocks);
        ok = a.send_counts && a.send_displs;
    }
    if (call->recv_counts) {
        a.nrecv = nblocks;
        a.recv_counts = narrow(call->recv_counts, nblocks, arrays + 2 * nblocks);
        a.recv_displs = narrow(call->recv_displs, nblocks, arrays + 3 * nblocks);
        ok = ok && a.recv_counts && a.recv_displs;
    }
    cc_sched *s = NULL;
    if (ok) {
        if (!(s = take_spare()))
            s = calloc(1, sizeof *s);
        if (s && !s->schedule && commcore_schedule_create(&s->schedule) != COMMCORE_OK) {
            free(s);
            s = NULL;
        }
    }
    commcore_coll *instance = call->whole ? whole_of(coll) : coll->coll;
    if (s && (!instance || commcore_coll_schedule(instance, &a, s->schedule) != COMMCORE_OK ||
              commcore_schedule_scratch_bytes(s->schedule, scratch_bytes) != COMMCORE_OK)) {
        cc_sched_free(s);
        s = NULL;
    }
    if (s && cc_abi_names &&
        commcore_schedule_provider(s->schedule, module, algorithm) != COMMCORE_OK)
        *module = *algorithm = "?";
    if (arrays != stack)
        free(arrays);
    if (s && keepable)
        s = keep(coll, call, s, *scratch_bytes, *module, *algorithm);
    return s;
}

static int next_of(cc_sched *sched, cc_step *out);

const cc_step *cc_sched_recorded(const cc_sched *sched) {
    return sched->replay && sched->at == 0 ? kept_of((cc_sched *)sched)->steps : NULL;
}

const cc_step *cc_sched_recording(const cc_sched *sched) {
    const kept *k = sched->cached ? kept_of((cc_sched *)sched) : NULL;
    return k && k->recorded ? k->steps : NULL;
}

int cc_next(cc_sched *sched, cc_step *out) {
    if (sched->replay) {
        *out = kept_of(sched)->steps[sched->at++];
        return 0;
    }
    if (next_of(sched, out) < 0)
        return -1;
    if (sched->cached) { /* record */
        kept *k = kept_of(sched);
        if (k->nsteps <= CC_RECORDED)
            record(k, out);
        if (out->kind == CC_STEP_END && k->nsteps <= CC_RECORDED)
            k->recorded = 1;
    }
    return 0;
}

static int next_of(cc_sched *sched, cc_step *out) {
    commcore_step s;
    if (commcore_schedule_next(sched->schedule, &s) != COMMCORE_OK)
        return -1;
    switch (s.kind) {
    case COMMCORE_STEP_SEND: out->kind = CC_STEP_SEND; break;
    case COMMCORE_STEP_RECV: out->kind = CC_STEP_RECV; break;
    case COMMCORE_STEP_REDUCE: out->kind = CC_STEP_REDUCE; break;
    case COMMCORE_STEP_COPY: out->kind = CC_STEP_COPY; break;
    case COMMCORE_STEP_WAIT: out->kind = CC_STEP_WAIT; return 0;
    case COMMCORE_STEP_END: out->kind = CC_STEP_END; return 0;
    default: return -1;
    }
    out->remote = s.group == COMMCORE_GROUP_REMOTE;
    out->peer = s.rank;
    /* Transfers name one region: a send's source or a receive's destination. */
    const commcore_region *one = s.kind == COMMCORE_STEP_RECV ? &s.dst : &s.src;
    out->a = (cc_region){(enum cc_buf)one->buf, one->offset, one->len};
    out->b = (cc_region){(enum cc_buf)s.dst.buf, s.dst.offset, s.dst.len};
    out->src_left = s.src_left != 0;
    return 0;
}

void cc_sched_free(cc_sched *sched) {
    if (!sched)
        return;
    if (sched->cached) {
        __atomic_store_n(&kept_of(sched)->busy, 0, __ATOMIC_RELEASE);
        return;
    }
    if (sched->schedule && put_spare(sched) == 0)
        return;
    commcore_schedule_free(sched->schedule);
    free(sched);
}

int cc_reduce(enum cc_rop rop, enum cc_dtype dtype, const void *src, void *dst, size_t bytes,
              int src_left) {
    return commcore_reduce((commcore_reduce_op)rop, (commcore_datatype)dtype, src, dst, bytes,
                           src_left) == COMMCORE_OK
               ? 0
               : -1;
}

/* Context id agreements run and their allreduce rounds, for the report (several threads
 * may agree at once: atomics). */
static unsigned long agreements_run, agreement_rounds;

int64_t cc_cid_agree(cc_allreduce_fn allreduce, void *ctx, uint32_t parent, uint32_t tag) {
    commcore_cid_request *req = NULL;
    commcore_cid_step step;
    int64_t cid = -1;
    uint32_t words[CC_CID_WIDTH / 32 + 1];
    if (commcore_cid_request_create(space, cid_algorithm, parent, tag, &req) != COMMCORE_OK)
        return -1;
    while (commcore_cid_request_poll(req, &step) == COMMCORE_OK) {
        if (step.kind == COMMCORE_CID_DONE) {
            cid = step.cid;
            break;
        }
        if (step.kind == COMMCORE_CID_WAIT) {
            sched_yield(); /* another request of this process goes first */
            continue;
        }
        if (step.kind != COMMCORE_CID_ALLREDUCE)
            break;
        if (step.nwords > sizeof words / sizeof *words)
            break;
        memcpy(words, step.words, step.nwords * sizeof *words);
        int op = step.op == COMMCORE_CID_OP_BAND ? 0 : step.op == COMMCORE_CID_OP_MAX ? 1 : 2;
        if (allreduce(words, step.nwords, op, ctx) != 0 ||
            commcore_cid_request_handle_allreduce(req, words, step.nwords) != COMMCORE_OK)
            break;
    }
    uint32_t rounds = 0;
    if (commcore_cid_request_allreduces(req, &rounds) == COMMCORE_OK) {
        __atomic_fetch_add(&agreements_run, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&agreement_rounds, rounds, __ATOMIC_RELAXED);
    }
    commcore_cid_request_free(req);
    return cid;
}

void cc_cid_counts(unsigned long *agreements, unsigned long *rounds) {
    if (agreements)
        *agreements = __atomic_load_n(&agreements_run, __ATOMIC_RELAXED);
    if (rounds)
        *rounds = __atomic_load_n(&agreement_rounds, __ATOMIC_RELAXED);
}

int cc_cid_store(int64_t cid, void *state) {
    return commcore_cid_store_insert(store, (uint32_t)cid, (uint64_t)(uintptr_t)state) ==
                   COMMCORE_OK
               ? 0
               : -1;
}

void *cc_cid_lookup(int64_t cid) {
    uint64_t value = 0;
    if (cid < 0 || commcore_cid_store_get(store, (uint32_t)cid, &value) != COMMCORE_OK)
        return NULL;
    return (void *)(uintptr_t)value;
}

void cc_cid_unstore(int64_t cid) {
    if (cid >= 0)
        commcore_cid_store_remove(store, (uint32_t)cid, NULL);
}

void cc_cid_free(int64_t cid) {
    if (cid >= 0)
        commcore_cid_space_release(space, (uint32_t)cid);
}

void cc_cid_release(int64_t cid) {
    cc_cid_unstore(cid);
    cc_cid_free(cid);
}
