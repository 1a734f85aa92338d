/* The blocking collectives, served by commcore's schedules (serve.h), else by the host. */
#include "serve.h"

int cc_finish(cc_job *job, const cc_key *key) {
    const cc_step *steps = cc_jobs_in_flight() ? NULL : cc_sched_recorded(job->sched);
    if (steps)
        cc_count_replayed(job->slot);
    int done = steps ? cc_job_run_recorded(job, steps) : cc_job_advance(job, 1);
    if (done == 1 && key)
        cc_memo_note(key, job);
    int err = job->err;
    MPI_Comm user = job->user;
    cc_job_release(job);
    return done == 1 ? MPI_SUCCESS : cc_error(user, err ? err : MPI_ERR_INTERN);
}

int MPI_Barrier(MPI_Comm comm) {
    CC_SERVE(CC_BARRIER, comm, CC_KEY(CC_BARRIER, 0), cc_prep_barrier(job_, cs_, CC_BARRIER),
             PMPI_Barrier(comm));
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
    CC_SERVE(CC_BCAST, comm, CC_KEY(CC_BCAST, CC_W(buf), CC_W(count), CC_W(type), CC_W(root)),
             cc_prep_bcast(job_, cs_, CC_BCAST, buf, count, type, root),
             PMPI_Bcast(buf, count, type, root, comm));
}

int MPI_Reduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
    CC_SERVE(CC_REDUCE, comm,
             CC_KEY(CC_REDUCE, CC_W(send), CC_W(recv), CC_W(count), CC_W(type), CC_W(op),
                    CC_W(root)),
             cc_prep_reduction(job_, cs_, CC_REDUCE, CC_REDUCE, send, recv, count, type, op,
                               root),
             PMPI_Reduce(send, recv, count, type, op, root, comm));
}

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
    CC_SERVE(CC_ALLREDUCE, comm,
             CC_KEY(CC_ALLREDUCE, CC_W(send), CC_W(recv), CC_W(count), CC_W(type), CC_W(op)),
             cc_prep_reduction(job_, cs_, CC_ALLREDUCE, CC_ALLREDUCE, send, recv, count, type,
                               op, -1),
             PMPI_Allreduce(send, recv, count, type, op, comm));
}

int MPI_Scan(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
             MPI_Comm comm) {
    CC_SERVE(CC_SCAN, comm,
             CC_KEY(CC_SCAN, CC_W(send), CC_W(recv), CC_W(count), CC_W(type), CC_W(op)),
             cc_prep_reduction(job_, cs_, CC_SCAN, CC_SCAN, send, recv, count, type, op, -1),
             PMPI_Scan(send, recv, count, type, op, comm));
}

int MPI_Exscan(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm) {
    CC_SERVE(CC_EXSCAN, comm,
             CC_KEY(CC_EXSCAN, CC_W(send), CC_W(recv), CC_W(count), CC_W(type), CC_W(op)),
             cc_prep_reduction(job_, cs_, CC_EXSCAN, CC_EXSCAN, send, recv, count, type, op,
                               -1),
             PMPI_Exscan(send, recv, count, type, op, comm));
}

int MPI_Allgather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm) {
    CC_SERVE(CC_ALLGATHER, comm,
             CC_KEY(CC_ALLGATHER, CC_W(send), CC_W(scount), CC_W(stype), CC_W(recv),
                    CC_W(rcount), CC_W(rtype)),
             cc_prep_allgather(job_, cs_, CC_ALLGATHER, send, scount, stype, recv, rcount,
                               rtype),
             PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm));
}

int MPI_Allgatherv(const void *send, int scount, MPI_Datatype stype, void *recv,
                   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm) {
    CC_SERVE(CC_ALLGATHERV, comm,
             CC_KEY_V(CC_ALLGATHERV, rcounts, displs, NULL, NULL, CC_W(send), CC_W(scount),
                      CC_W(stype), CC_W(recv), CC_W(rcounts), CC_W(displs), CC_W(rtype)),
             cc_prep_allgatherv(job_, cs_, CC_ALLGATHERV, send, scount, stype, recv, rcounts,
                                displs, rtype),
             PMPI_Allgatherv(send, scount, stype, recv, rcounts, displs, rtype, comm));
}

