/* Test helpers: every predefined C datatype with a way to write and read its elements, the
 * deterministic value each rank contributes, and the expected reduction computed locally. */
#ifndef COMMCORE_PMPI_TEST_CHECK_H
#define COMMCORE_PMPI_TEST_CHECK_H

#include <complex.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef enum { K_INT, K_UINT, K_FLOAT, K_COMPLEX, K_PAIR, K_BOOL, K_CHAR } kind;

typedef struct {
    MPI_Datatype t;
    const char *name;
    kind k;
    int reducible; /* predefined ops allowed on it (MPI's table) */
} tdesc;

struct short_int { short v; int i; };
struct int_int { int v; int i; };
struct long_int { long v; int i; };
struct float_int { float v; int i; };
struct double_int { double v; int i; };
struct ldouble_int { long double v; int i; };

static tdesc types[] = {
    {MPI_CHAR, "char", K_CHAR, 0},
    {MPI_WCHAR, "wchar", K_CHAR, 0},
    {MPI_SIGNED_CHAR, "signed_char", K_INT, 1},
    {MPI_SHORT, "short", K_INT, 1},
    {MPI_INT, "int", K_INT, 1},
    {MPI_LONG, "long", K_INT, 1},
    {MPI_LONG_LONG, "long_long", K_INT, 1},
    {MPI_UNSIGNED_CHAR, "unsigned_char", K_UINT, 1},
    {MPI_UNSIGNED_SHORT, "unsigned_short", K_UINT, 1},
    {MPI_UNSIGNED, "unsigned", K_UINT, 1},
    {MPI_UNSIGNED_LONG, "unsigned_long", K_UINT, 1},
    {MPI_UNSIGNED_LONG_LONG, "unsigned_long_long", K_UINT, 1},
    {MPI_INT8_T, "int8", K_INT, 1},
    {MPI_INT16_T, "int16", K_INT, 1},
    {MPI_INT32_T, "int32", K_INT, 1},
    {MPI_INT64_T, "int64", K_INT, 1},
    {MPI_UINT8_T, "uint8", K_UINT, 1},
    {MPI_UINT16_T, "uint16", K_UINT, 1},
    {MPI_UINT32_T, "uint32", K_UINT, 1},
    {MPI_UINT64_T, "uint64", K_UINT, 1},
    {MPI_AINT, "aint", K_INT, 1},
    {MPI_OFFSET, "offset", K_INT, 1},
    {MPI_COUNT, "count", K_INT, 1},
    {MPI_BYTE, "byte", K_UINT, 2},
    {MPI_C_BOOL, "c_bool", K_BOOL, 3},
    {MPI_FLOAT, "float", K_FLOAT, 1},
    {MPI_DOUBLE, "double", K_FLOAT, 1},
    {MPI_LONG_DOUBLE, "long_double", K_FLOAT, 1},
    {MPI_C_FLOAT_COMPLEX, "c_float_complex", K_COMPLEX, 1},
    {MPI_C_DOUBLE_COMPLEX, "c_double_complex", K_COMPLEX, 1},
    {MPI_C_LONG_DOUBLE_COMPLEX, "c_long_double_complex", K_COMPLEX, 1},
    {MPI_SHORT_INT, "short_int", K_PAIR, 1},
    {MPI_2INT, "2int", K_PAIR, 1},
    {MPI_LONG_INT, "long_int", K_PAIR, 1},
    {MPI_FLOAT_INT, "float_int", K_PAIR, 1},
    {MPI_DOUBLE_INT, "double_int", K_PAIR, 1},
    {MPI_LONG_DOUBLE_INT, "long_double_int", K_PAIR, 1},
};
#define NTYPES ((int)(sizeof types / sizeof *types))

/* Bytes between consecutive elements (the extent: pairs have padding). */
static inline int type_size(const tdesc *d) {
    MPI_Aint lb, extent;
    MPI_Type_get_extent(d->t, &lb, &extent);
    return (int)extent;
}

/* Writes value v (index idx for pairs) as element i. */
static inline void put(const tdesc *d, void *buf, size_t i, long v, int idx) {
    int s = type_size(d);
    char *p = (char *)buf + i * (size_t)s;
    if (d->t == MPI_SHORT_INT) { struct short_int e = {(short)v, idx}; memcpy(p, &e, sizeof e); return; }
    if (d->t == MPI_2INT) { struct int_int e = {(int)v, idx}; memcpy(p, &e, sizeof e); return; }
    if (d->t == MPI_LONG_INT) { struct long_int e = {v, idx}; memcpy(p, &e, sizeof e); return; }
    if (d->t == MPI_FLOAT_INT) { struct float_int e = {(float)v, idx}; memcpy(p, &e, sizeof e); return; }
    if (d->t == MPI_DOUBLE_INT) { struct double_int e = {(double)v, idx}; memcpy(p, &e, sizeof e); return; }
    if (d->t == MPI_LONG_DOUBLE_INT) { struct ldouble_int e; memset(&e, 0, sizeof e); e.v = v; e.i = idx; memcpy(p, &e, sizeof e); return; }
    if (d->k == K_FLOAT) {
        if (s == 4) { float f = (float)v; memcpy(p, &f, 4); }
        else if (s == 8) { double f = (double)v; memcpy(p, &f, 8); }
        else { long double f = v; memset(p, 0, (size_t)s); memcpy(p, &f, sizeof f < (size_t)s ? sizeof f : (size_t)s); }
        return;
    }
    if (d->k == K_COMPLEX) {
        if (s == 8) { float _Complex c = (float)v; memcpy(p, &c, 8); }
        else if (s == 16) { double _Complex c = (double)v; memcpy(p, &c, 16); }
        else { long double _Complex c = v; memset(p, 0, (size_t)s); memcpy(p, &c, sizeof c); }
        return;
    }
    if (s == 1) { int8_t x = (int8_t)v; memcpy(p, &x, 1); }
    else if (s == 2) { int16_t x = (int16_t)v; memcpy(p, &x, 2); }
    else if (s == 4) { int32_t x = (int32_t)v; memcpy(p, &x, 4); }
    else { int64_t x = v; memcpy(p, &x, 8); }
}

