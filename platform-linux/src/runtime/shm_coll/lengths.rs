//! Calls whose members pass different lengths, which MPI makes erroneous: they must still
//! end on every member with an error, and leave the area in step for the next call.
//!
//! Which way a call goes (cells, staging buffers, single-copy reads, or the schedules) and
//! how many area calls it takes depend only on the operation, its length and job-wide
//! settings ([`ShmColl::path`]). Every member publishes its length with every area call,
//! and a member compares the lengths it reads in the first call of a collective:
//! - in allreduce, allgather and alltoall every member waits for every other's first call,
//!   so all see a mismatch there, and all continue after that call;
//! - in bcast the readers compare the root's length; a reader whose differs takes the
//!   root's area calls and staging turns without reading anything ([`ShmColl::follow`]), as
//!   the root does not wait for its readers (it reports a mismatch only where it reads
//!   them, in a single-copy bcast or a call of the schedules);
//! - in reduce the root compares the contributors' lengths and takes their calls. Only
//!   contributors that passed the same length as each other stay in step (they do not
//!   wait for the root, so they cannot learn of another contributor's length).
//!
//! A call that the schedules take first publishes its length in one area call of every
//! member and checks all of them ([`ShmColl::enter_schedule`]): a member whose length sent
//! it into the area meets it there.

use commcore::coll::CollOp;

use super::ops::{pieces, shm_max, DEFAULT_CELL_MAX};
use super::ShmColl;
use crate::runtime::error::CollectiveError;
use crate::shm::coll_area::CELL_BYTES;
use crate::shm::CollArea;

/// Marks the length a member publishes when its own blocks sent and received differ in
/// length (see [`ShmColl::refuse_own_lengths`]); no length a caller passes has it.
const SELF_MISMATCHED: u64 = 1 << 63;

/// Which way a call goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    /// Through the cells, in pieces of a cell.
    Cells,
    /// Through the staging buffers (`staged.rs`).
    Staged,
    /// Single-copy reads of the members' buffers (`single_copy.rs`).
    SingleCopy,
    /// The schedules, after one area call that checks the lengths.
    Schedule,
    /// An operation the area does not serve.
    Elsewhere,
}

impl ShmColl {
    /// Which way a call of `op` moving `bytes` per member goes: the same on every member
    /// that passes the same `bytes`.
    // Always: out of line it cost every small call about 30 instructions, and crowded the
    // callers' other inlining out.
    #[inline(always)]
    pub(super) fn path(&self, op: CollOp, bytes: usize) -> Path {
        // Single-copy reads take messages of any size unless a bound is set: above 64 KiB
        // they beat the schedules 2 to 5 times (1 MiB at 2 ranks: bcast 22 against 96 µs,
        // alltoall 165 against 334 µs; at 8 ranks alltoall 3.8 against 7.0 ms).
        let within_max = shm_max().map_or(true, |max| bytes <= max);
        if within_max && self.staged_for(op, bytes) {
            return Path::Staged;
        }
        let oversubscribed = self.runtime.oversubscribed;
        if within_max && self.single_copy_for(op, bytes) {
            // A bcast root waits for its readers, so when ranks share cores it loses its
            // core to them and back, while through the area it runs messages ahead (64 KiB
            // on 2 cores, µs, area against single copy: 2 ranks 5.8 against 2.8; 4 ranks
            // 9.4 against 10.7, 6 ranks 12 against 16, 8 ranks 14 against 14).
            match op {
                CollOp::Bcast if !oversubscribed => return Path::SingleCopy,
                CollOp::Allreduce | CollOp::Alltoall => return Path::SingleCopy,
                _ => {}
            }
        }
        let limit = match (op, shm_max()) {
            (CollOp::Alltoall, None) => self.alltoall_cell_max(),
            (CollOp::Alltoall, Some(max)) if max <= DEFAULT_CELL_MAX => {
                self.alltoall_cell_max().min(max)
            }
            (CollOp::Bcast, None) if oversubscribed => usize::MAX,
            (_, max) => max.unwrap_or(DEFAULT_CELL_MAX),
        };
        match op {
            CollOp::Barrier
            | CollOp::Bcast
            | CollOp::Reduce
            | CollOp::Allreduce
            | CollOp::Allgather
            | CollOp::Alltoall => {}
            _ => return Path::Elsewhere,
        }
        if bytes > limit {
            Path::Schedule
        } else {
            Path::Cells
        }
    }

    /// Before a call the schedules take: publishes this member's length in one area call,
    /// waits for every member's and compares them. `None` when they all match (the caller
    /// runs the schedule), else the mismatch, once this member is back in step.
    #[inline(never)]
    pub(super) fn enter_schedule(
        &self,
        op: CollOp,
        bytes: usize,
        unit: usize,
        root: Option<usize>,
    ) -> Option<Result<(), CollectiveError>> {
        let area = self.area();
        let first = self.next_calls(1);
        self.finish(&area, first);
        self.other_length(&area, first, bytes, None)?;
        Some(Err(self.back_in_step(&area, op, first, bytes, unit, root)))
    }

