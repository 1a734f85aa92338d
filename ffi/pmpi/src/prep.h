/* From MPI arguments to commcore calls (prep.c): shared by the blocking and nonblocking
 * wrappers. Each returns 0 with the job started, or -1 when the call goes to the host. */
#ifndef COMMCORE_PMPI_PREP_H
#define COMMCORE_PMPI_PREP_H

#include "pmpi.h"

int cc_prep_barrier(cc_job *job, cc_comm *cs, int slot);
int cc_prep_bcast(cc_job *job, cc_comm *cs, int slot, void *buf, int count, MPI_Datatype type,
                  int root);
int cc_prep_reduction(cc_job *job, cc_comm *cs, int slot, enum cc_op op, const void *send,
                      void *recv, int count, MPI_Datatype type, MPI_Op mop, int root);
int cc_prep_allgather(cc_job *job, cc_comm *cs, int slot, const void *send, int scount,
                      MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype);
int cc_prep_allgatherv(cc_job *job, cc_comm *cs, int slot, const void *send, int scount,
                       MPI_Datatype stype, void *recv, const int *rcounts, const int *displs,
                       MPI_Datatype rtype);
int cc_prep_alltoall(cc_job *job, cc_comm *cs, int slot, const void *send, int scount,
                     MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype);
int cc_prep_alltoallv(cc_job *job, cc_comm *cs, int slot, const void *send, const int *scounts,
                      const int *sdispls, MPI_Datatype stype, void *recv, const int *rcounts,
                      const int *rdispls, MPI_Datatype rtype);
int cc_prep_gather_scatter(cc_job *job, cc_comm *cs, int slot, int scatter, const void *send,
                           int scount, MPI_Datatype stype, void *recv, int rcount,
                           MPI_Datatype rtype, int root);
int cc_prep_gatherv_scatterv(cc_job *job, cc_comm *cs, int slot, int scatter, const void *send,
                             const int *scounts, int scount, const int *displs,
                             MPI_Datatype stype, void *recv, const int *rcounts, int rcount,
                             MPI_Datatype rtype, int root);
int cc_prep_reduce_scatter(cc_job *job, cc_comm *cs, int slot, const void *send, void *recv,
                           const int *rcounts, int rcount, MPI_Datatype type, MPI_Op mop);

#endif
