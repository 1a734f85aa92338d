//! Long messages through the area's staging buffers: a member copies a whole buffer-full
//! into its staging buffer at once and the others read it in place, where in cells every
//! 1 KiB piece costs an area call of every member. Allgather and reduce always take them
//! above a cell; allreduce and bcast only when ranks share CPUs (with a CPU each, they read
//! the members' buffers in place, see `single_copy.rs`).
//!
//! - Allreduce: every member stages its vector, folds its segment of everyone's, writes
//!   the result over its own segment there, and copies the others' results out. Two area
//!   calls per buffer-full, "staged" and "folded". Single-copy reads need no staging copy,
//!   but a member makes two reads of every other member, each a system call that pins the
//!   owner's pages, and waits three times; on 2 CPUs shared by 8 ranks the kernel's share
//!   of that costs more than the copies.
//! - Reduce: every member but the root stages its vector and publishes the call; the root
//!   folds them in place, in rank order.
//! - Bcast: the root stages a buffer-full and publishes the call; the readers copy it out
//!   and publish the call too.
//! - Allgather: every member stages its block and publishes the call, then copies the
//!   others' blocks out. One area call per buffer-full, where cells take one per 1 KiB.
//!
//! Every member takes the buffers in the same turn, one per buffer-full of a staged call,
//! and notes for each the call by which every member has published that it is done
//! reading it; before writing its own buffer again a member waits for that call.

use std::ops::Range;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use commcore::coll::{reduce, CollArgs, CollOp, Datatype, Op};

use super::single_copy::{segment, single_copy_from_env};
use super::wait::{wait_until, Awaited};
use super::ShmColl;
use crate::runtime::error::CollectiveError;
use crate::shm::coll_area::{CELL_BYTES, STAGING_BUFFERS};
use crate::shm::CollArea;

impl ShmColl {
    /// Runs `op` through the staging buffers when the area has them and `bytes` per member
    /// exceed what the cells take in one area call, or with ranks sharing CPUs a reduce
    /// [`STAGED_REDUCE_ABOVE`] and a bcast [`STAGED_BCAST_ABOVE`]; `None` otherwise. With
    /// a CPU per rank, allreduce and bcast keep single-copy reads, which there win (2
    /// ranks, 64 KiB, µs, staged against single copy: allreduce 8.3–9.5 against 5.8–6.2,
    /// bcast 3.3–3.9 against 3.0), and so does an allreduce when a bound is set for them
    /// for every operation. Measured with `bench coll-procs`, µs, staged against what ran
    /// before (cells up to 1 KiB or 64 KiB, then single-copy reads or the schedules):
    /// - allreduce, 8 ranks on 2 CPUs: 1 KiB 7.7 against 6.2, 2 KiB 8.9 against 11.3,
    ///   16 KiB 18 against 66, 64 KiB 37 against 85, 1 MiB 795–820 against 950 (4 ranks:
    ///   64 KiB 19.5 against 30.6, 256 KiB 76 against 72, 1 MiB 379 against 394);
    /// - allgather per block, 8 ranks on 2 CPUs: 1 KiB 5.0 against 4.9, 2 KiB 6.8 against
    ///   9.9, 64 KiB 131 against 392, 1 MiB 2,357 against 10,108 (4 ranks: 64 KiB 26
    ///   against 124); 2 ranks with a CPU each: 2 KiB 0.98 against 1.19, 64 KiB 8 against
    ///   33, 1 MiB 184 against 300;
    /// - reduce, 2 ranks with a CPU each: 2 KiB 0.33–0.35 against 0.37–0.43, 64 KiB 4.7
    ///   against 7.7, 1 MiB 96–99 against 302–314; sharing CPUs, see
    ///   [`STAGED_REDUCE_ABOVE`].
    pub(super) fn run_staged(
        &self,
        op: CollOp,
        args: &CollArgs<'_>,
        send: &[u8],
        recv: &mut [u8],
        root: Option<usize>,
    ) -> Option<Result<(), CollectiveError>> {
        let bytes = args.message_bytes();
        let above = match (op, self.runtime.oversubscribed) {
            (CollOp::Allreduce, true) | (CollOp::Allgather, _) | (CollOp::Reduce, false) => {
                STAGED_ABOVE
            }
            (CollOp::Reduce, true) => STAGED_REDUCE_ABOVE,
            (CollOp::Bcast, true) => STAGED_BCAST_ABOVE,
            _ => return None,
        };
        // The size first: a short call, the common one, decides here.
        if bytes <= above
            || (op == CollOp::Allreduce && single_copy_from_env().is_some())
            || self.area().staging_bytes() == 0
        {
            return None;
        }
        let (dtype, reduce_op) = (args.dtype, &args.op);
        Some(match op {
            CollOp::Allreduce => self
                .check_reduce(send, recv, bytes, dtype, reduce_op, true)
                .and_then(|()| self.allreduce_staged(send, recv, dtype, reduce_op)),
            CollOp::Reduce => {
                let root = root?;
                self.check_reduce(send, recv, bytes, dtype, reduce_op, root == self.me)
                    .and_then(|()| self.reduce_staged(send, recv, dtype, reduce_op, root))
            }
            CollOp::Allgather => self.allgather_staged(send, recv, bytes),
            _ if recv.len() != bytes => Err(CollectiveError::BadBuffers),
            _ => self.bcast_staged(recv, root?),
        })
    }

