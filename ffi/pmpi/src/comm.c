/* Communicator constructors: each builds commcore's state for the new communicator right
 * after the host made it (collective over its members, as the constructor is). Freeing goes
 * through the attribute's delete callback (state.c). */
#include "pmpi.h"

/* The host's result, after attaching state to the communicator it made. */
static int attached(int rc, MPI_Comm *out) {
    if (rc == MPI_SUCCESS)
        cc_comm_attach(*out);
    return rc;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out) {
    return attached(PMPI_Comm_dup(comm, out), out);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out) {
    return attached(PMPI_Comm_split(comm, color, key, out), out);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *out) {
    return attached(PMPI_Comm_create(comm, group, out), out);
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *out) {
    return attached(PMPI_Comm_create_group(comm, group, tag, out), out);
}

int MPI_Intercomm_create(MPI_Comm local, int local_leader, MPI_Comm peer, int remote_leader,
                         int tag, MPI_Comm *out) {
    return attached(PMPI_Intercomm_create(local, local_leader, peer, remote_leader, tag, out),
                    out);
}

int MPI_Intercomm_merge(MPI_Comm inter, int high, MPI_Comm *out) {
    return attached(PMPI_Intercomm_merge(inter, high, out), out);
}

/* The state goes with the attribute when the host frees the communicator. */
int MPI_Comm_free(MPI_Comm *comm) {
    return PMPI_Comm_free(comm);
}
