/* libcommcore_pmpi: runs an MPI program's collectives through commcore's schedules over the
 * host MPI's point-to-point. Shared declarations of the library's parts. */
#ifndef COMMCORE_PMPI_H
#define COMMCORE_PMPI_H

#include <mpi.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cc_abi.h"

/* Report slots: the 16 blocking operations, then their nonblocking forms. */
#define CC_SLOTS (2 * CC_OP_COUNT)
#define CC_NONBLOCKING(op) ((op) + CC_OP_COUNT)
#define CC_IS_NONBLOCKING(slot) ((slot) >= CC_OP_COUNT)

/* Process-wide settings. */
extern int cc_enabled; /* 0: every wrapper passes through (COMMCORE_PMPI=off or set-up failed) */
extern int cc_threaded; /* the host provides MPI_THREAD_MULTIPLE: shared state takes locks */

/* Locks of shared state, taken only when threads may call in at once (an uncontended lock
 * still costs a call on every collective of a single-threaded program). */
static inline void cc_lock(pthread_mutex_t *m) {
    if (cc_threaded)
        pthread_mutex_lock(m);
}
static inline void cc_unlock(pthread_mutex_t *m) {
    if (cc_threaded)
        pthread_mutex_unlock(m);
}

/* Per-communicator state, cached on the user's communicator as an attribute. */
typedef struct cc_comm {
    MPI_Comm shadow;        /* our traffic: the world's shared one (intra, within the world),
                             * else a duplicate (intra) or the merged pair (inter) */
    int inter;
    int rank, size, remote_size;
    int local_offset, remote_offset; /* where the groups sit in `shadow` (inter) */
    int shared;             /* `shadow` is the world's, shared: not ours to free */
    int *shadow_ranks;      /* shared: each rank's rank in `shadow` (its world rank) */
    int tag_base;           /* the first tag of this communicator's lane in `shadow` */
    cc_coll *coll;
    int64_t cid;
    unsigned seq;           /* collectives started, for tags */
    char *scratch;          /* kept between blocking calls, so they do not allocate */
    size_t scratch_len;
    int scratch_busy;
    int refs;               /* the communicator's attribute, and each nonblocking job */
    struct cc_memos *memos; /* blocking calls remembered by their arguments (memo.c) */
    struct cc_pool *pool;   /* the parent's pool its id goes back to (pool.c), or NULL */
    int pool_slot;
} cc_comm;

/* Tags: one per collective started on the communicator, so the traffic of nonblocking calls
 * in flight together never matches across calls (every rank starts them in the same order). */
#define CC_TAG_SPAN 32768
static inline int cc_next_tag(cc_comm *cs) {
    return cs->tag_base + (int)(cs->seq++ % CC_TAG_SPAN);
}

/* The state of `comm`, built at its first blocking collective (`may_create`: one allreduce
 * on `comm`); NULL when commcore does not serve it or, without `may_create`, has no state
 * for it yet (then the caller falls back). */
cc_comm *cc_comm_get(MPI_Comm comm, int may_create);
/* A nonblocking job keeps the state alive past MPI_Comm_free until it ends. */
void cc_comm_ref(cc_comm *cs);
void cc_comm_unref(cc_comm *cs);
/* The kinds of communicator creation the report counts. */
enum cc_made {
    CC_MADE_DUP, CC_MADE_SPLIT, CC_MADE_CREATE, CC_MADE_CREATE_GROUP, CC_MADE_INTERCOMM_CREATE,
    CC_MADE_INTERCOMM_MERGE, CC_MADE_OTHER, CC_MADE_KINDS
};
/* After a constructor of `kind` ran on `parent` (`tag`: the user's, for create_group and
 * intercomm create), on every member of the parent: marks `made` (MPI_COMM_NULL when this
 * process got none) with its kind and its place among the parent's children; its state is
 * built at its first blocking collective. Local, but for every 32nd duplicate of an
 * intra-communicator, which runs its parent's pool allreduce (pool.c). */
