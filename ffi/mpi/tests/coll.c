/* Collectives: values at every rank, MPI_IN_PLACE, v-forms, scans, errors. */
#include <mpi.h>
#include <complex.h>
#include <stdlib.h>
#include "check.h"

/* inout = in * inout for upper triangular 2x2 matrices {a, b; 0, 1} stored as {a, b, 0, 1}:
 * associative, not commutative. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type) {
    int *x = in, *y = inout;
    (void)type;
    for (int i = 0; i < *len; i++, x += 4, y += 4) {
        int a = x[0] * y[0], b = x[0] * y[1] + x[1];
        y[0] = a;
        y[1] = b;
    }
}

static void sum_ints(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* Predefined reductions on long double, complex numbers and long double with an int. */
static void wide_types(int rank, int size) {
    long double x = rank + 0.25L, sum = 0, most = 0;
    CHECK_RC(MPI_Allreduce(&x, &sum, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(sum == size * (size - 1) / 2 + 0.25L * size);
    CHECK_RC(MPI_Allreduce(&x, &most, 1, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(most == size - 1 + 0.25L);
    double _Complex z[2] = {rank + 1.0 * I, 1.0}, zs[2];
    CHECK_RC(MPI_Allreduce(z, zs, 2, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(creal(zs[0]) == size * (size - 1) / 2 && cimag(zs[0]) == size && creal(zs[1]) == size);
    float _Complex i_pow = I, acc = 1.0f;
    CHECK_RC(MPI_Reduce_local(&i_pow, &acc, 1, MPI_C_FLOAT_COMPLEX, MPI_PROD), MPI_SUCCESS);
    CHECK(crealf(acc) == 0 && cimagf(acc) == 1);
    long double _Complex w = rank * I, ws = 0;
    CHECK_RC(MPI_Reduce(&w, &ws, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    if (rank == 0) CHECK(cimagl(ws) == size * (size - 1) / 2);
    struct { long double v; int i; } mine = {(long double)(rank % 2), rank}, least;
    CHECK_RC(MPI_Allreduce(&mine, &least, 1, MPI_LONG_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(least.v == 0 && least.i == 0);
    CHECK_RC(MPI_Allreduce(z, zs, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD), MPI_ERR_OP);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int n = size, tri = size * (size - 1) / 2;

    CHECK_RC(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);

    for (int root = 0; root < n; root++) {
        double d[3] = {0, 0, 0};
        if (rank == root) { d[0] = root; d[1] = 1.5; d[2] = -2; }
        CHECK_RC(MPI_Bcast(d, 3, MPI_DOUBLE, root, MPI_COMM_WORLD), MPI_SUCCESS);
        CHECK(d[0] == root && d[1] == 1.5 && d[2] == -2);

        int s = rank, r = -1;
        CHECK_RC(MPI_Reduce(&s, &r, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD), MPI_SUCCESS);
        if (rank == root) CHECK(r == tri);
        r = rank;
        CHECK_RC(MPI_Reduce(rank == root ? MPI_IN_PLACE : &r, &r, 1, MPI_INT, MPI_MAX, root,
                            MPI_COMM_WORLD), MPI_SUCCESS);
        if (rank == root) CHECK(r == n - 1);
    }

    /* Allreduce over types and ops. */
    long l = rank + 1, lr;
    MPI_Allreduce(&l, &lr, 1, MPI_LONG, MPI_PROD, MPI_COMM_WORLD);
    long fact = 1;
    for (int i = 1; i <= n; i++) fact *= i;
    CHECK(lr == fact);
    float f = rank, fr;
    MPI_Allreduce(&f, &fr, 1, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
    CHECK(fr == 0);
    unsigned u = 1u << rank, ur;
    MPI_Allreduce(&u, &ur, 1, MPI_UNSIGNED, MPI_BOR, MPI_COMM_WORLD);
    CHECK(ur == (1u << n) - 1);
    int in_place = rank;
    CHECK_RC(MPI_Allreduce(MPI_IN_PLACE, &in_place, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(in_place == tri);
    struct { double v; int i; } loc = {rank % 2 ? -rank : rank, rank}, locr;
    MPI_Allreduce(&loc, &locr, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
    CHECK(locr.i == (n > 1 ? (n % 2 == 0 ? n - 1 : n - 2) : 0));

    /* Gather, scatter, allgather, alltoall (in place too). */
    int *all = malloc(sizeof(int) * n * n), *back = malloc(sizeof(int) * n * n);
    int mine = rank * 10;
    CHECK_RC(MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    if (rank == 0) for (int i = 0; i < n; i++) CHECK(all[i] == i * 10);
    int got = -1;
    CHECK_RC(MPI_Scatter(all, 1, MPI_INT, &got, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(got == rank * 10);
    for (int i = 0; i < n; i++) all[i] = -1;
    all[rank] = rank + 5;
    CHECK_RC(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int i = 0; i < n; i++) CHECK(all[i] == i + 5);
    for (int i = 0; i < n; i++) all[i] = rank * 100 + i;
    CHECK_RC(MPI_Alltoall(all, 1, MPI_INT, back, 1, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int i = 0; i < n; i++) CHECK(back[i] == i * 100 + rank);
    CHECK_RC(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, back, 1, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int i = 0; i < n; i++) CHECK(back[i] == rank * 100 + i);

    /* v-forms: rank i contributes i + 1 ints. */
    int *counts = malloc(sizeof(int) * n), *displs = malloc(sizeof(int) * n), total = 0;
    for (int i = 0; i < n; i++) { counts[i] = i + 1; displs[i] = total; total += i + 1; }
    int *vsend = malloc(sizeof(int) * (rank + 1)), *vrecv = malloc(sizeof(int) * total);
    for (int k = 0; k <= rank; k++) vsend[k] = rank;
    CHECK_RC(MPI_Allgatherv(vsend, rank + 1, MPI_INT, vrecv, counts, displs, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int i = 0; i < n; i++) for (int k = 0; k < counts[i]; k++) CHECK(vrecv[displs[i] + k] == i);
    for (int k = 0; k < total; k++) vrecv[k] = -1;
    CHECK_RC(MPI_Gatherv(vsend, rank + 1, MPI_INT, vrecv, counts, displs, MPI_INT, n - 1, MPI_COMM_WORLD), MPI_SUCCESS);
    if (rank == n - 1) for (int i = 0; i < n; i++) CHECK(vrecv[displs[i] + counts[i] - 1] == i);
    for (int k = 0; k <= rank; k++) vsend[k] = -1;
    CHECK_RC(MPI_Scatterv(vrecv, counts, displs, MPI_INT, vsend, rank + 1, MPI_INT, n - 1, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int k = 0; k <= rank; k++) CHECK(vsend[k] == rank);
    /* Alltoallv: one int to each rank. */
    int *ones = malloc(sizeof(int) * n), *seq = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) { ones[i] = 1; seq[i] = i; all[i] = rank; }
    CHECK_RC(MPI_Alltoallv(all, ones, seq, MPI_INT, back, ones, seq, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int i = 0; i < n; i++) CHECK(back[i] == i);

    /* Reduce_scatter(_block), scan, exscan. */
    for (int i = 0; i < n; i++) all[i] = i + rank;
    int rs = -1;
    CHECK_RC(MPI_Reduce_scatter_block(all, &rs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(rs == n * rank + tri);
    CHECK_RC(MPI_Reduce_scatter(all, &rs, ones, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(rs == n * rank + tri);
    int sc = rank + 1, scr = -1;
    CHECK_RC(MPI_Scan(&sc, &scr, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(scr == (rank + 1) * (rank + 2) / 2);
    CHECK_RC(MPI_Exscan(&sc, &scr, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    if (rank > 0) CHECK(scr == rank * (rank + 1) / 2);

    /* Reduce_local. */
    int a[2] = {1, 2}, b[2] = {10, 20};
    CHECK_RC(MPI_Reduce_local(a, b, 2, MPI_INT, MPI_SUM), MPI_SUCCESS);
    CHECK(b[0] == 11 && b[1] == 22);

    /* User operations: commutative on ints, ordered on 16-byte matrices. */
    MPI_Op sum_op, mat_op;
    int commute;
    CHECK_RC(MPI_Op_create(sum_ints, 1, &sum_op), MPI_SUCCESS);
    CHECK_RC(MPI_Op_create(matmul, 0, &mat_op), MPI_SUCCESS);
    MPI_Op_commutative(mat_op, &commute);
    CHECK(commute == 0);
    MPI_Op_commutative(MPI_SUM, &commute);
    CHECK(commute == 1);
    int us[2] = {rank, 1}, ur2[2];
    CHECK_RC(MPI_Allreduce(us, ur2, 2, MPI_INT, sum_op, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(ur2[0] == tri && ur2[1] == n);
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    int m[4] = {2, rank, 0, 1}, prod[4], want[4] = {1, 0, 0, 1};
    for (int i = 0; i < n; i++) { int a = want[0] * 2, b = want[0] * i + want[1]; want[0] = a; want[1] = b; }
    CHECK_RC(MPI_Reduce(m, prod, 1, mat, mat_op, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    if (rank == 0) CHECK(prod[0] == want[0] && prod[1] == want[1]);
    CHECK_RC(MPI_Allreduce(m, prod, 1, mat, mat_op, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(prod[0] == want[0] && prod[1] == want[1]);
    CHECK_RC(MPI_Scan(m, prod, 1, mat, mat_op, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK(prod[0] == 2 << rank);
    int l1[2] = {1, 2}, l2[2] = {10, 20};
    CHECK_RC(MPI_Reduce_local(l1, l2, 2, MPI_INT, sum_op), MPI_SUCCESS);
    CHECK(l2[0] == 11 && l2[1] == 22);
    MPI_Type_free(&mat);
    CHECK_RC(MPI_Op_free(&sum_op), MPI_SUCCESS);
    CHECK(sum_op == MPI_OP_NULL);
    MPI_Op_free(&mat_op);
    MPI_Op predefined = MPI_SUM;
    CHECK_RC(MPI_Op_free(&predefined), MPI_ERR_OP);

    /* Errors: an op the type has not, a type not reduced yet (a legal call), a bad root. */
    double dd = 1, dr;
    CHECK_RC(MPI_Allreduce(&dd, &dr, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
    long double ld = 1, ldr; /* Fortran's REAL*16 is quadruple precision, not reduced yet. */
    CHECK_RC(MPI_Allreduce(&ld, &ldr, 1, MPI_REAL16, MPI_SUM, MPI_COMM_WORLD),
             MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK_RC(MPI_Bcast(&dd, 1, MPI_DOUBLE, n, MPI_COMM_WORLD), MPI_ERR_ROOT);
    CHECK_RC(MPI_Allreduce(&dd, &dr, 1, MPI_DOUBLE, MPI_REPLACE, MPI_COMM_WORLD), MPI_ERR_OP);

    wide_types(rank, size);
    FINISH("coll");
}
