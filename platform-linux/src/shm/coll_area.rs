//! A communicator's collective area in the job's shared region: a header, then one slot per
//! member holding [`depth`] cells, each a call word followed by up to [`CELL_BYTES`] of
//! data (a small contribution shares the call word's cache line, so a reader fetches both
//! in one transfer), then, in jobs of up to 16 ranks, [`STAGING_BUFFERS`] staging buffers
//! per member of [`staging_bytes`] each, which long reductions fill whole and read in place.
//!
//! The protocol, restated in `coll_area_loom.rs`: in its call number `t` (1, 2, …, the same
//! on every member) a member may write the data of its cell `t % depth`, then publishes the
//! call by storing `t` in that cell's call word (release). A reader of the cell first sees
//! the word reach `t` (acquire). A member publishes `t + 1` only after it has read
//! everything it reads in call `t`, so a writer may reuse cell `t % depth` in call `t`
//! once every other member has published call `t + 1 - depth`: then nobody still reads
//! what it wrote there in call `t - depth`. [`CollArea::publish`] and [`CollArea::read`]
//! check their side of this before they touch a cell, so a caller that gets the numbering
//! wrong gets `false`, never a torn cell.

use std::ops::Range;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU32, AtomicU64};

use super::region::Region;

/// Cells per member in a job of `job_size` ranks: a writer that does not wait for readers (a
/// broadcast's root) may run this many calls minus one ahead of the slowest of them, and a
/// long message moves in that many pieces before its writer waits. With more ranks than
/// cores the run-ahead is what saves context switches: 16 cells rather than 4 made bcast
/// at 8 ranks on 2 cores 3–4 times faster (8 B); 64 of 1 KiB rather than 16 of 4 KiB about
/// twice as fast again (8 B: 0.36 → 0.19 µs at 4 ranks, 0.43 → 0.22 µs at 8); 256 rather
/// than 64, so that a root runs several 64 KiB messages ahead instead of less than one,
/// made a 64 KiB bcast 2 to 2.5 times as fast (22 → 8.5–10 µs at 4 ranks, 27 → 13–15 µs
/// at 8; 8 B at 8 ranks: 0.19 → 0.17 µs), where 128 gained nothing; a barrier at 8 ranks,
/// walking four times the pages, lost about 5 % (2.93 → 3.14 µs). Areas of more than 16
/// members keep 64 cells, so that no area passes [`AREA_BYTES_MAX`] (a job's region holds
/// its ranks times [`areas_per_rank`] of them: sparse, but address space all the same).
pub const fn depth(job_size: usize) -> u64 {
    if members_max(job_size) <= 16 {
        256
    } else {
        64
    }
}
const _: () = assert!(depth(1).is_power_of_two() && depth(MAX_MEMBERS).is_power_of_two());

/// Data bytes of one cell: the largest contribution a member makes in one call. Long
/// messages between ranks with a core each take single-copy reads instead (see
/// `runtime::shm_coll`), so cells serve small calls and oversubscribed pipelines.
pub const CELL_BYTES: usize = 1024;
/// The most members an area serves; larger communicators use the schedules.
pub const MAX_MEMBERS: usize = 64;

const LINE: usize = 64;
const PAGE: usize = 4096;
/// Header: members that have left the communicator (u32) and the last call any of them
/// made (u64) on one line, the number of members sleeping in a wait (u32) on the next, then
/// each member's CPU (u32).
const HEADER_BYTES: usize = 2 * LINE + (MAX_MEMBERS * 4).next_multiple_of(LINE);
/// Offset of the last-call word in the header.
const LAST_CALL: usize = 8;
/// A cell: its call word (u64), then its data.
const CALL_WORD: usize = 8;
const CELL_STRIDE: usize = (CALL_WORD + CELL_BYTES).next_multiple_of(LINE);

/// Bytes of one member's cells.
fn slot_bytes(job_size: usize) -> usize {
    depth(job_size) as usize * CELL_STRIDE
}

/// Members an area of a job of `job_size` ranks has room for.
pub const fn members_max(job_size: usize) -> usize {
    if job_size < MAX_MEMBERS {
        job_size
    } else {
        MAX_MEMBERS
    }
}

/// Bytes of each of a member's staging buffers in a job of `job_size` ranks: a long
/// reduction's contribution goes there whole, in one copy, where in cells each piece would
/// cost an area call of every member (see `runtime::shm_coll::staged`). Jobs of more than
/// 16 ranks have none, as they have fewer cells: their areas stay no larger.
pub const fn staging_bytes(job_size: usize) -> usize {
    if members_max(job_size) <= 16 {
        64 * 1024
    } else {
        0
    }
}

