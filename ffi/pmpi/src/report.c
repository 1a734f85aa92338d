/* The report (COMMCORE_PMPI_REPORT=1): per operation, the calls commcore served by module and
 * algorithm, and the calls handed to the host MPI; per kind of communicator creation, the
 * communicators made, those commcore served (state built at their first blocking
 * collective), those handed to the host (state refused) and those that never needed state;
 * the context id agreements run and their allreduce rounds.
 * Rank 0 prints its own breakdown and the totals over every rank of MPI_COMM_WORLD. */
#include <stdio.h>
#include <string.h>

#include "pmpi.h"

#define CC_KINDS 6 /* distinct module/algorithm pairs kept per operation */

typedef struct {
    const char *module, *algorithm;
    unsigned long calls;
} served_row;

static served_row served[CC_SLOTS][CC_KINDS];
static unsigned long served_other[CC_SLOTS]; /* beyond CC_KINDS pairs */
static unsigned long host[CC_SLOTS];
static unsigned long replayed[CC_OP_COUNT]; /* blocking calls run from a recording */
static unsigned long remembered[CC_OP_COUNT]; /* of those, prepared as an earlier call was */

/* Per creation kind: made, state built and served, state refused (host). Counted with
 * atomics: constructors may run on several threads at once. */
static unsigned long made[CC_MADE_KINDS][3];
static const char *const made_names[CC_MADE_KINDS] = {
    "dup", "split", "create", "create_group", "intercomm_create", "intercomm_merge", "other"};

void cc_count_made(int kind) {
    __atomic_fetch_add(&made[kind][0], 1, __ATOMIC_RELAXED);
}

void cc_count_made_state(int kind, int served) {
    __atomic_fetch_add(&made[kind][served ? 1 : 2], 1, __ATOMIC_RELAXED);
}

/* One line per kind of creation seen, with a prefix of its own (the collective lines are
 * counted by test suites). */
static void report_made(unsigned long all[CC_MADE_KINDS][3]) {
    for (int k = 0; k < CC_MADE_KINDS; k++) {
        const unsigned long *m = made[k], *a = all[k];
        if (a[0] == 0 && a[1] == 0 && a[2] == 0)
            continue;
        /* "other": constructors not wrapped are seen only when their state is built. */
        unsigned long idle = m[0] > m[1] + m[2] ? m[0] - m[1] - m[2] : 0;
        printf("commcore_pmpi_comm: %s made=%lu commcore=%lu host=%lu no_collective=%lu "
               "all_ranks_made=%lu all_ranks_commcore=%lu all_ranks_host=%lu\n",
               made_names[k], m[0], m[1], m[2], idle, a[0], a[1], a[2]);
    }
}

static const char *const names[CC_OP_COUNT] = {
    "barrier", "bcast",   "reduce",  "allreduce", "allgather",      "allgatherv",
    "alltoall", "alltoallv", "gather", "gatherv", "scatter",        "scatterv",
    "reduce_scatter", "reduce_scatter_block", "scan", "exscan"};

const char *cc_slot_name(int slot) {
    return names[slot % CC_OP_COUNT];
}

/* Counters may be bumped by several threads at once (MPI_THREAD_MULTIPLE): relaxed atomic
 * adds (a lock add, no fence), and a lock for adding a row. */
#define CC_BUMP(counter) __atomic_fetch_add(&(counter), 1, __ATOMIC_RELAXED)
static pthread_mutex_t rows_lock = PTHREAD_MUTEX_INITIALIZER;

void cc_count_served(int slot, const char *module, const char *algorithm) {
    /* A program repeats its calls: their row is found at once. */
    static _Thread_local served_row *last;
    static _Thread_local int last_slot = -1;
    if (slot == last_slot && last->module == module && last->algorithm == algorithm) {
        CC_BUMP(last->calls);
        return;
    }
    cc_lock(&rows_lock);
    for (int i = 0; i < CC_KINDS; i++) {
        served_row *r = &served[slot][i];
        if (!r->module) {
            r->module = module;
            r->algorithm = algorithm;
        }
        /* Names are static strings from the ABI: equal pointers for equal names. */
        if (r->module == module && r->algorithm == algorithm) {
            CC_BUMP(r->calls);
            last = r, last_slot = slot;
            cc_unlock(&rows_lock);
            return;
        }
    }
    CC_BUMP(served_other[slot]);
    cc_unlock(&rows_lock);
}

void cc_count_host(int slot) {
    CC_BUMP(host[slot]);
}

void cc_count_replayed(int slot) {
    CC_BUMP(replayed[slot]);
}

void cc_count_remembered(int slot) {
    CC_BUMP(remembered[slot]);
}

void cc_report(void) {
    unsigned long mine[2 * CC_SLOTS], all[2 * CC_SLOTS];
    for (int s = 0; s < CC_SLOTS; s++) {
        unsigned long n = served_other[s];
        for (int i = 0; i < CC_KINDS; i++)
            n += served[s][i].calls;
        mine[2 * s] = n;
        mine[2 * s + 1] = host[s];
    }
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned long all_made[CC_MADE_KINDS][3];
    PMPI_Reduce(mine, all, 2 * CC_SLOTS, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(made, all_made, 3 * CC_MADE_KINDS, MPI_UNSIGNED_LONG, MPI_SUM, 0,
                MPI_COMM_WORLD);
    /* Context id agreements and their rounds: rounds per agreement show contention; ids
     * duplicates took from their parents' pools agreed nothing. */
    unsigned long cid_mine[3], cid_all[3];
    cc_cid_counts(&cid_mine[0], &cid_mine[1]);
    cid_mine[2] = cc_pool_derived();
    PMPI_Reduce(cid_mine, cid_all, 3, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    for (int s = 0; s < CC_SLOTS; s++) {
        if (all[2 * s] == 0 && all[2 * s + 1] == 0)
            continue;
        char detail[512] = "";
        size_t at = 0;
        for (int i = 0; i < CC_KINDS && served[s][i].module && at < sizeof detail; i++)
            at += (size_t)snprintf(detail + at, sizeof detail - at, "%s%s/%s=%lu",
                                   at ? "," : "", served[s][i].module,
                                   served[s][i].algorithm, served[s][i].calls);
        char replays[64] = ""; /* blocking calls only */
        if (s < CC_OP_COUNT)
            snprintf(replays, sizeof replays, " replayed=%lu remembered=%lu", replayed[s],
                     remembered[s]);
        printf("commcore_pmpi: %s%s commcore=%lu [%s] host=%lu%s all_ranks_commcore=%lu "
               "all_ranks_host=%lu\n",
               s >= CC_OP_COUNT ? "i" : "", cc_slot_name(s), mine[2 * s], detail,
               mine[2 * s + 1], replays, all[2 * s], all[2 * s + 1]);
    }
    report_made(all_made);
    printf("commcore_pmpi_cid: agreements=%lu rounds=%lu all_ranks_agreements=%lu "
           "all_ranks_rounds=%lu derived=%lu all_ranks_derived=%lu\n",
           cid_mine[0], cid_mine[1], cid_all[0], cid_all[1], cid_mine[2], cid_all[2]);
    fflush(stdout);
}