void cc_comm_mark(MPI_Comm parent, MPI_Comm made, int kind, int tag);
/* The same, building the state at once (collective over the new communicator's members). */
void cc_comm_attach(MPI_Comm parent, MPI_Comm made);
int cc_state_init(void);
void cc_state_finalize(void);

/* A parent's pool of context ids its duplicates hand on (pool.c says why it is sound). */
typedef struct cc_pool cc_pool;
#define CC_POOL_SLOTS 32
cc_pool *cc_pool_new(void);
/* At the parent's duplicate number `index`, before it takes its slot; collective over
 * `parent` every CC_POOL_SLOTS duplicates (index > 0), else nothing. `pool` may be NULL. */
void cc_pool_window(cc_pool *pool, MPI_Comm parent, unsigned index);
/* Ties duplicate `index` to its slot: the slot, with `*cid` the id it takes without an
 * agreement (or -1: it agrees, and parks its id there when done), `*coll` the selection and
 * `*ranks` the world ranks of the group (malloc'd) parked with it (or NULL); -1 when the
 * slot is busy. */
int cc_pool_take(cc_pool *pool, unsigned index, int64_t *cid, cc_coll **coll, int **ranks);
/* The duplicate tied to slot `s` is done: its id `cid` (out of the store; -1: none),
 * selection `coll` and world ranks `ranks` (or NULL) are parked, or given back and freed. */
void cc_pool_put(cc_pool *pool, int s, int64_t cid, cc_coll *coll, int *ranks);
/* The parent was freed: parked ids go back to the space. */
void cc_pool_parent_gone(cc_pool *pool);
/* Ids this process took from pools so far. */
unsigned long cc_pool_derived(void);

/* Datatypes and ops. */
typedef struct cc_reduction {
    enum cc_dtype dtype;          /* core's type for the schedule (same element size) */
    enum cc_rop rop;
    enum cc_rop base;             /* the predefined op a callback implements */
    int commutative;
    /* CC_ROP_CALLBACK: applied by this library. */
    void (*apply)(const struct cc_reduction *r, const void *src, void *dst, size_t n,
                  int src_left);
    MPI_User_function *user;
    MPI_Datatype mpi_type;
    size_t elem;                  /* bytes of one element of `dtype` */
    size_t per_item;              /* elements of `dtype` per element of `mpi_type` */
    /* A user op over elements no core type matches in size (a contiguous derived type, a
     * 32-byte pair): the schedule moves bytes, `user_elem` of them an element, and runs
     * only algorithms that never split an element (cc_call.whole). */
    size_t user_elem;
    int whole;
} cc_reduction;

/* Bytes of a predefined, contiguous datatype, or 0 when the library does not move it. */
size_t cc_type_bytes(MPI_Datatype type);
/* A derived type whose memory is its bytes in order, as `mult` elements of the predefined
 * `base` (`unit` bytes in all); -1 for any other type (layout.c). */
int cc_type_whole(MPI_Datatype type, MPI_Datatype *base, size_t *mult, size_t *unit);
/* The reduction of `op` over `type`; 0 or -1 when it cannot be mapped. */
int cc_reduction_of(MPI_Op op, MPI_Datatype type, cc_reduction *out);
void cc_ops_finalize(void);

/* Unpacking a received, packed buffer into the user's (layout.c). */
typedef struct cc_unpack {
    void *dst, *packed;
    MPI_Datatype type;
    int type_owned;               /* a duplicate this library frees */
    MPI_Aint extent;
    int n;                        /* blocks: counts and displs in elements of `type`, */
    MPI_Aint *counts, *displs;    /* offsets (n + 1) in bytes of `packed` */
    MPI_Aint *offsets;
} cc_unpack;

/* At a job's end: unpacks its result (0, or -1 on an error); frees the description. */
struct cc_job;
int cc_unpack_run(struct cc_job *job);
void cc_unpack_free(struct cc_job *job);

