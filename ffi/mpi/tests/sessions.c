/* MPI-4 sessions without MPI_Init: process sets, a communicator and an inter-communicator
 * made from groups alone, errors to the handlers the calls name, then MPI_Init and
 * MPI_Finalize while a second session keeps the runtime up. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static int pset_size(MPI_Session s, const char *name) {
    MPI_Info info;
    char value[16];
    int flag = 0;
    MPI_Session_get_pset_info(s, name, &info);
    MPI_Info_get(info, "mpi_size", sizeof value - 1, value, &flag);
    MPI_Info_free(&info);
    return flag ? atoi(value) : -1;
}

int main(void) {
    MPI_Session s, second;
    MPI_Group world_group, half, other_half;
    MPI_Comm comm, inter;
    MPI_Info info, used;
    int flag, n, len, rank, size, sum = 0;
    char name[MPI_MAX_PSET_NAME_LEN], level[32];

    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE");
    CHECK_RC(MPI_Session_init(info, MPI_ERRORS_RETURN, &s), MPI_SUCCESS);
    MPI_Info_free(&info);
    MPI_Initialized(&flag);
    CHECK(flag == 0);
    MPI_Session_get_info(s, &used);
    MPI_Info_get(used, "thread_level", sizeof level - 1, level, &flag);
    CHECK(flag && strcmp(level, "MPI_THREAD_MULTIPLE") == 0);
    MPI_Info_free(&used);

    MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n);
    CHECK(n == 2);
    len = 0;
    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 1, &len, NULL);
    CHECK(len == (int)strlen("mpi://SELF") + 1);
    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 1, &len, name);
    CHECK(strcmp(name, "mpi://SELF") == 0);
    CHECK(pset_size(s, "mpi://SELF") == 1);
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://nowhere", &half), MPI_ERR_ARG);

    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://WORLD", &world_group), MPI_SUCCESS);
    CHECK_RC(MPI_Comm_create_from_group(world_group, "sessions.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm), MPI_SUCCESS);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    CHECK(size == pset_size(s, "mpi://WORLD"));
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    CHECK(sum == size * (size - 1) / 2);
    /* A group without the caller fails to the handler the call names (returns here). */
    int not_me = (rank + 1) % size;
    MPI_Group_incl(world_group, 1, &not_me, &half);
    if (size > 1)
        CHECK_RC(MPI_Comm_create_from_group(half, "sessions.bad", MPI_INFO_NULL, MPI_ERRORS_RETURN, &inter), MPI_ERR_GROUP);
    MPI_Group_free(&half);

    if (size > 1) {
        /* Evens and odds, each group's leader its lowest rank. */
        int evens[8], odds[8], ne = 0, no = 0;
        for (int r = 0; r < size && r < 16; r++) {
            if (r % 2 == 0) evens[ne++] = r; else odds[no++] = r;
        }
        MPI_Group_incl(world_group, ne, evens, &half);
        MPI_Group_incl(world_group, no, odds, &other_half);
        MPI_Group mine = rank % 2 ? other_half : half, theirs = rank % 2 ? half : other_half;
        CHECK_RC(MPI_Intercomm_create_from_groups(mine, 0, theirs, 0, "sessions.inter", MPI_INFO_NULL, MPI_ERRORS_RETURN, &inter), MPI_SUCCESS);
        int remote = 0, test = 0, got = -1;
        MPI_Comm_test_inter(inter, &test);
        MPI_Comm_remote_size(inter, &remote);
        CHECK(test && remote == (rank % 2 ? ne : no));
        int root_value = 77;
        if (rank == 0) MPI_Bcast(&root_value, 1, MPI_INT, MPI_ROOT, inter);
        else if (rank % 2 == 0) MPI_Bcast(&got, 1, MPI_INT, MPI_PROC_NULL, inter);
        else { MPI_Bcast(&got, 1, MPI_INT, 0, inter); CHECK(got == 77); }
        MPI_Comm_free(&inter);
        MPI_Group_free(&half);
        MPI_Group_free(&other_half);
    }
    MPI_Group_free(&world_group);
    MPI_Comm_free(&comm);

    /* The world model begins and ends while a session keeps the runtime up. */
    CHECK_RC(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &second), MPI_SUCCESS);
    CHECK_RC(MPI_Session_finalize(&s), MPI_SUCCESS);
    CHECK(s == MPI_SESSION_NULL);
    CHECK_RC(MPI_Init(NULL, NULL), MPI_SUCCESS);
    MPI_Initialized(&flag);
    CHECK(flag == 1);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_RC(MPI_Finalize(), MPI_SUCCESS);
    MPI_Finalized(&flag);
    CHECK(flag == 1);
    CHECK_RC(MPI_Session_finalize(&second), MPI_SUCCESS);
    /* The runtime has ended: a new session is an error returned to the handler given. */
    CHECK_RC(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s), MPI_ERR_OTHER);
    if (rank == 0) printf("sessions: %s (%d failed checks)\n", all || failures ? "FAIL" : "PASS", all + failures);
    return all || failures ? 1 : 0;
}
