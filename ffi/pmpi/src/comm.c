/* Communicator constructors. The six a program makes in numbers (dup, split, create,
 * create_group, intercomm create and merge) only mark the new communicator with its kind:
 * its state is built at its first blocking collective (state.c's note says why). A dup of
 * an intra-communicator also ties the duplicate to a slot of its parent's pool of context
 * ids, and every 32nd runs the pool's allreduce on the parent (pool.c). The
 * constructors of communicators with a topology or hints build it at once. Freeing goes
 * through the attribute's delete callback (state.c). Communicators from constructors not
 * wrapped (MPI_Comm_idup, dynamic processes) get theirs at their first blocking collective,
 * except under MPI_THREAD_MULTIPLE, where they and their descendants stay with the host
 * (state.c says why); nonblocking collectives on a communicator without state go to the
 * host. */
#include "pmpi.h"

/* The host's result, after marking the communicator it made with its kind. */
static int marked(int rc, MPI_Comm parent, MPI_Comm *out, int kind, int tag) {
    if (rc == MPI_SUCCESS)
        cc_comm_mark(parent, *out, kind, tag);
    return rc;
}

/* The host's result, after attaching state to the communicator it made. */
static int attached(int rc, MPI_Comm parent, MPI_Comm *out) {
    if (rc == MPI_SUCCESS)
        cc_comm_attach(parent, *out);
    return rc;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out) {
    return marked(PMPI_Comm_dup(comm, out), comm, out, CC_MADE_DUP, 0);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out) {
    return marked(PMPI_Comm_split(comm, color, key, out), comm, out, CC_MADE_SPLIT, 0);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *out) {
    return marked(PMPI_Comm_create(comm, group, out), comm, out, CC_MADE_CREATE, 0);
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *out) {
    return marked(PMPI_Comm_create_group(comm, group, tag, out), comm, out,
                  CC_MADE_CREATE_GROUP, tag);
}

int MPI_Intercomm_create(MPI_Comm local, int local_leader, MPI_Comm peer, int remote_leader,
                         int tag, MPI_Comm *out) {
    return marked(PMPI_Intercomm_create(local, local_leader, peer, remote_leader, tag, out),
                  local, out, CC_MADE_INTERCOMM_CREATE, tag);
}

int MPI_Intercomm_merge(MPI_Comm inter, int high, MPI_Comm *out) {
    return marked(PMPI_Intercomm_merge(inter, high, out), inter, out, CC_MADE_INTERCOMM_MERGE,
                  0);
}

/* Constructors of communicators with a topology or hints: built here too, so that their
 * first collectives may be nonblocking ones (state built later would have to block). */
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out) {
    return attached(PMPI_Comm_split_type(comm, type, key, info, out), comm, out);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *out) {
    return attached(PMPI_Comm_dup_with_info(comm, info, out), comm, out);
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                    int reorder, MPI_Comm *out) {
    return attached(PMPI_Cart_create(comm, ndims, dims, periods, reorder, out), comm, out);
}

int MPI_Cart_sub(MPI_Comm comm, const int remain[], MPI_Comm *out) {
    return attached(PMPI_Cart_sub(comm, remain, out), comm, out);
}

int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[],
                     int reorder, MPI_Comm *out) {
    return attached(PMPI_Graph_create(comm, nnodes, index, edges, reorder, out), comm, out);
}

int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[],
                          const int destinations[], const int weights[], MPI_Info info,
                          int reorder, MPI_Comm *out) {
    return attached(PMPI_Dist_graph_create(comm, n, sources, degrees, destinations, weights,
                                           info, reorder, out),
                    comm, out);
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                   const int sourceweights[], int outdegree,
                                   const int destinations[], const int destweights[],
                                   MPI_Info info, int reorder, MPI_Comm *out) {
    return attached(PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights,
                                                    outdegree, destinations, destweights, info,
                                                    reorder, out),
                    comm, out);
}

/* The state goes with the attribute when the host frees the communicator. */
int MPI_Comm_free(MPI_Comm *comm) {
    return PMPI_Comm_free(comm);
}
