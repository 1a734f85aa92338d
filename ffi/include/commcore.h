/*
 * commcore.h: the C ABI of commcore (libcommcore). Generated from ffi/src by cbindgen;
 * do not edit. Build: cargo build --release -p commcore-ffi; link with
 * $(pkg-config --cflags --libs commcore) after scripts/install-c.sh PREFIX.
 *
 * Every function returns a commcore_result: COMMCORE_OK (0) or a COMMCORE_ERR_* code
 * (7000 and up); commcore_strerror(code) describes a code and commcore_last_error() the
 * last failure on the calling thread. Handles are opaque pointers owned by the caller
 * from creation to their _free function; NULL, freed and wrong-type handles are errors.
 */

#ifndef COMMCORE_H
#define COMMCORE_H

#include <stddef.h>
#include <stdint.h>

/**
 * Process groups a registry holds at most (a power of two: mlut lookups mask the index).
 */
#define COMMCORE_MAX_GROUPS 64

/**
 * Rank-map tables a registry's arena tracks at most.
 */
#define COMMCORE_MAX_TABLES 4096

/**
 * The root of a rooted operation on an inter-communicator, in the root's group: this
 * process is the root (MPI_ROOT).
 */
#define COMMCORE_ROOT_HERE -1

/**
 * On an inter-communicator, in the root's group: another process is the root
 * (MPI_PROC_NULL).
 */
#define COMMCORE_ROOT_ELSEWHERE -2

/**
 * One member's side of an inter-communicator CID agreement (opaque), for
 * `MPI_Intercomm_create`. Created by `commcore_cid_inter_request_create`, owned by the
 * caller, freed by `commcore_cid_inter_request_free`. One thread at a time.
 */
typedef struct commcore_cid_inter_request commcore_cid_inter_request;

/**
 * One member's side of one CID agreement (opaque). Created by
 * `commcore_cid_request_create`, owned by the caller, freed by `commcore_cid_request_free`.
 * A request is used by one thread at a time; requests of one space may run on different
 * threads at once.
 */
typedef struct commcore_cid_request commcore_cid_request;

/**
 * A process's CID space (opaque): which CIDs are free here, shared by every request of
 * the process. Created by `commcore_cid_space_create`, owned by the caller, freed by
 * `commcore_cid_space_free` (requests still running keep the space alive until they are
 * freed). Every function on a space but its free is thread-safe.
 */
typedef struct commcore_cid_space commcore_cid_space;

/**
 * A CID → host handle store (opaque): one 64-bit value (a pointer or index of the host's
 * communicator) per CID, looked up with one load. Created by `commcore_cid_store_create`,
 * owned by the caller, freed by `commcore_cid_store_free`. Insert, remove and get are
 * thread-safe (a reader-writer lock); free must not run concurrently with them.
 */
typedef struct commcore_cid_store commcore_cid_store;

/**
 * A communicator's collective framework instance (opaque). Created by
 * `commcore_coll_create`, owned by the caller, freed by `commcore_coll_free`; schedules
 * built from it keep what they need alive, so it may be freed while they run. Every
 * function taking a `const commcore_coll *` is thread-safe.
 */
typedef struct commcore_coll commcore_coll;

/**
 * A registry of process groups (opaque). Each group has an address vector of 12-byte
 * entries; rank maps made from the registry draw their tables from its arena.
 *
 * Created by `commcore_groups_create`, owned by the caller, freed by
 * `commcore_groups_free` once every rank map made from it is freed. Every function on a
 * registry but its free is thread-safe (an internal lock); free must not run concurrently
 * with any other use of the registry.
 */
typedef struct commcore_groups commcore_groups;

/**
 * A communicator's rank map (opaque): rank → process, in the registry it was made from.
 *
 * Created by the `commcore_rankmap_*` constructors, owned by the caller, freed by
 * `commcore_rankmap_free`. Reading functions (translate, entry, size, kind, bytes) are
 * thread-safe; free must not run concurrently with any other use of the same map.
 */
typedef struct commcore_rankmap commcore_rankmap;

/**
 * One call's schedule (opaque), reusable for call after call. Created by
 * `commcore_schedule_create`, built by `commcore_coll_schedule`, stepped by
 * `commcore_schedule_next`, freed by `commcore_schedule_free`. One thread at a time.
 */
typedef struct commcore_schedule commcore_schedule;

/**
 * A user reduction (opaque): a callback, its context and whether it commutes. Created by
 * `commcore_user_op_create`, owned by the caller, freed by `commcore_user_op_free` after
 * the last schedule built with it is finished. Thread-safe to read; the callback must be
 * safe to call from every thread that reduces with it.
 */
typedef struct commcore_user_op commcore_user_op;

/**
 * The result of every function: `COMMCORE_OK` (0) or one of the `COMMCORE_ERR_*` codes,
 * which start at 7000 so that they never read as an errno value. After an error,
 * `commcore_last_error()` on the same thread says what was wrong.
 */
typedef int32_t commcore_result;

/**
 * Agreement algorithms (`commcore_cid_request_create`'s `algorithm`).
 */
typedef uint32_t commcore_cid_algorithm;

/**
 * What a request asks for next (`commcore_cid_step.kind`).
 */
typedef uint32_t commcore_cid_step_kind;

/**
 * The reduction of a CID allreduce, element-wise over unsigned 32-bit words.
 */
typedef uint32_t commcore_cid_op;

/**
 * The next step of a request, written by `commcore_cid_request_poll`.
 */
typedef struct commcore_cid_step {
  /**
   * `COMMCORE_CID_ALLREDUCE`, `_WAIT`, `_DONE` or `_ERROR`.
   */
  commcore_cid_step_kind kind;
  /**
   * For ALLREDUCE: the reduction.
   */
  commcore_cid_op op;
  /**
   * For ALLREDUCE: this member's contribution, owned by the request and valid until the
   * next call on it. Every member's contribution has the same length.
   */
  const uint32_t *words;
  /**
   * For ALLREDUCE: the number of words.
   */
  size_t nwords;
  /**
   * For DONE: the agreed CID (for an inter-communicator request, this group's); for
   * EXCHANGE: this group's CID to send to the remote leader.
   */
  uint32_t cid;
  /**
   * For DONE of an inter-communicator request: the remote group's CID.
   */
  uint32_t remote_cid;
} commcore_cid_step;

