/* Datatypes: sizes and extents of predefined types, contiguous types in point-to-point
 * and reductions, counts and elements, errors. */
#include <mpi.h>
#include "check.h"

/* A 2x3 block at (1, 1) of a 4x5 array, in C and Fortran order; type sizes by class. */
static void subarrays(void) {
    int a[20], got[6], sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1}, s;
    MPI_Aint lb, extent;
    MPI_Datatype block, fblock, t;
    for (int i = 0; i < 20; i++) a[i] = i;
    CHECK_RC(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &block), MPI_SUCCESS);
    MPI_Type_commit(&block);
    MPI_Type_get_extent(block, &lb, &extent);
    MPI_Type_size(block, &s);
    CHECK(lb == 0 && extent == 80 && s == 24);
    MPI_Sendrecv(a, 1, block, 0, 3, got, 6, MPI_INT, 0, 3, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    CHECK(got[0] == 6 && got[2] == 8 && got[3] == 11 && got[5] == 13);
    /* Fortran order: the first dimension moves fastest (5 rows of 4, block 3 by 2). */
    int fsizes[2] = {4, 5}, fsub[2] = {2, 3};
    CHECK_RC(MPI_Type_create_subarray(2, fsizes, fsub, starts, MPI_ORDER_FORTRAN, MPI_INT, &fblock), MPI_SUCCESS);
    MPI_Type_commit(&fblock);
    MPI_Sendrecv(a, 1, fblock, 0, 4, got, 6, MPI_INT, 0, 4, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    CHECK(got[0] == 5 && got[1] == 6 && got[2] == 9 && got[5] == 14);
    int bad[2] = {4, 5};
    CHECK_RC(MPI_Type_create_subarray(2, sizes, bad, starts, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    MPI_Type_free(&block);
    MPI_Type_free(&fblock);
    CHECK_RC(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t), MPI_SUCCESS);
    CHECK(t == MPI_DOUBLE);
    CHECK_RC(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &t), MPI_ERR_ARG);
}

/* A 4x6 array on a 2x2 grid: rows in blocks (2 each), columns cyclic in pairs; every
 * process's part, and the whole array's extent. */
static void darrays(void) {
    int a[24], got[8], gsizes[2] = {4, 6}, psizes[2] = {2, 2}, s;
    int distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
    int dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2};
    MPI_Aint lb, extent;
    MPI_Datatype part, t;
    for (int i = 0; i < 24; i++) a[i] = i;
    /* Rank 3 is grid (1, 1): rows 2-3, columns 2-3. */
    CHECK_RC(MPI_Type_create_darray(4, 3, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &part), MPI_SUCCESS);
    MPI_Type_commit(&part);
    MPI_Type_get_extent(part, &lb, &extent);
    MPI_Type_size(part, &s);
    CHECK(lb == 0 && extent == 96 && s == 16);
    MPI_Sendrecv(a, 1, part, 0, 6, got, 4, MPI_INT, 0, 6, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    CHECK(got[0] == 14 && got[1] == 15 && got[2] == 20 && got[3] == 21);
    MPI_Type_free(&part);
    /* Rank 0 (0, 0): rows 0-1, columns 0-1 and 4-5. */
    CHECK_RC(MPI_Type_create_darray(4, 0, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &part), MPI_SUCCESS);
    MPI_Type_commit(&part);
    MPI_Sendrecv(a, 1, part, 0, 7, got, 8, MPI_INT, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    CHECK(got[0] == 0 && got[1] == 1 && got[2] == 4 && got[3] == 5 && got[4] == 6 && got[7] == 11);
    MPI_Type_free(&part);
    int bad_psizes[2] = {2, 3};
    CHECK_RC(MPI_Type_create_darray(4, 0, 2, gsizes, distribs, dargs, bad_psizes, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    CHECK_RC(MPI_Type_create_darray(4, 4, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
}

/* external32: big-endian at the standard's sizes (a long in 4 bytes, a long double as a
 * quadruple), through a vector's type map, and back. */
static void external32(void) {
    int ints[4] = {1, -2, 3, -4}, back[4] = {0};
    long longs[2] = {-5, 258}, longs_back[2] = {0};
    long double ld[2] = {1.5L, -3.25e100L}, ld_back[2] = {0};
    unsigned char packed[64];
    MPI_Aint size, pos = 0;
    MPI_Datatype every_other;
    MPI_Type_vector(2, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    CHECK_RC(MPI_Pack_external_size("external32", 1, every_other, &size), MPI_SUCCESS);
    CHECK(size == 8);
    CHECK_RC(MPI_Pack_external("external32", ints, 1, every_other, packed, sizeof packed, &pos), MPI_SUCCESS);
    CHECK(pos == 8 && packed[3] == 1 && packed[4] == 0 && packed[7] == 3);
    pos = 0;
    CHECK_RC(MPI_Unpack_external("external32", packed, 8, &pos, back, 1, every_other), MPI_SUCCESS);
    CHECK(pos == 8 && back[0] == 1 && back[1] == 0 && back[2] == 3);
    MPI_Type_free(&every_other);
    CHECK_RC(MPI_Pack_external_size("external32", 2, MPI_LONG, &size), MPI_SUCCESS);
    CHECK(size == 8);
    pos = 0;
    MPI_Pack_external("external32", longs, 2, MPI_LONG, packed, sizeof packed, &pos);
    CHECK(pos == 8 && packed[0] == 0xff && packed[3] == 0xfb && packed[6] == 1 && packed[7] == 2);
    pos = 0;
    MPI_Unpack_external("external32", packed, 8, &pos, longs_back, 2, MPI_LONG);
    CHECK(longs_back[0] == -5 && longs_back[1] == 258);
    pos = 0;
    MPI_Pack_external("external32", ld, 2, MPI_LONG_DOUBLE, packed, sizeof packed, &pos);
    /* 1.5 as a quadruple: sign 0, exponent 0x3fff, fraction 0x8000... */
    CHECK(pos == 32 && packed[0] == 0x3f && packed[1] == 0xff && packed[2] == 0x80 && packed[15] == 0);
    pos = 0;
    MPI_Unpack_external("external32", packed, 32, &pos, ld_back, 2, MPI_LONG_DOUBLE);
    CHECK(ld_back[0] == 1.5L && ld_back[1] == -3.25e100L);
    pos = 4;
    CHECK_RC(MPI_Pack_external("external32", ints, 4, MPI_INT, packed, 16, &pos), MPI_ERR_TRUNCATE);
    CHECK_RC(MPI_Pack_external_size("native", 1, MPI_INT, &size), MPI_ERR_UNSUPPORTED_DATAREP);
}

/* Pair types travel as their data alone: a {double, int, double, int} structure is
 * received as two MPI_DOUBLE_INTs, and reductions on pairs (predefined and derived) see
 * the values and ints where the program's structures hold them. */
static void pair_types(int rank, int size) {
    struct di { double v; int i; };
    struct { double a; int b; double c; int d; } quad = {1.5, 7, 2.5, 9};
    struct di got[2] = {{0, 0}, {0, 0}};
    int blocks[4] = {1, 1, 1, 1}, s, count;
    MPI_Aint disps[4] = {0, 8, 16, 24};
    MPI_Datatype parts[4] = {MPI_DOUBLE, MPI_INT, MPI_DOUBLE, MPI_INT}, quad_type, two_pairs;
    MPI_Status st;
    MPI_Type_create_struct(4, blocks, disps, parts, &quad_type);
    MPI_Type_commit(&quad_type);
    CHECK_RC(MPI_Sendrecv(&quad, 1, quad_type, 0, 5, got, 2, MPI_DOUBLE_INT, 0, 5, MPI_COMM_SELF, &st), MPI_SUCCESS);
    CHECK(got[0].v == 1.5 && got[0].i == 7 && got[1].v == 2.5 && got[1].i == 9);
    MPI_Get_count(&st, MPI_DOUBLE_INT, &count);
    CHECK(count == 2);
    MPI_Get_elements(&st, MPI_DOUBLE_INT, &count);
    CHECK(count == 4);
    MPI_Pack_size(3, MPI_DOUBLE_INT, MPI_COMM_WORLD, &s);
    CHECK(s == 36);
    MPI_Type_free(&quad_type);
    /* MINLOC on two pairs of a derived type and MAXLOC on MPI_SHORT_INT in place. */
    MPI_Type_contiguous(2, MPI_DOUBLE_INT, &two_pairs);
    MPI_Type_commit(&two_pairs);
    struct di mine[2] = {{(double)(size - rank), rank}, {(double)rank, rank}}, least[2];
    CHECK_RC(MPI_Allreduce(mine, least, 1, two_pairs, MPI_MINLOC, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(least[0].v == 1 && least[0].i == size - 1 && least[1].v == 0 && least[1].i == 0);
    MPI_Type_free(&two_pairs);
    struct { short v; int i; } most = {(short)(rank * 3), rank};
    CHECK_RC(MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_SHORT_INT, MPI_MAXLOC, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(most.v == 3 * (size - 1) && most.i == size - 1);
    /* The standard allows a negative extent (negative_bounds.c uses such types). */
    MPI_Datatype backwards;
    MPI_Aint lb, extent;
    CHECK_RC(MPI_Type_create_resized(MPI_INT, 8, -4, &backwards), MPI_SUCCESS);
    MPI_Type_get_extent(backwards, &lb, &extent);
    CHECK(lb == 8 && extent == -4);
    MPI_Type_free(&backwards);
}

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

    /* A status set to 6 basic elements of the triple: two triples. */
    MPI_Count elements_x;
    CHECK_RC(MPI_Status_set_elements(&st, three, 6), MPI_SUCCESS);
    MPI_Get_count(&st, three, &count);
    CHECK(count == 2);
    CHECK_RC(MPI_Get_elements_x(&st, three, &elements_x), MPI_SUCCESS);
    CHECK(elements_x == 6);
    CHECK_RC(MPI_Status_set_elements_x(&st, MPI_INT, 5), MPI_SUCCESS);
    MPI_Get_count(&st, three, &count);
    CHECK(count == MPI_UNDEFINED);

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
    /* A column of a 4x4 matrix: vector, sent by blocking and nonblocking calls. */
    MPI_Datatype column;
    CHECK_RC(MPI_Type_vector(4, 1, 4, MPI_DOUBLE, &column), MPI_SUCCESS);
    MPI_Type_commit(&column);
    MPI_Type_size(column, &s);
    MPI_Type_get_extent(column, &lb, &extent);
    CHECK(s == 32 && lb == 0 && extent == 13 * 8);
    double m[16], got[16];
    for (int i = 0; i < 16; i++) { m[i] = rank * 100 + i; got[i] = -1; }
    CHECK_RC(MPI_Sendrecv(&m[1], 1, column, right, 2, &got[2], 1, column, left, 2, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    for (int r = 0; r < 4; r++) CHECK(got[4 * r + 2] == left * 100 + 4 * r + 1 && got[4 * r + 1] == -1);
    MPI_Get_count(&st, column, &count);
    CHECK(count == 1);
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    CHECK(count == 4);
    /* Column into contiguous doubles, nonblocking. */
    double flat[4] = {0};
    MPI_Request rq[2];
    MPI_Irecv(&got[0], 1, column, left, 3, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(&m[3], 1, column, right, 3, MPI_COMM_WORLD, &rq[1]);
    CHECK_RC(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), MPI_SUCCESS);
    for (int r = 0; r < 4; r++) CHECK(got[4 * r] == left * 100 + 4 * r + 3);
    MPI_Sendrecv(&m[0], 1, column, right, 4, flat, 4, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(flat[3] == left * 100 + 12);

    /* A structure found with MPI_Get_address, and its resized array. */
    struct item { char c; double d; int i; } items[3], back[3];
    int lens[3] = {1, 1, 1};
    MPI_Aint base, displs[3];
    MPI_Datatype member_types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, item_type, item_array;
    MPI_Get_address(&items[0], &base);
    MPI_Get_address(&items[0].c, &displs[0]);
    MPI_Get_address(&items[0].d, &displs[1]);
    MPI_Get_address(&items[0].i, &displs[2]);
    for (int k = 0; k < 3; k++) displs[k] -= base;
    CHECK_RC(MPI_Type_create_struct(3, lens, displs, member_types, &item_type), MPI_SUCCESS);
    MPI_Type_get_extent(item_type, &lb, &extent);
    CHECK(extent == sizeof(struct item));
    MPI_Type_size(item_type, &s);
    CHECK(s == 13);
    MPI_Type_create_resized(item_type, 0, sizeof(struct item), &item_array);
    MPI_Type_commit(&item_array);
    for (int k = 0; k < 3; k++) { items[k].c = 'a' + k; items[k].d = rank + k * 0.5; items[k].i = rank * 10 + k; }
    MPI_Sendrecv(items, 3, item_array, right, 5, back, 3, item_array, left, 5, MPI_COMM_WORLD, &st);
    CHECK(back[2].c == 'c' && back[2].d == left + 1.0 && back[2].i == left * 10 + 2);
    MPI_Get_elements(&st, item_array, &count);
    CHECK(count == 9);

    /* Pack and unpack: an int and a column. */
    char packed[256];
    int position = 0, psize;
    MPI_Pack_size(1, column, MPI_COMM_WORLD, &psize);
    CHECK(psize == 32);
    MPI_Pack(&rank, 1, MPI_INT, packed, sizeof packed, &position, MPI_COMM_WORLD);
    MPI_Pack(&m[0], 1, column, packed, sizeof packed, &position, MPI_COMM_WORLD);
    CHECK(position == 36);
    int unpacked_rank = -1;
    double cols[16] = {0};
    position = 0;
    MPI_Unpack(packed, sizeof packed, &position, &unpacked_rank, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Unpack(packed, sizeof packed, &position, &cols[0], 1, column, MPI_COMM_WORLD);
    CHECK(unpacked_rank == rank && cols[12] == m[12] && cols[1] == 0);
    /* Sent packed, received as the type. */
    position = 36;
    MPI_Sendrecv(packed + 4, 32, MPI_PACKED, right, 6, &got[0], 1, column, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(got[8] == left * 100 + 8);
    CHECK_RC(MPI_Pack(&m[0], 1, column, packed, 16, &(int){0}, MPI_COMM_WORLD), MPI_ERR_TRUNCATE);

    /* Collectives pack non-contiguous types: a column broadcast, summed, gathered. */
    double cm[16];
    for (int i = 0; i < 16; i++) cm[i] = rank == 0 ? i : -1;
    CHECK_RC(MPI_Bcast(&cm[1], 1, column, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(cm[13] == 13 && (rank == 0 || cm[0] == -1));
    double csum[16];
    for (int i = 0; i < 16; i++) { cm[i] = rank; csum[i] = -1; }
    CHECK_RC(MPI_Allreduce(&cm[0], &csum[2], 1, column, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(csum[14] == size * (size - 1) / 2 && csum[3] == -1);
    CHECK_RC(MPI_Allreduce(MPI_IN_PLACE, &cm[0], 1, column, MPI_MAX, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(cm[12] == size - 1 && cm[1] == rank);
    double cols_all[4 * 64];
    CHECK_RC(MPI_Gather(&cm[0], 1, column, cols_all, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    if (rank == 0) CHECK(cols_all[4 * (size - 1) + 3] == size - 1);
    /* The v forms too: every rank's column gathered as a column of a wider matrix. */
    int ones[64], seq[64];
    for (int i = 0; i < size; i++) { ones[i] = 1; seq[i] = i; }
    static double wide[4 * 64 * 4];
    MPI_Datatype wide_col, wide_col1;
    MPI_Type_vector(4, 1, 4 * size, MPI_DOUBLE, &wide_col);
    MPI_Type_create_resized(wide_col, 0, sizeof(double), &wide_col1);
    MPI_Type_commit(&wide_col1);
    for (int i = 0; i < 16; i++) cm[i] = rank * 100 + i;
    CHECK_RC(MPI_Allgatherv(&cm[0], 1, column, wide, ones, seq, wide_col1, MPI_COMM_WORLD), MPI_SUCCESS);
    /* Row r of the wide matrix holds element r of each rank's column. */
    for (int r = 0; r < 4; r++) CHECK(wide[r * 4 * size + (size - 1)] == (size - 1) * 100 + 4 * r);
    double col_back[16] = {0};
    CHECK_RC(MPI_Scatterv(wide, ones, seq, wide_col1, &col_back[1], 1, column, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(col_back[13] == rank * 100 + 12 && col_back[0] == 0);
    MPI_Type_free(&wide_col);
    MPI_Type_free(&wide_col1);
    MPI_Type_free(&column);
    MPI_Type_free(&item_type);
    MPI_Type_free(&item_array);
    pair_types(rank, size);
    subarrays();
    darrays();
    external32();
    FINISH("types");
}
