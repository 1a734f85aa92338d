/* Cartesian topologies: balanced dimensions, a periodic 2-D grid, shifts with a halo
 * exchange, coordinates and ranks, and sub-grids. */
#include <mpi.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, status, nd;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    int d12[2] = {0, 0};
    MPI_Dims_create(12, 2, d12);
    CHECK(d12[0] == 4 && d12[1] == 3);
    int d3[3] = {0, 3, 0};
    MPI_Dims_create(24, 3, d3);
    CHECK(d3[1] == 3 && d3[0] * d3[2] == 8 && d3[0] >= d3[2]);
    CHECK_RC(MPI_Dims_create(7, 2, (int[]){2, 0}), MPI_ERR_DIMS);

    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm grid;
    CHECK_RC(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid), MPI_SUCCESS);
    MPI_Topo_test(grid, &status);
    CHECK(status == MPI_CART);
    MPI_Topo_test(MPI_COMM_WORLD, &status);
    CHECK(status == MPI_UNDEFINED);
    MPI_Cartdim_get(grid, &nd);
    CHECK(nd == 2);
    int coords[2], back, gd[2], gp[2], gc[2];
    MPI_Cart_coords(grid, rank, 2, coords);
    CHECK(coords[0] == rank / dims[1] && coords[1] == rank % dims[1]);
    MPI_Cart_rank(grid, coords, &back);
    CHECK(back == rank);
    MPI_Cart_get(grid, 2, gd, gp, gc);
    CHECK(gd[0] == dims[0] && gp[0] == 1 && gp[1] == 0 && gc[1] == coords[1]);

    /* Periodic along 0: a ring; along 1 the edges get MPI_PROC_NULL. */
    int up, down, leftn, rightn;
    MPI_Cart_shift(grid, 0, 1, &up, &down);
    CHECK(down == ((coords[0] + 1) % dims[0]) * dims[1] + coords[1]);
    MPI_Cart_shift(grid, 1, 1, &leftn, &rightn);
    CHECK(coords[1] == 0 ? leftn == MPI_PROC_NULL : leftn == rank - 1);
    CHECK(coords[1] == dims[1] - 1 ? rightn == MPI_PROC_NULL : rightn == rank + 1);
    int halo = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, down, 0, &halo, 1, MPI_INT, up, 0, grid, MPI_STATUS_IGNORE);
    CHECK(halo == up);

    /* Rows: keep dimension 1. */
    MPI_Comm row;
    int keep[2] = {0, 1}, rs, rr;
    CHECK_RC(MPI_Cart_sub(grid, keep, &row), MPI_SUCCESS);
    MPI_Comm_size(row, &rs);
    MPI_Comm_rank(row, &rr);
    CHECK(rs == dims[1] && rr == coords[1]);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, row);
    int want = 0;
    for (int j = 0; j < dims[1]; j++) want += coords[0] * dims[1] + j;
    CHECK(sum == want);
    MPI_Cartdim_get(row, &nd);
    CHECK(nd == 1);
    MPI_Comm dup;
    MPI_Comm_dup(grid, &dup);
    MPI_Topo_test(dup, &status);
    CHECK(status == MPI_CART);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&row);
    MPI_Comm_free(&grid);
    FINISH("topo");
}
