//! A bridge: the shared region between two process groups on one host (a parent group
//! and the children it spawned, or two jobs that connected), so that traffic between the
//! groups uses the same rings, doorbells and single-copy reads as traffic within a job.
//!
//! Group A's processes hold slots `0..a`, group B's slots `a..a + b`. Only pairs across
//! the groups talk here (within a group, processes use their own job's region), so the
//! region holds `2 a b` rings: A to B, then B to A. The memory file is sparse: rings of
//! pairs that never talk cost nothing.
//!
//! ```text
//!  header (4 KiB): magic, a, b, arrived (futex word), failed, each side's leader
//!  slots (256 B each): pid, node, state, sleeping, doorbell — as a job region's slots
//!  rings: A→B (a × b), then B→A (b × a)
//! ```
//!
//! Life of a bridge: whoever creates it (the launcher for a spawn, the accepting root for a
//! connect) initialises the header; every process maps it, writes its pid and node into its
//! slot, and counts itself in `arrived`; once `a + b` arrived, the groups talk. Whoever sees
//! a process of either group fail (the launcher, when a rank exits early or is killed)
//! stores a non-zero `failed` and rings every doorbell, so nobody waits on the bridge for
//! ever.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

use super::layout::{CELL_BYTES, MAX_RANKS, RING_DEPTH};
use super::region::Region;
use super::ring::Ring;

const HEADER_BYTES: usize = 4096;
const SLOT_BYTES: usize = 256;
const RING_CONTROL_BYTES: usize = 128;
const RING_BYTES: usize = RING_CONTROL_BYTES + RING_DEPTH * CELL_BYTES;
const MAGIC: u64 = 0x636d_6372_5f62_7267;

/// `failed` value: a process of group A failed.
pub const FAILED_A: u32 = 1;
/// `failed` value: a process of group B failed.
pub const FAILED_B: u32 = 2;
/// `failed` value: a side gave up waiting or disconnected abnormally.
pub const FAILED_ABANDONED: u32 = 3;
/// What a process of the other group that ended (finalized) while still connected leaves
/// its waiters with (a slot's state, not the bridge's `failed` word).
pub const LEFT: u32 = 4;

/// Offsets into a bridge between groups of `a` and `b` processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BridgeLayout {
    a: usize,
    b: usize,
}

impl BridgeLayout {
    /// The layout for groups of `a` and `b` processes; `None` unless both are 1 to
    /// [`MAX_RANKS`].
    pub fn new(a: usize, b: usize) -> Option<BridgeLayout> {
        let fits = |n: usize| (1..=MAX_RANKS).contains(&n);
        (fits(a) && fits(b)).then_some(BridgeLayout { a, b })
    }

    /// Processes of group A (slots `0..a`).
    pub fn a(&self) -> usize {
        self.a
    }

    /// Processes of group B (slots `a..a + b`).
    pub fn b(&self) -> usize {
        self.b
    }

    /// Slots in all.
    pub fn slots(&self) -> usize {
        self.a + self.b
    }

    /// Whether `slot` is one of group A's.
    pub fn in_a(&self, slot: usize) -> bool {
        slot < self.a
    }

    /// Total bytes of the region.
    pub fn region_bytes(&self) -> usize {
        self.rings_start() + 2 * self.a * self.b * RING_BYTES
    }

    /// Header: the magic value (u64).
    pub fn magic(&self) -> usize {
        0
    }
    /// Header: `a` (u32).
    pub fn size_a(&self) -> usize {
        8
    }
    /// Header: `b` (u32).
    pub fn size_b(&self) -> usize {
        12
    }
    /// Header: processes that took their slot (u32, futex word).
    pub fn arrived(&self) -> usize {
        16
    }
    /// Header: 0, or why the bridge is unusable ([`FAILED_A`], [`FAILED_B`],
    /// [`FAILED_ABANDONED`]) (u32).
    pub fn failed(&self) -> usize {
        20
    }
    /// Header: 1 + the slot of group A's leader (`side_a`) or group B's, 0 until it
    /// arrives (u32). The leaders agree the inter-communicator's context ids.
    pub fn leader(&self, side_a: bool) -> usize {
        if side_a {
            24
        } else {
            28
        }
    }

