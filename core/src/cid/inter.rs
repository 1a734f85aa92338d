//! Inter-communicator CIDs: each group allocates locally, the leaders swap, all learn.

use super::error::CidError;
use super::request::{Algorithm, CidRequest};
use super::space::CidSpace;
use super::step::ReduceOp;
use super::Cid;

/// The two CIDs of an inter-communicator: messages to the remote group carry `remote`,
/// messages from it arrive with `local`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InterCidPair {
    /// Allocated on this side's group.
    pub local: Cid,
    /// Allocated on the other side's group.
    pub remote: Cid,
}

/// The next step of an [`InterCidRequest`].
#[derive(Debug, PartialEq, Eq)]
pub enum InterStep<'a> {
    /// Reduce `words` with `op` over this side's local group.
    Allreduce {
        /// The reduction.
        op: ReduceOp,
        /// This member's contribution.
        words: &'a [u32],
    },
    /// Another request of this process has priority; poll again later.
    Wait,
    /// Leader only: send `local` to the remote leader, receive its CID, and hand it to
    /// [`handle_exchange`](InterCidRequest::handle_exchange).
    Exchange {
        /// This side's CID.
        local: Cid,
    },
    /// Both CIDs are known.
    Done(InterCidPair),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Local,
    Exchange,
    Spread { posted: bool },
    Done,
}

/// One member's side of an inter-communicator CID agreement: a local allocation over this
/// side's group, an exchange between the two leaders, and an allreduce that carries the
/// remote CID from the leader to its group (the leader contributes it, others zero).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InterCidRequest<const W: usize> {
    local: CidRequest<W>,
    leader: bool,
    phase: Phase,
    pair: InterCidPair,
    word: [u32; 1],
}

impl<const W: usize> InterCidRequest<W> {
    /// A request on this side's group, under the local group's communicator `parent`.
    /// Exactly one member per side is the `leader`.
    pub fn new(algorithm: Algorithm, parent: Cid, tag: u32, leader: bool) -> Self {
        Self {
            local: CidRequest::new(algorithm, parent, tag),
            leader,
            phase: Phase::Local,
            pair: InterCidPair { local: 0, remote: 0 },
            word: [0],
        }
    }

    /// The next step.
    pub fn poll(&mut self, space: &CidSpace<W>) -> Result<InterStep<'_>, CidError> {
        if self.phase == Phase::Local {
            // Polling is idempotent, so look first and borrow the step only to return it.
            if let super::Step::Done(cid) = self.local.poll(space)? {
                self.pair.local = cid;
                self.phase =
                    if self.leader { Phase::Exchange } else { Phase::Spread { posted: false } };
            }
        }
        match self.phase {
            Phase::Local => match self.local.poll(space)? {
                super::Step::Allreduce { op, words } => Ok(InterStep::Allreduce { op, words }),
                super::Step::Wait => Ok(InterStep::Wait),
                super::Step::Done(_) => Err(CidError::InconsistentResult),
            },
            Phase::Exchange => Ok(InterStep::Exchange { local: self.pair.local }),
            Phase::Spread { .. } => {
                self.phase = Phase::Spread { posted: true };
                self.word[0] = if self.leader { self.pair.remote } else { 0 };
                Ok(InterStep::Allreduce { op: ReduceOp::Max, words: &self.word })
            }
            Phase::Done => Ok(InterStep::Done(self.pair)),
        }
    }

    /// Leader: the remote leader's CID.
    pub fn handle_exchange(&mut self, remote: Cid) -> Result<(), CidError> {
        if self.phase != Phase::Exchange {
            return Err(CidError::NotPosted);
        }
        self.pair.remote = remote;
        self.phase = Phase::Spread { posted: false };
        Ok(())
    }

    /// The reduced words of the outstanding allreduce.
    pub fn handle_allreduce(
        &mut self,
        space: &CidSpace<W>,
        reduced: &[u32],
    ) -> Result<(), CidError> {
        match self.phase {
            Phase::Local => self.local.handle_allreduce(space, reduced),
            Phase::Spread { posted: true } => {
                let [remote] = reduced else { return Err(CidError::WrongLength { expected: 1 }) };
                self.pair.remote = *remote;
                self.phase = Phase::Done;
                Ok(())
            }
            Phase::Done => Err(CidError::Finished),
            _ => Err(CidError::NotPosted),
        }
    }

    /// Gives up; see [`CidRequest::abort`]. The local CID, if agreed, stays claimed.
    pub fn abort(&mut self, space: &CidSpace<W>) {
        self.local.abort(space);
    }
}
