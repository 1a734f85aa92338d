/* Communicators and groups: dup, split, create, compare, free, groups and translation. */
#include <mpi.h>
#include "check.h"

static int deleted = 0;
static int count_delete(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm; (void)keyval; (void)value;
    deleted += *(int *)extra;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int rank, size, r, s, res;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Comm_size(MPI_COMM_SELF, &s);
    MPI_Comm_rank(MPI_COMM_SELF, &r);
    CHECK(s == 1 && r == 0);

    MPI_Comm dup;
    CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &dup), MPI_SUCCESS);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &res);
    CHECK(res == MPI_CONGRUENT);
    MPI_Comm_compare(dup, dup, &res);
    CHECK(res == MPI_IDENT);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(dup, &eh);
    CHECK(eh == MPI_ERRORS_RETURN);
    int v = rank;
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, dup);
    CHECK(v == size * (size - 1) / 2);

    /* Split into even and odd, reversed by key; and one with MPI_UNDEFINED. */
    MPI_Comm half;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half), MPI_SUCCESS);
    MPI_Comm_size(half, &s);
    MPI_Comm_rank(half, &r);
    CHECK(s == (size + 1 - rank % 2) / 2);
    CHECK(r == s - 1 - rank / 2);
    MPI_Comm none;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &none), MPI_SUCCESS);
    CHECK(rank == 0 ? none != MPI_COMM_NULL : none == MPI_COMM_NULL);
    if (none != MPI_COMM_NULL) MPI_Comm_free(&none);
    if (size > 1) {
        MPI_Comm_compare(MPI_COMM_WORLD, half, &res);
        CHECK(res == MPI_UNEQUAL);
    }

    /* Groups. */
    MPI_Group world, evens, odds, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_size(world, &s);
    MPI_Group_rank(world, &r);
    CHECK(s == size && r == rank);
    int ev[64], ne = 0;
    for (int i = 0; i < size; i += 2) ev[ne++] = i;
    CHECK_RC(MPI_Group_incl(world, ne, ev, &evens), MPI_SUCCESS);
    CHECK_RC(MPI_Group_excl(world, ne, ev, &odds), MPI_SUCCESS);
    MPI_Group_size(odds, &s);
    CHECK(s == size - ne);
    MPI_Group_rank(evens, &r);
    CHECK(r == (rank % 2 ? MPI_UNDEFINED : rank / 2));
    int from[2] = {0, ne - 1}, to[2];
    MPI_Group_translate_ranks(evens, 2, from, world, to);
    CHECK(to[0] == 0 && to[1] == 2 * (ne - 1));
    int range[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(world, 1, range, &g);
    MPI_Group_compare(g, evens, &res);
    CHECK(res == MPI_IDENT);
    MPI_Group_free(&g);
    MPI_Group_range_excl(world, 1, range, &g);
    MPI_Group_compare(g, odds, &res);
    CHECK(res == MPI_IDENT);
    MPI_Group_free(&g);
    MPI_Group_union(evens, odds, &g);
    MPI_Group_size(g, &s);
    CHECK(s == size);
    MPI_Group_compare(g, world, &res);
    CHECK(res == (size > 2 ? MPI_SIMILAR : MPI_IDENT));
    MPI_Group_free(&g);
    CHECK(g == MPI_GROUP_NULL);

    /* Comm_create over the evens. */
    MPI_Comm ecomm;
    CHECK_RC(MPI_Comm_create(MPI_COMM_WORLD, evens, &ecomm), MPI_SUCCESS);
    if (rank % 2 == 0) {
        MPI_Comm_size(ecomm, &s);
        MPI_Comm_rank(ecomm, &r);
        CHECK(s == ne && r == rank / 2);
        int flag;
        MPI_Comm_test_inter(ecomm, &flag);
        CHECK(flag == 0);
        CHECK_RC(MPI_Comm_remote_size(ecomm, &s), MPI_ERR_COMM);
        MPI_Comm_free(&ecomm);
    } else {
        CHECK(ecomm == MPI_COMM_NULL);
    }
    /* Comm_create_group: the odds alone make theirs. */
    if (rank % 2 == 1) {
        MPI_Comm ocomm;
        CHECK_RC(MPI_Comm_create_group(MPI_COMM_WORLD, odds, 7, &ocomm), MPI_SUCCESS);
        MPI_Comm_size(ocomm, &s);
        MPI_Comm_rank(ocomm, &r);
        CHECK(s == size - ne && r == rank / 2);
        v = 1;
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, ocomm);
        CHECK(v == size - ne);
        MPI_Comm_free(&ocomm);
    } else {
        MPI_Comm ocomm;
        CHECK_RC(MPI_Comm_create_group(MPI_COMM_WORLD, odds, 7, &ocomm), MPI_ERR_GROUP);
    }
    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&world);

    /* Shared-memory split: one node here, so everyone. */
    MPI_Comm node;
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), MPI_SUCCESS);
    MPI_Comm_compare(MPI_COMM_WORLD, node, &res);
    CHECK(res == MPI_CONGRUENT);
    MPI_Comm_free(&node);
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, rank, MPI_INFO_NULL, &node), MPI_SUCCESS);
    CHECK(node == MPI_COMM_NULL);

    /* Comm_idup, in order with a nonblocking collective. */
    MPI_Comm idup;
    MPI_Request ireqs[2];
    int iv = 1, ivr = 0;
    MPI_Iallreduce(&iv, &ivr, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &ireqs[0]);
    CHECK_RC(MPI_Comm_idup(MPI_COMM_WORLD, &idup, &ireqs[1]), MPI_SUCCESS);
    MPI_Waitall(2, ireqs, MPI_STATUSES_IGNORE);
    MPI_Comm_size(idup, &s);
    CHECK(s == size && ivr == size);
    MPI_Comm_free(&idup);
    MPI_Info used;
    CHECK_RC(MPI_Comm_get_info(MPI_COMM_WORLD, &used), MPI_SUCCESS);
    MPI_Info_free(&used);

    /* User attributes: copied by MPI_COMM_DUP_FN on dup, deleted on free. */
    int key, extra = 1, flag;
    static int payload = 77;
    int *got;
    CHECK_RC(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, count_delete, &key, &extra), MPI_SUCCESS);
    MPI_Comm_get_attr(half, key, &got, &flag);
    CHECK(flag == 0);
    CHECK_RC(MPI_Comm_set_attr(half, key, &payload), MPI_SUCCESS);
    MPI_Comm_get_attr(half, key, &got, &flag);
    CHECK(flag == 1 && got == &payload);
    MPI_Comm half2;
    MPI_Comm_dup(half, &half2);
    MPI_Comm_get_attr(half2, key, &got, &flag);
    CHECK(flag == 1 && *got == 77);
    MPI_Comm_free(&half2);
    CHECK(deleted == 1);
    CHECK_RC(MPI_Comm_delete_attr(half, key), MPI_SUCCESS);
    CHECK(deleted == 2);
    CHECK_RC(MPI_Comm_delete_attr(half, key), MPI_ERR_KEYVAL);
    MPI_Comm_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID);

    CHECK_RC(MPI_Comm_free(&half), MPI_SUCCESS);
    CHECK(half == MPI_COMM_NULL);
    CHECK_RC(MPI_Comm_free(&dup), MPI_SUCCESS);
    MPI_Comm w = MPI_COMM_WORLD;
    CHECK_RC(MPI_Comm_free(&w), MPI_ERR_COMM);
    CHECK_RC(MPI_Comm_size(dup, &s), MPI_ERR_COMM);
    FINISH("comm");
}
