/* Dynamic processes: the parents spawn two children of this program, which meet them
 * through the parent inter-communicator; both sides disconnect. */
#include <mpi.h>
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, s, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        /* A child: two of them, given one argument. */
        CHECK(argc == 2 && strcmp(argv[1], "child") == 0);
        CHECK(size == 2);
        MPI_Comm_remote_size(parent, &s);
        v = -1;
        MPI_Bcast(&v, 1, MPI_INT, 0, parent);
        CHECK(v == 1234);
        int sum = -1;
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, parent);
        CHECK(sum == s * (s - 1) / 2);
        if (rank == 0) MPI_Send(&s, 1, MPI_INT, 0, 9, parent);
        /* The parents learn of any failure here. */
        int failed = failures;
        MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Send(&failed, 1, MPI_INT, 0, 10 + rank, parent);
        CHECK_RC(MPI_Comm_disconnect(&parent), MPI_SUCCESS);
        MPI_Finalize();
        return 0;
    }
    char *args[] = {"child", NULL};
    MPI_Comm children;
    int codes[2] = {-1, -1};
    CHECK_RC(MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children, codes), MPI_SUCCESS);
    if (rank == 0) CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS);
    MPI_Comm_remote_size(children, &s);
    CHECK(s == 2);
    v = 1234;
    MPI_Bcast(&v, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, children);
    int sum = -1;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, children);
    CHECK(sum == 1);
    if (rank == 0) {
        int got = -1, child_failures = 0;
        MPI_Recv(&got, 1, MPI_INT, 0, 9, children, MPI_STATUS_IGNORE);
        CHECK(got == size);
        for (int c = 0; c < 2; c++) {
            MPI_Recv(&got, 1, MPI_INT, c, 10 + c, children, MPI_STATUS_IGNORE);
            child_failures += got;
        }
        CHECK(child_failures == 0);
    }
    CHECK_RC(MPI_Comm_disconnect(&children), MPI_SUCCESS);
    CHECK(children == MPI_COMM_NULL);
    /* A program that does not exist: an error with its code. */
    CHECK_RC(MPI_Comm_spawn("/nonexistent/program", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD,
                            &children, codes), MPI_ERR_SPAWN);
    CHECK(children == MPI_COMM_NULL);
    FINISH("spawn");
}
