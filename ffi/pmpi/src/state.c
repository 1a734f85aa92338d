/* Per-communicator state: a shadow communicator for our traffic, commcore's selection over
 * the members' node ids, and a context id agreed through PMPI_Allreduce and kept in
 * commcore's CID store. Cached on the user's communicator as an attribute whose copy
 * callback does not copy (a duplicate gets state of its own) and whose delete callback frees.
 *
 * Made at the communicator's first blocking collective, not by its constructor: libraries
 * that duplicate a communicator per object and never run a collective on most of them pay
 * the host's creation and one local attribute, nothing more (made eagerly, the state cost a
 * host PMPI_Comm_dup and two allreduces on every creation: 2-4x the host's own). The
 * wrapped constructors only mark the new communicator with its kind, for the report.
 * - Every member makes the state at the same call: members run one communicator's
 *   collectives in one order, so the first blocking one is the same call everywhere.
 * - A nonblocking first call goes to the host (making the state blocks, and a nonblocking
 *   call may not wait for its peers); the next blocking call makes it. Constructors of
 *   communicators with a topology or hints, seldom made in loops, still make it at once,
 *   so that their first calls may be nonblocking.
 * - One agreement when the state is made: the context id's allreduce carries one more
 *   word, whether this member can serve the communicator, so that all members serve it or
 *   none does (before: a second allreduce).
 * - None for most duplicates of an intra-communicator: a duplicate takes the id an earlier
 *   duplicate of the same parent left in its pool when every member left the same one
 *   there (pool.c: one allreduce on the parent per 32 duplicates decides it, inside the
 *   parent's MPI_Comm_dup). Threads creating and freeing duplicates of their own parents
 *   (the threaded row) then agree nothing but the first 32 per parent.
 * - No host creation for an intra-communicator within the world: its traffic goes over
 *   MPI_COMM_WORLD's shadow, peers named by world rank, in the lane of tags its context id
 *   names (id x CC_TAG_SPAN + call; the host's MPI_TAG_UB must hold every lane, else each
 *   gets a PMPI_Comm_dup as before). Lanes never mix: an id is live on every member of its
 *   communicator until each has freed it, and a member frees only after its last call on
 *   it matched. The agreement then runs on the user's communicator (we are inside its
 *   collective, so nothing else runs on it). Under threads this also keeps our state out
 *   of the host's own multithreaded creation, which in Open MPI 4.1 stalled for a minute
 *   when our shadows' duplicates joined the threads' own.
 * - An inter-communicator's shadow is its merged pair, made at its first collective too.
 * - Threads: the agreement's priority is ⟨parent key, place among the parent's children⟩
 *   (constructors are collective over the parent, so every member counts alike; the group
 *   constructor uses its tag, an inter-communicator its tag and both groups' lowest world
 *   ranks). Keys are 32-bit mixes: two communicators of one process whose keys collide
 *   and whose first collectives run at once on two threads would tie (commcore refuses a
 *   duplicate priority before its round, so the member's peers would wait in theirs). A
 *   communicator this library never saw made (MPI_Comm_idup, dynamic processes) has no
 *   place its members agree on, nor have its descendants: under threads they all tie, so
 *   there this family stays with the host (alike on every member: same constructors).
 *   The priority also picks the agreement's eager lane (cc_abi.c): threads whose
 *   communicators descend from different parents, or are different children of one, agree
 *   in one round each instead of taking turns on one eager segment. Every member derives
 *   the pair alike (so the lane too), inter-communicators from their tag and groups; the
 *   loose family shares one lane, as it runs only where threads do not. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "pmpi.h"

static int keyval = MPI_KEYVAL_INVALID;
/* Node id of every rank of MPI_COMM_WORLD: the world rank of its node's first process. */
static uint32_t *world_nodes;
static int world_size;
/* The last communicator looked up, per thread: programs call collectives on one
 * communicator over and over, and an attribute lookup costs more than the rest of a small
 * call's set-up. Any thread's freeing of a communicator bumps `states_gone`, which makes
 * every thread's entry stale (a freed handle may name a new communicator). */
