/* Datatypes and reductions: which MPI types the library moves itself (the predefined ones,
 * as bytes), how a reduction maps to commcore (built-in op × type, or a callback this library
 * applies: user ops from MPI_Op_create and predefined pairs commcore has no type for). */
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "pmpi.h"

/* The last answers of cc_type_bytes and cc_reduction_of: programs call one collective with
 * one type over and over. A predefined type is never freed, and a derived type's handle,
 * when reused, names a derived type again, so a cached size stays true; the reduction cache
 * is dropped when any op or type is freed (its handle may come back as another op). Per
 * thread: threads call with types and ops of their own. */
static _Thread_local MPI_Datatype cached_type = MPI_DATATYPE_NULL;
static _Thread_local size_t cached_bytes;
static _Thread_local MPI_Op cached_op = MPI_OP_NULL;
static _Thread_local MPI_Datatype cached_op_type = MPI_DATATYPE_NULL;
static _Thread_local cc_reduction cached_reduction;
static _Thread_local uint64_t cached_op_freed; /* cc_handles_freed when it was cached */

static size_t type_bytes(MPI_Datatype type);

size_t cc_type_bytes(MPI_Datatype type) {
    if (type != cached_type || type == MPI_DATATYPE_NULL) {
        cached_bytes = type_bytes(type);
        cached_type = type;
    }
    return cached_bytes;
}

static size_t type_bytes(MPI_Datatype type) {
    int ni, na, nd, combiner;
    if (type == MPI_DATATYPE_NULL ||
        PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS ||
        combiner != MPI_COMBINER_NAMED)
        return 0;
    /* A predefined type is laid out alike on every process: its extent moves as bytes,
     * padding of the value-index pairs included. */
    MPI_Aint lb = 0, extent = 0;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS || lb != 0 || extent <= 0)
        return 0;
    return (size_t)extent;
}

/* ---- predefined types commcore reduces itself ---- */

typedef struct {
    MPI_Datatype type;
    enum cc_dtype dtype;
} type_row;

static enum cc_dtype int_of(size_t bytes, int is_signed) {
    switch (bytes) {
    case 1: return is_signed ? CC_I8 : CC_U8;
    case 2: return is_signed ? CC_I16 : CC_U16;
    case 4: return is_signed ? CC_I32 : CC_U32;
    default: return is_signed ? CC_I64 : CC_U64;
    }
}

/* The core type of a predefined integer, float or pair type; -1 for others. */
static int core_type(MPI_Datatype t) {
    const MPI_Datatype signed_ints[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG_INT,
        MPI_LONG_LONG, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_AINT,
        MPI_OFFSET, MPI_COUNT, MPI_WCHAR, MPI_INTEGER, MPI_LOGICAL};
    const MPI_Datatype unsigned_ints[] = {
        MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG,
        MPI_UNSIGNED_LONG_LONG, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T,
        MPI_BYTE, MPI_C_BOOL};
    for (size_t i = 0; i < sizeof signed_ints / sizeof *signed_ints; i++)
        if (t == signed_ints[i] && t != MPI_DATATYPE_NULL)
            return int_of(cc_type_bytes(t), 1);
    for (size_t i = 0; i < sizeof unsigned_ints / sizeof *unsigned_ints; i++)
        if (t == unsigned_ints[i] && t != MPI_DATATYPE_NULL)
            return int_of(cc_type_bytes(t), 0);
    if (t == MPI_FLOAT || t == MPI_REAL)
        return CC_F32;
    if (t == MPI_DOUBLE || t == MPI_DOUBLE_PRECISION)
        return CC_F64;
    if (t == MPI_SHORT_INT) return CC_PAIR_I16_I32;
    if (t == MPI_2INT || t == MPI_2INTEGER) return CC_PAIR_I32_I32;
    if (t == MPI_LONG_INT) return CC_PAIR_I64_I32;
    if (t == MPI_FLOAT_INT) return CC_PAIR_F32_I32;
    if (t == MPI_DOUBLE_INT) return CC_PAIR_F64_I32;
    return -1;
}

/* A type of `bytes` per element for schedules whose reduction this library applies: the
 * schedule splits vectors only at element boundaries of its type. */