/**
 * The MPI thread level a communicator is used at.
 */
typedef uint32_t commcore_thread_level;

/**
 * What the host knows of a communicator when it creates its framework instance.
 */
typedef struct commcore_coll_config {
  /**
   * This process's rank in its (local) group.
   */
  uint32_t rank;
  /**
   * Ranks in the local group.
   */
  uint32_t size;
  /**
   * 0 for an intra-communicator; the remote group's size for an inter-communicator.
   */
  uint32_t remote_size;
  /**
   * A `COMMCORE_THREAD_*` level.
   */
  commcore_thread_level thread_level;
  /**
   * The node of every local rank (`size` entries; equal ids share memory), or NULL when
   * unknown (then no hierarchical algorithm is chosen). Copied.
   */
  const uint32_t *node_ids;
  /**
   * The node of every remote rank (`remote_size` entries), or NULL. Copied.
   */
  const uint32_t *remote_node_ids;
  /**
   * The control string (NUL-terminated; e.g. `"coll=^hier; allreduce:ring@4k-inf"`), or
   * NULL for none. Read during the call only.
   */
  const char *control;
} commcore_coll_config;

/**
 * A collective operation (`commcore_coll_args.coll_op`).
 */
typedef uint32_t commcore_coll_op;

/**
 * A built-in datatype (the `dtype` of arguments and steps).
 */
typedef uint32_t commcore_datatype;

/**
 * A reduction (the `reduce_op` of arguments, the `op` of REDUCE steps).
 */
typedef uint32_t commcore_reduce_op;

/**
 * The arguments of one collective call on one rank. Zero-initialise, then set what the
 * operation uses.
 *
 * `count` is, per operation: bcast, reduce, allreduce, scan, exscan: the elements of the
 * message; gather, scatter, allgather, alltoall, reduce_scatter_block: the elements of
 * each rank's block; the `v` variants and reduce_scatter: this rank's own send count
 * where one is needed. Block lists (elements; copied during the call): `recv_*` for
 * gatherv (at the root), allgatherv, alltoallv and reduce_scatter; `send_*` for scatterv
 * (at the root) and alltoallv. A NULL displacement array means the blocks are contiguous
 * in rank order.
 */
typedef struct commcore_coll_args {
  /**
   * A `COMMCORE_COLL_*` operation.
   */
  uint32_t coll_op;
  /**
   * A `COMMCORE_DT_*` element type.
   */
  commcore_datatype dtype;
  /**
   * A `COMMCORE_OP_*` built-in reduction (reducing operations; ignored when `user_op` is
   * set).
   */
  commcore_reduce_op reduce_op;
  /**
   * Non-zero for MPI_IN_PLACE: the input is in the receive buffer (at this rank's block
   * for gather and allgather). Intra-communicators only; at the root only for reduce,
   * gather(v) and scatter(v); not for barrier and bcast.
   */
  uint32_t in_place;
  /**
   * A user reduction (or NULL); REDUCE steps then carry `COMMCORE_OP_USER`.
   */
  const struct commcore_user_op *user_op;
  /**
   * Elements (see above).
   */
  size_t count;
  /**
   * The root's rank; on inter-communicators also `COMMCORE_ROOT_HERE` or
   * `COMMCORE_ROOT_ELSEWHERE`.
   */
  int32_t root;
  /**
   * Entries in `send_counts` and `send_displs`.
   */
  uint32_t nsend;
  /**
   * Elements per rank in the send buffer, or NULL.
   */
  const int32_t *send_counts;
  /**
   * Offsets (elements) of those blocks, or NULL.
   */
  const int32_t *send_displs;
  /**
   * Entries in `recv_counts` and `recv_displs`.
   */
  uint32_t nrecv;
  /**
   * Elements per rank in the receive buffer, or NULL.
   */
  const int32_t *recv_counts;
  /**
   * Offsets (elements) of those blocks, or NULL.
   */
  const int32_t *recv_displs;
} commcore_coll_args;

/**
 * One process's address-vector entry as C reads it.
 */
typedef struct commcore_entry {
  /**
   * The address (up to 64 bits), or when `stored` is set, the handle word of a larger
   * address in the registry's side table (read it with `commcore_groups_address`).
   */
  uint64_t address;
  /**
   * The node the process runs on (processes with equal node ids share memory).
   */
  uint32_t node;
  /**
   * The transport selector (0–127).
   */
  uint8_t transport;
  /**
   * Whether `address` is a side-table handle word.
   */
  uint8_t stored;
} commcore_entry;

/**
 * A process as one word: the group id in bits 32–47, the lpid in bits 0–31
 * (`COMMCORE_PROCESS_PGID` / `COMMCORE_PROCESS_LPID` take it apart).
 */
typedef uint64_t commcore_process;

/**
 * The host's own description of a communicator, as UCC's `ep_map` callback: rank →
 * process word. Called once per rank, in order, during `commcore_rankmap_from_callback`
 * only; a return value with bits above 47 set fails the construction.
 */
typedef uint64_t (*commcore_rank_callback)(void *ctx,
                                           uint32_t rank);

/**
 * A user reduction: over `count` elements of `dtype`, `dst = src ∘ dst` when `src_left`
 * is non-zero, else `dst = dst ∘ src`. `ctx` is the pointer given at creation.
 */
typedef void (*commcore_user_fn)(const void *src,
                                 void *dst,
                                 size_t count,
                                 commcore_datatype dtype,
                                 int32_t src_left,
                                 void *ctx);

/**
 * What a step does (`commcore_step.kind`).
 */
typedef uint32_t commcore_step_kind;

/**
 * The group a peer rank is numbered in.
 */
typedef uint32_t commcore_group;

/**
 * Which buffer a region lies in (`commcore_region.buf`).
 */
typedef uint32_t commcore_buf;

/**
 * `len` bytes at byte `offset` of buffer `buf`. Hosts bounds-check every region against
 * their buffers (absurd `v` layouts yield regions that fit no buffer).
 */
typedef struct commcore_region {
  /**
   * A `COMMCORE_BUF_*`.
   */
  commcore_buf buf;
  /**
   * First byte.
   */
  size_t offset;
  /**
   * Bytes (may be zero: a zero-byte message still synchronises).
   */
  size_t len;
} commcore_region;

