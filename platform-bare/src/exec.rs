//! The in-memory executor: the schedules of ranks that share the kernel's address space,
//! run round-robin over bounded per-pair message queues.
//!
//! Each rank is a [`RankRun`]; its [`Transport`] is a view of the [`Mailboxes`]: a send
//! copies its bytes into the queue from the sender to the receiver (while that queue is
//! full the send stays outstanding and the rank goes on to the rest of its round), a
//! receive takes the oldest message of its queue. Ranks are
//! polled in rank order, so a run is reproducible. A pass over all ranks in which none
//! moves is a deadlock, reported with the steps executed; it never spins.

use core::fmt;

use commcore::coll::{Group, Peer};

use crate::transport::{RankBufs, RankRun, RunError, RunStatus, Transport};

/// One ordered pair's queue: up to `D` messages of up to `M` bytes.
#[derive(Debug)]
struct Queue<const D: usize, const M: usize> {
    head: usize,
    len: usize,
    lens: [usize; D],
    bytes: [[u8; M]; D],
}

impl<const D: usize, const M: usize> Queue<D, M> {
    const EMPTY: Self = Self { head: 0, len: 0, lens: [0; D], bytes: [[0; M]; D] };
}

/// Message queues between every ordered pair of up to `R` ranks: `D` messages of up to
/// `M` bytes each, `R * R * D * M` bytes in all (zero-initialised: a `static` of this type
/// costs no image bytes).
#[derive(Debug)]
pub struct Mailboxes<const R: usize, const D: usize, const M: usize> {
    /// `queues[from][to]`.
    queues: [[Queue<D, M>; R]; R],
}

impl<const R: usize, const D: usize, const M: usize> Mailboxes<R, D, M> {
    /// Empty queues.
    pub const fn new() -> Self {
        Self { queues: [const { [Queue::EMPTY; R] }; R] }
    }

    /// Bytes the queues occupy.
    pub const fn bytes() -> usize {
        core::mem::size_of::<Self>()
    }

    fn clear(&mut self, ranks: usize) {
        for row in &mut self.queues[..ranks] {
            for q in &mut row[..ranks] {
                (q.head, q.len) = (0, 0);
            }
        }
    }

    fn queued(&self, ranks: usize) -> usize {
        self.queues[..ranks].iter().flat_map(|row| &row[..ranks]).map(|q| q.len).sum()
    }
}

impl<const R: usize, const D: usize, const M: usize> Default for Mailboxes<R, D, M> {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a message could not be queued or taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MailError {
    /// The peer is not a rank of this intra-communicator.
    BadPeer(Peer),
    /// A message of `len` bytes exceeds the queues' `max`.
    TooLarge {
        /// The message's bytes.
        len: usize,
        /// The largest message a queue slot holds.
        max: usize,
    },
    /// A receive of `expected` bytes met a message of `got`.
    Length {
        /// Bytes the receive names.
        expected: usize,
        /// Bytes the message holds.
        got: usize,
    },
}

impl fmt::Display for MailError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadPeer(p) => write!(f, "peer {p:?} is not a rank of the communicator"),
            Self::TooLarge { len, max } => write!(
                f,
                "a {len}-byte message exceeds the {max}-byte queue slots: use larger mailboxes"
            ),
            Self::Length { expected, got } => {
                write!(f, "a receive of {expected} bytes met a message of {got}")
            }
        }
    }
}

/// One rank's view of the mailboxes: its [`Transport`].
struct View<'m, const R: usize, const D: usize, const M: usize> {
    boxes: &'m mut Mailboxes<R, D, M>,
    me: usize,
    ranks: usize,
    messages: u64,
    bytes: u64,
}

impl<const R: usize, const D: usize, const M: usize> View<'_, R, D, M> {
    fn peer(&self, peer: Peer) -> Result<usize, MailError> {
        let r = peer.rank as usize;
        if peer.group == Group::Local && r < self.ranks {
            Ok(r)
        } else {
            Err(MailError::BadPeer(peer))
        }
    }
}

impl<const R: usize, const D: usize, const M: usize> Transport for View<'_, R, D, M> {
    type Error = MailError;

    fn send(&mut self, to: Peer, bytes: &[u8]) -> Result<bool, MailError> {
        let to = self.peer(to)?;
        if bytes.len() > M {
            return Err(MailError::TooLarge { len: bytes.len(), max: M });
        }
        let q = &mut self.boxes.queues[self.me][to];
        if q.len == D {
            return Ok(false);
        }
        let slot = (q.head + q.len) % D;
        q.bytes[slot][..bytes.len()].copy_from_slice(bytes);
        q.lens[slot] = bytes.len();
        q.len += 1;
        self.messages += 1;
        self.bytes += bytes.len() as u64;
        Ok(true)
    }

    fn recv(&mut self, from: Peer, into: &mut [u8]) -> Result<bool, MailError> {
        let from = self.peer(from)?;
        let q = &mut self.boxes.queues[from][self.me];
        if q.len == 0 {
            return Ok(false);
        }
        let got = q.lens[q.head];
        if got != into.len() {
            return Err(MailError::Length { expected: into.len(), got });
        }
        into.copy_from_slice(&q.bytes[q.head][..got]);
        q.head = (q.head + 1) % D;
        q.len -= 1;
        Ok(true)
    }
}