static int carrier(size_t bytes) {
    switch (bytes) {
    case 1: return CC_U8;
    case 2: return CC_U16;
    case 4: return CC_U32;
    case 8: return CC_U64;
    case 16: return CC_PAIR_I64_I32;
    default: return -1;
    }
}

/* ---- reductions commcore has no type for: long double, complex, float pairs ---- */

#define ARITH(T, NAME)                                                                   \
    static void NAME(const cc_reduction *r, const void *src, void *dst, size_t n,       \
                     int src_left) {                                                    \
        const T *a = src;                                                               \
        T *b = dst;                                                                     \
        (void)src_left; /* commutative */                                               \
        for (size_t i = 0; i < n; i++) {                                                \
            if (r->base == CC_SUM)                                      \
                b[i] = a[i] + b[i];                                                     \
            else                                                                        \
                b[i] = a[i] * b[i];                                                     \
        }                                                                               \
    }
ARITH(long double, ld_sum_prod)
ARITH(float _Complex, cf_sum_prod)
ARITH(double _Complex, cd_sum_prod)
ARITH(long double _Complex, cld_sum_prod)

static void ld_min_max(const cc_reduction *r, const void *src, void *dst, size_t n,
                       int src_left) {
    const long double *a = src;
    long double *b = dst;
    (void)src_left;
    int max = r->base == CC_MAX || r->base == CC_MAXLOC;
    for (size_t i = 0; i < n; i++)
        if (max ? a[i] > b[i] : a[i] < b[i])
            b[i] = a[i];
}

/* MINLOC/MAXLOC over {T value; T index} pairs (MPI_2REAL, MPI_2DOUBLE_PRECISION): the better
 * value wins, ties take the lower index. */
#define LOC_PAIR(T, NAME)                                                                \
    static void NAME(const cc_reduction *r, const void *src, void *dst, size_t n,       \
                     int src_left) {                                                    \
        const T *a = src;                                                               \
        T *b = dst;                                                                     \
        int max = r->base == CC_MAX || r->base == CC_MAXLOC;                                    \
        (void)src_left;                                                                 \
        for (size_t i = 0; i < n; i++) {                                                \
            T av = a[2 * i], bv = b[2 * i];                                             \
            if (max ? av > bv : av < bv) {                                              \
                b[2 * i] = av;                                                          \
                b[2 * i + 1] = a[2 * i + 1];                                            \
            } else if (av == bv && a[2 * i + 1] < b[2 * i + 1]) {                       \
                b[2 * i + 1] = a[2 * i + 1];                                            \
            }                                                                           \
        }                                                                               \
    }
LOC_PAIR(float, f_loc)
LOC_PAIR(double, d_loc)

/* MINLOC/MAXLOC over MPI_LONG_DOUBLE_INT, {long double value; int index} (32 bytes, a size
 * no core type has: reduced as whole elements). */
static void ldi_loc(const cc_reduction *r, const void *src, void *dst, size_t n,
                    int src_left) {
    typedef struct { long double v; int i; } pair;
    const pair *a = src;
    pair *b = dst;
    int max = r->base == CC_MAX || r->base == CC_MAXLOC;
    (void)src_left;
    for (size_t k = 0; k < n; k++) {
        if (max ? a[k].v > b[k].v : a[k].v < b[k].v)
            b[k] = a[k];
        else if (a[k].v == b[k].v && a[k].i < b[k].i)
            b[k].i = a[k].i;
    }
}

/* ---- user operations ---- */

typedef struct user_op {
    MPI_Op op;
    MPI_User_function *fn;
    int commute;
    struct user_op *next;
} user_op;

static user_op *user_ops;
static pthread_mutex_t user_ops_lock = PTHREAD_MUTEX_INITIALIZER;

static void user_apply(const cc_reduction *r, const void *src, void *dst, size_t n,
                       int src_left) {
    int len = (int)n;
    MPI_Datatype type = r->mpi_type;
    if (src_left) { /* dst = src op dst: MPI's invec op inoutvec */
        r->user((void *)src, dst, &len, &type);
        return;
    }
    /* dst = dst op src: compute into a copy of src, then move it over dst. */
    size_t bytes = n * (r->user_elem ? r->user_elem : r->elem);
    void *tmp = malloc(bytes ? bytes : 1);
    if (!tmp)
        abort(); /* no way to report from inside a reduction; out of memory */
    memcpy(tmp, src, bytes);
    r->user(dst, tmp, &len, &type);
    memcpy(dst, tmp, bytes);
    free(tmp);
}