/**
 * One step, written by `commcore_schedule_next` (no allocation). Fields a kind does not
 * use are unspecified.
 *
 * Execution model: SEND and RECV start transfers; messages between one ordered pair of
 * ranks match in the order they were started, and a receive's length equals the
 * matching send's. REDUCE, COPY and WAIT first wait for every transfer this rank has
 * started; a send region is not modified before then. END waits for every transfer too.
 */
typedef struct commcore_step {
  /**
   * A `COMMCORE_STEP_*`.
   */
  commcore_step_kind kind;
  /**
   * SEND, RECV: the peer's group (`COMMCORE_GROUP_*`).
   */
  commcore_group group;
  /**
   * SEND, RECV: the peer's rank in that group.
   */
  uint32_t rank;
  /**
   * REDUCE: a `COMMCORE_OP_*` (`COMMCORE_OP_USER` for the call's user reduction).
   */
  commcore_reduce_op op;
  /**
   * REDUCE: the element type.
   */
  commcore_datatype dtype;
  /**
   * REDUCE: non-zero when `src` is the left (lower-rank) operand.
   */
  uint32_t src_left;
  /**
   * SEND: the bytes sent; REDUCE, COPY: the source.
   */
  struct commcore_region src;
  /**
   * RECV: where the bytes land; REDUCE, COPY: the destination.
   */
  struct commcore_region dst;
} commcore_step;

/**
 * Lowest free CID: a MAX allreduce proposes, an AND allreduce confirms; retried on
 * failure.
 */
#define COMMCORE_CID_LOWEST 0

/**
 * One BAND allreduce of the free mask (an eager segment first).
 */
#define COMMCORE_CID_MASK 1

/**
 * One MAX allreduce of the highest CID in use plus one (a confirmation round when the
 * space is threaded).
 */
#define COMMCORE_CID_HIGHEST 2

/**
 * Allreduce `words[0..nwords]` with `op` over the request's members, then hand the result
 * to `commcore_cid_request_handle_allreduce`.
 */
#define COMMCORE_CID_ALLREDUCE 1

/**
 * Another request of this process has priority: poll again later (yield first).
 */
#define COMMCORE_CID_WAIT 2

/**
 * Agreed: `cid` is the new context id, claimed in this process's space.
 */
#define COMMCORE_CID_DONE 3

/**
 * The request failed (the result code says why); it is finished.
 */
#define COMMCORE_CID_ERROR 4

/**
 * Maximum.
 */
#define COMMCORE_CID_OP_MAX 0

/**
 * Minimum.
 */
#define COMMCORE_CID_OP_MIN 1

/**
 * Bitwise AND.
 */
#define COMMCORE_CID_OP_BAND 2

/**
 * Leader only: send `cid` (this group's CID) to the remote group's leader, receive its
 * CID, and hand it to `commcore_cid_inter_request_handle_exchange`.
 */
#define COMMCORE_CID_EXCHANGE 5

/**
 * MPI_Barrier.
 */
#define COMMCORE_COLL_BARRIER 0

/**
 * MPI_Bcast.
 */
#define COMMCORE_COLL_BCAST 1

/**
 * MPI_Reduce.
 */
#define COMMCORE_COLL_REDUCE 2

/**
 * MPI_Allreduce.
 */
#define COMMCORE_COLL_ALLREDUCE 3

/**
 * MPI_Allgather.
 */
#define COMMCORE_COLL_ALLGATHER 4

/**
 * MPI_Allgatherv.
 */
#define COMMCORE_COLL_ALLGATHERV 5

/**
 * MPI_Alltoall.
 */
#define COMMCORE_COLL_ALLTOALL 6

/**
 * MPI_Alltoallv.
 */
#define COMMCORE_COLL_ALLTOALLV 7

/**
 * MPI_Gather.
 */
#define COMMCORE_COLL_GATHER 8

/**
 * MPI_Gatherv.
 */
#define COMMCORE_COLL_GATHERV 9

/**
 * MPI_Scatter.
 */
#define COMMCORE_COLL_SCATTER 10

/**
 * MPI_Scatterv.
 */
#define COMMCORE_COLL_SCATTERV 11

/**
 * MPI_Reduce_scatter.
 */
#define COMMCORE_COLL_REDUCE_SCATTER 12

/**
 * MPI_Reduce_scatter_block.
 */
#define COMMCORE_COLL_REDUCE_SCATTER_BLOCK 13

/**
 * MPI_Scan.
 */
#define COMMCORE_COLL_SCAN 14

/**
 * MPI_Exscan.
 */
#define COMMCORE_COLL_EXSCAN 15

/**
 * MPI_THREAD_SINGLE.
 */
#define COMMCORE_THREAD_SINGLE 0

/**
 * MPI_THREAD_FUNNELED.
 */
#define COMMCORE_THREAD_FUNNELED 1

/**
 * MPI_THREAD_SERIALIZED.
 */
#define COMMCORE_THREAD_SERIALIZED 2

/**
 * MPI_THREAD_MULTIPLE.
 */
#define COMMCORE_THREAD_MULTIPLE 3

/**
 * `int8_t`.
 */
#define COMMCORE_DT_I8 0

/**
 * `int16_t`.
 */
#define COMMCORE_DT_I16 1

/**
 * `int32_t`.
 */
#define COMMCORE_DT_I32 2

/**
 * `int64_t`.
 */
#define COMMCORE_DT_I64 3

/**
 * `uint8_t`.
 */
#define COMMCORE_DT_U8 4

/**
 * `uint16_t`.
 */
#define COMMCORE_DT_U16 5

/**
 * `uint32_t`.
 */
#define COMMCORE_DT_U32 6

/**
 * `uint64_t`.
 */
#define COMMCORE_DT_U64 7

/**
 * `float`.
 */
#define COMMCORE_DT_F32 8

/**
 * `double`.
 */
#define COMMCORE_DT_F64 9

/**
 * `struct { int16_t v; int32_t i; }` (MPI_SHORT_INT), 8 bytes.
 */
#define COMMCORE_DT_PAIR_I16_I32 10

/**
 * `struct { int32_t v; int32_t i; }` (MPI_2INT), 8 bytes.
 */