    fn slot(&self, slot: usize) -> usize {
        debug_assert!(slot < self.slots());
        HEADER_BYTES + slot * SLOT_BYTES
    }
    /// Slot: the process id (u32).
    pub fn pid(&self, slot: usize) -> usize {
        self.slot(slot)
    }
    /// Slot: the process's node in its own job's numbering (u32).
    pub fn node(&self, slot: usize) -> usize {
        self.slot(slot) + 4
    }
    /// Slot: 1 once the process joined, 2 once it left (disconnected) (u32).
    pub fn state(&self, slot: usize) -> usize {
        self.slot(slot) + 8
    }
    /// Slot: whether the process uses the asymmetric wake-up fence (u32: 1 yes, 2 no).
    pub fn wake_mode(&self, slot: usize) -> usize {
        self.slot(slot) + 12
    }
    /// Slot: threads of the process sleeping on this bridge's doorbell (u32).
    pub fn sleeping(&self, slot: usize) -> usize {
        self.slot(slot) + 64
    }
    /// Slot: the process's doorbell futex word in this bridge (u32).
    pub fn doorbell(&self, slot: usize) -> usize {
        self.slot(slot) + 68
    }

    fn rings_start(&self) -> usize {
        (HEADER_BYTES + self.slots() * SLOT_BYTES).next_multiple_of(4096)
    }

    /// The control block of the ring from slot `from` to slot `to`, which must be in
    /// different groups; `None` otherwise.
    pub fn ring(&self, from: usize, to: usize) -> Option<usize> {
        let (a, b) = (self.a, self.b);
        let index = match (from < a, to < a) {
            (true, false) if to < a + b => from * b + (to - a),
            (false, true) if from < a + b => a * b + (from - a) * a + to,
            _ => return None,
        };
        Some(self.rings_start() + index * RING_BYTES)
    }
}

/// A mapped bridge and its layout, read and written through the layout's offsets.
pub struct Bridge {
    /// The mapping.
    pub region: Region,
    /// Its layout.
    pub layout: BridgeLayout,
}

/// Why a region is not a usable bridge.
#[derive(Debug)]
pub enum BridgeError {
    /// The sizes are out of range.
    Size,
    /// The memory file could not be created or mapped.
    Io(std::io::Error),
    /// The region is not a bridge of the expected sizes (a wrong descriptor).
    NotABridge,
}

impl std::fmt::Display for BridgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BridgeError::Size => write!(f, "group sizes must be 1 to {MAX_RANKS}"),
            BridgeError::Io(e) => write!(f, "cannot make or map the bridge region: {e}"),
            BridgeError::NotABridge => f.write_str("the descriptor is not the expected bridge"),
        }
    }
}

impl std::error::Error for BridgeError {}

impl Bridge {
    /// Creates the region of a bridge between groups of `a` and `b` processes.
    pub fn create(a: usize, b: usize) -> Result<Bridge, BridgeError> {
        let layout = BridgeLayout::new(a, b).ok_or(BridgeError::Size)?;
        let region = Region::create(layout.region_bytes()).map_err(BridgeError::Io)?;
        region.atomic_u32(layout.size_a()).store(a as u32, Relaxed);
        region.atomic_u32(layout.size_b()).store(b as u32, Relaxed);
        region.atomic_u64(layout.magic()).store(MAGIC, Release);
        Ok(Bridge { region, layout })
    }

    /// Maps a bridge region this process owns the descriptor of, checking it is one.
    pub fn open(region: Region) -> Result<Bridge, BridgeError> {
        let word = |at: usize| region.atomic_u32(at).load(Acquire) as usize;
        if region.len() < HEADER_BYTES || region.atomic_u64(0).load(Acquire) != MAGIC {
            return Err(BridgeError::NotABridge);
        }
        let probe = BridgeLayout { a: 0, b: 0 };
        let layout = BridgeLayout::new(word(probe.size_a()), word(probe.size_b()))
            .ok_or(BridgeError::NotABridge)?;
        if region.len() < layout.region_bytes() {
            return Err(BridgeError::NotABridge);
        }
        Ok(Bridge { region, layout })
    }

