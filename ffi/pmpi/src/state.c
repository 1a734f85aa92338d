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
 * - An inter-communicator's shadow is its merged pair, made at its first collective too.
 * - One agreement when the state is made: the context id's allreduce carries one more
 *   word, whether this member can serve the communicator, so that all members serve it or
 *   none does (before: a second allreduce). */
#define _GNU_SOURCE /* sched_getaffinity */
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "pmpi.h"

static int keyval = MPI_KEYVAL_INVALID;
/* The attribute of a communicator commcore does not serve (creation failed). */
static char unserved;
/* The attribute a wrapped constructor leaves: the communicator's kind, no state yet. */
static char pending[CC_MADE_KINDS];
/* Node id of every rank of MPI_COMM_WORLD: the world rank of its node's first process. */
static uint32_t *world_nodes;
static int world_size;
/* The last communicator looked up, per thread: programs call collectives on one
 * communicator over and over, and an attribute lookup costs more than the rest of a small
 * call's set-up. Any thread's freeing of state bumps `states_gone`, which makes every
 * thread's entry stale (a freed handle may name a new communicator). */
static unsigned states_gone;

/* The kind a pending attribute names, or -1 for any other value. */
static int pending_kind(const void *value) {
    uintptr_t at = (uintptr_t)value, first = (uintptr_t)pending;
    return at >= first && at < first + CC_MADE_KINDS ? (int)(at - first) : -1;
}
static _Thread_local MPI_Comm last_comm = MPI_COMM_NULL;
static _Thread_local cc_comm *last_state;
static _Thread_local unsigned last_gone;

void cc_comm_ref(cc_comm *cs) {
    cs->refs++;
}

void cc_comm_unref(cc_comm *cs) {
    if (--cs->refs > 0)
        return;
    cc_cid_release(cs->cid);
    cc_coll_free(cs->coll);
    PMPI_Comm_free(&cs->shadow);
    free(cs->scratch);
    cc_memo_free(cs);
    free(cs);
}