int MPI_Op_create(MPI_User_function *fn, int commute, MPI_Op *op) {
    int rc = PMPI_Op_create(fn, commute, op);
    if (rc != MPI_SUCCESS || !cc_enabled)
        return rc;
    user_op *u = malloc(sizeof *u);
    if (u) { /* without it the op is unknown and its calls go to the host */
        cc_lock(&user_ops_lock);
        *u = (user_op){*op, fn, commute, user_ops};
        user_ops = u;
        cc_unlock(&user_ops_lock);
    }
    return rc;
}

int MPI_Type_free(MPI_Datatype *type) {
    __atomic_fetch_add(&cc_handles_freed, 1, __ATOMIC_RELEASE);
    return PMPI_Type_free(type);
}

int MPI_Op_free(MPI_Op *op) {
    __atomic_fetch_add(&cc_handles_freed, 1, __ATOMIC_RELEASE);
    cc_lock(&user_ops_lock);
    for (user_op **p = &user_ops; *p; p = &(*p)->next) {
        if ((*p)->op == *op) {
            user_op *dead = *p;
            *p = dead->next;
            free(dead);
            break;
        }
    }
    cc_unlock(&user_ops_lock);
    return PMPI_Op_free(op);
}

void cc_ops_finalize(void) {
    while (user_ops) {
        user_op *next = user_ops->next;
        free(user_ops);
        user_ops = next;
    }
}

static int builtin_op(MPI_Op op) {
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX,  MPI_LAND,   MPI_LOR,
                          MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    for (int i = 0; i < (int)(sizeof ops / sizeof *ops); i++)
        if (op == ops[i])
            return i;
    return -1;
}

/* A callback reduction for predefined types commcore lacks; -1 when none. */
static int extra_reduction(int rop, MPI_Datatype t, cc_reduction *out) {
    if (rop == CC_SUM || rop == CC_PROD) {
        if (t == MPI_LONG_DOUBLE)
            out->apply = ld_sum_prod;
        else if (t == MPI_C_FLOAT_COMPLEX || t == MPI_C_COMPLEX || t == MPI_COMPLEX)
            out->apply = cf_sum_prod;
        else if (t == MPI_C_DOUBLE_COMPLEX || t == MPI_DOUBLE_COMPLEX)
            out->apply = cd_sum_prod;
        else if (t == MPI_C_LONG_DOUBLE_COMPLEX)
            out->apply = cld_sum_prod;
    } else if (rop == CC_MIN || rop == CC_MAX) {
        if (t == MPI_LONG_DOUBLE)
            out->apply = ld_min_max;
    } else if (rop == CC_MINLOC || rop == CC_MAXLOC) {
        if (t == MPI_2REAL)
            out->apply = f_loc;
        else if (t == MPI_2DOUBLE_PRECISION)
            out->apply = d_loc;
        else if (t == MPI_LONG_DOUBLE_INT)
            out->apply = ldi_loc;
    }
    if (!out->apply)
        return -1;
    out->base = (enum cc_rop)rop;
    out->commutative = 1;
    return 0;
}

/* A complex sum is the sum of the real and imaginary parts: two elements of the part's
 * type per complex number. */
static int complex_sum(MPI_Datatype t, cc_reduction *out) {
    if (t == MPI_C_FLOAT_COMPLEX || t == MPI_C_COMPLEX || t == MPI_COMPLEX)
        out->dtype = CC_F32, out->rop = CC_SUM;
    else if (t == MPI_C_DOUBLE_COMPLEX || t == MPI_DOUBLE_COMPLEX)
        out->dtype = CC_F64, out->rop = CC_SUM;
    else if (t == MPI_C_LONG_DOUBLE_COMPLEX)
        out->dtype = CC_PAIR_I64_I32, out->rop = CC_ROP_CALLBACK, out->apply = ld_sum_prod,
        out->base = CC_SUM;
    else
        return -1;
    out->commutative = 1;
    out->per_item = 2;
    out->elem /= 2;
    return 0;
}