    /// Allreduce in buffer-fulls of whole elements; `send` and `recv` are checked.
    fn allreduce_staged(
        &self,
        send: &[u8],
        recv: &mut [u8],
        dtype: Datatype,
        op: &Op,
    ) -> Result<(), CollectiveError> {
        let area = self.area();
        let unit = dtype.size().max(1);
        let mut result = Ok(());
        for chunk in buffer_fulls(send.len(), area.staging_bytes() / unit * unit) {
            let folded = self.fold_staged(&area, &send[chunk.clone()], &mut recv[chunk], dtype, op);
            result = result.and(folded);
        }
        result
    }

    /// One buffer-full: `send` and `recv` are the same piece of the vectors.
    fn fold_staged(
        &self,
        area: &CollArea<'_>,
        send: &[u8],
        recv: &mut [u8],
        dtype: Datatype,
        op: &Op,
    ) -> Result<(), CollectiveError> {
        let (n, me, unit) = (self.size(), self.me, dtype.size().max(1));
        let staged = self.next_calls(2);
        let folded = staged + 1;
        // The others read the results out of this buffer after "folded" and are done with
        // it once they publish their next call.
        let buffer = self.take_staging(area, folded + 1, true);
        // SAFETY: this member's own buffer, which every reader is done with (awaited by
        // `take_staging`); the others read it only after "staged".
        unsafe { area.stage(me, buffer, 0, send) };
        self.finish(area, staged);
        let count = send.len() / unit;
        let mine = segment(me, n, count, unit);
        // A failed fold still announces "folded" below: the others must not wait forever.
        let result =
            self.fold_segment(area, buffer, send, &mut recv[mine.clone()], mine.clone(), dtype, op);
        // SAFETY: only this member reads or writes its own segment of its buffer between
        // "staged" and "folded".
        unsafe { area.stage(me, buffer, mine.start, &recv[mine]) };
        self.finish(area, folded);
        for member in (1..n).map(|k| (me + k) % n) {
            let theirs = segment(member, n, count, unit);
            // SAFETY: `member` wrote its segment before it announced "folded" (awaited by
            // `finish`), and writes this buffer again only after this member publishes
            // its next call.
            let result = unsafe { area.staged(member, buffer, theirs.clone()) };
            recv[theirs].copy_from_slice(result);
        }
        result
    }