/// Staging buffers per member: a member fills one while the others may still read the
/// others, so that consecutive calls need no more synchronisation than their own, and a
/// bcast root runs as many buffer-fulls ahead of its readers as the cells let it run
/// 64 KiB messages (8 ranks on 2 CPUs, bcast 64 KiB: 13.2–15.4 µs in cells, 14.1 with two
/// buffers, 9.6–10.2 with four).
pub const STAGING_BUFFERS: usize = 4;

/// The most bytes an area of any job takes (16 members with deep cells and staging buffers).
pub const AREA_BYTES_MAX: usize = 9 << 20;

/// Bytes of one area in a job of `job_size` ranks.
pub fn area_bytes(job_size: usize) -> usize {
    HEADER_BYTES
        + members_max(job_size) * (slot_bytes(job_size) + STAGING_BUFFERS * staging_bytes(job_size))
}

/// Areas each rank owns: many for small jobs (every live communicator led by one rank wants
/// one), fewer for large ones (the region grows with ranks times areas; it is sparse, but
/// address space is not free).
pub fn areas_per_rank(job_size: usize) -> usize {
    (1024 / job_size.max(1)).clamp(4, 64)
}

/// One area of the region, as one member sees it.
#[derive(Clone, Copy)]
pub struct CollArea<'r> {
    region: &'r Region,
    base: usize,
    members: usize,
    /// Cells per member ([`depth`] of the job).
    depth: u64,
    /// Members the area has slots for ([`members_max`] of the job).
    slots: usize,
    /// Bytes of each staging buffer ([`staging_bytes`] of the job).
    staging: usize,
}

impl<'r> CollArea<'r> {
    /// The area at `base` (from [`crate::shm::Layout::coll_area`]) for a communicator of
    /// `members` ranks, or `None` when it has more than the area has slots for in a job of
    /// `job_size` ranks.
    pub fn new(region: &'r Region, base: usize, members: usize, job_size: usize) -> Option<Self> {
        (members <= members_max(job_size)).then_some(CollArea {
            region,
            base,
            members,
            depth: depth(job_size),
            slots: members_max(job_size),
            staging: staging_bytes(job_size),
        })
    }

