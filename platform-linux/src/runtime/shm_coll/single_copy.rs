//! Long messages over the area in one copy: members publish the addresses of their buffers
//! in the area, and the others read the bytes straight out of them with `process_vm_readv`
//! (see [`crate::shm::cma`]) instead of a copy into the area and a copy out of it.
//!
//! A buffer stays readable until its owner returns, so every such call ends with a "done"
//! area call that its owner waits for. Measured at 2 processes with a core each, 64 KiB
//! (`bench coll-procs`, medians, area → single copy): bcast 6.6 → 2.7 µs, alltoall 30.5 →
//! 4.0 µs (through messages before, as its blocks do not fit a cell), allreduce 16.7 → 4.8
//! µs; one `process_vm_readv` of 64 KiB alone takes about 1.6 µs here. A bcast root has
//! to wait for its readers, which costs more than the area when ranks share cores (see
//! `ops.rs`).

use std::ops::Range;
use std::sync::PoisonError;

use commcore::coll::{reduce, CollOp, Datatype, Op};

use super::wait::{wait_until, Awaited};
use super::ShmColl;
use crate::runtime::error::{CollectiveError, P2pError};
use crate::runtime::SingleCopy;
use crate::shm::{cma, CollArea};

/// `COMMCORE_SHM_SINGLE_COPY_FROM`: bytes per member (a bcast's message, an alltoall block, an allreduce
/// vector) from which `shm` moves them by single-copy reads when the kernel allows them,
/// for every operation; unset, each operation has its own (see
/// [`ShmColl::single_copy_from`]), and with ranks sharing CPUs an allreduce above a cell
/// goes through the staging buffers instead (see `staged.rs`).
pub(super) fn single_copy_from_env() -> Option<usize> {
    crate::runtime::settings::current().shm_single_copy_from
}

/// Members up to which each reduces the whole vector itself (no allgather): with two, the
/// gather's read of the other's freshly written half cost more than folding it here
/// (64 KiB, interleaved runs: 12.1 µs in segments against 6.2 µs whole).
const WHOLE_UP_TO: usize = 2;

/// One published buffer address per member and call.
const ADDRESS_BYTES: usize = 8;

/// A single-copy transfer to or from world rank `peer` that the kernel refused.
fn copy_failed(peer: usize, error: std::io::Error) -> CollectiveError {
    CollectiveError::P2p(P2pError::SingleCopyFailed {
        peer,
        errno: error.raw_os_error().unwrap_or(0),
    })
}

/// The elements of segment `i` of `count` elements cut into `parts` near-equal segments,
/// as a byte range for elements of `unit` bytes.
pub(super) fn segment(i: usize, parts: usize, count: usize, unit: usize) -> Range<usize> {
    let per = count.div_ceil(parts.max(1));
    (i * per).min(count) * unit..((i + 1) * per).min(count) * unit
}

impl ShmColl {
    /// Whether a call of `op` moving `bytes` per member goes through single-copy reads; the
    /// same on every member (the start-up probe agrees on it job-wide).
    pub(super) fn single_copy_for(&self, op: CollOp, bytes: usize) -> bool {
        bytes >= self.single_copy_from(op)
            && matches!(self.runtime.single_copy, SingleCopy::On { .. })
    }

    /// Bytes per member from which `op` reads in place: the crossovers measured against the
    /// area and the schedules (`bench coll-procs` at 1–12 KiB, 2 and 4 ranks on 2 CPUs):
    /// - with a CPU per rank, bcast and allreduce from 3 KiB (2 KiB: 0.5 against 0.72 µs,
    ///   3 KiB: 0.96 against 0.76 µs bcast) and alltoall from 6 KiB (a tie there; 8 KiB
    ///   blocks take 5.5 µs through the schedules against 1.6 µs read in place);
    /// - with ranks sharing CPUs, alltoall as soon as the area does not take its blocks
    ///   (see [`ShmColl::alltoall_cell_max`]; the schedules lose to both: 1 KiB blocks,
    ///   13.7 against 7.4 µs at 4 ranks, 65 against 32 µs at 8), the others from 16 KiB
    ///   (at 4 ranks the area still wins bcast at 12 KiB, 3.9 against 4.7 µs, and ties
    ///   allreduce at 8 KiB).
    fn single_copy_from(&self, op: CollOp) -> usize {
        if let Some(from) = single_copy_from_env() {
            return from;
        }
        match (op, self.runtime.oversubscribed) {
            (CollOp::Alltoall, true) => self.alltoall_cell_max() + 1,
            (CollOp::Alltoall, false) => 6 * 1024,
            (_, true) => 16 * 1024,
            (_, false) => 3 * 1024,
        }
    }

