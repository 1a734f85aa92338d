/* Checks for the MPI library's test programs: a failed check prints and counts. */
#include <stdio.h>
static int failures = 0;
#define CHECK(cond) do { if (!(cond)) { failures++; \
    fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_RC(call, want) do { int rc_ = (call); if (rc_ != (want)) { failures++; \
    fprintf(stderr, "%s:%d: %s returned %d, want %d\n", __FILE__, __LINE__, #call, rc_, (want)); } } while (0)
/* Ends the test: every rank's failures summed; rank 0 prints PASS or FAIL. */
#define FINISH(name) do { int all_ = 0, me_; MPI_Comm_rank(MPI_COMM_WORLD, &me_); \
    MPI_Allreduce(&failures, &all_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); \
    if (me_ == 0) printf("%s: %s (%d failed checks)\n", name, all_ ? "FAIL" : "PASS", all_); \
    MPI_Finalize(); return all_ ? 1 : 0; } while (0)
