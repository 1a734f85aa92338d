/* Datatypes: sizes and extents of predefined types, contiguous types in point-to-point
 * and reductions, counts and elements, errors. */
#include <mpi.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, s, count;
    MPI_Aint lb, extent;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Type_size(MPI_INT, &s);
    CHECK(s == 4);
    MPI_Type_size(MPI_DOUBLE_INT, &s);
    CHECK(s == 12);
    MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &extent);
    CHECK(lb == 0 && extent == 16);
    MPI_Type_size(MPI_LONG_DOUBLE, &s);
    CHECK(s == 16);
    MPI_Type_size(MPI_C_DOUBLE_COMPLEX, &s);
    CHECK(s == 16);

    MPI_Datatype three;
    CHECK_RC(MPI_Type_contiguous(3, MPI_INT, &three), MPI_SUCCESS);
    CHECK_RC(MPI_Type_commit(&three), MPI_SUCCESS);
    MPI_Type_size(three, &s);
    MPI_Type_get_extent(three, &lb, &extent);
    CHECK(s == 12 && extent == 12);

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[6] = {rank, rank + 1, rank + 2, rank + 3, rank + 4, rank + 5}, in[6] = {0};
    MPI_Status st;
    CHECK_RC(MPI_Sendrecv(out, 2, three, right, 0, in, 2, three, left, 0, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    CHECK(in[0] == left && in[5] == left + 5);
    MPI_Get_count(&st, three, &count);
    CHECK(count == 2);
    MPI_Get_elements(&st, three, &count);
    CHECK(count == 6);
    /* Four ints are not a whole number of triples. */
    MPI_Sendrecv(out, 4, MPI_INT, right, 1, in, 2, three, left, 1, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, three, &count);
    CHECK(count == MPI_UNDEFINED);
    MPI_Get_elements(&st, three, &count);
    CHECK(count == 4);

    int sum[3];
    CHECK_RC(MPI_Allreduce(out, sum, 1, three, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(sum[0] == size * (size - 1) / 2 && sum[2] == sum[0] + 2 * size);
    MPI_Datatype copy;
    CHECK_RC(MPI_Type_dup(three, &copy), MPI_SUCCESS);
    CHECK_RC(MPI_Type_free(&copy), MPI_SUCCESS);
    CHECK(copy == MPI_DATATYPE_NULL);
    CHECK_RC(MPI_Type_free(&three), MPI_SUCCESS);
    MPI_Datatype predefined = MPI_INT;
    CHECK_RC(MPI_Type_free(&predefined), MPI_ERR_TYPE);
    CHECK_RC(MPI_Send(out, 1, three, right, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    MPI_Datatype vec;
    CHECK_RC(MPI_Type_vector(2, 1, 2, MPI_INT, &vec), MPI_ERR_UNSUPPORTED_OPERATION);
    FINISH("types");
}