    /// Copies `out.len()` bytes at `address` in `member`'s process into `out`.
    fn read_remote(
        &self,
        member: usize,
        address: u64,
        out: &mut [u8],
    ) -> Result<(), CollectiveError> {
        if out.is_empty() {
            return Ok(());
        }
        let peer = self.world[member];
        cma::read(self.runtime.fabric.pids[peer], address, out).map_err(|e| copy_failed(peer, e))
    }

    /// Copies `data` to `address` in `member`'s process.
    fn write_remote(
        &self,
        member: usize,
        data: &[u8],
        address: u64,
    ) -> Result<(), CollectiveError> {
        if data.is_empty() {
            return Ok(());
        }
        let peer = self.world[member];
        cma::write(self.runtime.fabric.pids[peer], data.as_ptr() as u64, address, data.len())
            .map_err(|e| copy_failed(peer, e))
    }

    /// The `index`-th address `member` published in area call `call`.
    fn address(
        area: &CollArea<'_>,
        member: usize,
        call: u64,
        index: usize,
    ) -> Result<u64, CollectiveError> {
        let mut word = [0u8; ADDRESS_BYTES];
        Self::read(area, member, call, index * ADDRESS_BYTES, &mut word)?;
        Ok(u64::from_ne_bytes(word))
    }

    /// Publishes area call `call` as done and waits until every member has: after that
    /// nobody reads this member's buffers any more.
    pub(super) fn finish(&self, area: &CollArea<'_>, call: u64) {
        area.announce(self.me, call);
        self.wake(area);
        self.wait_all(area, call);
    }

    /// Bcast: the root and the readers publish their buffers. Each reader reads the head of
    /// the root's buffer while the root writes the tail into it, then waits for the root's
    /// "done", which says whether the tail arrived (else it reads the tail itself), and
    /// reports its own done. The tail is a share of one in `size` (so the root's writes to
    /// all readers take as long as one reader's read) for messages above the runtime's
    /// split limit (`COMMCORE_SPLIT_COPY_ABOVE`, 128 KiB by default, as for point-to-point),
    /// else empty. At 2 processes, 64 KiB, interleaved runs, split against read whole:
    /// 1.38–1.42 against 1.90–2.11 µs when the two vCPUs pass cache lines fast, but
    /// 3.2–4.3 against 2.93–3.12 µs when they pass them slowly (writing into the reader's
    /// process pins its pages from the other core).
    pub(super) fn bcast_single_copy(
        &self,
        buf: &mut [u8],
        root: usize,
    ) -> Result<(), CollectiveError> {
        let area = self.area();
        let publish = self.next_calls(2);
        let done = publish + 1;
        let address = buf.as_ptr() as u64;
        let split = self.runtime.split_copy_above.is_some_and(|limit| buf.len() > limit);
        let tail = if split { buf.len() - buf.len() / self.size() } else { buf.len() };
        if self.me == root {
            self.contribute(&area, publish, &address.to_ne_bytes())?;
            let mut written = true;
            for reader in (0..self.size()).filter(|&m| split && m != root) {
                wait_until(&self.runtime, &area, self.me, Awaited::Anyone, || {
                    area.published(reader, publish)
                });
                written &= Self::address(&area, reader, publish, 0)
                    .and_then(|to| self.write_remote(reader, &buf[tail..], to + tail as u64))
                    .is_ok();
            }
            // Each reader waits for this before it returns: its tail is in place, or it
            // reads the tail itself.
            self.contribute(&area, done, &[u8::from(written)])?;
            self.wait_all(&area, done);
            return Ok(());
        }
        self.contribute(&area, publish, &address.to_ne_bytes())?;
        wait_until(&self.runtime, &area, self.me, Awaited::Anyone, || {
            area.published(root, publish)
        });
        let from = Self::address(&area, root, publish, 0);
        let mut result = from.and_then(|from| self.read_remote(root, from, &mut buf[..tail]));
        wait_until(&self.runtime, &area, self.me, Awaited::Anyone, || area.published(root, done));
        let mut written = [0u8];
        // On a protocol error too the tail is ours to read, and the done below still goes out.
        let _ = Self::read(&area, root, done, 0, &mut written);
        if written[0] == 0 {
            result = result.and(
                from.and_then(|from| self.read_remote(root, from + tail as u64, &mut buf[tail..])),
            );
        }
        // Done even when a read failed: the root must not wait for us forever.
        area.announce(self.me, done);
        self.wake(&area);
        result
    }