#define COMMCORE_DT_PAIR_I32_I32 11

/**
 * `struct { int64_t v; int32_t i; }` (MPI_LONG_INT), 16 bytes.
 */
#define COMMCORE_DT_PAIR_I64_I32 12

/**
 * `struct { float v; int32_t i; }` (MPI_FLOAT_INT), 8 bytes.
 */
#define COMMCORE_DT_PAIR_F32_I32 13

/**
 * `struct { double v; int32_t i; }` (MPI_DOUBLE_INT), 16 bytes.
 */
#define COMMCORE_DT_PAIR_F64_I32 14

/**
 * Sum (integers wrap).
 */
#define COMMCORE_OP_SUM 0

/**
 * Product (integers wrap).
 */
#define COMMCORE_OP_PROD 1

/**
 * Minimum.
 */
#define COMMCORE_OP_MIN 2

/**
 * Maximum.
 */
#define COMMCORE_OP_MAX 3

/**
 * Logical and (integers; result 0 or 1).
 */
#define COMMCORE_OP_LAND 4

/**
 * Logical or.
 */
#define COMMCORE_OP_LOR 5

/**
 * Logical exclusive or.
 */
#define COMMCORE_OP_LXOR 6

/**
 * Bitwise and (integers).
 */
#define COMMCORE_OP_BAND 7

/**
 * Bitwise or.
 */
#define COMMCORE_OP_BOR 8

/**
 * Bitwise exclusive or.
 */
#define COMMCORE_OP_BXOR 9

/**
 * Minimum value and the lowest index holding it (pair types only).
 */
#define COMMCORE_OP_MINLOC 10

/**
 * Maximum value and the lowest index holding it (pair types only).
 */
#define COMMCORE_OP_MAXLOC 11

/**
 * In a REDUCE step: the call's user operation (apply it with `commcore_reduce_user`).
 */
#define COMMCORE_OP_USER 100

/**
 * Success.
 */
#define COMMCORE_OK 0

/**
 * A pointer argument that must not be NULL was NULL.
 */
#define COMMCORE_ERR_NULL 7001

/**
 * A handle of another type was passed (or a pointer that is no commcore handle at all).
 */
#define COMMCORE_ERR_HANDLE 7002

/**
 * The handle was freed already.
 */
#define COMMCORE_ERR_FREED 7003

/**
 * commcore panicked inside the call: a bug in commcore; the call had no effect that can
 * be relied on.
 */
#define COMMCORE_ERR_PANIC 7004

/**
 * An argument has a value outside its domain (an unknown enumerator, a negative count,
 * a flag on an operation that does not take it).
 */
#define COMMCORE_ERR_ARG 7005

/**
 * A length or count overflows, or arrays disagree in length, or an output is too small.
 */
#define COMMCORE_ERR_LENGTH 7006

/**
 * A rank, process, group or CID is out of range.
 */
#define COMMCORE_ERR_RANGE 7007

/**
 * Bounded storage is full (groups, table arena, address store, CID store).
 */
#define COMMCORE_ERR_FULL 7008

/**
 * The object is still in use (a process-group registry with live rank maps).
 */
#define COMMCORE_ERR_BUSY 7009

/**
 * A control string was refused; the detail names the offending token.
 */
#define COMMCORE_ERR_CONTROL 7010

/**
 * A collective call cannot be scheduled with these arguments (the detail says why).
 */
#define COMMCORE_ERR_COLL 7011

/**
 * The reduction is not defined on the datatype (e.g. BAND on f32).
 */
#define COMMCORE_ERR_UNSUPPORTED 7012

/**
 * A CID agreement failed (inconsistent results between members, a duplicate ⟨parent
 * cid, tag⟩ in flight, too many requests).
 */
#define COMMCORE_ERR_CID 7013

/**
 * No CID is free on every member.
 */
#define COMMCORE_ERR_CID_EXHAUSTED 7014

/**
 * A call out of order (a result handed in with no allreduce outstanding, a finished
 * request polled, a schedule stepped before it was built).
 */
#define COMMCORE_ERR_STATE 7015

/**
 * Nothing is stored under the key.
 */
#define COMMCORE_ERR_NOT_FOUND 7016

/**
 * The function exists in the ABI but does not work yet.
 */
#define COMMCORE_ERR_NOT_IMPLEMENTED 7017

/**
 * The caller's send buffer (read-only to a schedule).
 */
#define COMMCORE_BUF_SEND 0

/**
 * The caller's receive buffer (for bcast: the one buffer).
 */
#define COMMCORE_BUF_RECV 1

/**
 * Scratch of `commcore_schedule_scratch_bytes` bytes, owned by the host for the
 * schedule's lifetime (not zeroed).
 */
#define COMMCORE_BUF_SCRATCH 2

/**
 * The schedule is finished (after the last transfer completes).
 */
#define COMMCORE_STEP_END 0

/**
 * Start sending region `src` to peer (`group`, `rank`); do not wait.
 */
#define COMMCORE_STEP_SEND 1

/**
 * Start receiving into region `dst` from peer (`group`, `rank`); do not wait.
 */
#define COMMCORE_STEP_RECV 2

/**
 * Wait for every started transfer, then `dst = src ∘ dst` (`src_left` non-zero) or
 * `dst = dst ∘ src` with `op` over `dtype` (`commcore_reduce`/`commcore_reduce_user`).
 */
#define COMMCORE_STEP_REDUCE 3

/**
 * Wait for every started transfer, then copy `src` to `dst` (same length).
 */
#define COMMCORE_STEP_COPY 4

/**
 * End of a round: wait for every started transfer.
 */
#define COMMCORE_STEP_WAIT 5

/**
 * The caller's own group (the whole communicator for an intra-communicator).
 */
#define COMMCORE_GROUP_LOCAL 0

/**
 * The remote group of an inter-communicator.
 */
#define COMMCORE_GROUP_REMOTE 1

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * Creates a CID space of CIDs `0..width` (a multiple of 32, at most 65536), with the
 * mask algorithm's eager segment `0..eager` (a multiple of 32 below `width`; 0 for none).
 * `threaded` non-zero: several threads of the process may allocate at once.
 */