/* Buffers a job allocates (in-place copies, packed views, block arrays). */
#define CC_OWNED 8

/* Transfers per round held in the job itself (more take the heap). */
#define CC_FEW_REQUESTS 16

/* One collective call in flight. The fields up to `red` start zeroed (cc_job_init); the
 * rest is written before it is read, so a blocking call does not clear it. */
typedef struct cc_job {
    cc_comm *cs;
    int slot;
    cc_sched *sched;
    const char *send;
    char *recv, *scratch;
    size_t send_len, recv_len, scratch_len;
    int nowned;                 /* owned[0..nowned) */
    int nmeta;                  /* of those, tables no step reads or writes (block counts) */
    cc_unpack *unpack;          /* a packed result to unpack at the end, or NULL */
    MPI_Request *reqs;          /* `few` until a round needs more */
    int nreq, cap;
    int borrowed_scratch;       /* scratch is the communicator's (blocking calls) */
    int tag;
    int has_pending, ended, failed;
    int err;                    /* the MPI error class of a failed job */
    int mismatch;               /* this rank's own block had another size: truncated */
    /* Nonblocking: */
    MPI_Request greq;
    int done;                   /* greq is complete; the host frees it */
    int released;               /* the host freed greq; the list holder frees the job */
    struct cc_job *next;
    MPI_Comm user;              /* the caller's communicator, for its error handler */
    /* Written before read: */
    const char *module, *algorithm; /* who serves it (cc_job_start) */
    cc_reduction red;           /* set by the reductions' preparation */
    cc_step pending;            /* a local step waiting for the round's transfers (has_pending) */
    void *owned[CC_OWNED];      /* buffers this job allocated */
    MPI_Request few[CC_FEW_REQUESTS];
} cc_job;

/* A job for `slot` on the caller's `user` communicator, with its cold part left as it is. */
static inline void cc_job_init(cc_job *job, MPI_Comm user, int slot) {
    memset(job, 0, offsetof(cc_job, red));
    job->user = user;
    job->slot = slot;
}

/* What preparing a call answers besides 0: the host serves it (a decision every rank takes
 * alike), or an error here (reported through the communicator's error handler). */
#define CC_PREP_HOST (-1)
#define CC_PREP_FAIL (-2)

/* Prepares a job from `call` on `cs`; 0, CC_PREP_HOST when commcore has no schedule for it
 * (nothing was sent), or CC_PREP_FAIL. */
int cc_job_start(cc_job *job, cc_comm *cs, int slot, const cc_call *call, const void *send,
                 size_t send_len, void *recv, size_t recv_len);
/* Runs a job on: blocking (1) until done, or (0) as far as possible, or (CC_ADVANCE_START)
 * up to its first transfers, posted but not tested; 1 done, 0 pending, <0 error (job->err
 * says which). A nonblocking call starts without testing, as the hosts' own do: a test
 * runs the host's progress engine, and Open MPI 4.1's engine run between two
 * MPI_Comm_idup of one parent leaves one of them never completing. */
#define CC_ADVANCE_START 2
int cc_job_advance(cc_job *job, int blocking);
/* Whether every transfer of the job's round has completed (its requests are null). */
int cc_job_round_done(const cc_job *job);
/* The executor's parts (exec.c), for direct.c and memo.c: the memory of a region (NULL
 * when it does not lie in its buffer); a step's peer in the shadow communicator; a local
 * step applied (0 or -1). */
char *cc_job_resolve(cc_job *job, cc_region r);
int cc_shadow_rank(const cc_job *job, const cc_step *s);
int cc_job_apply(cc_job *job, const cc_step *s);
/* One transfer of a round, resolved: a receive into or a send from `len` bytes at `mem`,
 * with rank `peer` of the shadow communicator. */
typedef struct cc_xfer {
    int recv;
    int peer;
    char *mem;
    int len;
} cc_xfer;
/* Runs `n` transfers as one round with tag `tag` (xfer.c): MPI_SUCCESS or the error class
 * of the first that failed; nothing is left in flight. */
