//! The checks the QEMU test kernel runs at boot, written once so that the host tests run
//! exactly what the kernel runs (at smaller sizes where the kernel's would be slow).
//!
//! - [`rankmaps`]: a job's address vector, odd/even splits, a reversed and a random
//!   communicator, every rank translated against a formula, bytes counted.
//! - [`cids`]: context-id agreement for many hosted ranks, each with its own space,
//!   creations and frees, every result checked on every rank and in every CID store.
//! - [`collectives`]: every intra-communicator operation and algorithm core offers, run
//!   through the in-memory [`Executor`](crate::Executor), every rank's result compared
//!   with a value computed directly.

mod cids;
mod colls;
mod expect;
mod rankmaps;

use core::fmt;

use commcore::coll::{Algorithm, CollError, CollOp};

use crate::{AgreeError, ExecError, JobError};

pub use cids::{cids, CidReport};
pub use colls::{collectives, CollBuffers, CollReport, SLOT_BYTES};
pub use rankmaps::{rankmaps, RankmapReport};

/// xorshift64*: the self-test's seeded randomness (a kernel has no other).
#[derive(Clone, Copy, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (any value; zero is replaced).
    pub const fn new(seed: u64) -> Self {
        Self(if seed == 0 { 0x9e37_79b9_7f4a_7c15 } else { seed })
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value below `bound` (`bound > 0`; the slight bias is irrelevant here).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }
}

/// The kernel's allreduce failed (its own error is not kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllreduceFailed;

impl fmt::Display for AllreduceFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the kernel's allreduce failed")
    }
}

/// Why a self-test failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SelftestError {
    /// Setting up the job failed.
    Job(JobError),
    /// A rank map gave a wrong answer.
    Translate {
        /// Which communicator.
        comm: &'static str,
        /// The rank.
        rank: u32,
    },
    /// An odd/even split or the reversal needed a table.
    NotRegular {
        /// Which communicator.
        comm: &'static str,
    },
    /// The working memory is smaller than the test needs.
    TooSmall {
        /// What.
        what: &'static str,
        /// Units needed.
        needed: usize,
    },
    /// An agreement failed (the kernel allreduce's own error is left out).
    Agree {
        /// The creation that failed.
        creation: u32,
        /// Why.
        error: AgreeError<AllreduceFailed>,
    },
    /// Agreement gave a CID that a member had taken, or stores disagree.
    CidWrong {
        /// The creation.
        creation: u32,
        /// The rank that saw it.
        rank: u32,
        /// The CID.
        cid: u32,
    },
    /// A schedule could not be built.
    Schedule {
        /// The operation.
        op: CollOp,
        /// The algorithm.
        alg: Algorithm,
        /// Why.
        error: CollError,
    },
    /// A schedule did not run to completion.
    Exec {
        /// The operation.
        op: CollOp,
        /// The algorithm.
        alg: Algorithm,
        /// Why.
        error: ExecError,
    },
    /// A rank's result differs from the directly computed one.
    CollWrong {
        /// The operation.
        op: CollOp,
        /// The algorithm.
        alg: Algorithm,
        /// The root.
        root: u32,
        /// The rank.
        rank: u32,
    },
}

impl fmt::Display for SelftestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Job(e) => write!(f, "job: {e}"),
            Self::Translate { comm, rank } => {
                write!(f, "{comm} communicator: rank {rank} translates wrongly")
            }
            Self::NotRegular { comm } => write!(f, "{comm} communicator needed a table"),
            Self::TooSmall { what, needed } => write!(f, "{what} too small: {needed} needed"),
            Self::Agree { creation, error } => write!(f, "creation {creation}: {error}"),
            Self::CidWrong { creation, rank, cid } => {
                write!(f, "creation {creation}: cid {cid} is wrong on rank {rank}")
            }
            Self::Schedule { op, alg, error } => write!(f, "{op} {}: {error}", alg.name()),
            Self::Exec { op, alg, error } => write!(f, "{op} {}: {error}", alg.name()),
            Self::CollWrong { op, alg, root, rank } => {
                write!(f, "{op} {} root {root}: rank {rank} has a wrong result", alg.name())
            }
        }
    }
}

impl From<JobError> for SelftestError {
    fn from(e: JobError) -> Self {
        Self::Job(e)
    }
}
