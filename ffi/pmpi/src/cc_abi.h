/* The commcore calls this library makes, gathered behind one small interface (cc_abi.c
 * implements it over commcore.h), so the MPI side reads in MPI terms and changes of the
 * C ABI touch one file. */
#ifndef COMMCORE_PMPI_CC_ABI_H
#define COMMCORE_PMPI_CC_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Collective operations, in core's order (CollOp). */
enum cc_op {
    CC_BARRIER, CC_BCAST, CC_REDUCE, CC_ALLREDUCE, CC_ALLGATHER, CC_ALLGATHERV,
    CC_ALLTOALL, CC_ALLTOALLV, CC_GATHER, CC_GATHERV, CC_SCATTER, CC_SCATTERV,
    CC_REDUCE_SCATTER, CC_REDUCE_SCATTER_BLOCK, CC_SCAN, CC_EXSCAN, CC_OP_COUNT
};

/* Element types, in core's order (Datatype). */
enum cc_dtype {
    CC_I8, CC_I16, CC_I32, CC_I64, CC_U8, CC_U16, CC_U32, CC_U64, CC_F32, CC_F64,
    CC_PAIR_I16_I32, CC_PAIR_I32_I32, CC_PAIR_I64_I32, CC_PAIR_F32_I32, CC_PAIR_F64_I32,
    CC_DTYPE_COUNT
};

/* Reductions, in core's order (ReduceOp), then one for callbacks this library applies. */
enum cc_rop {
    CC_SUM, CC_PROD, CC_MIN, CC_MAX, CC_LAND, CC_LOR, CC_LXOR, CC_BAND, CC_BOR, CC_BXOR,
    CC_MINLOC, CC_MAXLOC, CC_ROP_CALLBACK
};

enum cc_root_kind { CC_ROOT_RANK, CC_ROOT_HERE, CC_ROOT_ELSEWHERE };

/* One collective call as commcore sees it. Counts and displacements are in elements. */
typedef struct cc_call {
    enum cc_op op;
    size_t count;
    enum cc_dtype dtype;
    enum cc_rop rop;
    int commutative;               /* for CC_ROP_CALLBACK */
    enum cc_root_kind root_kind;
    uint32_t root;
    const size_t *send_counts, *send_displs; /* scatterv, alltoallv; else NULL */
    const size_t *recv_counts, *recv_displs; /* gatherv, allgatherv, alltoallv, reduce_scatter */
    uint32_t nblocks;              /* entries of those arrays */
    int whole;                     /* only algorithms that never split the vector */
} cc_call;

enum cc_buf { CC_BUF_SEND, CC_BUF_RECV, CC_BUF_SCRATCH };

typedef struct cc_region {
    enum cc_buf buf;
    size_t offset, len;
} cc_region;

enum cc_step_kind { CC_STEP_SEND, CC_STEP_RECV, CC_STEP_REDUCE, CC_STEP_COPY, CC_STEP_WAIT,
                    CC_STEP_END };

/* One step. Send/Recv: peer and `a`; Reduce: src `a`, dst `b`, src_left; Copy: `a` to `b`. */
typedef struct cc_step {
    enum cc_step_kind kind;
    int remote;                    /* peer in the remote group of an inter-communicator */
    uint32_t peer;
    cc_region a, b;
    int src_left;
} cc_step;

typedef struct cc_coll cc_coll;    /* a communicator's selection (opaque) */
typedef struct cc_sched cc_sched;  /* one call's schedule (opaque) */

/* Sets the library up with control string `control` (COMMCORE_COLL; NULL for none) and the
 * CID algorithm COMMCORE_CID names; `threaded`: threads may call in at once (the CID space
 * runs the multithreaded agreement, the spare schedules take a lock). 0 on success, else
 * fills `why`. */
int cc_abi_init(const char *control, int threaded, char *why, size_t why_len);
/* The control string used when COMMCORE_COLL gave none (0, or -1 if commcore refuses it);
 * before any cc_coll_new. */
int cc_abi_default_control(const char *text);
/* Non-zero: cc_schedule names the module and algorithm of every call (for the report). */
extern int cc_abi_names;
void cc_abi_finalize(void);

/* The selection of a communicator: this process is `rank` of `size` (the local group), facing
 * `remote_size` ranks when `inter`; `nodes` (size entries) and `remote_nodes` (remote_size)
 * are node ids for the hierarchy; `thread_level` is MPI's level as 0..3. */
cc_coll *cc_coll_new(uint32_t rank, uint32_t size, int inter, uint32_t remote_size,
                     const uint32_t *nodes, const uint32_t *remote_nodes, int thread_level);
void cc_coll_free(cc_coll *coll);

/* The schedule of one call, or NULL when commcore cannot run it (then the caller falls back).
 * `module` and `algorithm` name who serves it (static strings). */
cc_sched *cc_schedule(cc_coll *coll, const cc_call *call, size_t *scratch_bytes,
                      const char **module, const char **algorithm);
/* The next step; CC_STEP_END at the end. Returns 0, or -1 on an error. */
int cc_next(cc_sched *sched, cc_step *step);
void cc_sched_free(cc_sched *sched);
/* A replayed schedule's steps from the first, CC_STEP_END last; NULL when its steps come
 * through commcore (the first run of a call, or a schedule too long to record). */
const cc_step *cc_sched_recorded(const cc_sched *sched);
/* A kept schedule's recorded steps (END last) wherever its run stands; NULL when none are. */
const cc_step *cc_sched_recording(const cc_sched *sched);

/* dst = src op dst (src_left) or dst op src, over `bytes` of dtype; 0 or -1. */
int cc_reduce(enum cc_rop rop, enum cc_dtype dtype, const void *src, void *dst, size_t bytes,
              int src_left);

/* Context ids. The agreement runs `allreduce(words, n, op)` in place (op: 0 = band,
 * 1 = max, 2 = min) among the new communicator's members; returns the id or -1. Under
 * threads, concurrent agreements of the process take the mask in ⟨parent, tag⟩ order
 * (every member must pass the same pair; no two agreements of a process at once may). */
#define CC_CID_LIMIT 4096 /* context ids are below it: live communicators per process */
typedef int (*cc_allreduce_fn)(uint32_t *words, size_t n, int op, void *ctx);
int64_t cc_cid_agree(cc_allreduce_fn allreduce, void *ctx, uint32_t parent, uint32_t tag);
int cc_cid_store(int64_t cid, void *state);
void *cc_cid_lookup(int64_t cid);
void cc_cid_release(int64_t cid);
/* The two halves of cc_cid_release: the store's entry removed (the id stays taken in the
 * space, for a parent's pool), and the id given back to the space. */
void cc_cid_unstore(int64_t cid);
void cc_cid_free(int64_t cid);
/* Agreements run so far in this process and their allreduce rounds (NULL: not wanted). */
void cc_cid_counts(unsigned long *agreements, unsigned long *rounds);

#endif
