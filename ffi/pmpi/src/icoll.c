/* The nonblocking collectives: the same calls as coll.c, as generalized requests progressed
 * by progress.c. Communicators without state yet go to the host (building it blocks). */
#include "serve.h"

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_BARRIER);
    CC_SERVE_NB(slot, comm, req, cc_prep_barrier(job_, cs_, slot), PMPI_Ibarrier(comm, req));
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_BCAST);
    CC_SERVE_NB(slot, comm, req, cc_prep_bcast(job_, cs_, slot, buf, count, type, root),
                PMPI_Ibcast(buf, count, type, root, comm, req));
}

int MPI_Ireduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_REDUCE);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_reduction(job_, cs_, slot, CC_REDUCE, send, recv, count, type, op,
                                  root),
                PMPI_Ireduce(send, recv, count, type, op, root, comm, req));
}

int MPI_Iallreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_ALLREDUCE);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_reduction(job_, cs_, slot, CC_ALLREDUCE, send, recv, count, type, op,
                                  -1),
                PMPI_Iallreduce(send, recv, count, type, op, comm, req));
}

int MPI_Iscan(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_SCAN);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_reduction(job_, cs_, slot, CC_SCAN, send, recv, count, type, op, -1),
                PMPI_Iscan(send, recv, count, type, op, comm, req));
}

int MPI_Iexscan(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_EXSCAN);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_reduction(job_, cs_, slot, CC_EXSCAN, send, recv, count, type, op, -1),
                PMPI_Iexscan(send, recv, count, type, op, comm, req));
}

int MPI_Iallgather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_ALLGATHER);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_allgather(job_, cs_, slot, send, scount, stype, recv, rcount, rtype),
                PMPI_Iallgather(send, scount, stype, recv, rcount, rtype, comm, req));
}

int MPI_Iallgatherv(const void *send, int scount, MPI_Datatype stype, void *recv,
                    const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm,
                    MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_ALLGATHERV);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_allgatherv(job_, cs_, slot, send, scount, stype, recv, rcounts, displs,
                                   rtype),
                PMPI_Iallgatherv(send, scount, stype, recv, rcounts, displs, rtype, comm, req));
}

int MPI_Ialltoall(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_ALLTOALL);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_alltoall(job_, cs_, slot, send, scount, stype, recv, rcount, rtype),
                PMPI_Ialltoall(send, scount, stype, recv, rcount, rtype, comm, req));
}

int MPI_Ialltoallv(const void *send, const int scounts[], const int sdispls[],
                   MPI_Datatype stype, void *recv, const int rcounts[], const int rdispls[],
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_ALLTOALLV);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_alltoallv(job_, cs_, slot, send, scounts, sdispls, stype, recv, rcounts,
                                  rdispls, rtype),
                PMPI_Ialltoallv(send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype,
                                comm, req));
}

int MPI_Igather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_GATHER);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_gather_scatter(job_, cs_, slot, 0, send, scount, stype, recv, rcount,
                                       rtype, root),
                PMPI_Igather(send, scount, stype, recv, rcount, rtype, root, comm, req));
}

int MPI_Iscatter(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_SCATTER);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_gather_scatter(job_, cs_, slot, 1, send, scount, stype, recv, rcount,
                                       rtype, root),
                PMPI_Iscatter(send, scount, stype, recv, rcount, rtype, root, comm, req));
}

int MPI_Igatherv(const void *send, int scount, MPI_Datatype stype, void *recv,
                 const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                 MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_GATHERV);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_gatherv_scatterv(job_, cs_, slot, 0, send, NULL, scount, displs, stype,
                                         recv, rcounts, 0, rtype, root),
                PMPI_Igatherv(send, scount, stype, recv, rcounts, displs, rtype, root, comm,
                              req));
}

int MPI_Iscatterv(const void *send, const int scounts[], const int displs[],
                  MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype, int root,
                  MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_SCATTERV);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_gatherv_scatterv(job_, cs_, slot, 1, send, scounts, 0, displs, stype,
                                         recv, NULL, rcount, rtype, root),
                PMPI_Iscatterv(send, scounts, displs, stype, recv, rcount, rtype, root, comm,
                               req));
}

int MPI_Ireduce_scatter(const void *send, void *recv, const int rcounts[], MPI_Datatype type,
                        MPI_Op op, MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_REDUCE_SCATTER);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_reduce_scatter(job_, cs_, slot, send, recv, rcounts, 0, type, op),
                PMPI_Ireduce_scatter(send, recv, rcounts, type, op, comm, req));
}

int MPI_Ireduce_scatter_block(const void *send, void *recv, int rcount, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm, MPI_Request *req) {
    const int slot = CC_NONBLOCKING(CC_REDUCE_SCATTER_BLOCK);
    CC_SERVE_NB(slot, comm, req,
                cc_prep_reduce_scatter(job_, cs_, slot, send, recv, NULL, rcount, type, op),
                PMPI_Ireduce_scatter_block(send, recv, rcount, type, op, comm, req));
}