commcore_result commcore_cid_space_create(uint32_t width,
                                          uint32_t eager,
                                          int32_t threaded,
                                          struct commcore_cid_space **out);

/**
 * As `commcore_cid_space_create`, with the eager segment cut into `eager_lanes` equal
 * lanes (1 to 64, each a multiple of 32 CIDs): a mask agreement's first round takes the
 * lane its ⟨parent, tag⟩ hashes to and holds that lane only, so concurrent agreements of
 * different threads on different parents each finish in one round.
 */
commcore_result commcore_cid_space_create_lanes(uint32_t width,
                                                uint32_t eager,
                                                uint32_t eager_lanes,
                                                int32_t threaded,
                                                struct commcore_cid_space **out);

/**
 * Frees a space handle. NULL is a no-op.
 */
commcore_result commcore_cid_space_free(struct commcore_cid_space *space);

/**
 * Marks `cid` used without agreement (predefined communicators, or a CID another
 * protocol agreed on). `COMMCORE_ERR_STATE` when it is in use already.
 */
commcore_result commcore_cid_space_claim(const struct commcore_cid_space *space,
                                         uint32_t cid);

/**
 * Frees `cid` here (its communicator was freed). `COMMCORE_ERR_STATE` when it is free.
 */
commcore_result commcore_cid_space_release(const struct commcore_cid_space *space,
                                           uint32_t cid);

/**
 * Writes 1 to `*is_free` when `cid` is free in this process, else 0.
 */
commcore_result commcore_cid_space_is_free(const struct commcore_cid_space *space,
                                           uint32_t cid,
                                           int32_t *is_free);

/**
 * A request for a new CID under the parent communicator's CID `parent` with `tag` (0 for
 * the collective constructors; the user's tag for `MPI_Comm_create_group`, driven over
 * the group only). Every request of one space must use the same algorithm.
 *
 * ```c
 * #include <commcore.h>
 * // One member alone: its allreduce is the identity.
 * int example_cid(commcore_cid_space *space) {
 *     commcore_cid_request *request = NULL;
 *     commcore_cid_step step;
 *     if (commcore_cid_request_create(space, COMMCORE_CID_MASK, 0, 0, &request)) return 1;
 *     for (;;) {
 *         if (commcore_cid_request_poll(request, &step) != COMMCORE_OK) break;
 *         if (step.kind == COMMCORE_CID_DONE) break;
 *         if (step.kind == COMMCORE_CID_WAIT) continue;
 *         if (commcore_cid_request_handle_allreduce(request, step.words, step.nwords)) break;
 *     }
 *     commcore_cid_request_free(request);
 *     return step.kind == COMMCORE_CID_DONE ? 0 : 1;
 * }
 * ```
 */
commcore_result commcore_cid_request_create(const struct commcore_cid_space *space,
                                            commcore_cid_algorithm algorithm,
                                            uint32_t parent,
                                            uint32_t tag,
                                            struct commcore_cid_request **out);

/**
 * Writes the request's next step to `*step`. Polling again before handing in the result
 * returns the same allreduce. On an error the request is finished and `step->kind` is
 * `COMMCORE_CID_ERROR`.
 */
commcore_result commcore_cid_request_poll(struct commcore_cid_request *request,
                                          struct commcore_cid_step *step);

/**
 * Hands in the reduced words of the outstanding allreduce (`nwords` must equal the
 * step's). On an error the request is finished.
 */
commcore_result commcore_cid_request_handle_allreduce(struct commcore_cid_request *request,
                                                      const uint32_t *reduced,
                                                      size_t nwords);

/**
 * Gives up: releases every hold and reservation in the space. The request is finished;
 * a done request keeps its CID (release it with `commcore_cid_space_release`).
 */
commcore_result commcore_cid_request_abort(struct commcore_cid_request *request);

/**
 * Frees a request, aborting it first when it has not finished. NULL is a no-op.
 */
commcore_result commcore_cid_request_free(struct commcore_cid_request *request);

/**
 * Writes to `*allreduces` the number of allreduces the request has asked for so far.
 */
commcore_result commcore_cid_request_allreduces(const struct commcore_cid_request *request,
                                                uint32_t *allreduces);

/**
 * A request on this side's group, under the local group's communicator CID `parent` with
 * `tag`; exactly one member per side passes `leader` non-zero. Steps: ALLREDUCE over the
 * local group (as for `commcore_cid_request_poll`), EXCHANGE at the leader, one more
 * ALLREDUCE (MAX of one word) that carries the remote CID to the group, then DONE with
 * `cid` (this group's CID: messages arrive with it) and `remote_cid` (the other group's:
 * messages to it carry it).
 */
commcore_result commcore_cid_inter_request_create(const struct commcore_cid_space *space,
                                                  uint32_t algorithm_code,
                                                  uint32_t parent,
                                                  uint32_t tag,
                                                  int32_t leader,
                                                  struct commcore_cid_inter_request **out);

/**
 * Writes the request's next step to `*step` (see `commcore_cid_inter_request_create`). On
 * an error the request is finished and `step->kind` is `COMMCORE_CID_ERROR`.
 */
commcore_result commcore_cid_inter_request_poll(struct commcore_cid_inter_request *request,
                                                struct commcore_cid_step *step);

/**
 * Leader: hands in the remote leader's CID after an EXCHANGE step.
 */
commcore_result commcore_cid_inter_request_handle_exchange(struct commcore_cid_inter_request *request,
                                                           uint32_t remote_cid);

/**
 * Hands in the reduced words of the outstanding allreduce (over this side's group).
 */
commcore_result commcore_cid_inter_request_handle_allreduce(struct commcore_cid_inter_request *request,
                                                            const uint32_t *reduced,
                                                            size_t nwords);

/**
 * Frees a request, aborting it first (the local CID, once agreed, stays claimed: release
 * it with `commcore_cid_space_release`). NULL is a no-op.
 */
commcore_result commcore_cid_inter_request_free(struct commcore_cid_inter_request *request);

/**
 * Creates a store for CIDs `0..width` (at most 65536).
 */
commcore_result commcore_cid_store_create(uint32_t width,
                                          struct commcore_cid_store **out);

/**
 * Frees a store. NULL is a no-op.
 */
commcore_result commcore_cid_store_free(struct commcore_cid_store *store);