int cc_xfers_run(MPI_Comm shadow, int tag, const cc_xfer *x, int n);
/* Whether step `s` is a send or a receive; transfer `s` of `job` resolved (0), or -1 when
 * its region does not lie in its buffer (direct.c). */
int cc_step_is_transfer(const cc_step *s);
int cc_xfer_of(cc_job *job, const cc_step *s, cc_xfer *out);
/* Runs a blocking job whose schedule is recorded (`steps`, from cc_sched_recorded) to its
 * end, with no other job in flight; as cc_job_advance(job, 1) answers. */
int cc_job_run_recorded(cc_job *job, const cc_step *steps);
/* Marks the job failed with MPI error `code`. */
void cc_job_fail(cc_job *job, int code);
/* Completes or cancels the job's transfers and lets go of its communicator: what is left
 * are its buffers, which cc_job_release frees (it also quiesces a job not quiesced yet). */
void cc_job_quiesce(cc_job *job);
void cc_job_release(cc_job *job);
/* Reports `code` through the error handler of `comm` and returns it. */
int cc_error(MPI_Comm comm, int code);
/* Keeps `ptr` (malloc'd) until the job is released; -1 (ptr not kept) when full. */
int cc_job_own(cc_job *job, void *ptr);

/* A blocking call's arguments, as words: the operation's slot + 1, then each argument
 * (pointers, counts, handles, roots) in the call's order; unused words are 0. A v-call's
 * per-rank arrays are named by pointer in the words and by content in `arrays`: a program
 * may change them in place between calls. */
#define CC_KEY_WORDS 9
#define CC_KEY_ARRAYS 4
typedef struct cc_key {
    uintptr_t w[CC_KEY_WORDS];
    const int *arrays[CC_KEY_ARRAYS]; /* each of the communicator's block count; NULL: none */
} cc_key;
#define CC_W(x) ((uintptr_t)(x))
#define CC_KEY(slot, ...) (&(cc_key){{CC_W(slot) + 1, __VA_ARGS__}, {0}})
#define CC_KEY_V(slot, a0, a1, a2, a3, ...)                                                \
    (&(cc_key){{CC_W(slot) + 1, __VA_ARGS__}, {a0, a1, a2, a3}})
/* Runs the blocking call `key` on `cs` as the last call with those arguments was prepared:
 * MPI_SUCCESS or the error reported, or CC_MEMO_MISS when none is remembered (memo.c). */
#define CC_MEMO_MISS (-1)
int cc_memo_run(cc_comm *cs, const cc_key *key, MPI_Comm user);
/* Remembers how the blocking call `key` was prepared, when that depends on nothing but its
 * arguments (and its arrays' contents); `job` ran to its end and is not released yet. */
void cc_memo_note(const cc_key *key, cc_job *job);
void cc_memo_free(cc_comm *cs);
/* Datatypes and ops freed so far (counted by types.c's wrappers, atomically): a remembered
 * call names no handle freed since, and a cached type or op mapping is good until one is. */
extern uint64_t cc_handles_freed;
static inline uint64_t cc_freed_so_far(void) {
    return __atomic_load_n(&cc_handles_freed, __ATOMIC_ACQUIRE);
}

/* Nonblocking jobs: progressed inside the Wait/Test family. */
int cc_progress_all(void);
int cc_jobs_in_flight(void);
void cc_nonblocking_finalize(void);

/* Report. */
void cc_count_served(int slot, const char *module, const char *algorithm);
void cc_count_host(int slot);
/* A blocking call served straight from its recorded steps (direct.c). */
void cc_count_replayed(int slot);
/* A replayed call prepared as an earlier one with the same arguments was (memo.c). */
void cc_count_remembered(int slot);
/* Communicators made by kind, and of those whose state was built, served or not. */
void cc_count_made(int kind);
void cc_count_made_state(int kind, int served);
void cc_report(void);
const char *cc_slot_name(int slot);

#endif