static unsigned states_gone;
static _Thread_local MPI_Comm last_comm = MPI_COMM_NULL;
static _Thread_local cc_comm *last_state;
static _Thread_local unsigned last_gone;
/* The mark this thread made last: a communicator's first collective usually follows its
 * constructor on the same thread, and then needs no attribute lookup (under MPICH's
 * threads each lookup takes the global lock). Stale, as above, after any free. */
static _Thread_local MPI_Comm made_comm = MPI_COMM_NULL;
static _Thread_local struct cc_mark *made_mark;
static _Thread_local unsigned made_gone;

/* The attribute every communicator this library saw made carries, from its constructor to
 * its free: its kind, its place among its parent's children (the priority of its context
 * id's agreement under threads), and whether its state was made. */
enum { MARK_PENDING, MARK_SERVED, MARK_UNSERVED };
typedef struct cc_mark {
    int kind;          /* enum cc_made, or -1 (MPI_COMM_WORLD and MPI_COMM_SELF) */
    int state;
    int64_t cid;       /* MARK_SERVED: the CID store's key of the state */
    uint32_t key;      /* this communicator's, alike on every member: its children's parent */
    uint32_t prio_parent, prio_tag; /* its agreement's priority, alike on every member */
    unsigned children; /* constructors run on it so far (collective: alike on every member) */
    int loose;         /* it or an ancestor was never seen made: no priority of its own */
    unsigned dups;     /* its duplicates so far (alike on every member) */
    cc_pool *pool;     /* ids its duplicates hand on (pool.c), made at its first duplicate */
    cc_pool *tied;     /* a duplicate: its parent's pool, until its state takes the tie */
    int slot;
    int64_t slot_cid;  /* the id it takes from its slot, or -1: it agrees */
    cc_coll *slot_coll; /* the selection parked with that id, or NULL */
    int *slot_ranks;    /* and the group's world ranks, or NULL */
} cc_mark;

/* Keys of predefined and inter-communicators' families, apart from derived ones. */
#define CC_KEY_WORLD 1u
#define CC_KEY_SELF 2u
#define CC_KEY_INTER 0xfffffffeu
#define CC_KEY_LOOSE 0xfffffffdu /* a parent this library never saw made */

/* Mixes two words into a key (murmur3's finaliser over their combination). */
static uint32_t mix(uint32_t a, uint32_t b) {
    uint32_t h = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u + (a << 6) + (a >> 2));
    h ^= h >> 16, h *= 0x85ebca6bu, h ^= h >> 13, h *= 0xc2b2ae35u, h ^= h >> 16;
    return h;
}

static cc_mark *mark_of(MPI_Comm comm) {
    void *value = NULL;
    int flag = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_get_attr(comm, keyval, &value, &flag) != MPI_SUCCESS)
        return NULL;
    return flag ? value : NULL;
}

void cc_comm_ref(cc_comm *cs) {
    __atomic_fetch_add(&cs->refs, 1, __ATOMIC_RELAXED);
}