    /// Members that have left the communicator since the area was handed out.
    pub fn left(&self) -> &'r AtomicU32 {
        self.region.atomic_u32(self.base)
    }

    /// Records, as a member leaves, the last call it made, so that [`CollArea::reset`]
    /// clears only the cells the communicator used. Call before adding to [`Self::left`].
    pub fn note_last_call(&self, call: u64) {
        self.region.atomic_u64(self.base + LAST_CALL).fetch_max(call, Relaxed);
    }

    /// Members sleeping in a wait on this area (so publishers know to ring doorbells).
    pub fn sleepers(&self) -> &'r AtomicU32 {
        self.region.atomic_u32(self.base + LINE)
    }

    /// Members of the communicator.
    pub fn members(&self) -> usize {
        self.members
    }

    /// The CPU `member` last waited on, plus one (0: not known yet).
    pub fn cpu(&self, member: usize) -> &'r AtomicU32 {
        assert!(member < self.members, "member {member} of {}", self.members);
        self.region.atomic_u32(self.base + 2 * LINE + 4 * member)
    }

    fn cell(&self, member: usize, call: u64) -> usize {
        assert!(member < self.members, "member {member} of {}", self.members);
        let slot = member * self.slot_bytes();
        // A mask, not `%`: the depth is a power of two, and a division costs more than the
        // rest of a small call's cell lookup.
        self.base + HEADER_BYTES + slot + (call & (self.depth - 1)) as usize * CELL_STRIDE
    }

    /// Bytes of one member's cells.
    fn slot_bytes(&self) -> usize {
        self.depth as usize * CELL_STRIDE
    }

    /// The last call `member` published in the cell that call `call` uses.
    fn call_word(&self, member: usize, call: u64) -> &'r AtomicU64 {
        self.region.atomic_u64(self.cell(member, call))
    }

    /// Whether `me` may write its cell of call `call`: every other member has published
    /// `call + 1 - depth`. `free_through` is `me`'s memory of a call every other member has
    /// published (it only grows, and only from what this check read).
    pub fn cell_free(&self, me: usize, call: u64, free_through: &AtomicU64) -> bool {
        let needed = (call + 1).saturating_sub(self.depth);
        if needed <= free_through.load(Acquire) {
            return true;
        }
        // Each member published every call up to what its cell for a call holds. The cell
        // of the call before ours first: a member that published it frees the next
        // `depth - 1` calls at once, where the cell for `needed` alone frees about one (a
        // root running ahead would otherwise read every reader's line again each call; bcast
        // 8 B, 8 ranks on 2 cores, interleaved runs: 0.183 → 0.166 µs).
        let latest = call.saturating_sub(1).max(needed);
        let mut through = u64::MAX;
        for m in (0..self.members).filter(|&m| m != me) {
            let word = self.call_word(m, latest).load(Acquire);
            let reached =
                if word >= latest { word } else { self.call_word(m, needed).load(Acquire) };
            through = through.min(reached);
            if through < needed {
                return false;
            }
        }
        free_through.fetch_max(through.min(call), Release);
        true
    }

    /// Writes `data` (at most [`CELL_BYTES`]) into `me`'s cell of call `call` and publishes
    /// the call; `false` (and nothing written) when the cell is not free yet or `data` does
    /// not fit.
    pub fn publish(&self, me: usize, call: u64, data: &[u8], free_through: &AtomicU64) -> bool {
        if data.len() > CELL_BYTES || !self.cell_free(me, call, free_through) {
            return false;
        }
        let cell = self.cell(me, call);
        // SAFETY: the cell is `me`'s, and every reader of its previous contents has
        // published a later call (checked just above), after which it reads it no more;
        // readers of the new contents wait for the release store below.
        unsafe { self.region.copy_in(cell + CALL_WORD, data) };
        self.region.atomic_u64(cell).store(call, Release);
        true
    }

    /// Publishes call `call` without data (a barrier's arrival, a reader's "done").
    pub fn announce(&self, me: usize, call: u64) {
        self.call_word(me, call).store(call, Release);
    }

    /// Whether `member` has published call `call` (or a later one).
    pub fn published(&self, member: usize, call: u64) -> bool {
        self.call_word(member, call).load(Acquire) >= call
    }

    /// Copies `out.len()` bytes from offset `at` of `member`'s cell of call `call`; `false`
    /// (and nothing read) when `member` has not published the call or the range is outside
    /// the cell.
    pub fn read(&self, member: usize, call: u64, at: usize, out: &mut [u8]) -> bool {
        if at.checked_add(out.len()).map_or(true, |end| end > CELL_BYTES)
            || !self.published(member, call)
        {
            return false;
        }
        // SAFETY: `member` published this call (acquire above) and writes the cell again
        // only after this process publishes a later call, which it does after this read.
        unsafe { self.region.copy_out(self.cell(member, call) + CALL_WORD + at, out) };
        true
    }

    /// Bytes of each staging buffer; 0 when the area has none.
    pub fn staging_bytes(&self) -> usize {
        self.staging
    }

    /// Offset in the region of byte `at` of `member`'s staging buffer `buffer`.
    fn staging_at(&self, member: usize, buffer: usize, at: usize) -> usize {
        assert!(member < self.members, "member {member} of {}", self.members);
        assert!(buffer < STAGING_BUFFERS, "staging buffer {buffer}");
        let start = self.base + HEADER_BYTES + self.slots * self.slot_bytes();
        start + (member * STAGING_BUFFERS + buffer) * self.staging + at
    }

    /// Copies `data` into `me`'s staging buffer `buffer` at byte `at`.
    ///
    /// # Safety
    /// Nobody reads these bytes during the copy: the caller's protocol has every reader of
    /// their previous contents done with them, and readers of the new ones wait for a call
    /// that `me` publishes after this.
    pub unsafe fn stage(&self, me: usize, buffer: usize, at: usize, data: &[u8]) {
        assert!(at.checked_add(data.len()).is_some_and(|end| end <= self.staging));
        // SAFETY: in `me`'s own buffer, inside it (checked above); exclusive per the contract.
        unsafe { self.region.copy_in(self.staging_at(me, buffer, at), data) };
    }

    /// Bytes `range` of `member`'s staging buffer `buffer`, read in place.
    ///
    /// # Safety
    /// `member` does not write these bytes while the slice lives: it published a call after
    /// writing them (and the caller saw it), and the caller's protocol has it wait for this
    /// reader before it writes them again.
    pub unsafe fn staged(&self, member: usize, buffer: usize, range: Range<usize>) -> &'r [u8] {
        assert!(range.start <= range.end && range.end <= self.staging);
        // SAFETY: inside `member`'s buffer (checked above); nobody writes it, per the contract.
        unsafe { self.region.bytes(self.staging_at(member, buffer, range.start), range.len()) }
    }

    /// Maps every page of the area into member `me` now, writable where it writes (the
    /// header and its own cells), so that its first calls do not each take page faults: a
    /// call walks a new cell, often on a new page, until it has used all of them. A page
    /// mapped by a read alone still faults on the first store to it, which cost a bcast of
    /// 8 B at 8 ranks on 2 CPUs its first few hundred calls.
    pub fn prefault(&self, me: usize) {
        let own = self.cell(me, 0) - self.base;
        let (start, len) = (self.base, HEADER_BYTES + self.members * self.slot_bytes());
        let staging = self.staging_at(0, 0, 0);
        let staging_len = self.members * STAGING_BUFFERS * self.staging;
        let populated = self.region.populate(start, len, false).and_then(|()| {
            self.region.populate(staging, staging_len, false)?;
            self.region.populate(start, HEADER_BYTES, true)?;
            self.region.populate(start + own, self.slot_bytes(), true)?;
            self.region.populate(self.staging_at(me, 0, 0), STAGING_BUFFERS * self.staging, true)
        });
        if populated.is_err() {
            // An older kernel: read one word a page (the last one too, as the area need not
            // start on a page boundary); stores still fault once a page.
            let end = start + len;
            for word in (start..end).step_by(PAGE).chain([end - 8]) {
                self.region.atomic_u64(word).load(Relaxed);
            }
        }
    }

    /// Makes the area new for its next communicator: nobody left, every member at call 0.
    /// Only its owner calls this, while no member of an earlier communicator uses it (all
    /// of them left, the last call they made noted). It clears only the cells the earlier
    /// communicator used: a fresh cell's pages stay untouched, so a new communicator does
    /// not pay page faults for cells nobody uses.
    pub fn reset(&self) {
        let last_call = self.region.atomic_u64(self.base + LAST_CALL);
        let used = last_call.load(Acquire).min(self.depth);
        for member in 0..self.members {
            for call in 1..=used {
                self.call_word(member, call).store(0, Relaxed);
            }
            self.cpu(member).store(0, Relaxed);
        }
        last_call.store(0, Relaxed);
        self.sleepers().store(0, Relaxed);
        self.left().store(0, Release);
    }
}

