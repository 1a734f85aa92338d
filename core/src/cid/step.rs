//! What a request asks its host to do next.

use super::Cid;

/// The reduction an allreduce applies element-wise over the members' words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Maximum of unsigned words.
    Max,
    /// Minimum of unsigned words.
    Min,
    /// Bitwise AND.
    BitAnd,
}

impl ReduceOp {
    /// Folds `other` into `acc` element-wise; hosts reduce with this so every platform
    /// computes the same result. Extra words in the longer slice are left alone.
    #[inline]
    pub fn fold(self, acc: &mut [u32], other: &[u32]) {
        let pairs = acc.iter_mut().zip(other);
        match self {
            ReduceOp::Max => pairs.for_each(|(a, b)| *a = (*a).max(*b)),
            ReduceOp::Min => pairs.for_each(|(a, b)| *a = (*a).min(*b)),
            ReduceOp::BitAnd => pairs.for_each(|(a, b)| *a &= *b),
        }
    }
}

/// The next step of a request. The variant borrows the request, so the host finishes the
/// step before it touches the request again.
#[derive(Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// Reduce `words` with `op` over every member of the request (the parent communicator,
    /// or the group of a group-collective request), then hand the result to
    /// [`handle_allreduce`](super::CidRequest::handle_allreduce). Every member asks for an
    /// allreduce of the same length at the same point.
    Allreduce {
        /// The reduction.
        op: ReduceOp,
        /// This member's contribution.
        words: &'a [u32],
    },
    /// Another request of this process has priority: no allreduce is outstanding; poll
    /// again later (after yielding to this process's other threads). Only the lowest and
    /// highest algorithms wait, and only after their first allreduce has shown that every
    /// member arrived, so waiting cannot close a cycle across processes.
    Wait,
    /// The members agreed on this CID; it is claimed in this process's space.
    Done(Cid),
}
