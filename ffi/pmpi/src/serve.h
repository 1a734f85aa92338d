/* The shape of every collective wrapper: try commcore, else hand the call to the host and
 * count it. `PREP` starts the job `job_` on `cs_` for report slot `slot_` (prep.h). Errors
 * go through the error handler of the caller's communicator, as the host's would. */
#ifndef COMMCORE_PMPI_SERVE_H
#define COMMCORE_PMPI_SERVE_H

#include <stdlib.h>

#include "prep.h"

/* Runs a started job to its end (blocking calls); MPI_SUCCESS or the reported error. A job
 * that ran is remembered by its arguments `key` (NULL: never; memo.c). */
int cc_finish(cc_job *job, const cc_key *key);
/* Hands a started job to the progress engine and gives the user its request. */
int cc_nonblocking_start(cc_job *job, MPI_Request *request);

/* KEY: CC_KEY(slot, arguments...) for a call its arguments describe whole, else NULL. */
#define CC_SERVE(slot_, comm_, KEY, PREP, HOST)                                            \
    do {                                                                                   \
        if (cc_enabled) {                                                                  \
            cc_comm *cs_ = cc_comm_get((comm_), 1);                                        \
            const cc_key *key_ = (KEY);                                                    \
            if (cs_ && key_) {                                                             \
                int memo_ = cc_memo_run(cs_, key_, (comm_));                               \
                if (memo_ != CC_MEMO_MISS)                                                 \
                    return memo_;                                                          \
            }                                                                              \
            cc_job jobv_, *job_ = &jobv_;                                                  \
            cc_job_init(job_, (comm_), (slot_));                                           \
            int prep_ = cs_ ? (PREP) : CC_PREP_HOST;                                       \
            if (prep_ == 0)                                                                \
                return cc_finish(job_, key_);                                              \
            cc_job_release(job_);                                                          \
            if (prep_ == CC_PREP_FAIL)                                                     \
                return cc_error((comm_), MPI_ERR_INTERN);                                  \
            cc_count_host(slot_);                                                          \
        }                                                                                  \
        return HOST;                                                                       \
    } while (0)

/* Nonblocking: only communicators whose state exists (building it would block). */
#define CC_SERVE_NB(slot_, comm_, request_, PREP, HOST)                                    \
    do {                                                                                   \
        if (cc_enabled) {                                                                  \
            cc_comm *cs_ = cc_comm_get((comm_), 0);                                        \
            cc_job *job_ = cs_ ? malloc(sizeof *job_) : NULL;                              \
            int prep_ = CC_PREP_HOST;                                                      \
            if (job_) {                                                                    \
                cc_job_init(job_, (comm_), (slot_)); /* the views read the slot */         \
                if ((prep_ = (PREP)) == 0)                                                 \
                    return cc_nonblocking_start(job_, (request_));                         \
                cc_job_release(job_);                                                      \
                free(job_);                                                                \
            } else if (cs_) {                                                              \
                prep_ = CC_PREP_FAIL;                                                      \
            }                                                                              \
            if (prep_ == CC_PREP_FAIL)                                                     \
                return cc_error((comm_), MPI_ERR_INTERN);                                  \
            cc_count_host(slot_);                                                          \
        }                                                                                  \
        return HOST;                                                                       \
    } while (0)

#endif