/**
 * Maps `cid` to `value`. `COMMCORE_ERR_BUSY` when `cid` is mapped already,
 * `COMMCORE_ERR_RANGE` when it is past the store's width.
 */
commcore_result commcore_cid_store_insert(const struct commcore_cid_store *store,
                                          uint32_t cid,
                                          uint64_t value);

/**
 * Removes `cid`'s mapping and writes its value to `*value` (when not NULL).
 * `COMMCORE_ERR_NOT_FOUND` when `cid` is not mapped.
 */
commcore_result commcore_cid_store_remove(const struct commcore_cid_store *store,
                                          uint32_t cid,
                                          uint64_t *value);

/**
 * Writes the value `cid` maps to into `*value`; `COMMCORE_ERR_NOT_FOUND` when unmapped.
 */
commcore_result commcore_cid_store_get(const struct commcore_cid_store *store,
                                       uint32_t cid,
                                       uint64_t *value);

/**
 * Creates the framework instance of a communicator: queries the built-in components
 * (basic, tuned, hier, inter) under the control string and selects a module per
 * operation. A refused control string is `COMMCORE_ERR_CONTROL` with the offending token
 * in `commcore_last_error()`.
 *
 * ```c
 * #include <commcore.h>
 * int example_coll(void) {
 *     uint32_t nodes[4] = {0, 0, 1, 1};
 *     commcore_coll_config config = {
 *         .rank = 1, .size = 4, .remote_size = 0,
 *         .thread_level = COMMCORE_THREAD_SINGLE,
 *         .node_ids = nodes, .remote_node_ids = NULL,
 *         .control = "tuned.priority=90",
 *     };
 *     commcore_coll *coll = NULL;
 *     if (commcore_coll_create(&config, &coll) != COMMCORE_OK) return 1;
 *     const char *module = NULL;
 *     if (commcore_coll_module(coll, COMMCORE_COLL_ALLREDUCE, &module)) return 1;
 *     return commcore_coll_free(coll);
 * }
 * ```
 */
commcore_result commcore_coll_create(const struct commcore_coll_config *config,
                                     struct commcore_coll **out);

/**
 * Frees a framework instance. NULL is a no-op.
 */
commcore_result commcore_coll_free(struct commcore_coll *coll);

/**
 * Writes the name of the component serving `coll_op` ("basic", "tuned", "hier",
 * "inter"; static) to `*module`. `COMMCORE_ERR_COLL` for an operation not defined on
 * this communicator (scan on an inter-communicator).
 */
commcore_result commcore_coll_module(const struct commcore_coll *coll,
                                     commcore_coll_op operation,
                                     const char **module);

/**
 * Writes the provider of one call, as a report names it: the component's name to
 * `*module` and the algorithm's ("ring", "recursive_doubling", "hier", "leaders", …) to
 * `*algorithm` (both static). Builds the call's schedule to find out, so the arguments are
 * checked as `commcore_coll_schedule` checks them.
 */
commcore_result commcore_coll_provider(const struct commcore_coll *coll,
                                       const struct commcore_coll_args *args,
                                       const char **module,
                                       const char **algorithm);

/**
 * Writes the node id of `rank` in the local group (`remote` zero) or the remote group
 * (`remote` non-zero) to `*node`. `COMMCORE_ERR_NOT_FOUND` when the host gave no node ids
 * for that group.
 */
commcore_result commcore_coll_node(const struct commcore_coll *coll,
                                   int32_t remote,
                                   uint32_t rank,
                                   uint32_t *node);

/**
 * Writes the instance's rank, size, remote size (0: intra) and thread level to the
 * non-NULL pointers among `rank`, `size`, `remote_size`, `thread_level`.
 */
commcore_result commcore_coll_info(const struct commcore_coll *coll,
                                   uint32_t *rank,
                                   uint32_t *size,
                                   uint32_t *remote_size,
                                   commcore_thread_level *thread_level);

/**
 * Creates a registry whose rank-map tables may take up to `table_words` 32-bit words in
 * all, and whose side table holds up to `address_bytes` bytes of large addresses.
 * `*out` receives the new registry (owned by the caller).
 *
 * ```c
 * #include <commcore.h>
 * int example_groups(void) {
 *     commcore_groups *groups = NULL;
 *     uint64_t addresses[4] = {0x10, 0x11, 0x12, 0x13};
 *     uint32_t nodes[4] = {0, 0, 1, 1};
 *     uint16_t pgid;
 *     commcore_entry entry;
 *     if (commcore_groups_create(1024, 0, &groups) != COMMCORE_OK) return 1;
 *     if (commcore_groups_register(groups, addresses, nodes, NULL, NULL, 4, &pgid)) return 1;
 *     if (commcore_groups_entry(groups, pgid, 2, &entry) || entry.node != 1) return 1;
 *     return commcore_groups_free(groups);
 * }
 * ```
 */
commcore_result commcore_groups_create(size_t table_words,
                                       size_t address_bytes,
                                       struct commcore_groups **out);

/**
 * Frees a registry. NULL is a no-op. Fails with `COMMCORE_ERR_BUSY` (and frees nothing)
 * while rank maps made from it are alive. Not thread-safe with other calls on `groups`.
 */
commcore_result commcore_groups_free(struct commcore_groups *groups);

/**
 * Registers a process group of `n` processes: process `i` has address `addresses[i]`
 * and runs on node `node_ids[i]` (below 2^24). `transports` (NULL: all 0) gives each
 * process's transport selector (below 128); `stored` (NULL: none) marks addresses that are
 * side-table handle words from `commcore_groups_store_address`. The arrays are copied.
 * `*pgid` receives the group's id (the lowest free, below `COMMCORE_MAX_GROUPS`).
 */
commcore_result commcore_groups_register(struct commcore_groups *groups,
                                         const uint64_t *addresses,
                                         const uint32_t *node_ids,
                                         const uint8_t *transports,
                                         const uint8_t *stored,
                                         size_t n,
                                         uint16_t *pgid);

/**
 * Copies an address of `len` bytes (more than 8) into the registry's side table and writes
 * its handle word to `*word`, for `commcore_groups_register` with `stored` set.
 */
commcore_result commcore_groups_store_address(struct commcore_groups *groups,
                                              const uint8_t *bytes,
                                              size_t len,
                                              uint64_t *word);