    /// Reduce to `root` in buffer-fulls of whole elements; `send` (and at the root `recv`)
    /// are checked.
    fn reduce_staged(
        &self,
        send: &[u8],
        recv: &mut [u8],
        dtype: Datatype,
        op: &Op,
        root: usize,
    ) -> Result<(), CollectiveError> {
        let area = self.area();
        let unit = dtype.size().max(1);
        let mut result = Ok(());
        for chunk in buffer_fulls(send.len(), area.staging_bytes() / unit * unit) {
            let staged = self.next_calls(1);
            // The root is done with the others' buffers once it publishes its next call.
            let buffer = self.take_staging(&area, staged + 1, self.me != root);
            let mine = &send[chunk.clone()];
            if self.me != root {
                // SAFETY: this member's own buffer, which the root is done with (awaited by
                // `take_staging`); it reads it only after the publish below.
                unsafe { area.stage(self.me, buffer, 0, mine) };
                area.announce(self.me, staged);
                self.wake(&area);
                continue;
            }
            area.announce(self.me, staged);
            self.wait_all(&area, staged);
            let out = &mut recv[chunk.clone()];
            result =
                result.and(self.fold_segment(&area, buffer, mine, out, 0..chunk.len(), dtype, op));
        }
        result
    }

    /// Allgather in buffer-fulls of each block of `block` bytes.
    fn allgather_staged(
        &self,
        send: &[u8],
        recv: &mut [u8],
        block: usize,
    ) -> Result<(), CollectiveError> {
        if send.len() != block || recv.len() != block * self.size() {
            return Err(CollectiveError::BadBuffers);
        }
        let area = self.area();
        for chunk in buffer_fulls(block, area.staging_bytes()) {
            let staged = self.next_calls(1);
            // The others are done with this buffer once they publish their next call.
            let buffer = self.take_staging(&area, staged + 1, true);
            // SAFETY: this member's own buffer, which every reader is done with (awaited by
            // `take_staging`); they read it only after "staged".
            unsafe { area.stage(self.me, buffer, 0, &send[chunk.clone()]) };
            self.finish(&area, staged);
            for member in (0..self.size()).map(|k| (self.me + k) % self.size()) {
                let out = &mut recv[member * block + chunk.start..member * block + chunk.end];
                if member == self.me {
                    out.copy_from_slice(&send[chunk.clone()]);
                } else {
                    // SAFETY: `member` staged this before it published "staged" (awaited by
                    // `finish`), and writes it again only after this member publishes its
                    // next call.
                    out.copy_from_slice(unsafe { area.staged(member, buffer, 0..chunk.len()) });
                }
            }
        }
        Ok(())
    }

    /// Bcast in buffer-fulls; `buf` is checked.
    fn bcast_staged(&self, buf: &mut [u8], root: usize) -> Result<(), CollectiveError> {
        let area = self.area();
        for chunk in buffer_fulls(buf.len(), area.staging_bytes()) {
            let call = self.next_calls(1);
            // Readers are done with the root's buffer once they publish the call. A reader
            // need not wait for the others: the root's publish says they are done.
            let buffer = self.take_staging(&area, call, self.me == root);
            if self.me == root {
                // SAFETY: this member's own buffer, which every reader is done with (awaited
                // by `take_staging`); they read it only after the publish below.
                unsafe { area.stage(root, buffer, 0, &buf[chunk]) };
                area.announce(root, call);
            } else {
                wait_until(&self.runtime, &area, self.me, Awaited::Anyone, || {
                    area.published(root, call)
                });
                // SAFETY: the root staged this before it published the call (awaited just
                // above), and writes this buffer again only after this member publishes it.
                buf[chunk.clone()]
                    .copy_from_slice(unsafe { area.staged(root, buffer, 0..chunk.len()) });
                area.announce(self.me, call);
            }
            self.wake(&area);
        }
        Ok(())
    }