/// What a run cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecStats {
    /// Steps executed over all ranks.
    pub steps: u64,
    /// Passes over the ranks.
    pub passes: u64,
    /// Messages sent.
    pub messages: u64,
    /// Payload bytes sent.
    pub bytes: u64,
}

/// Why a run did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecError {
    /// Rank `rank`'s schedule failed.
    Rank {
        /// The rank.
        rank: u32,
        /// Why.
        error: RunError<MailError>,
    },
    /// No rank could move: `blocked` ranks are unfinished (the lowest is `first`) after
    /// `steps` steps.
    Deadlock {
        /// Steps executed over all ranks.
        steps: u64,
        /// Unfinished ranks.
        blocked: u32,
        /// The lowest unfinished rank.
        first: u32,
    },
    /// The run took more than the allowed passes.
    PassLimit {
        /// Passes made.
        passes: u64,
        /// Steps executed.
        steps: u64,
    },
    /// Every rank finished but messages were left unreceived.
    Leftover {
        /// Messages left.
        messages: usize,
    },
    /// More ranks than the mailboxes hold.
    TooManyRanks {
        /// Ranks given.
        ranks: usize,
        /// Ranks the mailboxes hold.
        max: usize,
    },
    /// The numbers of schedules and buffer sets differ.
    BufsMismatch {
        /// Schedules.
        runs: usize,
        /// Buffer sets.
        bufs: usize,
    },
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rank { rank, error } => write!(f, "rank {rank}: {error}"),
            Self::Deadlock { steps, blocked, first } => write!(
                f,
                "deadlock after {steps} steps: {blocked} ranks cannot move (first: rank {first})"
            ),
            Self::PassLimit { passes, steps } => {
                write!(f, "not finished after {passes} passes ({steps} steps): raise the bound")
            }
            Self::Leftover { messages } => write!(f, "{messages} messages left unreceived"),
            Self::TooManyRanks { ranks, max } => {
                write!(f, "{ranks} ranks, but the mailboxes hold {max}: use larger mailboxes")
            }
            Self::BufsMismatch { runs, bufs } => {
                write!(f, "{runs} schedules but {bufs} buffer sets: give one per rank")
            }
        }
    }
}

/// Runs the schedules of ranks sharing this address space over borrowed [`Mailboxes`].
#[derive(Debug)]
pub struct Executor<'m, const R: usize, const D: usize, const M: usize> {
    boxes: &'m mut Mailboxes<R, D, M>,
}

impl<'m, const R: usize, const D: usize, const M: usize> Executor<'m, R, D, M> {
    /// An executor over `boxes`.
    pub fn new(boxes: &'m mut Mailboxes<R, D, M>) -> Self {
        Self { boxes }
    }

    /// Runs `runs[i]` on `bufs[i]` for every rank `i` to completion, for at most
    /// `max_passes` passes. `temp` is the bounce buffer of `Copy` and `Reduce` steps.
    pub fn run<const P: usize>(
        &mut self,
        runs: &mut [RankRun<'_, P>],
        bufs: &mut [RankBufs<'_>],
        temp: &mut [u8],
        max_passes: u64,
    ) -> Result<ExecStats, ExecError> {
        let ranks = runs.len();
        if ranks > R {
            return Err(ExecError::TooManyRanks { ranks, max: R });
        }
        if bufs.len() != ranks {
            return Err(ExecError::BufsMismatch { runs: ranks, bufs: bufs.len() });
        }
        self.boxes.clear(ranks);
        let mut stats = ExecStats::default();
        let mut done = [false; R];
        let mut remaining = ranks;
        while remaining > 0 {
            if stats.passes == max_passes {
                let steps = runs.iter().map(RankRun::steps).sum();
                return Err(ExecError::PassLimit { passes: stats.passes, steps });
            }
            stats.passes += 1;
            let mut progress = false;
            for me in 0..ranks {
                if done[me] {
                    continue;
                }
                let before = runs[me].events();
                let mut view = View { boxes: &mut *self.boxes, me, ranks, messages: 0, bytes: 0 };
                let status = runs[me]
                    .poll(&mut bufs[me], &mut view, temp)
                    .map_err(|error| ExecError::Rank { rank: me as u32, error })?;
                stats.messages += view.messages;
                stats.bytes += view.bytes;
                progress |= runs[me].events() != before;
                if status == RunStatus::Done {
                    done[me] = true;
                    remaining -= 1;
                }
            }
            if !progress {
                let first = done[..ranks].iter().position(|d| !d).unwrap_or(0) as u32;
                let steps = runs.iter().map(RankRun::steps).sum();
                return Err(ExecError::Deadlock { steps, blocked: remaining as u32, first });
            }
        }
        stats.steps = runs.iter().map(RankRun::steps).sum();
        match self.boxes.queued(ranks) {
            0 => Ok(stats),
            messages => Err(ExecError::Leftover { messages }),
        }
    }
}

#[cfg(test)]
mod tests;