/**
 * Copies the side-table address behind handle word `word` into `buf` (capacity `cap`)
 * and writes its length to `*len`. `COMMCORE_ERR_LENGTH` when `cap` is too small (`*len`
 * then says how much is needed); `COMMCORE_ERR_NOT_FOUND` for an unknown word.
 */
commcore_result commcore_groups_address(const struct commcore_groups *groups,
                                        uint64_t word,
                                        uint8_t *buf,
                                        size_t cap,
                                        size_t *len);

/**
 * Reads the entry of process `lpid` of group `pgid` into `*out`.
 */
commcore_result commcore_groups_entry(const struct commcore_groups *groups,
                                      uint16_t pgid,
                                      uint32_t lpid,
                                      struct commcore_entry *out);

/**
 * Writes the number of processes in group `pgid` to `*n`.
 */
commcore_result commcore_groups_size(const struct commcore_groups *groups,
                                     uint16_t pgid,
                                     uint32_t *n);

/**
 * The world map of group `pgid`: rank r is process r (`MPI_COMM_WORLD`).
 */
commcore_result commcore_rankmap_world(const struct commcore_groups *groups,
                                       uint16_t pgid,
                                       struct commcore_rankmap **out);

/**
 * The child of `parent` whose rank i is the parent's rank `indirect[i]` (`n` entries;
 * `MPI_Comm_split`, `MPI_Comm_create`, `MPI_Group_incl`). The pattern is detected and
 * composed with the parent's model; only irregular maps take a table from the arena.
 *
 * ```c
 * #include <commcore.h>
 * int example_split(commcore_rankmap *world) {
 *     uint32_t odd[4] = {1, 3, 5, 7};
 *     commcore_rankmap *child = NULL;
 *     if (commcore_rankmap_create(world, odd, 4, &child) != COMMCORE_OK) return 1;
 *     int64_t process = commcore_rankmap_translate(child, 2); // world rank 5
 *     int wrong = process < 0 || COMMCORE_PROCESS_LPID(process) != 5;
 *     return commcore_rankmap_free(child) || wrong;
 * }
 * ```
 */
commcore_result commcore_rankmap_create(const struct commcore_rankmap *parent,
                                        const uint32_t *indirect,
                                        size_t n,
                                        struct commcore_rankmap **out);

/**
 * The map of processes `lpids[0..n]` of group `pgid` (e.g. a remote group learnt on
 * connect): a regular model when the lpids are regular, a lut otherwise.
 */
commcore_result commcore_rankmap_from_group(const struct commcore_groups *groups,
                                            uint16_t pgid,
                                            const uint32_t *lpids,
                                            size_t n,
                                            struct commcore_rankmap **out);

/**
 * The map of processes `processes[0..n]` (process words, possibly from several groups):
 * an mlut unless they share one group.
 */
commcore_result commcore_rankmap_from_processes(const struct commcore_groups *groups,
                                                const commcore_process *processes,
                                                size_t n,
                                                struct commcore_rankmap **out);

/**
 * The map of a communicator of `n` ranks that the host describes by `callback(ctx, rank)`.
 * The processes are read once and stored in the most compact model that fits.
 */
commcore_result commcore_rankmap_from_callback(const struct commcore_groups *groups,
                                               uint32_t n,
                                               commcore_rank_callback callback,
                                               void *ctx,
                                               struct commcore_rankmap **out);

/**
 * The intra-communicator `MPI_Intercomm_merge` makes from an inter-communicator's two
 * maps (`local`: this side's group, `remote`: the other's), local ranks first when
 * `local_first` is non-zero. Both maps must come from the same registry.
 */
commcore_result commcore_rankmap_merge(const struct commcore_rankmap *local,
                                       const struct commcore_rankmap *remote,
                                       int32_t local_first,
                                       struct commcore_rankmap **out);

/**
 * A duplicate of `map` (`MPI_Comm_dup`), sharing its table.
 */
commcore_result commcore_rankmap_dup(const struct commcore_rankmap *map,
                                     struct commcore_rankmap **out);

/**
 * Frees a map; its table returns to the registry's arena with its last user. NULL is a
 * no-op.
 */
commcore_result commcore_rankmap_free(struct commcore_rankmap *map);

/**
 * The process behind `rank`: its process word (pgid in bits 32–47, lpid in bits 0–31,
 * so non-negative), or a negative result code: `-COMMCORE_ERR_RANGE` for a rank at or
 * past the size, `-COMMCORE_ERR_NULL`, `-COMMCORE_ERR_HANDLE`, `-COMMCORE_ERR_FREED`.
 * The hot path: one handle compare, then the model's lookup. Thread-safe.
 */
int64_t commcore_rankmap_translate(const struct commcore_rankmap *map,
                                   uint32_t rank);

/**
 * Translates `ranks[0..n]` into `processes[0..n]` (process words). Stops at the first
 * rank out of range with `COMMCORE_ERR_RANGE` (the detail names its index).
 */
commcore_result commcore_rankmap_translate_batch(const struct commcore_rankmap *map,
                                                 const uint32_t *ranks,
                                                 size_t n,
                                                 commcore_process *processes);

/**
 * Reads the address-vector entry of the process behind `rank` into `*out`.
 */
commcore_result commcore_rankmap_entry(const struct commcore_rankmap *map,
                                       uint32_t rank,
                                       struct commcore_entry *out);

/**
 * Writes the number of ranks to `*size`.
 */
commcore_result commcore_rankmap_size(const struct commcore_rankmap *map,
                                      uint32_t *size);

/**
 * Writes the model's name ("direct", "offset", "stride", "blockstride", "lut",
 * "lut_stride_view", "mlut", "mlut_stride_view"; static) to `*name`.
 */
commcore_result commcore_rankmap_model(const struct commcore_rankmap *map,
                                       const char **name);

/**
 * Writes the bytes the map uses to `*bytes`: the map itself plus its table (a table
 * shared with views or duplicates is counted in full by each).
 */
commcore_result commcore_rankmap_bytes(const struct commcore_rankmap *map,
                                       size_t *bytes);

/**
 * Creates a user reduction calling `func` with `ctx`; `commutative` non-zero when
 * `a ∘ b = b ∘ a` (non-commutative operations get algorithms that combine in rank order).
 */
