/* Under the default MPI_ERRORS_ARE_FATAL, an error aborts the job with a message that
 * names the call: this program must not reach its end. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) MPI_Send(&x, 1, MPI_INT, 1 << 20, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("fatal: reached the end\n");
    MPI_Finalize();
    return 0;
}
