//! Errors: an MPI error class with a message, the text of each class, and the conversion
//! of the runtime's errors.

use std::ffi::c_int;

use commcore_linux::runtime::{CollectiveError, CommError, P2pError};

use crate::consts::*;

/// A failed call: its MPI error class and what went wrong. Boxed, so that every result
/// on the message path is small to move.
#[derive(Clone, Debug)]
pub(crate) struct MpiError(Box<ErrorDetails>);

#[derive(Clone, Debug)]
pub(crate) struct ErrorDetails {
    pub class: c_int,
    pub message: String,
    /// The status of the message a failed receive took (a truncated one: its source, tag
    /// and the bytes that fit), which MPI still reports.
    pub status: Option<MpiStatus>,
}

pub(crate) type MpiResult<T = ()> = Result<T, MpiError>;

impl MpiError {
    pub fn new(class: c_int, message: impl Into<String>) -> Self {
        MpiError(Box::new(ErrorDetails { class, message: message.into(), status: None }))
    }

    /// The error of a receive that took the message `status` describes (MPI reports it).
    pub fn with_status(mut self, mut status: MpiStatus) -> Self {
        status.error = self.0.class;
        self.0.status = Some(status);
        self
    }

    /// What went wrong.
    pub fn into_message(self) -> String {
        self.0.message
    }
}

impl std::ops::Deref for MpiError {
    type Target = ErrorDetails;

    fn deref(&self) -> &ErrorDetails {
        &self.0
    }
}

/// Shorthand for an `Err` of `class`.
pub(crate) fn fail<T>(class: c_int, message: impl Into<String>) -> MpiResult<T> {
    Err(MpiError::new(class, message))
}

impl From<P2pError> for MpiError {
    fn from(error: P2pError) -> Self {
        let class = match error {
            P2pError::RankOutOfRange { .. } => MPI_ERR_RANK,
            P2pError::InvalidTag(_) => MPI_ERR_TAG,
            P2pError::CountOutOfRange { .. } => MPI_ERR_COUNT,
            P2pError::Truncated { buffer_len, source, tag, .. } => {
                let mut status = crate::status::of_message(source as c_int, tag, buffer_len);
                status.error = MPI_ERR_TRUNCATE;
                let mut error = MpiError::new(MPI_ERR_TRUNCATE, error.to_string());
                error.0.status = Some(status);
                return error;
            }
            P2pError::PeerGone { .. } | P2pError::GroupFailed { .. } => MPI_ERR_PROC_ABORTED,
            _ => MPI_ERR_OTHER,
        };
        MpiError::new(class, error.to_string())
    }
}

impl From<CollectiveError> for MpiError {
    fn from(error: CollectiveError) -> Self {
        match error {
            CollectiveError::P2p(p2p) => p2p.into(),
            CollectiveError::BadBuffers => MpiError::new(MPI_ERR_BUFFER, error.to_string()),
            other => MpiError::new(MPI_ERR_OTHER, other.to_string()),
        }
    }
}

impl From<CommError> for MpiError {
    fn from(error: CommError) -> Self {
        let class = match error {
            CommError::P2p(p2p) => return p2p.into(),
            CommError::Collective(coll) => return coll.into(),
            CommError::BadGroup { .. } | CommError::NotInGroup | CommError::GroupsOverlap => {
                MPI_ERR_GROUP
            }
            CommError::InvalidColor(_) | CommError::InconsistentHigh => MPI_ERR_ARG,
            CommError::NotIntra | CommError::NotInter => MPI_ERR_COMM,
            CommError::InvalidGroupTag(_) => MPI_ERR_TAG,
            CommError::BadLeader { .. } => MPI_ERR_RANK,
            _ => MPI_ERR_OTHER,
        };
        MpiError::new(class, error.to_string())
    }
}

/// The text of an error class (`MPI_Error_string`).
pub(crate) fn class_text(class: c_int) -> Option<&'static str> {
    Some(match class {
        MPI_SUCCESS => "no error",
        MPI_ERR_BUFFER => "invalid buffer pointer",
        MPI_ERR_COUNT => "invalid count argument",
        MPI_ERR_TYPE => "invalid datatype",
        MPI_ERR_TAG => "invalid tag",
        MPI_ERR_COMM => "invalid communicator",
        MPI_ERR_RANK => "invalid rank",
        MPI_ERR_ROOT => "invalid root",
        MPI_ERR_GROUP => "invalid group",
        MPI_ERR_OP => "invalid reduce operation",
        10 => "invalid topology",
        11 => "invalid dimension argument",
        MPI_ERR_ARG => "invalid argument",
        MPI_ERR_UNKNOWN => "unknown error",
        MPI_ERR_TRUNCATE => "message truncated",
        MPI_ERR_OTHER => "other MPI error",
        MPI_ERR_INTERN => "internal MPI error",
        MPI_ERR_IN_STATUS => "error code is in status",
        MPI_ERR_PENDING => "pending request",
        MPI_ERR_REQUEST => "invalid request",
        MPI_ERR_UNSUPPORTED_OPERATION => "operation not supported by this library",
        MPI_ERR_PROC_ABORTED => "a peer process aborted or left",
        c if (20..=78).contains(&c) => "MPI error",
        _ => return None,
    })
}