commcore_result commcore_user_op_create(commcore_user_fn func,
                                        void *ctx,
                                        int32_t commutative,
                                        struct commcore_user_op **out);

/**
 * Frees a user reduction. NULL is a no-op.
 */
commcore_result commcore_user_op_free(struct commcore_user_op *op);

/**
 * Applies built-in reduction `op` over `bytes` bytes of `dtype` elements: `dst = src ∘
 * dst` when `src_left` is non-zero, else `dst = dst ∘ src`. The buffers must not
 * overlap; they need no alignment. `COMMCORE_ERR_UNSUPPORTED` when `op` is not defined
 * on `dtype`. Thread-safe.
 *
 * ```c
 * #include <commcore.h>
 * int example_reduce(void) {
 *     double in[2] = {1.5, 2.0}, inout[2] = {0.5, 1.0};
 *     if (commcore_reduce(COMMCORE_OP_SUM, COMMCORE_DT_F64, in, inout, sizeof in, 1))
 *         return 1;
 *     return inout[0] == 2.0 && inout[1] == 3.0 ? 0 : 1;
 * }
 * ```
 */
commcore_result commcore_reduce(commcore_reduce_op op,
                                commcore_datatype dtype,
                                const void *src,
                                void *dst,
                                size_t bytes,
                                int32_t src_left);

/**
 * Applies user reduction `op` (its callback, with `bytes / size(dtype)` elements) as
 * `commcore_reduce` does. Thread-safe as far as the callback is.
 */
commcore_result commcore_reduce_user(const struct commcore_user_op *op,
                                     commcore_datatype dtype,
                                     const void *src,
                                     void *dst,
                                     size_t bytes,
                                     int32_t src_left);

/**
 * A static, NUL-terminated description of `code` ("unknown result code" for a value
 * that is none of the codes). Thread-safe; never NULL.
 */
const char *commcore_strerror(commcore_result code);

/**
 * The detail of the last error on the calling thread (e.g. the offending token of a
 * control string), or "" when no call on this thread has failed. The string stays valid
 * until the next failing call on the same thread; copy it to keep it. Never NULL.
 */
const char *commcore_last_error(void);

/**
 * The library's version, e.g. "0.1.0": static, NUL-terminated, never NULL.
 */
const char *commcore_version(void);

/**
 * Creates an unbuilt schedule (stepping it yields END).
 */
commcore_result commcore_schedule_create(struct commcore_schedule **out);

/**
 * Frees a schedule. NULL is a no-op.
 */
commcore_result commcore_schedule_free(struct commcore_schedule *schedule);

/**
 * Builds into `schedule` this rank's steps of one call on `coll` (replacing what it held).
 * The algorithm is the one selected for the operation and message size. On an error the
 * schedule is left unbuilt.
 *
 * ```c
 * #include <commcore.h>
 * int example_schedule(const commcore_coll *coll) {
 *     commcore_coll_args args = {0};
 *     args.coll_op = COMMCORE_COLL_ALLREDUCE;
 *     args.dtype = COMMCORE_DT_F64;
 *     args.reduce_op = COMMCORE_OP_SUM;
 *     args.count = 16;
 *     commcore_schedule *schedule = NULL;
 *     commcore_step step;
 *     size_t scratch = 0;
 *     if (commcore_schedule_create(&schedule)) return 1;
 *     if (commcore_coll_schedule(coll, &args, schedule)) return 1;
 *     if (commcore_schedule_scratch_bytes(schedule, &scratch)) return 1;
 *     do {
 *         if (commcore_schedule_next(schedule, &step)) return 1;
 *         // SEND/RECV: start a transfer; REDUCE/COPY/WAIT: complete them first.
 *     } while (step.kind != COMMCORE_STEP_END);
 *     return commcore_schedule_free(schedule);
 * }
 * ```
 */
commcore_result commcore_coll_schedule(const struct commcore_coll *coll,
                                       const struct commcore_coll_args *args,
                                       struct commcore_schedule *schedule);

/**
 * Writes the provider of the built schedule, as `commcore_coll_provider` names it, without
 * building anything: the component to `*module` and the algorithm to `*algorithm` (static
 * strings). `COMMCORE_ERR_STATE` for a schedule not built (or whose build failed).
 */
commcore_result commcore_schedule_provider(const struct commcore_schedule *schedule,
                                           const char **module,
                                           const char **algorithm);

/**
 * Writes the scratch bytes the built schedule needs to `*bytes`.
 */
commcore_result commcore_schedule_scratch_bytes(const struct commcore_schedule *schedule,
                                                size_t *bytes);

/**
 * Starts a built schedule over: its steps come again from the first, as for another call
 * with the same arguments (the block lists were copied when it was built). A host that
 * calls the same collective over and over keeps built schedules and rewinds them instead
 * of building each call. `COMMCORE_ERR_STATE` for a schedule not built (or whose build
 * failed). No allocation.
 *
 * ```c
 * #include <commcore.h>
 * int example_rewind(commcore_schedule *built) {
 *     commcore_step step;
 *     if (commcore_schedule_rewind(built)) return 1;
 *     do {
 *         if (commcore_schedule_next(built, &step)) return 1;
 *     } while (step.kind != COMMCORE_STEP_END);
 *     return 0;
 * }
 * ```
 */
commcore_result commcore_schedule_rewind(struct commcore_schedule *schedule);

/**
 * Writes the schedule's next step to `*step` (END once finished, and again on every later
 * call). No allocation; the hot path of a collective.
 */
commcore_result commcore_schedule_next(struct commcore_schedule *schedule,
                                       struct commcore_step *step);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* COMMCORE_H */

/** The group id of a process word (bits 32-47). */
#define COMMCORE_PROCESS_PGID(word) ((uint16_t)(((uint64_t)(word) >> 32) & 0xffffu))
/** The lpid of a process word (bits 0-31). */
#define COMMCORE_PROCESS_LPID(word) ((uint32_t)((uint64_t)(word) & 0xffffffffu))
/** The process word of (pgid, lpid). */
#define COMMCORE_PROCESS(pgid, lpid) ((((uint64_t)(pgid)) << 32) | (uint64_t)(uint32_t)(lpid))
