//! The operations over the area. Each area call: a member that contributes waits until its
//! cell is free, writes it and publishes the call; a member that needs the others' waits
//! until they have published it and reads their cells.

use std::ops::Range;

use commcore::coll::{reduce, CollArgs, CollOp, Datatype, Op, OpError, Root};

use super::wait::{wait_until, wake_sleepers, Awaited};
use super::ShmColl;
use crate::runtime::error::CollectiveError;
use crate::shm::coll_area::CELL_BYTES;
use crate::shm::CollArea;

/// The largest message in bytes that `shm` takes at all (`COMMCORE_SHM_MAX`); larger ones
/// take the schedules. Unset, single-copy reads and the staging buffers (see `staged.rs`) take any
/// size, and the cells take messages in pieces of a cell up to [`DEFAULT_CELL_MAX`] bytes,
/// but a bcast of any size when ranks share CPUs. Alltoall blocks go through the area only
/// up to [`ShmColl::alltoall_cell_max`] (in more pieces they lose to the schedules or to
/// single-copy reads), unless the bound is set above the default.
/// The area's bound when `COMMCORE_SHM_MAX` is unset. Above it, with ranks sharing CPUs, a
/// bcast still pipelines through the area far faster than the schedules (`bench coll-procs`,
/// 1 MiB: 4 ranks 193 against 865 µs, 8 ranks 373 against 1,199 µs), while allreduce and
/// alltoall in pieces lose to them (1 MiB at 4 ranks, single copy off: 2,154 against 1,106
/// µs and 7,266 against 1,899 µs).
const DEFAULT_CELL_MAX: usize = 64 * 1024;

fn shm_max() -> Option<usize> {
    crate::runtime::settings::current().shm_max
}

/// Area calls an alltoall may take when ranks share CPUs: each costs about what one of 8 B
/// does, and single-copy reads cost about a context switch per member whatever the size
/// (`bench coll-procs`, µs, area against single copy: 4 ranks, 512 B blocks 3.3 against
/// 7.4, 1 KiB 7.1 against 7.8; 8 ranks, 512 B 18 against 29, 1 KiB 36 against 30).
const SHARED_ALLTOALL_CALLS: usize = 4;

/// The longest bcast whose readers poll for the root while it runs on another CPU, as in
/// a call of every member (see `Awaited::Spread`), rather than yield at once: it publishes
/// the next message before a context switch would end (`bench coll-procs`, µs, interleaved
/// runs, yielding against polling: 8 ranks on 2 CPUs, 8 B 0.15–0.17 against 0.11–0.13,
/// 256 B 0.12–0.16 against 0.07–0.09; 4 ranks, 8 B 0.09 against 0.075). Readers of longer
/// messages would keep the CPU from the others that share it while the root copies them
/// (1 KiB at 3 and 4 ranks: 0.10–0.13 against 0.12–0.21).
const POLLED_BCAST_MAX: usize = 256;

/// The byte range of piece `i` of `len` bytes cut into pieces of `piece` bytes.
fn piece(i: usize, piece: usize, len: usize) -> Range<usize> {
    (i * piece).min(len)..((i + 1) * piece).min(len)
}

/// Area calls for `len` bytes in pieces of `piece`: at least one, so that every call
/// synchronises like the schedules do.
fn pieces(len: usize, piece: usize) -> usize {
    len.div_ceil(piece.max(1)).max(1)
}