/// The CPU this thread runs on now, if the kernel says.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu takes no arguments and only reads per-thread kernel state.
    u32::try_from(unsafe { libc::sched_getcpu() }).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::Layout;

    #[test]
    fn a_cell_is_reused_only_after_every_reader_moved_on() {
        let layout = Layout::new(3).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let area = CollArea::new(&region, layout.coll_area(2, 1), 3, 3).unwrap();
        area.reset();
        let cells = depth(3);
        let free = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
        assert!(area.publish(0, 1, b"one", &free[0]));
        let mut out = [0u8; 3];
        assert!(area.read(0, 1, 0, &mut out));
        assert_eq!(&out, b"one");
        assert!(!area.read(1, 1, 0, &mut out), "member 1 has not published call 1");
        // Member 0 runs ahead while 1 and 2 stay at call 0: calls up to the depth minus one fit.
        for call in 2..cells {
            assert!(area.publish(0, call, b"ahead", &free[0]));
        }
        assert!(!area.publish(0, cells, b"full", &free[0]), "cell of call 0 + depth still read");
        area.announce(1, 1);
        assert!(!area.publish(0, cells, b"full", &free[0]), "member 2 is still at call 0");
        area.announce(2, 1);
        assert!(area.publish(0, cells, b"reused", &free[0]));
        assert!(area.read(0, cells, 0, &mut out[..2]));
        assert_eq!(&out[..2], b"re");
        assert!(!area.publish(1, 2, &[0u8; CELL_BYTES + 1], &free[1]), "too long for a cell");
        assert!(!area.read(0, 1, CELL_BYTES - 1, &mut out), "outside the cell");
    }

    #[test]
    fn data_reads_back_whole_and_in_pieces() {
        let layout = Layout::new(2).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let area = CollArea::new(&region, layout.coll_area(0, 0), 2, 2).unwrap();
        area.reset();
        let data: Vec<u8> = (0..CELL_BYTES).map(|i| (i * 7 + 3) as u8).collect();
        // Whole cells, and contributions that fill the call word's line or run one byte past.
        let in_line = LINE - CALL_WORD;
        for (call, len) in [(1, CELL_BYTES), (2, in_line), (3, in_line + 1), (4, 5)] {
            assert!(area.publish(1, call, &data[..len], &AtomicU64::new(0)));
            for (at, n) in [(0, len), (0, len.min(3)), (len / 2, len - len / 2), (len - 1, 1)] {
                let mut out = vec![0u8; n];
                assert!(area.read(1, call, at, &mut out), "call {call}: {at}+{n}");
                assert_eq!(out, &data[at..at + n], "call {call}: {at}+{n}");
            }
        }
        // The cells of one member do not overlap each other or the next member's.
        assert!(area.publish(0, 1, &[0xAA; CELL_BYTES], &AtomicU64::new(0)));
        let mut out = vec![0u8; CELL_BYTES];
        assert!(area.read(1, 1, 0, &mut out));
        assert_eq!(out, data);
    }

    #[test]
    fn reset_clears_every_call_the_last_communicator_made() {
        let layout = Layout::new(2).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let area = CollArea::new(&region, layout.coll_area(1, 0), 2, 2).unwrap();
        let free = [AtomicU64::new(0), AtomicU64::new(0)];
        let cells = depth(2);
        let calls = cells + 3;
        for call in 1..=calls {
            for (member, free) in free.iter().enumerate() {
                assert!(area.publish(member, call, b"x", free));
            }
        }
        for member in 0..2 {
            area.note_last_call(calls);
            area.left().fetch_add(1, Release);
            assert!(area.published(member, calls));
        }
        area.reset();
        assert_eq!(area.left().load(Relaxed), 0);
        for call in 1..=cells {
            assert!(!area.published(0, call) && !area.published(1, call), "call {call} left");
        }
        let fresh = [AtomicU64::new(0), AtomicU64::new(0)];
        assert!(area.publish(1, 1, b"y", &fresh[1]), "the next communicator starts at call 1");
    }

    #[test]
    fn areas_fit_the_region_and_refuse_too_many_members() {
        let layout = Layout::new(8).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let last = layout.coll_areas_per_rank() - 1;
        let area = CollArea::new(&region, layout.coll_area(7, last), 8, 8).unwrap();
        area.reset();
        assert!(area.publish(7, 1, &[1u8; CELL_BYTES], &AtomicU64::new(0)));
        assert!(CollArea::new(&region, layout.coll_area(0, 0), 9, 8).is_none());
        assert!(areas_per_rank(8) >= 32 && areas_per_rank(256) >= 4);
    }

    #[test]
    fn small_jobs_get_deep_slots_and_staging_and_no_area_passes_the_bound() {
        assert_eq!(depth(8), 256);
        assert_eq!(depth(16), 256);
        assert_eq!(depth(17), 64);
        assert_eq!(depth(1000), 64);
        assert_eq!(staging_bytes(16), 64 * 1024);
        assert_eq!(staging_bytes(17), 0);
        for job in 1..=300 {
            assert!(area_bytes(job) <= AREA_BYTES_MAX, "job {job}: {}", area_bytes(job));
        }
    }

    #[test]
    fn staged_bytes_read_back_and_buffers_do_not_overlap() {
        let layout = Layout::new(3).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let area = CollArea::new(&region, layout.coll_area(1, 2), 3, 3).unwrap();
        let len = area.staging_bytes();
        assert_eq!(len, staging_bytes(3));
        let pattern = |member: usize, buffer: usize| -> Vec<u8> {
            (0..len).map(|i| (i * 31 + member * 7 + buffer * 3) as u8).collect()
        };
        // SAFETY: one thread; nothing reads a buffer while it is written.
        unsafe {
            for member in 0..3 {
                for buffer in 0..STAGING_BUFFERS {
                    area.stage(member, buffer, 0, &pattern(member, buffer));
                }
            }
            for member in 0..3 {
                for buffer in 0..STAGING_BUFFERS {
                    let expected = pattern(member, buffer);
                    assert_eq!(area.staged(member, buffer, 0..len), &expected[..]);
                    assert_eq!(area.staged(member, buffer, 100..164), &expected[100..164]);
                }
            }
        }
        // The last member's last buffer ends where the next area starts.
        assert_eq!(area.staging_at(2, STAGING_BUFFERS - 1, len), layout.coll_area(1, 3));
        // Cells and staging buffers do not overlap either.
        assert!(area.publish(2, 1, &[0x55; CELL_BYTES], &AtomicU64::new(0)));
        // SAFETY: as above.
        assert_eq!(unsafe { area.staged(0, 0, 0..len) }, &pattern(0, 0)[..]);
    }
}
