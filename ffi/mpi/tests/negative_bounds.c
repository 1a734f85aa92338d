/* Datatypes that reach before their buffer: negative lower bounds, displacements, strides
 * and extents, through extents, point-to-point, pack/unpack, collectives and derived types
 * of them; the values are MPICH's. */
#include <mpi.h>
#include <string.h>
#include "check.h"

static void extent_is(MPI_Datatype t, MPI_Aint lb, MPI_Aint extent, MPI_Aint true_lb,
                      MPI_Aint true_extent, int size, int line) {
    MPI_Aint l, e, tl, te;
    int s;
    MPI_Type_get_extent(t, &l, &e);
    MPI_Type_get_true_extent(t, &tl, &te);
    MPI_Type_size(t, &s);
    if (l != lb || e != extent || tl != true_lb || te != true_extent || s != size) {
        failures++;
        fprintf(stderr, "line %d: lb %ld extent %ld true %ld+%ld size %d, want %ld %ld %ld+%ld %d\n",
                line, (long)l, (long)e, (long)tl, (long)te, s, (long)lb, (long)extent,
                (long)true_lb, (long)true_extent, size);
    }
}
#define EXTENT_IS(t, lb, e, tlb, te, s) extent_is(t, lb, e, tlb, te, s, __LINE__)