    /// A word of the region.
    pub fn word(&self, offset: usize) -> &AtomicU32 {
        self.region.atomic_u32(offset)
    }

    /// The ring from slot `from` to slot `to` (in different groups).
    pub fn ring(&self, from: usize, to: usize) -> Option<Ring<'_>> {
        self.layout.ring(from, to).map(|control| Ring::at(&self.region, control))
    }

    /// Why the bridge is unusable, if it is.
    pub fn failure(&self) -> Option<u32> {
        let failed = self.word(self.layout.failed()).load(Acquire);
        (failed != 0).then_some(failed)
    }

    /// Whether the process in `slot` ended while still connected (see [`Bridge::leave`]).
    pub fn has_left(&self, slot: usize) -> bool {
        self.word(self.layout.state(slot)).load(Acquire) == super::layout::RANK_FINALIZED
    }

    /// Says that this process, in `slot`, ends without having disconnected, and wakes
    /// everyone on the bridge, so that whoever waits on it stops waiting.
    pub fn leave(&self, slot: usize) {
        self.word(self.layout.state(slot)).store(super::layout::RANK_FINALIZED, Release);
        self.wake_all();
    }

    fn wake_all(&self) {
        for slot in 0..self.layout.slots() {
            let bell = self.word(self.layout.doorbell(slot));
            bell.fetch_add(1, Release);
            super::futex::wake_all(bell);
        }
    }

    /// Marks the bridge unusable for `reason` (the first reason stays) and wakes every
    /// process sleeping on it or waiting for arrivals.
    pub fn fail(&self, reason: u32) {
        let _ = self.word(self.layout.failed()).compare_exchange(0, reason, AcqRel, Acquire);
        let arrived = self.word(self.layout.arrived());
        arrived.fetch_add(0, AcqRel);
        super::futex::wake_all(arrived);
        self.wake_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_exist_only_across_the_groups_and_do_not_overlap() {
        for (a, b) in [(1, 1), (1, 4), (3, 2), (8, 8)] {
            let layout = BridgeLayout::new(a, b).unwrap();
            let mut offsets = Vec::new();
            for from in 0..a + b {
                for to in 0..a + b {
                    let across = layout.in_a(from) != layout.in_a(to);
                    match layout.ring(from, to) {
                        Some(at) => {
                            assert!(across, "{a}+{b}: ring {from}->{to} within a group");
                            assert!(at >= layout.doorbell(a + b - 1) + 4);
                            offsets.push(at);
                        }
                        None => assert!(!across, "{a}+{b}: no ring {from}->{to}"),
                    }
                }
            }
            offsets.sort_unstable();
            assert!(offsets.windows(2).all(|w| w[1] - w[0] >= RING_BYTES));
            assert_eq!(offsets.len(), 2 * a * b);
            assert_eq!(offsets.last().unwrap() + RING_BYTES, layout.region_bytes());
            assert_eq!(layout.ring(0, a + b), None, "a slot beyond the groups");
        }
        assert!(BridgeLayout::new(0, 1).is_none());
        assert!(BridgeLayout::new(1, MAX_RANKS + 1).is_none());
    }

    #[test]
    fn a_bridge_opens_as_made_and_a_failure_is_kept() {
        let made = Bridge::create(2, 3).unwrap();
        // SAFETY: the descriptor is open for the test's length.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(made.region.fd()) };
        let region = Region::from_owned(fd.try_clone_to_owned().unwrap()).unwrap();
        let opened = Bridge::open(region).unwrap();
        assert_eq!(opened.layout, made.layout);
        assert_eq!(opened.failure(), None);
        made.fail(FAILED_B);
        made.fail(FAILED_A);
        assert_eq!(opened.failure(), Some(FAILED_B));
        let job = Region::create(8192).unwrap();
        assert!(matches!(Bridge::open(job), Err(BridgeError::NotABridge)));
    }
}
