//! Errors of message matching.

use core::fmt;

/// Why the matcher refused an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchError {
    /// The posted-receive queue holds its `capacity` receives already.
    PostedFull {
        /// The queue's capacity (the matcher's `P`).
        capacity: usize,
    },
    /// The unexpected-message queue holds its `capacity` messages already.
    UnexpectedFull {
        /// The queue's capacity (the matcher's `U`).
        capacity: usize,
    },
}

impl fmt::Display for MatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchError::PostedFull { capacity } => write!(
                f,
                "posted-receive queue full ({capacity} receives): complete or cancel receives, \
                 or build the matcher with a larger capacity"
            ),
            MatchError::UnexpectedFull { capacity } => write!(
                f,
                "unexpected-message queue full ({capacity} messages): post receives for them, \
                 or build the matcher with a larger capacity"
            ),
        }
    }
}