int MPI_Alltoall(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm) {
    CC_SERVE(CC_ALLTOALL, comm,
             CC_KEY(CC_ALLTOALL, CC_W(send), CC_W(scount), CC_W(stype), CC_W(recv),
                    CC_W(rcount), CC_W(rtype)),
             cc_prep_alltoall(job_, cs_, CC_ALLTOALL, send, scount, stype, recv, rcount,
                              rtype),
             PMPI_Alltoall(send, scount, stype, recv, rcount, rtype, comm));
}

int MPI_Alltoallv(const void *send, const int scounts[], const int sdispls[],
                  MPI_Datatype stype, void *recv, const int rcounts[], const int rdispls[],
                  MPI_Datatype rtype, MPI_Comm comm) {
    CC_SERVE(CC_ALLTOALLV, comm,
             /* In place, the send arrays are not read (they may be anything). */
             CC_KEY_V(CC_ALLTOALLV, rcounts, rdispls, send == MPI_IN_PLACE ? NULL : scounts,
                      send == MPI_IN_PLACE ? NULL : sdispls, CC_W(send), CC_W(scounts),
                      CC_W(sdispls), CC_W(stype), CC_W(recv), CC_W(rcounts), CC_W(rdispls),
                      CC_W(rtype)),
             cc_prep_alltoallv(job_, cs_, CC_ALLTOALLV, send, scounts, sdispls, stype, recv,
                               rcounts, rdispls, rtype),
             PMPI_Alltoallv(send, scounts, sdispls, stype, recv, rcounts, rdispls, rtype,
                            comm));
}

int MPI_Gather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm) {
    CC_SERVE(CC_GATHER, comm,
             CC_KEY(CC_GATHER, CC_W(send), CC_W(scount), CC_W(stype), CC_W(recv), CC_W(rcount),
                    CC_W(rtype), CC_W(root)),
             cc_prep_gather_scatter(job_, cs_, CC_GATHER, 0, send, scount, stype, recv, rcount,
                                    rtype, root),
             PMPI_Gather(send, scount, stype, recv, rcount, rtype, root, comm));
}

int MPI_Scatter(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm) {
    CC_SERVE(CC_SCATTER, comm,
             CC_KEY(CC_SCATTER, CC_W(send), CC_W(scount), CC_W(stype), CC_W(recv), CC_W(rcount),
                    CC_W(rtype), CC_W(root)),
             cc_prep_gather_scatter(job_, cs_, CC_SCATTER, 1, send, scount, stype, recv,
                                    rcount, rtype, root),
             PMPI_Scatter(send, scount, stype, recv, rcount, rtype, root, comm));
}

int MPI_Gatherv(const void *send, int scount, MPI_Datatype stype, void *recv,
                const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
                MPI_Comm comm) {
    CC_SERVE(CC_GATHERV, comm, NULL,
             cc_prep_gatherv_scatterv(job_, cs_, CC_GATHERV, 0, send, NULL, scount, displs,
                                      stype, recv, rcounts, 0, rtype, root),
             PMPI_Gatherv(send, scount, stype, recv, rcounts, displs, rtype, root, comm));
}

int MPI_Scatterv(const void *send, const int scounts[], const int displs[], MPI_Datatype stype,
                 void *recv, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm) {
    CC_SERVE(CC_SCATTERV, comm, NULL,
             cc_prep_gatherv_scatterv(job_, cs_, CC_SCATTERV, 1, send, scounts, 0, displs,
                                      stype, recv, NULL, rcount, rtype, root),
             PMPI_Scatterv(send, scounts, displs, stype, recv, rcount, rtype, root, comm));
}

int MPI_Reduce_scatter(const void *send, void *recv, const int rcounts[], MPI_Datatype type,
                       MPI_Op op, MPI_Comm comm) {
    CC_SERVE(CC_REDUCE_SCATTER, comm, NULL,
             cc_prep_reduce_scatter(job_, cs_, CC_REDUCE_SCATTER, send, recv, rcounts, 0, type,
                                    op),
             PMPI_Reduce_scatter(send, recv, rcounts, type, op, comm));
}

int MPI_Reduce_scatter_block(const void *send, void *recv, int rcount, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
    CC_SERVE(CC_REDUCE_SCATTER_BLOCK, comm,
             CC_KEY(CC_REDUCE_SCATTER_BLOCK, CC_W(send), CC_W(recv), CC_W(rcount), CC_W(type),
                    CC_W(op)),
             cc_prep_reduce_scatter(job_, cs_, CC_REDUCE_SCATTER_BLOCK, send, recv, NULL,
                                    rcount, type, op),
             PMPI_Reduce_scatter_block(send, recv, rcount, type, op, comm));
}