static int delete_state(MPI_Comm comm, int key, void *value, void *extra) {
    (void)comm, (void)key, (void)extra;
    __atomic_fetch_add(&states_gone, 1, __ATOMIC_RELEASE);
    if (value == &unserved || pending_kind(value) >= 0)
        return MPI_SUCCESS;
    cc_comm *cs = cc_cid_lookup((int64_t)(intptr_t)value - 1);
    if (cs)
        cc_comm_unref(cs); /* nonblocking calls still running keep it to their end */
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

/* Node ids of the members of `group`, from the world's table; members outside the world
 * (spawned or connected processes) count as nodes of their own. */
static uint32_t *node_ids(MPI_Group group, int size) {
    uint32_t *nodes = malloc((size_t)size * sizeof *nodes);
    int *ranks = malloc((size_t)size * sizeof *ranks), *world = malloc((size_t)size * sizeof *world);
    MPI_Group world_group;
    if (!nodes || !ranks || !world || PMPI_Comm_group(MPI_COMM_WORLD, &world_group) != MPI_SUCCESS) {
        free(nodes), free(ranks), free(world);
        return NULL;
    }
    for (int i = 0; i < size; i++)
        ranks[i] = i;
    PMPI_Group_translate_ranks(group, size, ranks, world_group, world);
    PMPI_Group_free(&world_group);
    for (int i = 0; i < size; i++)
        nodes[i] = world[i] >= 0 && world[i] < world_size ? world_nodes[world[i]]
                                                          : (uint32_t)(world_size + i);
    free(ranks), free(world);
    return nodes;
}

static cc_comm *create(MPI_Comm comm) {
    cc_comm *cs = calloc(1, sizeof *cs);
    if (!cs)
        return NULL;
    cs->shadow = MPI_COMM_NULL;
    cs->cid = -1;
    cs->refs = 1;
    PMPI_Comm_test_inter(comm, &cs->inter);
    PMPI_Comm_rank(comm, &cs->rank);
    PMPI_Comm_size(comm, &cs->size);
    if (cs->inter) {
        int merged_rank;
        PMPI_Comm_remote_size(comm, &cs->remote_size);
        if (PMPI_Intercomm_merge(comm, 0, &cs->shadow) != MPI_SUCCESS)
            goto fail;
        PMPI_Comm_rank(cs->shadow, &merged_rank);
        cs->local_offset = merged_rank - cs->rank;
        cs->remote_offset = cs->local_offset == 0 ? cs->size : 0;
    } else if (PMPI_Comm_dup(comm, &cs->shadow) != MPI_SUCCESS) {
        goto fail;
    }
    /* Errors on our traffic come back as codes; the wrappers report them through the
     * user's communicator, whose handler the user may change at any time. */
    PMPI_Comm_set_errhandler(cs->shadow, MPI_ERRORS_RETURN);
    MPI_Group group, remote_group;
    uint32_t *remote_nodes = NULL;
    int level = MPI_THREAD_SINGLE;
    PMPI_Comm_group(comm, &group);
    uint32_t *nodes = node_ids(group, cs->size);
    PMPI_Group_free(&group);
    if (cs->inter) {
        PMPI_Comm_remote_group(comm, &remote_group);
        remote_nodes = node_ids(remote_group, cs->remote_size);
        PMPI_Group_free(&remote_group);
    }
    PMPI_Query_thread(&level);
    int thread_level = level == MPI_THREAD_MULTIPLE     ? 3
                       : level == MPI_THREAD_SERIALIZED ? 2
                       : level == MPI_THREAD_FUNNELED   ? 1
                                                        : 0;
    if (nodes && (!cs->inter || remote_nodes))
        cs->coll = cc_coll_new((uint32_t)cs->rank, (uint32_t)cs->size, cs->inter,
                               (uint32_t)cs->remote_size, nodes, remote_nodes, thread_level);
    free(nodes);
    free(remote_nodes);
    /* Every member reaches the agreement, whether its selection succeeded or not; the CID
     * store takes any CID of our space, so a member that can serve before it still can. */
    agreement a = {.shadow = cs->shadow, .ok = cs->coll != NULL};
    cs->cid = cc_cid_agree(shadow_allreduce, &a);
    if (cs->cid < 0 || !a.ok || cc_cid_store(cs->cid, cs) != 0)
        goto fail;
    return cs;
fail:
    if (cs->cid >= 0)
        cc_cid_release(cs->cid);
    if (cs->coll)
        cc_coll_free(cs->coll);
    if (cs->shadow != MPI_COMM_NULL)
        PMPI_Comm_free(&cs->shadow);
    free(cs);
    return NULL;
}

/* Makes the state of `comm` (collective over its members) and records it in the attribute:
 * the context id plus one (never NULL), the state being the CID store's value for it. */
static cc_comm *attach(MPI_Comm comm, int kind) {
    cc_comm *cs = create(comm);
    PMPI_Comm_set_attr(comm, keyval, cs ? (void *)(intptr_t)(cs->cid + 1) : (void *)&unserved);
    if (kind >= 0)
        cc_count_made_state(kind, cs != NULL);
    return cs;
}

void cc_comm_attach(MPI_Comm comm, int kind) {
    if (!cc_enabled || comm == MPI_COMM_NULL)
        return;
    if (kind >= 0)
        cc_count_made(kind);
    attach(comm, kind);
}

void cc_comm_mark(MPI_Comm comm, int kind) {
    if (!cc_enabled || comm == MPI_COMM_NULL)
        return;
    cc_count_made(kind);
    PMPI_Comm_set_attr(comm, keyval, &pending[kind]);
}

cc_comm *cc_comm_get(MPI_Comm comm, int may_create) {
    void *value = NULL;
    int flag = 0;
    if (comm == MPI_COMM_NULL)
        return NULL;
    unsigned gone = __atomic_load_n(&states_gone, __ATOMIC_ACQUIRE);
    if (comm == last_comm && gone == last_gone)
        return last_state;
    PMPI_Comm_get_attr(comm, keyval, &value, &flag);
    cc_comm *cs;
    int kind = flag ? pending_kind(value) : -1;
    if (!flag || kind >= 0) {
        /* No state yet: a communicator from a constructor we do not wrap (no attribute)
         * or one a wrapped constructor marked. Not remembered until it has state. */
        if (!may_create)
            return NULL;
        if (!flag)
            cc_count_made(kind = CC_MADE_OTHER);
        cs = attach(comm, kind);
    } else {
        cs = value != &unserved ? cc_cid_lookup((int64_t)(intptr_t)value - 1) : NULL;
    }
    last_comm = comm;
    last_state = cs;
    last_gone = gone;
    return cs;
}

/* Ranks that share cores wait for each other's turn on a core at every round of a
 * schedule, so there the algorithms with the fewest dependent rounds win: bcast and
 * alltoall linear, allreduce by recursive doubling (Open MPI, 8 ranks on 2 cores, µs:
 * bcast 64 KiB 627 -> 150, allreduce 64 KiB 1058 -> 327, alltoall 8 B 76 -> 32; 4 ranks:
 * 35 -> 26, 189 -> 92, 14 -> 8; 2 ranks on 2 cores unchanged). Every rank of the job
 * takes the same table (ranks that select differently never match), so whether any node
 * has more ranks than cores is agreed. COMMCORE_COLL, when set, stands instead. */
static void prefer_few_rounds_when_oversubscribed(int node_size) {
    cpu_set_t cpus;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : (int)online;
    int over = online > 0 && node_size > cores;
    PMPI_Allreduce(MPI_IN_PLACE, &over, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (over)
        cc_abi_default_control("bcast:linear;alltoall:linear;allreduce:recursive_doubling");
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
    cc_comm_attach(MPI_COMM_WORLD, -1);
    cc_comm_attach(MPI_COMM_SELF, -1);
    return 0;
}

void cc_state_finalize(void) {
    if (keyval == MPI_KEYVAL_INVALID)
        return;
    PMPI_Comm_delete_attr(MPI_COMM_SELF, keyval);
    PMPI_Comm_delete_attr(MPI_COMM_WORLD, keyval);
    PMPI_Comm_free_keyval(&keyval);
    free(world_nodes);
    world_nodes = NULL;
}