/* Sums elements of negvec: ints at 0, -2 and -4, elements 5 ints apart. */
static void sum_negvec(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    for (int e = 0; e < *len; e++)
        for (int k = 0; k < 3; k++)
            ((int *)inout)[5 * e - 2 * k] += ((int *)in)[5 * e - 2 * k];
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* An int stepping 8 bytes backwards; three of them: ints at 0, -8, -16. */
    MPI_Datatype back, back3, four, evil, negvec, negidx, negstruct, twice;
    MPI_Type_create_resized(MPI_INT, 0, -8, &back);
    EXTENT_IS(back, 0, -8, 0, 4, 4);
    MPI_Type_contiguous(3, back, &back3);
    EXTENT_IS(back3, -16, 8, -16, 20, 12);
    /* lbub's: four bytes with lb -3 and extent 9. */
    MPI_Type_contiguous(4, MPI_BYTE, &four);
    MPI_Type_create_resized(four, -3, 9, &evil);
    EXTENT_IS(evil, -3, 9, 0, 4, 4);
    /* Ints at 0, -8, -16 bytes: a negative stride. */
    MPI_Type_vector(3, 1, -2, MPI_INT, &negvec);
    EXTENT_IS(negvec, -16, 20, -16, 20, 12);
    /* One int at -8 bytes, two at 4. */
    int lens[2] = {1, 2};
    MPI_Aint displs[2] = {-8, 4};
    MPI_Type_create_hindexed(2, lens, displs, MPI_INT, &negidx);
    EXTENT_IS(negidx, -8, 20, -8, 20, 12);
    /* An int at -4 and a double at 0: extent 12 padded to the double's 8. */
    int slens[2] = {1, 1};
    MPI_Aint sdispls[2] = {-4, 0};
    MPI_Datatype stypes[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, slens, sdispls, stypes, &negstruct);
    EXTENT_IS(negstruct, -4, 16, -4, 12, 12);
    /* A derived type of one: two of negidx, 20 bytes apart. */
    MPI_Type_contiguous(2, negidx, &twice);
    EXTENT_IS(twice, -8, 40, -8, 40, 24);
    /* Types of a type whose upper bound lies below its lower (lb 6, extent -9): each
     * element's bounds count, the lowest lower and the highest upper (MPICH's values). */
    MPI_Datatype under, of_under;
    MPI_Type_create_resized(four, 6, -9, &under);
    MPI_Type_vector(3, 2, -4, under, &of_under);
    EXTENT_IS(of_under, -3, 72, -9, 85, 24);
    MPI_Type_free(&of_under);
    int ulens[3] = {2, 0, 3};
    MPI_Aint udispls[3] = {-50, 1000, 30};
    MPI_Type_create_hindexed(3, ulens, udispls, under, &of_under);
    EXTENT_IS(of_under, -53, 80, -59, 93, 20);
    MPI_Type_free(&of_under);
    MPI_Datatype utypes[3] = {under, MPI_DOUBLE, under};
    MPI_Type_create_struct(3, ulens, udispls, utypes, &of_under);
    EXTENT_IS(of_under, -53, 80, -59, 93, 20);
    MPI_Type_free(&of_under);
    MPI_Type_free(&under);
    MPI_Datatype all[] = {back, back3, evil, negvec, negidx, negstruct, twice};
    for (int i = 0; i < 7; i++)
        MPI_Type_commit(&all[i]);

    /* Point-to-point: two negvec from &s[10] are ints 10, 8, 6, then 15, 13, 11. */
    int s[20], r[20], plain[6];
    for (int i = 0; i < 20; i++)
        s[i] = 100 * rank + i;
    MPI_Sendrecv(&s[10], 2, negvec, right, 1, plain, 6, MPI_INT, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int order[6] = {10, 8, 6, 15, 13, 11};
    for (int i = 0; i < 6; i++)
        CHECK(plain[i] == 100 * left + order[i]);
    /* Received through a negative extent: three ints land at r[10], r[8], r[6]. */
    memset(r, 0xff, sizeof r);
    MPI_Sendrecv(&s[0], 3, MPI_INT, right, 2, &r[10], 3, back, left, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 0; i < 20; i++)
        CHECK(r[i] == (i == 10 ? 100 * left : i == 8 ? 100 * left + 1
                       : i == 6 ? 100 * left + 2 : -1));
    /* A structure reaching back 4 bytes before its buffer (its double). */
    struct { int pad; int i; double d; } out = {0, 7 + rank, 2.5 * rank}, in = {0, 0, 0};
    MPI_Sendrecv(&out.d, 1, negstruct, right, 3, &in.d, 1, negstruct, left, 3,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(in.i == 7 + left && in.d == 2.5 * left);

    /* Get_elements of a partial message: 4 ints into room for two negvec (6). */
    MPI_Status status;
    int count;
    MPI_Sendrecv(s, 4, MPI_INT, right, 4, &r[10], 2, negvec, left, 4, MPI_COMM_WORLD, &status);
    MPI_Get_elements(&status, negvec, &count);
    CHECK(count == 4);
    MPI_Get_count(&status, negvec, &count);
    CHECK(count == MPI_UNDEFINED);

    /* Pack and unpack two negidx from &s[10]: ints 8, 11, 12, then 13, 16, 17. */
    char packed[64];
    int position = 0, packsize;
    MPI_Pack_size(2, negidx, MPI_COMM_WORLD, &packsize);
    CHECK(packsize == 24);
    MPI_Pack(&s[10], 2, negidx, packed, sizeof packed, &position, MPI_COMM_WORLD);
    CHECK(position == 24);
    int pack_order[6] = {8, 11, 12, 13, 16, 17};
    for (int i = 0; i < 6; i++) {
        int v;
        memcpy(&v, packed + 4 * i, 4);
        CHECK(v == 100 * rank + pack_order[i]);
    }
    memset(r, 0xff, sizeof r);
    position = 0;
    MPI_Unpack(packed, sizeof packed, &position, &r[10], 2, negidx, MPI_COMM_WORLD);
    CHECK(position == 24);
    for (int i = 0; i < 20; i++) {
        int held = i == 8 || i == 11 || i == 12 || i == 13 || i == 16 || i == 17;
        CHECK(r[i] == (held ? s[i] : -1));
    }
    /* The derived type of it packs the same bytes. */
    position = 0;
    char again[64];
    MPI_Pack(&s[10], 1, twice, again, sizeof again, &position, MPI_COMM_WORLD);
    CHECK(position == 24 && memcmp(packed, again, 24) == 0);

    /* Collectives: every rank's negvec at &s[4] (ints 4, 2, 0) gathered as plain ints. */
    int gathered[3 * 64];
    if (size <= 64) {
        MPI_Allgather(&s[4], 1, negvec, gathered, 3, MPI_INT, MPI_COMM_WORLD);
        for (int j = 0; j < size; j++)
            for (int k = 0; k < 3; k++)
                CHECK(gathered[3 * j + k] == 100 * j + 4 - 2 * k);
    }
    /* A v collective stepping backwards: block j at j extents of -8 bytes, r[2 * (n - j)]. */
    if (size <= 64) {
        int counts[64], places[64], wide[2 * 64 + 2];
        for (int j = 0; j < size; j++) {
            counts[j] = 1;
            places[j] = j;
        }
        for (int i = 0; i < 2 * size + 2; i++)
            wide[i] = -1;
        int mine = 10 + rank;
        MPI_Allgatherv(&mine, 1, MPI_INT, &wide[2 * size], counts, places, back, MPI_COMM_WORLD);
        for (int i = 0; i < 2 * size + 2; i++) {
            int block = 2 * size - i;
            CHECK(wide[i] == (block >= 0 && block % 2 == 0 && block / 2 < size ? 10 + block / 2 : -1));
        }
    }
    /* Broadcast into a negative extent: rank 0's ints 0, 1, 2 at b[10], b[8], b[6]. */
    int b[20];
    for (int i = 0; i < 20; i++)
        b[i] = rank == 0 ? (i == 10 ? 0 : i == 8 ? 1 : i == 6 ? 2 : -1) : -1;
    MPI_Bcast(&b[10], 3, back, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 20; i++)
        CHECK(b[i] == (i == 10 ? 0 : i == 8 ? 1 : i == 6 ? 2 : -1));
    /* A sum over a negative stride, in place, by a user operation (MPICH defines the
     * predefined ones on predefined types only): each rank's ints 10, 8, 6 are rank + k. */
    MPI_Op sum;
    MPI_Op_create(sum_negvec, 1, &sum);
    for (int i = 0; i < 20; i++)
        r[i] = i == 10 ? rank : i == 8 ? rank + 1 : i == 6 ? rank + 2 : -1;
    MPI_Allreduce(MPI_IN_PLACE, &r[10], 1, negvec, sum, MPI_COMM_WORLD);
    MPI_Op_free(&sum);
    int ranks = size * (size - 1) / 2;
    for (int i = 0; i < 20; i++)
        CHECK(r[i] == (i == 10 ? ranks : i == 8 ? ranks + size : i == 6 ? ranks + 2 * size : -1));

    for (int i = 0; i < 7; i++)
        MPI_Type_free(&all[i]);
    MPI_Type_free(&four);
    FINISH("negative_bounds");
}
