/* The shape of every collective wrapper: try commcore, else hand the call to the host and
 * count it. `PREP` starts the job `job_` on `cs_` for report slot `slot_` (prep.h). */
#ifndef COMMCORE_PMPI_SERVE_H
#define COMMCORE_PMPI_SERVE_H

#include <stdlib.h>

#include "prep.h"

/* Runs a started job to its end (blocking calls). */
int cc_finish(cc_job *job);
/* Hands a started job to the progress engine and gives the user its request. */
int cc_nonblocking_start(cc_job *job, MPI_Request *request);

#define CC_SERVE(slot_, comm_, PREP, HOST)                                                   \
    do {                                                                                   \
        if (cc_enabled) {                                                                  \
            cc_job jobv_ = {0}, *job_ = &jobv_;                                            \
            cc_comm *cs_ = cc_comm_get((comm_), 1);                                        \
            if (cs_ && (PREP) == 0)                                                        \
                return cc_finish(job_);                                                    \
            cc_job_release(job_);                                                          \
            cc_count_host(slot_);                                                          \
        }                                                                                  \
        return HOST;                                                                       \
    } while (0)

/* Nonblocking: only communicators whose state exists (building it would block). */
#define CC_SERVE_NB(slot_, comm_, request_, PREP, HOST)                                      \
    do {                                                                                   \
        if (cc_enabled) {                                                                  \
            cc_comm *cs_ = cc_comm_get((comm_), 0);                                        \
            cc_job *job_ = cs_ ? calloc(1, sizeof *job_) : NULL;                           \
            if (job_ && (PREP) == 0)                                                       \
                return cc_nonblocking_start(job_, (request_));                             \
            if (job_) {                                                                    \
                cc_job_release(job_);                                                      \
                free(job_);                                                                \
            }                                                                              \
            cc_count_host(slot_);                                                          \
        }                                                                                  \
        return HOST;                                                                       \
    } while (0)

#endif