/* Reads element i: its value (complex: a value with a non-zero imaginary part reads as
 * -9999), and the index of a pair. */
static inline long get(const tdesc *d, const void *buf, size_t i, int *idx) {
    int s = type_size(d);
    const char *p = (const char *)buf + i * (size_t)s;
    *idx = 0;
#define PAIR(T) { struct T e; memcpy(&e, p, sizeof e); *idx = e.i; return (long)e.v; }
    if (d->t == MPI_SHORT_INT) PAIR(short_int)
    if (d->t == MPI_2INT) PAIR(int_int)
    if (d->t == MPI_LONG_INT) PAIR(long_int)
    if (d->t == MPI_FLOAT_INT) PAIR(float_int)
    if (d->t == MPI_DOUBLE_INT) PAIR(double_int)
    if (d->t == MPI_LONG_DOUBLE_INT) PAIR(ldouble_int)
#undef PAIR
    if (d->k == K_FLOAT) {
        if (s == 4) { float f; memcpy(&f, p, 4); return (long)f; }
        if (s == 8) { double f; memcpy(&f, p, 8); return (long)f; }
        long double f; memcpy(&f, p, sizeof f); return (long)f;
    }
    if (d->k == K_COMPLEX) {
        if (s == 8) { float _Complex c; memcpy(&c, p, 8); return cimagf(c) ? -9999 : (long)crealf(c); }
        if (s == 16) { double _Complex c; memcpy(&c, p, 16); return cimag(c) ? -9999 : (long)creal(c); }
        long double _Complex c; memcpy(&c, p, sizeof c); return cimagl(c) ? -9999 : (long)creall(c);
    }
    if (s == 1) return d->k == K_INT || d->k == K_CHAR ? (long)*(const int8_t *)p : (long)*(const uint8_t *)p;
    if (s == 2) { int16_t x; uint16_t u; memcpy(&x, p, 2); memcpy(&u, p, 2); return d->k == K_INT ? x : u; }
    if (s == 4) { int32_t x; uint32_t u; memcpy(&x, p, 4); memcpy(&u, p, 4); return d->k == K_INT || d->k == K_CHAR ? x : (long)u; }
    int64_t x; memcpy(&x, p, 8); return (long)x;
}

/* Predefined ops under test. */
typedef struct { MPI_Op op; const char *name; } odesc;
static odesc ops[] = {
    {MPI_SUM, "sum"}, {MPI_PROD, "prod"}, {MPI_MIN, "min"}, {MPI_MAX, "max"},
    {MPI_LAND, "land"}, {MPI_LOR, "lor"}, {MPI_LXOR, "lxor"}, {MPI_BAND, "band"},
    {MPI_BOR, "bor"}, {MPI_BXOR, "bxor"}, {MPI_MINLOC, "minloc"}, {MPI_MAXLOC, "maxloc"},
};
#define NOPS ((int)(sizeof ops / sizeof *ops))

/* Whether MPI defines op o on type d. */
static inline int op_allowed(const tdesc *d, int o) {
    if (d->k == K_CHAR) return 0;
    if (d->reducible == 3) return o >= 4 && o <= 6;              /* bool: logical */
    if (d->reducible == 2) return o >= 7 && o <= 9;              /* byte: bitwise */
    if (d->k == K_PAIR) return o >= 10;
    if (o >= 10) return 0;
    if (d->k == K_FLOAT) return o <= 3;
    if (d->k == K_COMPLEX) return o <= 1;
    return 1;                                                    /* integers: all but loc */
}

/* The value rank r of group g contributes at element i, in the domain op o keeps exact. */
static inline long value(int o, int g, int r, size_t i) {
    if (o == 1) return (g + r + (long)i) % 3 == 0 ? 2 : 1;      /* prod: stays small */
    if (o >= 4 && o <= 6) return (g + r + (long)i) % 2;         /* logical */
    return (g * 5 + r * 3 + (long)(i % 1000) * 7) % 11;
}

/* Folds the contributions of ranks [lo, hi) of group g at element i; the pair index in *idx. */
static inline long expect(int o, int g, int lo, int hi, size_t i, int *idx) {
    long acc = value(o, g, lo, i);
    *idx = lo;
    for (int r = lo + 1; r < hi; r++) {
        long v = value(o, g, r, i);
        switch (o) {
        case 0: acc += v; break;
        case 1: acc *= v; break;
        case 2: case 10: if (v < acc) { acc = v; *idx = r; } break;
        case 3: case 11: if (v > acc) { acc = v; *idx = r; } break;
        case 4: acc = acc && v; break;
        case 5: acc = acc || v; break;
        case 6: acc = !acc != !v; break;
        case 7: acc &= v; break;
        case 8: acc |= v; break;
        default: acc ^= v; break;
        }
    }
    return acc;
}

/* The value rank r of group g holds at element i for the data-moving operations. */
static inline long datum(const tdesc *d, int g, int r, size_t i) {
    long v = (g * 5 + r * 3 + (long)(i % 1000) * 7) % 11 + 1;
    return d->k == K_BOOL ? v % 2 : v;
}

#endif