impl ShmColl {
    /// Runs `op` over the area, or `None` when this call is not one for the area (too large,
    /// or an operation it does not serve): the caller then runs the schedule. The choice
    /// depends only on `op` and `args`, so every member makes the same.
    pub(in crate::runtime) fn run(
        &self,
        op: CollOp,
        args: &CollArgs<'_>,
        send: &[u8],
        recv: &mut [u8],
    ) -> Option<Result<(), CollectiveError>> {
        let bytes = args.message_bytes();
        let root = match args.root {
            Root::Rank(root) if (root as usize) < self.size() => Some(root as usize),
            _ => None,
        };
        // Single-copy reads take messages of any size unless a bound is set: above 64 KiB
        // they beat the schedules 2 to 5 times (1 MiB at 2 ranks: bcast 22 against 96 µs,
        // alltoall 165 against 334 µs; at 8 ranks alltoall 3.8 against 7.0 ms).
        let within_max = shm_max().map_or(true, |max| bytes <= max);
        if within_max {
            if let Some(done) = self.run_staged(op, args, send, recv, root) {
                return Some(done);
            }
        }
        if within_max && self.single_copy_for(op, bytes) {
            match op {
                // A root waits for its readers, so when ranks share cores it loses its core
                // to them and back, while through the area it runs messages ahead (64 KiB
                // on 2 cores, µs, area against single copy: 2 ranks 5.8 against 2.8; 4
                // ranks 9.4 against 10.7, 6 ranks 12 against 16, 8 ranks 14 against 14).
                CollOp::Bcast if recv.len() == bytes && !self.runtime.oversubscribed => {
                    return Some(self.bcast_single_copy(recv, root?));
                }
                CollOp::Allreduce => {
                    return Some(
                        self.check_reduce(send, recv, bytes, args.dtype, &args.op, true).and_then(
                            |()| self.allreduce_single_copy(send, recv, args.dtype, &args.op),
                        ),
                    );
                }
                CollOp::Alltoall => {
                    return Some(self.alltoall_single_copy(send, recv, bytes));
                }
                _ => {}
            }
        }
        let limit = match (op, shm_max()) {
            (CollOp::Alltoall, None) => self.alltoall_cell_max(),
            (CollOp::Alltoall, Some(max)) if max <= DEFAULT_CELL_MAX => {
                self.alltoall_cell_max().min(max)
            }
            (CollOp::Bcast, None) if self.runtime.oversubscribed => usize::MAX,
            (_, max) => max.unwrap_or(DEFAULT_CELL_MAX),
        };
        if bytes > limit {
            return None;
        }
        Some(match op {
            CollOp::Barrier => {
                self.barrier();
                Ok(())
            }
            CollOp::Bcast => self.bcast(recv, bytes, root?),
            CollOp::Allreduce => self.reduce(send, recv, bytes, args.dtype, &args.op, None),
            CollOp::Reduce => self.reduce(send, recv, bytes, args.dtype, &args.op, Some(root?)),
            CollOp::Allgather => self.allgather(send, recv, bytes),
            CollOp::Alltoall => self.alltoall(send, recv, bytes),
            _ => return None,
        })
    }

    /// The longest alltoall block the area takes by default: one that fits a cell with the
    /// other members' blocks, or when ranks share CPUs, up to [`SHARED_ALLTOALL_CALLS`]
    /// such pieces.
    pub(super) fn alltoall_cell_max(&self) -> usize {
        let piece = CELL_BYTES / self.size();
        if self.runtime.oversubscribed {
            SHARED_ALLTOALL_CALLS * piece
        } else {
            piece
        }
    }

    /// Numbers the area calls that move `len` bytes in pieces of `step`; yields each call
    /// with its piece's byte range.
    fn calls_for(&self, len: usize, step: usize) -> impl Iterator<Item = (u64, Range<usize>)> {
        let calls = pieces(len, step);
        let first = self.next_calls(calls as u64);
        (0..calls).map(move |i| (first + i as u64, piece(i, step, len)))
    }

    pub(super) fn wait_all(&self, area: &CollArea<'_>, call: u64) {
        let me = self.me;
        let pending = |m: usize| m != me && !area.published(m, call);
        wait_until(&self.runtime, area, me, Awaited::Spread(&pending), || {
            !(0..self.size()).any(pending)
        });
    }

    pub(super) fn wake(&self, area: &CollArea<'_>) {
        wake_sleepers(&self.runtime, area, &self.world);
    }

    /// Writes `data` as this member's contribution to area call `call`.
    pub(super) fn contribute(
        &self,
        area: &CollArea<'_>,
        call: u64,
        data: &[u8],
    ) -> Result<(), CollectiveError> {
        if data.len() > CELL_BYTES {
            return Err(CollectiveError::AreaProtocol);
        }
        // With the length checked, publishing fails only while the cell is not free yet;
        // the wait may ask again after it succeeded, which must not write the cell twice.
        let (free, published) = (&self.free_through, std::cell::Cell::new(false));
        wait_until(&self.runtime, area, self.me, Awaited::Anyone, || {
            published.get() || {
                published.set(area.publish(self.me, call, data, free));
                published.get()
            }
        });
        self.wake(area);
        Ok(())
    }

    pub(super) fn read(
        area: &CollArea<'_>,
        member: usize,
        call: u64,
        at: usize,
        out: &mut [u8],
    ) -> Result<(), CollectiveError> {
        if area.read(member, call, at, out) {
            Ok(())
        } else {
            Err(CollectiveError::AreaProtocol)
        }
    }

    /// Blocks until every member has entered.
    pub(in crate::runtime) fn barrier(&self) {
        let area = self.area();
        let call = self.next_calls(1);
        area.announce(self.me, call);
        self.wake(&area);
        self.wait_all(&area, call);
    }

