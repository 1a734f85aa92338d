//! Errors of CID allocation.

use core::fmt;

/// Why a request failed or refused an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CidError {
    /// No CID is free on every member.
    Exhausted,
    /// The reduced words have the wrong length.
    WrongLength {
        /// The length the request asked to reduce.
        expected: usize,
    },
    /// A result was handed in while no allreduce was outstanding.
    NotPosted,
    /// The request already finished (or failed); it takes no more input.
    Finished,
    /// More requests are in progress in this process than the space tracks.
    TooManyRequests,
    /// Another request with the same ⟨parent cid, tag⟩ is in progress in this process,
    /// which MPI forbids.
    DuplicatePriority,
    /// The reduced value cannot be the reduction of what the members contributed (e.g. a
    /// MAX below this member's own proposal): the host reduced wrongly or mixed requests.
    InconsistentResult,
    /// The agreed CID is not free here although the algorithm guarantees it: the space was
    /// configured single-threaded while threads allocate concurrently.
    Conflict,
}

impl fmt::Display for CidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CidError::Exhausted => f.write_str("no context id is free on every member"),
            CidError::WrongLength { expected } => {
                write!(f, "reduced result must hold {expected} words")
            }
            CidError::NotPosted => f.write_str("no allreduce is outstanding"),
            CidError::Finished => f.write_str("the request has finished"),
            CidError::TooManyRequests => {
                f.write_str("too many concurrent requests in this process")
            }
            CidError::DuplicatePriority => {
                f.write_str("a request with the same parent cid and tag is in progress")
            }
            CidError::InconsistentResult => f.write_str("reduced result contradicts this member"),
            CidError::Conflict => f.write_str(
                "agreed cid is taken locally: concurrent use of a single-threaded space",
            ),
        }
    }
}

/// Why a space refused a configuration or a direct claim/release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpaceError {
    /// The width is zero, above [`MAX_WIDTH`](super::MAX_WIDTH), not a multiple of 32, or
    /// needs more words than the space's capacity.
    BadWidth {
        /// The most CIDs this space's capacity can hold.
        max: u32,
    },
    /// The eager segment is not a multiple of 32 or not below the width.
    BadEager,
    /// The eager lanes are 0, more than `max`, or do not cut the eager segment into equal
    /// multiples of 32 CIDs.
    BadLanes {
        /// The most lanes a space takes.
        max: u32,
    },
    /// The CID is at or above the width.
    OutOfRange,
    /// The CID is already in use (claim) or not in use (release).
    WrongState,
}

impl fmt::Display for SpaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpaceError::BadWidth { max } => {
                write!(f, "width must be a non-zero multiple of 32 and at most {max}")
            }
            SpaceError::BadLanes { max } => write!(
                f,
                "eager lanes must be 1..={max} and cut the eager segment into multiples of 32"
            ),
            SpaceError::BadEager => {
                f.write_str("eager segment must be a multiple of 32 below the width")
            }
            SpaceError::OutOfRange => f.write_str("cid is outside the space"),
            SpaceError::WrongState => f.write_str("cid is not in the state the call needs"),
        }
    }
}
