/* From MPI arguments to commcore calls (prep.c): shared by the blocking and nonblocking
 * wrappers. Each returns 0 with the job started, CC_PREP_HOST when the call goes to the
 * host, or CC_PREP_FAIL (an error to report). */
#ifndef COMMCORE_PMPI_PREP_H
#define COMMCORE_PMPI_PREP_H

#include "pmpi.h"


/* How `count` elements of a datatype move (layout.c): `unit` bytes each in the schedule;
 * `direct` when the buffer's memory already is those bytes in order. */
typedef struct cc_layout {
    MPI_Datatype type;
    size_t unit;
    MPI_Aint extent;
    int direct;
} cc_layout;

int cc_layout_of(MPI_Datatype type, cc_layout *out);
/* The bytes of `count` elements at `buf`: the buffer itself, or a packed copy (always a copy
 * when `copy`: an in-place operand). NULL on failure. */
const void *cc_send_view(cc_job *job, const cc_layout *l, const void *buf, int count, int copy);
/* Memory for `count` received elements: the buffer itself, or a packed buffer unpacked into
 * `buf` when the job ends. NULL on failure. */
void *cc_recv_view(cc_job *job, const cc_layout *l, void *buf, int count);
enum { CC_VIEW_SEND, CC_VIEW_RECV, CC_VIEW_COPY };
/* Per-rank blocks (MPI's counts and displacements in elements) as commcore's byte counts
 * (n entries) then displacements (n) over `*view` of `*len` bytes; `role` says whether the
 * blocks are read (packed now; COPY: copied even when direct) or written (unpacked at the
 * end). NULL on failure. */
size_t *cc_blocks_view(cc_job *job, const cc_layout *l, int n, const int *counts,
                       const int *displs, const void *buf, int role, void **view, size_t *len);

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
