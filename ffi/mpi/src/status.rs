//! `MPI_Status` values: MPICH's split byte count and cancelled bit.

use std::ffi::c_int;

use commcore_linux::runtime::Status;

use crate::consts::*;

/// The status of a message of `bytes` bytes from `source` with `tag`.
pub(crate) fn of_message(source: c_int, tag: c_int, bytes: usize) -> MpiStatus {
    let bytes = bytes as u64;
    MpiStatus {
        count_lo: bytes as u32 as c_int,
        count_hi_and_cancelled: ((bytes >> 32) << 1) as c_int,
        source,
        tag,
        error: MPI_SUCCESS,
    }
}

/// The status of a receive from the runtime's.
pub(crate) fn of_runtime(status: Status) -> MpiStatus {
    of_message(status.source as c_int, status.tag, status.len)
}

/// The status an operation's outcome reports: a failed receive's own where it has one.
pub(crate) fn of_outcome(outcome: &crate::error::MpiResult<MpiStatus>) -> MpiStatus {
    match outcome {
        Ok(status) => *status,
        Err(error) => error.status.unwrap_or_else(empty),
    }
}

/// The status of an operation with `MPI_PROC_NULL`: nothing from nowhere.
pub(crate) fn empty() -> MpiStatus {
    of_message(MPI_PROC_NULL, MPI_ANY_TAG, 0)
}

/// MPI's empty status: of a null or inactive request (no source, any tag, nothing).
pub(crate) fn inactive() -> MpiStatus {
    of_message(MPI_ANY_SOURCE, MPI_ANY_TAG, 0)
}

/// The status of a cancelled receive.
pub(crate) fn cancelled() -> MpiStatus {
    let mut status = empty();
    status.count_hi_and_cancelled |= 1;
    status
}

/// Bytes the status counts.
pub(crate) fn bytes(status: &MpiStatus) -> u64 {
    (status.count_lo as u32 as u64) | (((status.count_hi_and_cancelled as u32 >> 1) as u64) << 32)
}

/// Whether the status is of a cancelled operation.
pub(crate) fn is_cancelled(status: &MpiStatus) -> bool {
    status.count_hi_and_cancelled & 1 != 0
}