static int reduction_of(MPI_Op op, MPI_Datatype type, cc_reduction *out);

int cc_reduction_of(MPI_Op op, MPI_Datatype type, cc_reduction *out) {
    uint64_t freed = cc_freed_so_far();
    if (op == cached_op && type == cached_op_type && op != MPI_OP_NULL &&
        freed == cached_op_freed) {
        *out = cached_reduction;
        return 0;
    }
    if (reduction_of(op, type, out) < 0)
        return -1;
    if (!cc_type_bytes(type))
        return 0; /* a derived type's handle may come back as another type: not kept */
    cached_op = op;
    cached_op_type = type;
    cached_reduction = *out;
    cached_op_freed = freed;
    return 0;
}

/* A user op over elements of `bytes` each, no core type of that size: the schedule moves
 * bytes and runs only algorithms that keep elements whole. */
static int whole_elements(cc_reduction *out, size_t bytes) {
    out->dtype = CC_U8;
    out->rop = CC_ROP_CALLBACK;
    out->elem = 1;
    out->per_item = bytes;
    out->user_elem = bytes;
    out->whole = 1;
    return 0;
}

/* A copy of `op`'s entry (taken under the lock: another thread may create or free ops);
 * NULL when the op is not one of the user's. */
static user_op *user_op_of(MPI_Op op, user_op *copy) {
    cc_lock(&user_ops_lock);
    user_op *u = user_ops;
    while (u && u->op != op)
        u = u->next;
    if (u)
        *copy = *u;
    cc_unlock(&user_ops_lock);
    return u ? copy : NULL;
}

/* A derived type whose memory is a run of one predefined type: a predefined op reduces the
 * run element by element; a user op takes the derived elements whole. -1: the host. */
static int derived_reduction(MPI_Op op, MPI_Datatype type, cc_reduction *out) {
    MPI_Datatype base;
    size_t mult, unit;
    if (cc_type_whole(type, &base, &mult, &unit) < 0)
        return -1;
    if (builtin_op(op) >= 0) {
        if (reduction_of(op, base, out) < 0)
            return -1;
        out->per_item *= mult;
        return 0;
    }
    user_op copy, *u = user_op_of(op, &copy);
    if (!u)
        return -1;
    memset(out, 0, sizeof *out);
    out->apply = user_apply;
    out->user = u->fn;
    out->commutative = u->commute;
    out->mpi_type = type; /* the user's function is handed the call's datatype */
    int c = carrier(unit);
    if (c < 0)
        return whole_elements(out, unit);
    out->dtype = (enum cc_dtype)c, out->rop = CC_ROP_CALLBACK;
    out->elem = unit, out->per_item = 1;
    return 0;
}

static int reduction_of(MPI_Op op, MPI_Datatype type, cc_reduction *out) {
    memset(out, 0, sizeof *out);
    size_t elem = cc_type_bytes(type);
    if (!elem)
        return derived_reduction(op, type, out);
    out->mpi_type = type;
    out->elem = elem;
    out->per_item = 1;
    int rop = builtin_op(op);
    if (rop == CC_SUM && complex_sum(type, out) == 0)
        return 0;
    if (rop >= 0) {
        int dtype = core_type(type);
        if (dtype >= 0) {
            out->dtype = (enum cc_dtype)dtype;
            out->rop = (enum cc_rop)rop;
            out->commutative = 1;
            return 0;
        }
        if (extra_reduction(rop, type, out) < 0)
            return -1;
    } else {
        user_op copy, *u = user_op_of(op, &copy);
        if (!u)
            return -1;
        out->apply = user_apply;
        out->user = u->fn;
        out->commutative = u->commute;
    }
    int c = carrier(elem);
    if (c < 0) /* the callback knows its element: whole elements of any size */
        return out->apply ? whole_elements(out, elem) : -1;
    out->dtype = (enum cc_dtype)c;
    out->rop = CC_ROP_CALLBACK;
    return 0;
}