    fn bcast(&self, buf: &mut [u8], bytes: usize, root: usize) -> Result<(), CollectiveError> {
        if buf.len() != bytes {
            return Err(CollectiveError::BadBuffers);
        }
        let area = self.area();
        for (call, range) in self.calls_for(bytes, CELL_BYTES) {
            if self.me == root {
                self.contribute(&area, call, &buf[range])?;
            } else {
                let is_root = |m: usize| m == root;
                let awaited = if bytes <= POLLED_BCAST_MAX {
                    Awaited::Spread(&is_root)
                } else {
                    Awaited::Anyone
                };
                wait_until(&self.runtime, &area, self.me, awaited, || area.published(root, call));
                Self::read(&area, root, call, 0, &mut buf[range])?;
                // Done with the root's cell: it may reuse it.
                area.announce(self.me, call);
                self.wake(&area);
            }
        }
        Ok(())
    }

    /// Reduces every member's `send` in rank order into `recv`, on every member or on
    /// `root` alone.
    fn reduce(
        &self,
        send: &[u8],
        recv: &mut [u8],
        bytes: usize,
        dtype: Datatype,
        op: &Op,
        root: Option<usize>,
    ) -> Result<(), CollectiveError> {
        let receives = root.map_or(true, |root| root == self.me);
        self.check_reduce(send, recv, bytes, dtype, op, receives)?;
        let area = self.area();
        let unit = dtype.size().max(1);
        let mut other = [0u8; CELL_BYTES];
        for (call, range) in self.calls_for(bytes, CELL_BYTES / unit * unit) {
            let mine = &send[range.clone()];
            self.contribute(&area, call, mine)?;
            if !receives {
                continue;
            }
            self.wait_all(&area, call);
            let out = &mut recv[range];
            let theirs = &mut other[..out.len()];
            for member in 0..self.size() {
                let contribution = if member == self.me {
                    mine
                } else {
                    Self::read(&area, member, call, 0, theirs)?;
                    &*theirs
                };
                if member == 0 {
                    out.copy_from_slice(contribution);
                } else {
                    reduce(op, dtype, contribution, out, false).map_err(CollectiveError::Reduce)?;
                }
            }
        }
        Ok(())
    }

    /// Checks a reduction's buffers and that a built-in `op` takes `dtype`.
    pub(super) fn check_reduce(
        &self,
        send: &[u8],
        recv: &[u8],
        bytes: usize,
        dtype: Datatype,
        op: &Op,
        receives: bool,
    ) -> Result<(), CollectiveError> {
        if send.len() != bytes || (receives && recv.len() != bytes) {
            return Err(CollectiveError::BadBuffers);
        }
        match *op {
            Op::Builtin(builtin) if !builtin.supports(dtype) => {
                Err(CollectiveError::Reduce(OpError::Unsupported(builtin, dtype)))
            }
            _ => Ok(()),
        }
    }

    fn allgather(&self, send: &[u8], recv: &mut [u8], block: usize) -> Result<(), CollectiveError> {
        if send.len() != block || recv.len() != block * self.size() {
            return Err(CollectiveError::BadBuffers);
        }
        let area = self.area();
        for (call, range) in self.calls_for(block, CELL_BYTES) {
            self.contribute(&area, call, &send[range.clone()])?;
            self.wait_all(&area, call);
            for member in 0..self.size() {
                let out = &mut recv[member * block + range.start..member * block + range.end];
                if member == self.me {
                    out.copy_from_slice(&send[range.clone()]);
                } else {
                    Self::read(&area, member, call, 0, out)?;
                }
            }
        }
        Ok(())
    }

    /// Each area call carries the same piece of every block: a member's cell holds its
    /// pieces for member 0, 1, … in order, and member `j` reads the `j`-th.
    fn alltoall(&self, send: &[u8], recv: &mut [u8], block: usize) -> Result<(), CollectiveError> {
        let n = self.size();
        if send.len() != block * n || recv.len() != block * n {
            return Err(CollectiveError::BadBuffers);
        }
        let area = self.area();
        let mut cell = [0u8; CELL_BYTES];
        for (call, range) in self.calls_for(block, CELL_BYTES / n) {
            let width = range.len();
            for to in 0..n {
                cell[to * width..(to + 1) * width]
                    .copy_from_slice(&send[to * block + range.start..to * block + range.end]);
            }
            self.contribute(&area, call, &cell[..n * width])?;
            self.wait_all(&area, call);
            for from in 0..n {
                let at = from * block + range.start..from * block + range.end;
                if from == self.me {
                    recv[at.clone()]
                        .copy_from_slice(&send[self.me * block + range.start..][..width]);
                } else {
                    Self::read(&area, from, call, self.me * width, &mut recv[at])?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_every_byte_once() {
        for (len, step) in [(0, 8), (1, 8), (8, 8), (9, 8), (4096 * 16, 4096), (70_000, 4096)] {
            let calls = pieces(len, step);
            assert!(calls >= 1);
            let covered: usize = (0..calls).map(|i| piece(i, step, len).len()).sum();
            assert_eq!(covered, len, "{len} in pieces of {step}");
            assert_eq!(piece(calls - 1, step, len).end, len);
        }
    }
}
