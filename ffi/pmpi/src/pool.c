/* Context ids a parent's duplicates hand on to its later duplicates, so that a program that
 * duplicates a communicator, runs collectives on the duplicate and frees it, over and over
 * (a library's object per call, a thread's scratch communicator), agrees no id after the
 * first few: the agreement was the one allreduce our state added to the host's creation.
 *
 * Each intra-communicator parent has CC_POOL_SLOTS slots. Its duplicate number i (counted by
 * every member alike: constructors are collective over the parent and ordered on it) is tied
 * to slot i mod CC_POOL_SLOTS. When the duplicate is done with its id (freed, its last
 * nonblocking call ended), the id is parked in its slot instead of going back to the space:
 * still taken there, so no agreement of this process can hand it out, and in no store.
 * At every CC_POOL_SLOTS-th duplicate (i > 0), inside the parent's MPI_Comm_dup, every member
 * runs one allreduce on the parent (BAND over each slot's id and its complement): a slot is
 * offered when every member has the same id parked in it. Duplicates i .. i + SLOTS - 1 then
 * take their slot's id if it was offered, without agreeing: every member of a duplicate is a
 * member of the parent and took the same decision from the same allreduce; the id is free
 * everywhere (parked: no live communicator of any member has it). Why this is sound:
 * - Parking follows frees, which are not ordered with the parent's constructors across
 *   processes (another thread may free): the allreduce, not the local state, decides, and
 *   it runs inside a constructor on the parent, so every member runs it at the same index.
 *   An id one member has parked and another not yet is not offered; a slot parked but not
 *   offered is given back to the space, so members that drifted apart start afresh.
 * - No agreement is skipped that decides anything but the id: offered ids come from a
 *   duplicate of the same group that was served on every member (its id was stored), so the
 *   "every member can serve it" word of the agreement would say yes (short of memory).
 * - Threads: the allreduce holds no lock and touches none of core's mask, so it cannot join
 *   a hold-and-wait cycle of the multithreaded agreement; it is one more collective on the
 *   parent, inside the parent's own collective. Slots are changed under the pool's lock
 *   (constructor thread, and whichever thread frees a duplicate), never across an MPI call.
 * - A nonblocking first call still goes to the host (unchanged; the state is made at the
 *   first blocking call). Inter-communicators, splits and the other constructors agree as
 *   before: their members are not all the parent's, or are paired across two groups.
 * - Exhaustion: at most CC_POOL_PARKED ids are parked process-wide (an agreement cannot take
 *   a parked id); beyond it, ids go back to the space. A freed parent gives its parked ids
 *   back; duplicates that outlive it give theirs back when done.
 * - The selection (commcore's coll, with its kept and recorded schedules) is parked with
 *   the id and taken with it: every duplicate of one parent has the parent's group, so the
 *   same rank, size and nodes make the same selection; building it and the first call's
 *   schedule cost about 10 µs a communicator (dup + allreduce + free at 2 processes: 25
 *   against the host's 15 µs with the id derived). The group's world ranks (the shared
 *   shadow's peers) are parked too: a state made from a parked id, selection and ranks
 *   asks the host for its rank and size only (before: 9 host calls, each taking MPICH's
 *   global lock under threads). Instructions per dup + allreduce + free at 1 process,
 *   host's / ours: MPICH 8,787 / 13,497 -> 11,934; Open MPI 32,319 / 37,693 -> 36,791.
 * Cost: one allreduce of 2 x CC_POOL_SLOTS words per CC_POOL_SLOTS duplicates, made or not
 * made collectives on. */
#include <stdlib.h>

#include "pmpi.h"

#define CC_POOL_PARKED (CC_CID_LIMIT / 4)

enum { SLOT_EMPTY, SLOT_LIVE, SLOT_PARKED };

struct cc_pool {
    pthread_mutex_t lock;
    int refs;            /* the parent, and each duplicate tied to a slot */
    int parent_gone;
    unsigned window;     /* index / CC_POOL_SLOTS of the last allreduce */
    uint32_t offered;    /* slots the last allreduce found parked alike everywhere */
    int state[CC_POOL_SLOTS];
    int64_t cid[CC_POOL_SLOTS];
    cc_coll *coll[CC_POOL_SLOTS]; /* parked with the id: the selection, its kept schedules */
    int *ranks[CC_POOL_SLOTS];    /* and the group's world ranks (the shared shadow's) */
};

static int parked_ids; /* process-wide (atomic) */
static unsigned long derived_ids; /* ids taken from a pool, for the report (atomic) */

cc_pool *cc_pool_new(void) {
    cc_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pthread_mutex_init(&pool->lock, NULL);
    pool->refs = 1;
    for (int s = 0; s < CC_POOL_SLOTS; s++)
        pool->cid[s] = -1;
    return pool;
}

/* Drops one reference; the caller holds the lock, which this releases. */
static void unref_locked(cc_pool *pool) {
    int last = --pool->refs == 0;
    cc_unlock(&pool->lock);
    if (last) { /* no slot is parked: the parent gave them back, and children park none */
        pthread_mutex_destroy(&pool->lock);
        free(pool);
    }
}

