/* Set-up and tear-down: MPI_Init/MPI_Init_thread read the environment and build the state of
 * MPI_COMM_WORLD and MPI_COMM_SELF; MPI_Finalize finishes nonblocking calls, prints the report
 * and frees. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmpi.h"

int cc_enabled;
int cc_threaded;

static void stay_with_host(const char *why) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        fprintf(stderr, "commcore_pmpi: collectives stay with the host MPI: %s\n", why);
}

static void set_up(void) {
    const char *mode = getenv("COMMCORE_PMPI");
    if (mode && (!strcmp(mode, "off") || !strcmp(mode, "0")))
        return;
    /* The level the host provides, not the one asked for: under MPI_THREAD_MULTIPLE the
     * shared state (the progress list, spare schedules, counters, user ops) takes locks and
     * context ids are agreed by the multithreaded algorithm. */
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    cc_threaded = level == MPI_THREAD_MULTIPLE;
    char why[256] = "";
    if (cc_abi_init(getenv("COMMCORE_COLL"), cc_threaded, why, sizeof why) != 0) {
        stay_with_host(why);
        return;
    }
    const char *report = getenv("COMMCORE_PMPI_REPORT");
    cc_abi_names = report && strcmp(report, "0") != 0;
    cc_enabled = 1;
    if (cc_state_init() != 0) {
        cc_enabled = 0;
        fprintf(stderr, "commcore_pmpi: set-up failed; collectives stay with the host MPI\n");
    }
}

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        set_up();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        set_up();
    return rc;
}

int MPI_Finalize(void) {
    if (cc_enabled) {
        cc_nonblocking_finalize();
        const char *report = getenv("COMMCORE_PMPI_REPORT");
        if (report && strcmp(report, "0") != 0)
            cc_report();
        cc_state_finalize();
        cc_ops_finalize();
        cc_abi_finalize();
        cc_enabled = 0;
    }
    return PMPI_Finalize();
}
