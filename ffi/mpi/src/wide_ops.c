/* Predefined reductions on the C types Rust has no arithmetic for: long double, the
 * complex types, and long double with an int (MINLOC, MAXLOC). Each is an
 * MPI_User_function (inout = in op inout), so that the library runs them as it runs a
 * program's operation. */
#include <complex.h>

typedef struct {
    long double value;
    int index;
} long_double_int;

#define ELEMENTWISE(name, type, expr)                                          \
    void name(void *invec, void *inoutvec, int *len, int *datatype) {          \
        const type *a = invec;                                                 \
        type *b = inoutvec;                                                    \
        (void)datatype;                                                        \
        for (int i = 0; i < *len; i++) b[i] = (expr);                          \
    }

ELEMENTWISE(commcore_mpi_long_double_sum, long double, a[i] + b[i])
ELEMENTWISE(commcore_mpi_long_double_prod, long double, a[i] * b[i])
ELEMENTWISE(commcore_mpi_long_double_max, long double, a[i] > b[i] ? a[i] : b[i])
ELEMENTWISE(commcore_mpi_long_double_min, long double, a[i] < b[i] ? a[i] : b[i])
ELEMENTWISE(commcore_mpi_float_complex_sum, float _Complex, a[i] + b[i])
ELEMENTWISE(commcore_mpi_float_complex_prod, float _Complex, a[i] * b[i])
ELEMENTWISE(commcore_mpi_double_complex_sum, double _Complex, a[i] + b[i])
ELEMENTWISE(commcore_mpi_double_complex_prod, double _Complex, a[i] * b[i])
ELEMENTWISE(commcore_mpi_long_double_complex_sum, long double _Complex, a[i] + b[i])
ELEMENTWISE(commcore_mpi_long_double_complex_prod, long double _Complex, a[i] * b[i])

/* The smaller (MINLOC) or larger value, and on a tie the smaller index. */
static long_double_int located(long_double_int a, long_double_int b, int want_max) {
    if (a.value == b.value) {
        b.index = a.index < b.index ? a.index : b.index;
        return b;
    }
    return (want_max ? a.value > b.value : a.value < b.value) ? a : b;
}

void commcore_mpi_long_double_int_minloc(void *invec, void *inoutvec, int *len, int *datatype) {
    const long_double_int *a = invec;
    long_double_int *b = inoutvec;
    (void)datatype;
    for (int i = 0; i < *len; i++) b[i] = located(a[i], b[i], 0);
}

void commcore_mpi_long_double_int_maxloc(void *invec, void *inoutvec, int *len, int *datatype) {
    const long_double_int *a = invec;
    long_double_int *b = inoutvec;
    (void)datatype;
    for (int i = 0; i < *len; i++) b[i] = located(a[i], b[i], 1);
}