    /// Alltoall: every member publishes its send buffer and reads its block from each
    /// other member's.
    pub(super) fn alltoall_single_copy(
        &self,
        send: &[u8],
        recv: &mut [u8],
        block: usize,
    ) -> Result<(), CollectiveError> {
        let n = self.size();
        if send.len() != block * n || recv.len() != block * n {
            return Err(CollectiveError::BadBuffers);
        }
        let area = self.area();
        let publish = self.next_calls(2);
        self.contribute(&area, publish, &(send.as_ptr() as u64).to_ne_bytes())?;
        self.wait_all(&area, publish);
        let mut result = Ok(());
        // Each starts with the member after it, so that no two pin the same process's
        // pages (under its page-table lock) at once.
        for from in (1..=n).map(|k| (self.me + k) % n) {
            let out = &mut recv[from * block..(from + 1) * block];
            if from == self.me {
                out.copy_from_slice(&send[self.me * block..(self.me + 1) * block]);
                continue;
            }
            let read = Self::address(&area, from, publish, 0)
                .and_then(|base| self.read_remote(from, base + (self.me * block) as u64, out));
            result = result.and(read);
        }
        self.finish(&area, publish + 1);
        result
    }

    /// Allreduce: every member publishes its send and receive buffers; member `i` reduces
    /// segment `i` of every member's vector in rank order into its own receive buffer, then
    /// everyone reads the other segments from their owners' receive buffers.
    pub(super) fn allreduce_single_copy(
        &self,
        send: &[u8],
        recv: &mut [u8],
        dtype: Datatype,
        op: &Op,
    ) -> Result<(), CollectiveError> {
        let area = self.area();
        let (n, unit) = (self.size(), dtype.size().max(1));
        let count = send.len() / unit;
        let publish = self.next_calls(3);
        let mut addresses = [0u8; 2 * ADDRESS_BYTES];
        addresses[..ADDRESS_BYTES].copy_from_slice(&(send.as_ptr() as u64).to_ne_bytes());
        addresses[ADDRESS_BYTES..].copy_from_slice(&(recv.as_ptr() as u64).to_ne_bytes());
        self.contribute(&area, publish, &addresses)?;
        self.wait_all(&area, publish);
        let mine = if n <= WHOLE_UP_TO { 0..send.len() } else { segment(self.me, n, count, unit) };
        let reduced =
            self.reduce_segment(&area, publish, send, &mut recv[mine.clone()], mine, dtype, op);
        self.finish(&area, publish + 1);
        let mut result = reduced;
        if result.is_ok() && n > WHOLE_UP_TO {
            // Rotated as in alltoall: the readers of one owner's buffer do not queue on
            // its page-table lock.
            for member in (1..n).map(|k| (self.me + k) % n) {
                let theirs = segment(member, n, count, unit);
                let read = Self::address(&area, member, publish, 1).and_then(|base| {
                    self.read_remote(member, base + theirs.start as u64, &mut recv[theirs])
                });
                result = result.and(read);
            }
        }
        self.finish(&area, publish + 2);
        result
    }

    /// Folds bytes `range` of every member's send buffer (published in area call `call`)
    /// in rank order into `out`.
    #[allow(clippy::too_many_arguments)]
    fn reduce_segment(
        &self,
        area: &CollArea<'_>,
        call: u64,
        send: &[u8],
        out: &mut [u8],
        range: Range<usize>,
        dtype: Datatype,
        op: &Op,
    ) -> Result<(), CollectiveError> {
        if out.is_empty() {
            return Ok(());
        }
        let mine = &send[range.clone()];
        let fetch = |member: usize, into: &mut [u8]| -> Result<(), CollectiveError> {
            let base = Self::address(area, member, call, 0)?;
            self.read_remote(member, base + range.start as u64, into)
        };
        let fold = |src: &[u8], out: &mut [u8], src_left: bool| {
            reduce(op, dtype, src, out, src_left).map_err(CollectiveError::Reduce)
        };
        // Members fold in rank order, or for a commutative operation starting after this
        // one, so that they do not all pin the same process's pages at once.
        let n = self.size();
        let member_at = |k: usize| if op.is_commutative() { (self.me + 1 + k) % n } else { k };
        // The first remote contribution lands in `out` itself; when this member comes first
        // (rank order, member 0), the next one does, with this one's folded in from the left.
        let mut next = 1;
        if member_at(0) == self.me {
            fetch(member_at(1), out)?;
            fold(mine, out, true)?;
            next = 2;
        } else {
            fetch(member_at(0), out)?;
        }
        let mut scratch = self.scratch.lock().unwrap_or_else(PoisonError::into_inner);
        for member in (next..n).map(member_at) {
            if member == self.me {
                fold(mine, out, false)?;
            } else {
                scratch.resize(out.len(), 0);
                fetch(member, &mut scratch)?;
                fold(&scratch, out, false)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_every_element_once_in_order() {
        for (count, parts) in [(0, 3), (1, 4), (7, 2), (8192, 2), (8192, 3), (10, 8)] {
            let mut next = 0;
            for i in 0..parts {
                let bytes = segment(i, parts, count, 8);
                assert_eq!(bytes.start, next, "{count} in {parts}");
                assert_eq!(bytes.len() % 8, 0);
                next = bytes.end;
            }
            assert_eq!(next, count * 8, "{count} in {parts}");
        }
    }
}