/* Gives slot s's parked id back to the space; under the lock. */
static void unpark(cc_pool *pool, int s) {
    cc_cid_free(pool->cid[s]);
    cc_coll_free(pool->coll[s]);
    free(pool->ranks[s]);
    pool->coll[s] = NULL;
    pool->ranks[s] = NULL;
    __atomic_fetch_sub(&parked_ids, 1, __ATOMIC_RELAXED);
    pool->cid[s] = -1;
    pool->state[s] = SLOT_EMPTY;
}

void cc_pool_window(cc_pool *pool, MPI_Comm parent, unsigned index) {
    if (index == 0 || index % CC_POOL_SLOTS)
        return;
    uint32_t w[2 * CC_POOL_SLOTS] = {0};
    uint32_t parked = 0;
    if (!pool) { /* no memory for one here: this member offers nothing, and still joins */
        PMPI_Allreduce(MPI_IN_PLACE, w, 2 * CC_POOL_SLOTS, MPI_UINT32_T, MPI_BAND, parent);
        return;
    }
    cc_lock(&pool->lock);
    for (int s = 0; s < CC_POOL_SLOTS; s++) {
        int p = pool->state[s] == SLOT_PARKED;
        parked |= (uint32_t)p << s;
        w[2 * s] = p ? (uint32_t)pool->cid[s] : 0;
        w[2 * s + 1] = p ? ~(uint32_t)pool->cid[s] : 0;
    }
    cc_unlock(&pool->lock);
    /* Every member runs it here, at the same index (we are inside the parent's dup). */
    int rc = PMPI_Allreduce(MPI_IN_PLACE, w, 2 * CC_POOL_SLOTS, MPI_UINT32_T, MPI_BAND, parent);
    uint32_t offered = 0;
    for (int s = 0; rc == MPI_SUCCESS && s < CC_POOL_SLOTS; s++)
        if ((w[2 * s] & w[2 * s + 1]) == 0 && (w[2 * s] | w[2 * s + 1]) == ~0u)
            offered |= 1u << s;
    cc_lock(&pool->lock);
    pool->window = index / CC_POOL_SLOTS;
    pool->offered = offered;
    /* Parked here but not everywhere (or the allreduce failed): back to the space. Parked
     * slots changed only by this thread meanwhile (frees park LIVE slots only). */
    for (int s = 0; s < CC_POOL_SLOTS; s++)
        if ((parked >> s & 1) && !(offered >> s & 1))
            unpark(pool, s);
    cc_unlock(&pool->lock);
}

int cc_pool_take(cc_pool *pool, unsigned index, int64_t *cid, cc_coll **coll, int **ranks) {
    int s = (int)(index % CC_POOL_SLOTS);
    *cid = -1;
    *coll = NULL;
    *ranks = NULL;
    cc_lock(&pool->lock);
    int offered = pool->window == index / CC_POOL_SLOTS && (pool->offered >> s & 1);
    if (offered && pool->state[s] == SLOT_PARKED) {
        *cid = pool->cid[s];
        *coll = pool->coll[s];
        *ranks = pool->ranks[s];
        pool->coll[s] = NULL;
        pool->ranks[s] = NULL;
        __atomic_fetch_sub(&parked_ids, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&derived_ids, 1, __ATOMIC_RELAXED);
    } else if (pool->state[s] != SLOT_EMPTY) {
        cc_unlock(&pool->lock);
        return -1; /* an earlier duplicate's, still live (or parked, not offered to it) */
    }
    pool->offered &= ~(1u << s);
    pool->state[s] = SLOT_LIVE;
    pool->cid[s] = *cid;
    pool->refs++;
    cc_unlock(&pool->lock);
    return s;
}

void cc_pool_put(cc_pool *pool, int s, int64_t cid, cc_coll *coll, int *ranks) {
    cc_lock(&pool->lock);
    int park = cid >= 0 && !pool->parent_gone &&
               __atomic_add_fetch(&parked_ids, 1, __ATOMIC_RELAXED) <= CC_POOL_PARKED;
    if (cid >= 0 && !park && !pool->parent_gone)
        __atomic_fetch_sub(&parked_ids, 1, __ATOMIC_RELAXED);
    if (cid >= 0 && !park)
        cc_cid_free(cid);
    if (!park) {
        cc_coll_free(coll);
        free(ranks);
    }
    pool->state[s] = park ? SLOT_PARKED : SLOT_EMPTY;
    pool->cid[s] = park ? cid : -1;
    pool->coll[s] = park ? coll : NULL;
    pool->ranks[s] = park ? ranks : NULL;
    unref_locked(pool);
}

void cc_pool_parent_gone(cc_pool *pool) {
    cc_lock(&pool->lock);
    pool->parent_gone = 1;
    for (int s = 0; s < CC_POOL_SLOTS; s++)
        if (pool->state[s] == SLOT_PARKED)
            unpark(pool, s);
    unref_locked(pool);
}

unsigned long cc_pool_derived(void) {
    return __atomic_load_n(&derived_ids, __ATOMIC_RELAXED);
}