void cc_comm_unref(cc_comm *cs) {
    if (__atomic_sub_fetch(&cs->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    if (cs->pool) { /* its last call ended: its id and selection may serve a later sibling */
        cc_cid_unstore(cs->cid);
        cc_pool_put(cs->pool, cs->pool_slot, cs->cid, cs->coll, cs->shadow_ranks);
        cs->shadow_ranks = NULL;
    } else {
        cc_cid_release(cs->cid);
        cc_coll_free(cs->coll);
    }
    if (!cs->shared)
        PMPI_Comm_free(&cs->shadow);
    free(cs->shadow_ranks);
    free(cs->scratch);
    cc_memo_free(cs);
    free(cs);
}

static int delete_state(MPI_Comm comm, int key, void *value, void *extra) {
    (void)comm, (void)key, (void)extra;
    __atomic_fetch_add(&states_gone, 1, __ATOMIC_RELEASE);
    cc_mark *mark = value;
    cc_comm *cs = mark->state == MARK_SERVED ? cc_cid_lookup(mark->cid) : NULL;
    if (cs)
        cc_comm_unref(cs); /* nonblocking calls still running keep it to their end */
    if (mark->tied) /* no state took its slot: its id (if it took one) goes back */
        cc_pool_put(mark->tied, mark->slot, mark->slot_cid, mark->slot_coll,
                    mark->slot_ranks);
    if (mark->pool)
        cc_pool_parent_gone(mark->pool);
    free(mark);
    return MPI_SUCCESS;
}

/* The agreement's allreduces, each with one word more: whether every member can serve the
 * communicator so far, in the reduction's own terms (AND: all ones; MAX: 0; MIN: 1). */
#define CC_AGREE_WORDS 256
typedef struct agreement {
    MPI_Comm shadow;
    int ok; /* in: this member's; out: every member's */
} agreement;

static int shadow_allreduce(uint32_t *words, size_t n, int op, void *ctx) {
    agreement *a = ctx;
    uint32_t all[CC_AGREE_WORDS + 1];
    if (n > CC_AGREE_WORDS)
        return -1;
    MPI_Op mop = op == 0 ? MPI_BAND : op == 1 ? MPI_MAX : MPI_MIN;
    memcpy(all, words, n * sizeof *words);
    all[n] = op == 0 ? (a->ok ? ~0u : 0) : op == 1 ? (a->ok ? 0 : 1) : (a->ok ? 1 : 0);
    if (PMPI_Allreduce(MPI_IN_PLACE, all, (int)n + 1, MPI_UINT32_T, mop, a->shadow) !=
        MPI_SUCCESS)
        return -1;
    memcpy(words, all, n * sizeof *words);
    a->ok = op == 0 ? all[n] == ~0u : op == 1 ? all[n] == 0 : all[n] == 1;
    return 0;
}

/* World ranks of the members of `group` (-1: outside the world: spawned or connected). */
static int *world_ranks(MPI_Group group, int size) {
    int *ranks = malloc(2 * (size_t)size * sizeof *ranks + 1);
    MPI_Group world_group;
    if (!ranks || PMPI_Comm_group(MPI_COMM_WORLD, &world_group) != MPI_SUCCESS) {
        free(ranks);
        return NULL;
    }
    for (int i = 0; i < size; i++)
        ranks[size + i] = i;
    PMPI_Group_translate_ranks(group, size, ranks + size, world_group, ranks);
    PMPI_Group_free(&world_group);
    for (int i = 0; i < size; i++)
        if (ranks[i] == MPI_UNDEFINED || ranks[i] >= world_size)
            ranks[i] = -1;
    return ranks;
}

/* Node ids of members with world ranks `world`, from the world's table; members outside
 * the world count as nodes of their own. */
static uint32_t *node_ids(const int *world, int size) {
    uint32_t *nodes = world ? malloc((size_t)size * sizeof *nodes + 1) : NULL;
    for (int i = 0; nodes && i < size; i++)
        nodes[i] = world[i] >= 0 ? world_nodes[world[i]] : (uint32_t)(world_size + i);
    return nodes;
}

/* The shadow every intra-communicator within the world shares (MPI_COMM_WORLD's own), or
 * MPI_COMM_NULL when the host's tags cannot hold a lane per context id. */
static MPI_Comm shared_shadow = MPI_COMM_NULL;
static int tag_lanes; /* tags are lane (context id) x CC_TAG_SPAN + call */

static int in_world(const int *world, int size) {
    for (int i = 0; world && i < size; i++)
        if (world[i] < 0)
            return 0;
    return world != NULL;
}

/* A duplicate's state from its parent's pool: the id, the selection and the group's world
 * ranks parked by an earlier duplicate of the same group; only its rank and size are asked
 * of the host. NULL when the store refuses the id. */
static cc_comm *derived(MPI_Comm comm, cc_comm *cs, int64_t given, cc_coll **given_coll,
                        int **given_ranks) {
    PMPI_Comm_rank(comm, &cs->rank);
    PMPI_Comm_size(comm, &cs->size);
    cs->shadow = shared_shadow;
    cs->shared = 1;
    cs->shadow_ranks = *given_ranks, *given_ranks = NULL;
    cs->coll = *given_coll, *given_coll = NULL;
    cs->cid = given;
    if (cc_cid_store(cs->cid, cs) != 0) { /* the id stays the pool's: the mark gives it back */
        cc_coll_free(cs->coll);
        free(cs->shadow_ranks);
        free(cs);
        return NULL;
    }
    cs->tag_base = tag_lanes ? (int)cs->cid * CC_TAG_SPAN : 0;
    return cs;
}

/* `given`: the id a duplicate takes from its parent's pool (no agreement), or -1;
 * `*given_coll`, `*given_ranks`: the selection and world ranks parked with it, which the
 * state takes (else left). */
static cc_comm *create(MPI_Comm comm, uint32_t prio_parent, uint32_t prio_tag, int64_t given,
                       cc_coll **given_coll, int **given_ranks) {
    cc_comm *cs = calloc(1, sizeof *cs);
    if (!cs)
        return NULL;
    cs->shadow = MPI_COMM_NULL;
    cs->cid = -1;
    cs->refs = 1;
    if (given >= 0 && *given_coll && *given_ranks && shared_shadow != MPI_COMM_NULL)
        return derived(comm, cs, given, given_coll, given_ranks);
    PMPI_Comm_test_inter(comm, &cs->inter);
    PMPI_Comm_rank(comm, &cs->rank);
    PMPI_Comm_size(comm, &cs->size);
    MPI_Group group, remote_group;
    int *world = NULL, *remote_world = NULL;
    PMPI_Comm_group(comm, &group);
    world = world_ranks(group, cs->size);
    PMPI_Group_free(&group);
    if (cs->inter) {
        int merged_rank;
        PMPI_Comm_remote_size(comm, &cs->remote_size);
        PMPI_Comm_remote_group(comm, &remote_group);
        remote_world = world_ranks(remote_group, cs->remote_size);
        PMPI_Group_free(&remote_group);
        if (PMPI_Intercomm_merge(comm, 0, &cs->shadow) != MPI_SUCCESS)
            goto fail;
        PMPI_Comm_rank(cs->shadow, &merged_rank);
        cs->local_offset = merged_rank - cs->rank;
        cs->remote_offset = cs->local_offset == 0 ? cs->size : 0;
    } else if (shared_shadow != MPI_COMM_NULL && in_world(world, cs->size)) {
        /* No host creation: the world's shadow, our traffic in this context id's lane of
         * tags, peers named by their world ranks. */
        cs->shadow = shared_shadow;
        cs->shared = 1;
        cs->shadow_ranks = world;
    } else if (PMPI_Comm_dup(comm, &cs->shadow) != MPI_SUCCESS) {
        goto fail;
    }
    /* Errors on our traffic come back as codes; the wrappers report them through the
     * user's communicator, whose handler the user may change at any time. */
    if (!cs->shared)
        PMPI_Comm_set_errhandler(cs->shadow, MPI_ERRORS_RETURN);
    int level = MPI_THREAD_SINGLE;
    uint32_t *nodes = node_ids(world, cs->size), *remote_nodes = NULL;
    if (cs->inter)
        remote_nodes = node_ids(remote_world, cs->remote_size);
    PMPI_Query_thread(&level);
    int thread_level = level == MPI_THREAD_MULTIPLE     ? 3
                       : level == MPI_THREAD_SERIALIZED ? 2
                       : level == MPI_THREAD_FUNNELED   ? 1
                                                        : 0;
    if (given >= 0 && *given_coll) /* a sibling's: same group, same selection */
        cs->coll = *given_coll, *given_coll = NULL;
    else if (nodes && (!cs->inter || remote_nodes))
        cs->coll = cc_coll_new((uint32_t)cs->rank, (uint32_t)cs->size, cs->inter,
                               (uint32_t)cs->remote_size, nodes, remote_nodes, thread_level);
    free(nodes);
    free(remote_nodes);
    free(remote_world);
    if (!cs->shared)
        free(world);
    world = NULL;
    /* Every member reaches the agreement, whether its selection succeeded or not; the CID
     * store takes any CID of our space, so a member that can serve before it still can. A
     * shared shadow is not ours alone: the agreement runs on the user's communicator, which
     * runs nothing else now (we are inside its collective). */
    agreement a = {.shadow = cs->shared ? comm : cs->shadow, .ok = cs->coll != NULL};
    if (given >= 0) /* the pool's: every member takes it, and a sibling was served */
        cs->cid = a.ok ? given : -1;
    else
        cs->cid = cc_cid_agree(shadow_allreduce, &a, prio_parent, prio_tag);
    if (cs->cid < 0 || !a.ok || cc_cid_store(cs->cid, cs) != 0) {
        if (given >= 0)
            cs->cid = -1; /* still the pool's: the mark gives it back */
        goto fail;
    }
    cs->tag_base = tag_lanes ? (int)cs->cid * CC_TAG_SPAN : 0;
    return cs;
fail:
    if (cs->cid >= 0)
        cc_cid_release(cs->cid);
    if (cs->coll)
        cc_coll_free(cs->coll);
    if (cs->shadow != MPI_COMM_NULL && !cs->shared)
        PMPI_Comm_free(&cs->shadow);
    free(cs->shadow_ranks);
    free(world);
    free(remote_world);
    free(cs);
    return NULL;
}

/* Makes the state of `comm` (collective over its members) and records it in its mark. */
static cc_comm *attach(MPI_Comm comm, cc_mark *mark) {
    cc_comm *cs = cc_threaded && mark->loose
                      ? NULL
                      : create(comm, mark->prio_parent, mark->prio_tag,
                               mark->tied ? mark->slot_cid : -1, &mark->slot_coll,
                               &mark->slot_ranks);
    if (cs && mark->tied) { /* the state gives the slot back when its last call ends */
        cs->pool = mark->tied, cs->pool_slot = mark->slot;
        mark->tied = NULL;
        free(mark->slot_ranks); /* parked without a selection: not taken */
        mark->slot_ranks = NULL;
    }
    mark->state = cs ? MARK_SERVED : MARK_UNSERVED;
    mark->cid = cs ? cs->cid : -1;
    if (mark->kind >= 0)
        cc_count_made_state(mark->kind, cs != NULL);
    return cs;
}

/* A new mark for a communicator of `kind`, or NULL (then it is served as one this library
 * never saw made). */
static cc_mark *new_mark(MPI_Comm comm, int kind, uint32_t key, uint32_t prio_parent,
                         uint32_t prio_tag, int loose) {
    cc_mark *mark = malloc(sizeof *mark);
    if (!mark)
        return NULL;
    *mark = (cc_mark){kind, MARK_PENDING, -1, key, prio_parent, prio_tag, 0, loose, 0, NULL,
                      NULL, -1, -1, NULL, NULL};
    if (PMPI_Comm_set_attr(comm, keyval, mark) != MPI_SUCCESS) {
        free(mark);
        return NULL;
    }
    made_comm = comm, made_mark = mark;
    made_gone = __atomic_load_n(&states_gone, __ATOMIC_ACQUIRE);
    return mark;
}

/* The lowest world rank in `group`, or world_size when it has none. */
static uint32_t lowest_world_rank(MPI_Group group) {
    MPI_Group world_group;
    int size = 0, lowest = world_size;
    PMPI_Group_size(group, &size);
    int *ranks = malloc(2 * (size_t)size * sizeof *ranks);
    if (ranks && PMPI_Comm_group(MPI_COMM_WORLD, &world_group) == MPI_SUCCESS) {
        for (int i = 0; i < size; i++)
            ranks[i] = i;
        PMPI_Group_translate_ranks(group, size, ranks, world_group, ranks + size);
        PMPI_Group_free(&world_group);
        for (int i = 0; i < size; i++)
            if (ranks[size + i] != MPI_UNDEFINED && ranks[size + i] < lowest)
                lowest = ranks[size + i];
    }
    free(ranks);
    return (uint32_t)lowest;
}

/* Both groups of an inter-communicator name it alike: the user's tag and the two groups'
 * lowest world ranks, in order. Worked out only under threads (the priority matters only
 * there): a few local group calls. */
static uint32_t inter_tag(MPI_Comm inter, int tag) {
    if (!cc_threaded)
        return (uint32_t)tag;
    MPI_Group local, remote;
    PMPI_Comm_group(inter, &local);
    PMPI_Comm_remote_group(inter, &remote);
    uint32_t a = lowest_world_rank(local), b = lowest_world_rank(remote);
    PMPI_Group_free(&local);
    PMPI_Group_free(&remote);
    return mix(mix((uint32_t)tag, a < b ? a : b), a < b ? b : a);
}

/* Marks `made`, just made by a constructor of `kind` on `parent` (`tag`: the user's, for
 * the group and inter-communicator constructors); NULL when nothing was made here. */
static cc_mark *mark_child(MPI_Comm parent, MPI_Comm made, int kind, int tag) {
    cc_mark *p = mark_of(parent);
    uint32_t parent_key = p ? p->key : CC_KEY_LOOSE;
    /* Every member of the parent counts the constructor, made a communicator or not. The
     * group constructor is collective over the new group only: its tag orders it. */
    uint32_t index = kind == CC_MADE_CREATE_GROUP ? (uint32_t)tag | 0x80000000u
                                                  : p ? p->children++ : 0;
    if (made == MPI_COMM_NULL)
        return NULL;
    cc_count_made(kind);
    if (kind == CC_MADE_INTERCOMM_CREATE) {
        uint32_t t = inter_tag(made, tag);
        return new_mark(made, kind, mix(CC_KEY_INTER, t), CC_KEY_INTER, t, 0);
    }
    cc_mark *mark = new_mark(made, kind, mix(parent_key, index), parent_key, index,
                             !p || p->loose);
    int inter = 1;
    if (kind != CC_MADE_DUP || !p || p->loose || PMPI_Comm_test_inter(parent, &inter) ||
        inter)
        return mark;
    /* A duplicate of an intra-communicator: its id may come from the parent's pool. The
     * window's allreduce runs on every member whatever this one's memory allows. */
    unsigned dup = p->dups++;
    if (!p->pool && dup == 0)
        p->pool = cc_pool_new();
    if (dup > 0 && dup % CC_POOL_SLOTS == 0)
        cc_pool_window(p->pool, parent, dup);
    int64_t cid = -1;
    cc_coll *coll = NULL;
    int *ranks = NULL;
    int slot = mark && p->pool ? cc_pool_take(p->pool, dup, &cid, &coll, &ranks) : -1;
    if (slot >= 0)
        mark->tied = p->pool, mark->slot = slot, mark->slot_cid = cid, mark->slot_coll = coll,
        mark->slot_ranks = ranks;
    return mark;
}

void cc_comm_mark(MPI_Comm parent, MPI_Comm made, int kind, int tag) {
    if (cc_enabled)
        mark_child(parent, made, kind, tag);
}

void cc_comm_attach(MPI_Comm parent, MPI_Comm made) {
    cc_mark *mark = cc_enabled ? mark_child(parent, made, CC_MADE_OTHER, 0) : NULL;
    if (mark)
        attach(made, mark);
}

cc_comm *cc_comm_get(MPI_Comm comm, int may_create) {
    if (comm == MPI_COMM_NULL)
        return NULL;
    unsigned gone = __atomic_load_n(&states_gone, __ATOMIC_ACQUIRE);
    if (comm == last_comm && gone == last_gone)
        return last_state;
    cc_mark *mark = comm == made_comm && gone == made_gone ? made_mark : mark_of(comm);
    cc_comm *cs;
    if (!mark || mark->state == MARK_PENDING) {
        /* No state yet: a communicator from a constructor we do not wrap (no mark) or one
         * a wrapped constructor marked. Not remembered until it has state. */
        if (!may_create)
            return NULL;
        if (!mark) {
            /* Seen first here: its members agree on nothing that names it but its group
             * and the order of these calls, so its priority is the loose family's. */
            cc_count_made(CC_MADE_OTHER);
            mark = new_mark(comm, CC_MADE_OTHER, CC_KEY_LOOSE, CC_KEY_LOOSE, 0, 1);
        }
        cs = mark ? attach(comm, mark) : NULL;
    } else {
        cs = mark->state == MARK_SERVED ? cc_cid_lookup(mark->cid) : NULL;
    }
    last_comm = comm;
    last_state = cs;
    last_gone = gone;
    return cs;
}

/* Ranks that share cores wait for each other's turn on a core at every round of a
 * schedule, so there the algorithms with the fewest dependent rounds win: bcast, alltoall
 * and alltoallv linear, allreduce and allgatherv by recursive doubling (Open MPI, 8 ranks
 * on 2 cores, µs: bcast 64 KiB 627 -> 150, allreduce 64 KiB 1058 -> 327, alltoall 8 B
 * 76 -> 32; 4 ranks: 35 -> 26, 189 -> 92, 14 -> 8; 2 ranks on 2 cores unchanged). MPICH
 * busy-polls, so there a dependent round costs a scheduler time slice (about 4 ms): at 4
 * ranks on 2 cores alltoallv pairwise -> linear 10.3 -> 4.2 ms at 8 B, 17.9 -> 8.0 ms at
 * 64 KiB, allgatherv ring -> recursive doubling 24.0 -> 9.8 ms at 64 KiB (host: 4.0, 8.0,
 * 8.0 ms). Every rank of the job
 * takes the same table (ranks that select differently never match), so whether any node
 * has more ranks than cores is agreed. COMMCORE_COLL, when set, stands instead. */
static void prefer_few_rounds_when_oversubscribed(int node_size) {
    cpu_set_t cpus;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : (int)online;
    int over = online > 0 && node_size > cores;
    PMPI_Allreduce(MPI_IN_PLACE, &over, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (over)
        cc_abi_default_control("bcast:linear;alltoall:linear;alltoallv:linear;"
                               "allreduce:recursive_doubling;allgatherv:recursive_doubling");
}

int cc_state_init(void) {
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &keyval, NULL) !=
        MPI_SUCCESS)
        return -1;
    MPI_Comm node;
    int rank, leader = 0, zero = 0;
    MPI_Group world_group, node_group;
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    world_nodes = malloc((size_t)world_size * sizeof *world_nodes);
    if (!world_nodes ||
        PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) !=
            MPI_SUCCESS)
        return -1;
    int node_size = 1;
    PMPI_Comm_size(node, &node_size);
    prefer_few_rounds_when_oversubscribed(node_size);
    PMPI_Comm_group(node, &node_group);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    PMPI_Group_translate_ranks(node_group, 1, &zero, world_group, &leader);
    PMPI_Group_free(&node_group);
    PMPI_Group_free(&world_group);
    PMPI_Comm_free(&node);
    uint32_t mine = (uint32_t)leader;
    if (PMPI_Allgather(&mine, 1, MPI_UINT32_T, world_nodes, 1, MPI_UINT32_T, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        return -1;
    /* Tests of the hierarchical algorithms on one machine: COMMCORE_PMPI_NODES=K labels the
     * world's ranks as K nodes of consecutive ranks. */
    const char *fake = getenv("COMMCORE_PMPI_NODES");
    int k = fake ? atoi(fake) : 0;
    for (int i = 0; k > 0 && i < world_size; i++)
        world_nodes[i] = (uint32_t)((long)i * k / world_size);
    cc_mark *world = new_mark(MPI_COMM_WORLD, -1, CC_KEY_WORLD, 0, CC_KEY_WORLD, 0);
    cc_mark *self = new_mark(MPI_COMM_SELF, -1, CC_KEY_SELF, 0, CC_KEY_SELF, 0);
    /* The world's shadow is every intra-communicator's within it when the host's tags hold
     * a lane of CC_TAG_SPAN per context id. */
    int *tag_ub = NULL, flag = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    cc_comm *world_state = world ? attach(MPI_COMM_WORLD, world) : NULL;
    if (world_state && flag && tag_ub && *tag_ub / CC_TAG_SPAN >= CC_CID_LIMIT) {
        tag_lanes = 1;
        world_state->tag_base = (int)world_state->cid * CC_TAG_SPAN;
        shared_shadow = world_state->shadow;
    }
    if (self)
        attach(MPI_COMM_SELF, self);
    return 0;
}

void cc_state_finalize(void) {
    if (keyval == MPI_KEYVAL_INVALID)
        return;
    PMPI_Comm_delete_attr(MPI_COMM_SELF, keyval);
    PMPI_Comm_delete_attr(MPI_COMM_WORLD, keyval);
    PMPI_Comm_free_keyval(&keyval);
    shared_shadow = MPI_COMM_NULL;
    tag_lanes = 0;
    free(world_nodes);
    world_nodes = NULL;
}