    /// Takes the next staging buffer in turn for a use whose readers are done with it once
    /// every member has published `done`; returns it, once every other member is done with
    /// its previous use when this member `writes` it. Every member takes every turn.
    fn take_staging(&self, area: &CollArea<'_>, done: u64, writes: bool) -> usize {
        let turns = &self.staging;
        let uses = turns.uses.load(Relaxed);
        turns.uses.store(uses + 1, Relaxed);
        let buffer = (uses % STAGING_BUFFERS as u64) as usize;
        let previous = turns.done[buffer].load(Relaxed);
        turns.done[buffer].store(done, Relaxed);
        if writes {
            self.wait_all(area, previous);
        }
        buffer
    }

    /// Folds bytes `range` of every member's staged vector (this member's own from `send`)
    /// in rank order into `out`.
    #[allow(clippy::too_many_arguments)]
    fn fold_segment(
        &self,
        area: &CollArea<'_>,
        buffer: usize,
        send: &[u8],
        out: &mut [u8],
        range: Range<usize>,
        dtype: Datatype,
        op: &Op,
    ) -> Result<(), CollectiveError> {
        for member in 0..self.size() {
            let contribution = if member == self.me {
                &send[range.clone()]
            } else {
                // SAFETY: `member` staged its vector before it announced "staged" (awaited
                // by the caller) and writes this buffer again only after this member
                // publishes its next call, but for an allreduce's fold into its own
                // segment, which is not `range`.
                unsafe { area.staged(member, buffer, range.clone()) }
            };
            if member == 0 {
                out.copy_from_slice(contribution);
            } else {
                reduce(op, dtype, contribution, out, false).map_err(CollectiveError::Reduce)?;
            }
        }
        Ok(())
    }
}

/// The longest allreduce vector or allgather block (or with a CPU per rank, reduce vector)
/// that goes through the cells: one cell, a single area call.
const STAGED_ABOVE: usize = CELL_BYTES;

/// The longest reduce vector that goes through the cells when ranks share CPUs: there the
/// members other than the root run up to 256 calls ahead of it, against 4 buffer-fulls
/// (`bench coll-procs`, µs, staged against cells: 8 ranks on 2 CPUs, 4 KiB 3.2 against
/// 0.73, 8 KiB 4.7 against 3.3, 16 KiB 6.7 against 8.2, 64 KiB 24 against 38, 1 MiB 581
/// against 2,103 (through the schedules); 4 ranks, 16 KiB 3.7 against 3.9, 64 KiB 11.4
/// against 17.5).
const STAGED_REDUCE_ABOVE: usize = 8 * 1024;

/// The longest bcast that pipelines through the cells when ranks share CPUs: there a root
/// runs further ahead of its readers, 256 cells against 4 buffer-fulls, while longer
/// messages save more in area calls than they lose in run-ahead (`bench coll-procs`, µs,
/// staged against cells: 8 ranks on 2 CPUs, 8 KiB 2.8 against 1.6, 32 KiB 6.9–7.3 against
/// 6.8–7.0, 64 KiB 9.6–10.2 against 13.2–15.4, 128 KiB 19–20 against 27; 4 ranks, 32 KiB
/// 4.5–5.2 against 4.4–4.9, 64 KiB 6.6 against 9.2–9.4, 128 KiB 14 against 18–20).
const STAGED_BCAST_ABOVE: usize = 32 * 1024;

/// Where the buffer-fulls of `len` bytes in steps of `step` start and end; one, empty, for
/// an empty message, so that every member still synchronises.
fn buffer_fulls(len: usize, step: usize) -> impl Iterator<Item = Range<usize>> {
    let step = step.max(1);
    (0..len.div_ceil(step).max(1)).map(move |i| (i * step).min(len)..((i + 1) * step).min(len))
}

/// A member's turns through its staging buffers (see the module's doc).
#[derive(Default)]
pub(super) struct StagingTurns {
    /// Buffer-fulls staged so far.
    uses: AtomicU64,
    /// For each buffer, the call by which every member is done reading its last use.
    done: [AtomicU64; STAGING_BUFFERS],
}
