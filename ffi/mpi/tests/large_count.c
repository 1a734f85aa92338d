/* MPI-4's large-count calls (the _c forms) at counts that fit: point-to-point, counts
 * out, datatypes with arrays, v collectives blocking and nonblocking, packing; and a
 * message count from 2^31 on fails with MPI_ERR_UNSUPPORTED_OPERATION; aliased buffers
 * fail a nonblocking call at once. Datatypes of 2^31 bytes and more are made and
 * measured. */
#include <mpi.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    int out[4] = {rank, rank + 1, rank + 2, rank + 3}, in[4] = {0};
    MPI_Status st;
    MPI_Count n = -1;
    CHECK_RC(MPI_Sendrecv_c(out, 4, MPI_INT, right, 1, in, 4, MPI_INT, left, 1, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    CHECK(in[0] == left && in[3] == left + 3);
    CHECK_RC(MPI_Get_count_c(&st, MPI_INT, &n), MPI_SUCCESS);
    CHECK(n == 4);
    MPI_Request rq[2];
    MPI_Irecv_c(in, 2, MPI_INT, left, 2, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend_c(out, 2, MPI_INT, right, 2, MPI_COMM_WORLD, &rq[1]);
    CHECK_RC(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    CHECK(in[1] == left + 1);
    CHECK_RC(MPI_Send_c(out, (MPI_Count)1 << 31, MPI_INT, right, 3, MPI_COMM_WORLD), MPI_ERR_UNSUPPORTED_OPERATION);

    /* Every other int of 6, as an indexed type of MPI_Count arrays. */
    MPI_Datatype odd;
    MPI_Count lens[3] = {1, 1, 1}, displs[3] = {1, 3, 5}, tsize = 0, lb = -1, extent = -1;
    CHECK_RC(MPI_Type_indexed_c(3, lens, displs, MPI_INT, &odd), MPI_SUCCESS);
    MPI_Type_commit(&odd);
    MPI_Type_size_c(odd, &tsize);
    MPI_Type_get_extent_c(odd, &lb, &extent);
    CHECK(tsize == 12 && lb == 4 && extent == 20);
    int six[6] = {0, 1, 2, 3, 4, 5}, packed[3] = {0}, back[6] = {0};
    MPI_Count pos = 0;
    CHECK_RC(MPI_Pack_c(six, 1, odd, packed, sizeof packed, &pos, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(pos == 12 && packed[0] == 1 && packed[2] == 5);
    pos = 0;
    CHECK_RC(MPI_Unpack_c(packed, sizeof packed, &pos, back, 1, odd, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(pos == 12 && back[3] == 3 && back[2] == 0);
    MPI_Type_free(&odd);

    /* Datatypes of 2^31 bytes and more: made from wide counts, sizes and extents exact. */
    const MPI_Count g = (MPI_Count)1 << 30;
    MPI_Datatype big, blocks, strided, twice;
    int isize = 0, ints = -1, addrs, types, combiner;
    CHECK_RC(MPI_Type_contiguous_c(3 * g, MPI_CHAR, &big), MPI_SUCCESS);
    MPI_Type_size_c(big, &tsize);
    MPI_Type_get_extent_c(big, &lb, &extent);
    CHECK(tsize == 3 * g && lb == 0 && extent == 3 * g);
    MPI_Type_size(big, &isize);
    CHECK(isize == MPI_UNDEFINED);
    /* Its contents are MPI-4's large counts, which the int query cannot give. */
    CHECK_RC(MPI_Type_get_envelope(big, &ints, &addrs, &types, &combiner), MPI_ERR_UNSUPPORTED_OPERATION);
    MPI_Count nints = -1, naddrs = -1, nlarge = -1, ntypes = -1, large[8] = {0};
    CHECK_RC(MPI_Type_get_envelope_c(big, &nints, &naddrs, &nlarge, &ntypes, &combiner), MPI_SUCCESS);
    CHECK(nints == 0 && naddrs == 0 && nlarge == 1 && ntypes == 1 && combiner == MPI_COMBINER_CONTIGUOUS);
    MPI_Datatype inner = MPI_DATATYPE_NULL;
    CHECK_RC(MPI_Type_get_contents_c(big, 0, 0, 8, 1, NULL, NULL, large, &inner), MPI_SUCCESS);
    CHECK(large[0] == 3 * g && inner == MPI_CHAR);
    MPI_Count blens[2] = {1, 4 * g};
    MPI_Aint bdispls[2] = {0, 8};
    CHECK_RC(MPI_Type_create_hindexed_c(2, blens, bdispls, MPI_CHAR, &blocks), MPI_SUCCESS);
    MPI_Type_size_c(blocks, &tsize);
    MPI_Type_get_true_extent_c(blocks, &lb, &extent);
    CHECK(tsize == 4 * g + 1 && lb == 0 && extent == 4 * g + 8);
    CHECK_RC(MPI_Type_get_contents_c(blocks, 0, 0, 8, 1, NULL, NULL, large, &inner), MPI_SUCCESS);
    CHECK(large[0] == 2 && large[1] == 1 && large[2] == 4 * g && large[3] == 0 && large[4] == 8);
    /* A type of int counts keeps them as ints. */
    CHECK_RC(MPI_Type_get_envelope_c(MPI_INT, &nints, &naddrs, &nlarge, &ntypes, &combiner), MPI_SUCCESS);
    CHECK(nlarge == 0 && combiner == MPI_COMBINER_NAMED);
    CHECK_RC(MPI_Type_vector_c(2, 2 * g, 2 * g + 16, MPI_CHAR, &strided), MPI_SUCCESS);
    MPI_Type_size_c(strided, &tsize);
    MPI_Type_get_extent_c(strided, &lb, &extent);
    CHECK(tsize == 4 * g && extent == 4 * g + 16);
    /* A type of one of them, through the int form. */
    CHECK_RC(MPI_Type_contiguous(2, big, &twice), MPI_SUCCESS);
    MPI_Type_size_c(twice, &tsize);
    CHECK(tsize == 6 * g);
    MPI_Type_free(&big);
    MPI_Type_free(&blocks);
    MPI_Type_free(&strided);
    MPI_Type_free(&twice);

    /* Rank r sends r + 1 ints to each; MPI_Count counts, MPI_Aint displacements. */
    MPI_Count scounts[16], rcounts[16];
    MPI_Aint sdispls[16], rdispls[16];
    int send[16 * 16], recv[16 * 16], total = 0;
    for (int p = 0; p < size && p < 16; p++) {
        scounts[p] = rank + 1;
        sdispls[p] = p * 16;
        rcounts[p] = p + 1;
        rdispls[p] = total;
        total += p + 1;
        for (int k = 0; k < 16; k++) send[p * 16 + k] = rank * 100 + p;
    }
    if (size <= 16) {
        CHECK_RC(MPI_Alltoallv_c(send, scounts, sdispls, MPI_INT, recv, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
        CHECK(recv[0] == rank && recv[total - 1] == (size - 1) * 100 + rank);
        MPI_Request r;
        for (int i = 0; i < total; i++) recv[i] = -1;
        CHECK_RC(MPI_Ialltoallv_c(send, scounts, sdispls, MPI_INT, recv, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD, &r), MPI_SUCCESS);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(recv[0] == rank && recv[total - 1] == (size - 1) * 100 + rank);
        int mine[16];
        for (int k = 0; k < rank + 1; k++) mine[k] = rank;
        CHECK_RC(MPI_Allgatherv_c(mine, rank + 1, MPI_INT, recv, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
        CHECK(recv[0] == 0 && recv[total - 1] == size - 1);
    }
    long long sum = 0, one = 1;
    CHECK_RC(MPI_Allreduce_c(&one, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(sum == size);
    /* Aliased buffers fail the nonblocking call itself, as the blocking one does. */
    MPI_Request never = MPI_REQUEST_NULL;
    CHECK_RC(MPI_Iallreduce_c(&sum, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &never), MPI_ERR_BUFFER);
    CHECK_RC(MPI_Iallgather_c(recv, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD, &never), MPI_ERR_BUFFER);
    CHECK(never == MPI_REQUEST_NULL);
    FINISH("large_count");
}