    /// Whether an allgather or alltoall of `bytes` per block sends or receives blocks of
    /// another length (MPI lets the two sides' layouts differ, not their lengths).
    #[inline]
    pub(super) fn own_blocks_differ(
        &self,
        op: CollOp,
        bytes: usize,
        send: &[u8],
        recv: &[u8],
    ) -> bool {
        let n = self.size();
        match op {
            CollOp::Allgather => send.len() != bytes || recv.len() != bytes * n,
            CollOp::Alltoall => send.len() != bytes * n || recv.len() != bytes * n,
            _ => false,
        }
    }

    /// An allgather or alltoall whose blocks sent differ from those received: it takes part
    /// in the first area call with a length no member passes (the others may have passed
    /// either), where every member sees the mismatch.
    #[cold]
    #[inline(never)]
    pub(super) fn refuse_own_lengths(
        &self,
        op: CollOp,
        send: &[u8],
        recv: &[u8],
    ) -> CollectiveError {
        let n = self.size();
        let sent = if op == CollOp::Alltoall { send.len() / n } else { send.len() };
        let received = recv.len() / n;
        let area = self.area();
        let first = self.next_calls(1);
        self.length.store(sent as u64 | SELF_MISMATCHED, std::sync::atomic::Ordering::Relaxed);
        self.finish(&area, first);
        self.back_in_step(&area, op, first, sent, 1, None);
        CollectiveError::LengthMismatch { expected: received, got: sent }
    }

    /// A length other than `bytes` that a member published call `call` with: `root`'s
    /// alone when given, else any member's. Call once they all published it.
    #[inline]
    pub(super) fn other_length(
        &self,
        area: &CollArea<'_>,
        call: u64,
        bytes: usize,
        root: Option<usize>,
    ) -> Option<u64> {
        let bytes = bytes as u64;
        match root {
            Some(root) => Some(area.length(root, call)).filter(|&theirs| theirs != bytes),
            None => (0..self.size()).map(|m| area.length(m, call)).find(|&theirs| theirs != bytes),
        }
    }

    /// After this member saw a mismatch in area call `first`, the first of a call of `op`
    /// (with elements of `unit` bytes) for which it passed `bytes`: takes it to where the
    /// members whose lengths decide the call's area calls end it (see the module's doc),
    /// and returns the error to report. Nothing of this call was published after `first`.
    #[cold]
    #[inline(never)]
    pub(super) fn back_in_step(
        &self,
        area: &CollArea<'_>,
        op: CollOp,
        first: u64,
        bytes: usize,
        unit: usize,
        root: Option<usize>,
    ) -> CollectiveError {
        let me = self.me;
        let leader = match (op, root) {
            (CollOp::Bcast, Some(root)) if me != root => Some(area.length(root, first)),
            (CollOp::Reduce, Some(root)) if me == root => {
                Some(self.contributors_length(area, first))
            }
            _ => None,
        };
        match leader {
            Some(theirs) => self.follow(area, op, theirs as usize, unit, first, bytes as u64),
            // Every member saw the mismatch in `first` (or takes no further calls than it).
            None => self.call.store(first, std::sync::atomic::Ordering::Relaxed),
        }
        let got = leader.or_else(|| self.other_length(area, first, bytes, None));
        let got = got.map_or(0, |got| got & !SELF_MISMATCHED) as usize;
        CollectiveError::LengthMismatch { expected: bytes, got }
    }

    /// The length most of the members other than this one published `call` with.
    fn contributors_length(&self, area: &CollArea<'_>, call: u64) -> u64 {
        let others = || (0..self.size()).filter(|&m| m != self.me).map(|m| area.length(m, call));
        others().max_by_key(|&length| others().filter(|&l| l == length).count()).unwrap_or(0)
    }

    /// Takes this member, which reads nothing, through the area calls from `first` and the
    /// staging turns that a call of `op` over `bytes` per member takes, publishing each with
    /// `own` (its own length, which tells a member that reads it of the mismatch).
    fn follow(
        &self,
        area: &CollArea<'_>,
        op: CollOp,
        bytes: usize,
        unit: usize,
        first: u64,
        own: u64,
    ) {
        let calls = match self.path(op, bytes) {
            Path::Cells => pieces(bytes, CELL_BYTES / unit * unit),
            Path::Staged => {
                let calls = pieces(bytes, area.staging_bytes() / unit * unit);
                for call in first..first + calls as u64 {
                    // A reduce's contributors are done with their buffer at the root's next
                    // call, a bcast's root once every reader published the call.
                    let done = if op == CollOp::Reduce { call + 1 } else { call };
                    self.take_staging(area, done, false);
                }
                calls
            }
            Path::SingleCopy => 2,
            Path::Schedule | Path::Elsewhere => 1,
        } as u64;
        let last = first + calls - 1;
        self.call.store(last, std::sync::atomic::Ordering::Relaxed);
        // Only the last `depth` calls matter: each shares its cell with the earlier ones.
        for call in first.max((last + 1).saturating_sub(area.depth()))..=last {
            area.announce(self.me, call, own);
        }
        self.wake(area);
    }
}
