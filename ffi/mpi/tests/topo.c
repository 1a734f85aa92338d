/* Cartesian topologies: balanced dimensions, a periodic 2-D grid, shifts with a halo
 * exchange, coordinates and ranks, and sub-grids. Graphs: a ring given whole, and the
 * same ring distributed (adjacent and from arbitrary ranks' edges). */
#include <mpi.h>
#include "check.h"

/* Neighborhood collectives: on a periodic ring grid the block sent left lands in the left
 * neighbor's right slot; on a distributed graph, blocking and nonblocking forms. */
static void neighborhoods(int rank, int size, int left, int right) {
    int dims[1] = {size}, periods[1] = {1}, sbuf[2] = {-1 - 10 * rank, 1 + 10 * rank}, rbuf[2] = {0, 0};
    MPI_Comm grid, dist;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &grid);
    CHECK_RC(MPI_Neighbor_alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, grid), MPI_SUCCESS);
    CHECK(rbuf[0] == 1 + 10 * left && rbuf[1] == -1 - 10 * right);
    int mine = rank, got[2] = {-5, -5};
    CHECK_RC(MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, grid), MPI_SUCCESS);
    CHECK(got[0] == left && got[1] == right);
    MPI_Comm_free(&grid);
    /* A non-periodic line: the ends' missing neighbors leave their slots alone. */
    periods[0] = 0;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &grid);
    got[0] = got[1] = -5;
    CHECK_RC(MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, grid), MPI_SUCCESS);
    CHECK(got[0] == (rank == 0 ? -5 : rank - 1) && got[1] == (rank == size - 1 ? -5 : rank + 1));
    MPI_Comm_free(&grid);
    /* Each rank sends to its right neighbor only: rank + 1 values of its rank. */
    int dest = right, src = left, out[8], in[8] = {0}, scount = rank % 4 + 1, rcount = left % 4 + 1, zero = 0;
    for (int i = 0; i < 8; i++) out[i] = rank;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, MPI_UNWEIGHTED, 1, &dest, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &dist);
    CHECK_RC(MPI_Neighbor_alltoallv(out, &scount, &zero, MPI_INT, in, &rcount, &zero, MPI_INT, dist), MPI_SUCCESS);
    CHECK(in[0] == left && in[rcount - 1] == left && in[rcount] == 0);
    MPI_Request req;
    mine = 100 + rank;
    got[0] = -5;
    CHECK_RC(MPI_Ineighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, dist, &req), MPI_SUCCESS);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(got[0] == 100 + left);
    CHECK_RC(MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TOPOLOGY);
    MPI_Comm_free(&dist);
}

/* A ring: rank r's neighbors are r - 1 and r + 1. */
static void graphs(int rank, int size) {
    int index[64], edges[128], n = 0, status, nnodes, nedges, count, out[4];
    for (int r = 0; r < size; r++) {
        edges[n++] = (r + size - 1) % size;
        edges[n++] = (r + 1) % size;
        index[r] = n;
    }
    MPI_Comm ring, dist, spread;
    CHECK_RC(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &ring), MPI_SUCCESS);
    MPI_Topo_test(ring, &status);
    CHECK(status == MPI_GRAPH);
    MPI_Graphdims_get(ring, &nnodes, &nedges);
    CHECK(nnodes == size && nedges == 2 * size);
    MPI_Graph_neighbors_count(ring, rank, &count);
    CHECK(count == 2);
    MPI_Graph_neighbors(ring, rank, 2, out);
    CHECK(out[0] == (rank + size - 1) % size && out[1] == (rank + 1) % size);
    CHECK_RC(MPI_Graph_neighbors(ring, size, 2, out), MPI_ERR_RANK);
    MPI_Comm_free(&ring);
    edges[0] = size;
    CHECK_RC(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &ring), MPI_ERR_RANK);

    int left = (rank + size - 1) % size, right = (rank + 1) % size, indeg, outdeg, weighted;
    int srcs[2] = {left, right}, weights[2] = {5, 7}, ws[2], wd[2];
    CHECK_RC(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, weights, 2, srcs, weights,
                                            MPI_INFO_NULL, 0, &dist), MPI_SUCCESS);
    MPI_Topo_test(dist, &status);
    CHECK(status == MPI_DIST_GRAPH);
    MPI_Dist_graph_neighbors_count(dist, &indeg, &outdeg, &weighted);
    CHECK(indeg == 2 && outdeg == 2 && weighted == 1);
    MPI_Dist_graph_neighbors(dist, 2, out, ws, 2, &out[2], wd);
    CHECK(out[0] == left && out[3] == right && ws[1] == 7 && wd[0] == 5);
    MPI_Comm_free(&dist);
    /* Rank 0 names every edge of the ring, unweighted; each rank learns its own. */
    int sources[64], degrees[64], dests[128];
    for (int r = 0; r < size; r++) {
        sources[r] = r;
        degrees[r] = 1;
        dests[r] = (r + 1) % size;
    }
    CHECK_RC(MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0 ? size : 0, sources, degrees, dests,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &spread), MPI_SUCCESS);
    MPI_Dist_graph_neighbors_count(spread, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 1 && weighted == 0);
    MPI_Dist_graph_neighbors(spread, 1, out, MPI_UNWEIGHTED, 1, &out[1], MPI_UNWEIGHTED);
    CHECK(out[0] == left && out[1] == right);
    MPI_Comm_free(&spread);
    neighborhoods(rank, size, left, right);
}

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
    graphs(rank, size);
    FINISH("topo");
}
