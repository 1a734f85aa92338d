/* Buffers as the bytes a schedule moves. MPI lets the ranks of one collective describe the
 * same data with different datatypes (4 MPI_INT on one rank, one contiguous type of 4 ints
 * on another), so every rank must take the same path whatever its datatype: the data-moving
 * operations never hand a call to the host for its datatype. A type whose memory already is
 * its bytes in order (a predefined type without holes, or a contiguous run of one) is moved
 * in place; any other is packed on the sending side and unpacked when the call ends. */
#include <stdlib.h>
#include <string.h>

#include "prep.h"

/* One answer kept: programs call one collective with one type over and over. Only
 * predefined types are kept (a derived type's handle may come back as another type). */
static _Thread_local MPI_Datatype cached = MPI_DATATYPE_NULL; /* per thread: no lock */
static _Thread_local cc_layout cached_layout;

/* Whether `type` (of `size` bytes, extent `extent` from lower bound `lb`) lays its bytes
 * out in order without holes. */
static int in_order(MPI_Datatype type, MPI_Count size, MPI_Aint lb, MPI_Aint extent, int depth) {
    int ni, na, nd, combiner;
    if (lb != 0 || size != extent || depth > 8 ||
        PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
        return 0;
    if (combiner == MPI_COMBINER_NAMED)
        return 1;
    if ((combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP) || ni > 1 ||
        na != 0 || nd != 1)
        return 0;
    int ints[1];
    MPI_Aint addrs[1];
    MPI_Datatype child;
    if (PMPI_Type_get_contents(type, ni, na, nd, ints, addrs, &child) != MPI_SUCCESS)
        return 0;
    MPI_Count csize = 0;
    MPI_Aint clb = 0, cext = 0;
    int ok = PMPI_Type_size_x(child, &csize) == MPI_SUCCESS &&
             PMPI_Type_get_extent(child, &clb, &cext) == MPI_SUCCESS &&
             in_order(child, csize, clb, cext, depth + 1);
    PMPI_Type_get_envelope(child, &ni, &na, &nd, &combiner);
    if (combiner != MPI_COMBINER_NAMED)
        PMPI_Type_free(&child);
    return ok;
}

int cc_type_whole(MPI_Datatype type, MPI_Datatype *base, size_t *mult, size_t *unit) {
    MPI_Count size = 0;
    MPI_Aint lb = 0, extent = 0;
    if (type == MPI_DATATYPE_NULL || PMPI_Type_size_x(type, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS || size <= 0 ||
        !in_order(type, size, lb, extent, 0))
        return -1;
    *unit = (size_t)size;
    *mult = 1;
    MPI_Datatype t = type;
    for (int depth = 0; depth <= 8; depth++) { /* in_order walked this chain already */
        int ni, na, nd, combiner, ints[1];
        MPI_Aint addrs[1];
        MPI_Datatype child;
        PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
        if (combiner == MPI_COMBINER_NAMED) {
            *base = t;
            return 0;
        }
        if (ni > 1 || na != 0 || nd != 1 ||
            PMPI_Type_get_contents(t, ni, na, nd, ints, addrs, &child) != MPI_SUCCESS)
            break;
        if (combiner == MPI_COMBINER_CONTIGUOUS)
            *mult *= (size_t)ints[0];
        if (t != type)
            PMPI_Type_free(&t);
        t = child;
    }
    if (t != type)
        PMPI_Type_free(&t);
    return -1;
}

int cc_layout_of(MPI_Datatype type, cc_layout *out) {
    if (type == cached && type != MPI_DATATYPE_NULL) {
        *out = cached_layout;
        return 0;
    }
    MPI_Count size = 0;
    MPI_Aint lb = 0, extent = 0;
    int ni, na, nd, combiner;
    if (type == MPI_DATATYPE_NULL || PMPI_Type_size_x(type, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS || size < 0 ||
        PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
        return -1;
    out->type = type;
    out->unit = (size_t)size;
    out->extent = extent;
    out->direct = in_order(type, size, lb, extent, 0);
    if (combiner == MPI_COMBINER_NAMED) {
        cached = type;
        cached_layout = *out;
    }
    return 0;
}

/* Packs `count` elements at `buf` into `dst` (exactly count × unit bytes). */
static int pack(const cc_layout *l, const void *buf, int count, void *dst, size_t len) {
    int at = 0;
    if (len == 0)
        return 0;
    if (len > (size_t)INT32_MAX ||
        PMPI_Pack(buf, count, l->type, dst, (int)len, &at, MPI_COMM_SELF) != MPI_SUCCESS ||
        (size_t)at != len)
        return -1;
    return 0;
}

static void *owned(cc_job *job, size_t len) {
    void *p = malloc(len ? len : 1);
    if (p && cc_job_own(job, p) < 0) {
        free(p);
        return NULL;
    }
    return p;
}

const void *cc_send_view(cc_job *job, const cc_layout *l, const void *buf, int count,
                         int copy) {
    size_t len = (size_t)count * l->unit;
    if (count < 0)
        return NULL;
    if (l->direct && !copy)
        return buf;
    void *p = owned(job, len);
    if (!p)
        return NULL;
    if (l->direct) {
        if (len)
            memcpy(p, buf, len);
        return p;
    }
    return pack(l, buf, count, p, len) == 0 ? p : NULL;
}

/* Keeps `type` until the job ends (a nonblocking call's user may free it before). */
static int keep_type(cc_job *job, const cc_layout *l, MPI_Datatype *kept, int *dup) {
    int ni, na, nd, combiner;
    *kept = l->type;
    *dup = 0;
    if (!CC_IS_NONBLOCKING(job->slot) ||
        (PMPI_Type_get_envelope(l->type, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
         combiner == MPI_COMBINER_NAMED))
        return 0;
    *dup = 1;
    return PMPI_Type_dup(l->type, kept) == MPI_SUCCESS ? 0 : -1;
}

/* Sets the job to unpack `n` blocks from `packed` when it ends. */
static int unpack_later(cc_job *job, const cc_layout *l, void *buf, void *packed, int n,
                        const int *counts, const int *displs) {
    cc_unpack *u = calloc(1, sizeof *u + (3 * (size_t)n + 1) * sizeof(MPI_Aint));
    if (!u)
        return -1;
    u->n = n;
    u->dst = buf;
    u->packed = packed;
    u->extent = l->extent;
    u->counts = (MPI_Aint *)(u + 1);
    u->displs = u->counts + n;
    u->offsets = u->displs + n;
    MPI_Aint at = 0;
    for (int i = 0; i < n; i++) {
        u->counts[i] = counts[i];
        u->displs[i] = displs ? displs[i] : 0;
        u->offsets[i] = at;
        at += (MPI_Aint)((size_t)counts[i] * l->unit);
    }
    u->offsets[n] = at;
    if (keep_type(job, l, &u->type, &u->type_owned) < 0) {
        free(u);
        return -1;
    }
    job->unpack = u;
    return 0;
}

void *cc_recv_view(cc_job *job, const cc_layout *l, void *buf, int count) {
    if (count < 0)
        return NULL;
    if (l->direct)
        return buf;
    size_t len = (size_t)count * l->unit;
    void *p = owned(job, len);
    if (!p || (len && unpack_later(job, l, buf, p, 1, &count, NULL) < 0))
        return NULL;
    return p;
}

size_t *cc_blocks_view(cc_job *job, const cc_layout *l, int n, const int *counts,
                       const int *displs, const void *buf, int role, void **view,
                       size_t *len) {
    size_t *out = malloc(2 * (size_t)(n ? n : 1) * sizeof *out);
    if (!out || cc_job_own(job, out) < 0) {
        free(out);
        return NULL;
    }
    job->nmeta++; /* read by the schedule's making only */
    /* Direct: offsets into the user's buffer from its lowest block (displacements may be
     * negative). Packed: the blocks one after another in rank order. */
    MPI_Aint lo = 0, hi = 0;
    int any = 0;
    for (int i = 0; i < n; i++) {
        if (counts[i] < 0)
            return NULL;
        MPI_Aint at = (MPI_Aint)displs[i] * l->extent, end = at + (MPI_Aint)counts[i] * l->extent;
        if (counts[i] && (!any || at < lo))
            lo = at;
        if (counts[i] && (!any || end > hi))
            hi = end;
        any |= counts[i] != 0;
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        out[i] = (size_t)counts[i] * l->unit;
        out[n + i] = l->direct ? (counts[i] ? (size_t)((MPI_Aint)displs[i] * l->extent - lo) : 0)
                               : at;
        at += out[i];
    }
    if (l->direct) {
        *view = (char *)buf + lo;
        *len = (size_t)(hi - lo);
        if (role == CC_VIEW_COPY) { /* an in-place operand: a copy the schedule reads */
            void *p = owned(job, *len);
            if (!p)
                return NULL;
            if (*len)
                memcpy(p, *view, *len);
            *view = p;
        }
        return out;
    }
    char *p = owned(job, at);
    if (!p)
        return NULL;
    *view = p;
    *len = at;
    if (role == CC_VIEW_RECV)
        return at && unpack_later(job, l, (void *)buf, p, n, counts, displs) < 0 ? NULL : out;
    for (int i = 0; i < n; i++)
        if (counts[i] && pack(l, (const char *)buf + (MPI_Aint)displs[i] * l->extent, counts[i],
                              p + out[n + i], out[i]) < 0)
            return NULL;
    return out;
}

int cc_unpack_run(cc_job *job) {
    const cc_unpack *u = job->unpack;
    for (int i = 0; i < u->n; i++) {
        int at = 0;
        MPI_Aint len = u->offsets[i + 1] - u->offsets[i];
        if (len == 0)
            continue;
        if (len > INT32_MAX ||
            PMPI_Unpack((char *)u->packed + u->offsets[i], (int)len, &at,
                        (char *)u->dst + u->displs[i] * u->extent, (int)u->counts[i], u->type,
                        MPI_COMM_SELF) != MPI_SUCCESS)
            return -1;
    }
    return 0;
}

void cc_unpack_free(cc_job *job) {
    cc_unpack *u = job->unpack;
    if (!u)
        return;
    if (u->type != MPI_DATATYPE_NULL && u->type_owned)
        PMPI_Type_free(&u->type);
    free(u);
    job->unpack = NULL;
}
