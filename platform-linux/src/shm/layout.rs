//! Where everything sits in a job's shared region: a header, one slot per rank, then one
//! single-producer single-consumer ring per ordered pair of ranks (including self), then
//! each rank's pool of collective areas (see [`crate::shm::coll_area`]).

/// Bytes of one ring cell, header included.
pub const CELL_BYTES: usize = 8192;
/// Cells per ring: a window of 64 small sends (the message-rate pattern) goes straight into
/// the ring without queueing in the engine. The memory file is sparse: a ring of small
/// messages touches one page per cell.
pub const RING_DEPTH: usize = 64;
/// The most ranks a job may have (rings grow with the square of it; the memory file is
/// sparse, so only rings in use take memory).
pub const MAX_RANKS: usize = 1024;

/// Job-wide settings each slot holds (see [`Layout::job_setting`]).
pub const JOB_SETTINGS: usize = 16;
/// [`Layout::state`]: the rank has joined the job.
pub const RANK_JOINED: u32 = 1;
/// [`Layout::state`]: the rank's runtime has ended (finalized).
pub const RANK_FINALIZED: u32 = 2;

const HEADER_BYTES: usize = 4096;
const SLOT_BYTES: usize = 256;
const RING_CONTROL_BYTES: usize = 128;
const RING_BYTES: usize = RING_CONTROL_BYTES + RING_DEPTH * CELL_BYTES;
const MAGIC: u64 = 0x636d_6372_5f73_686d;

/// Offsets into a region for a job of `size` ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    size: usize,
}

impl Layout {
    /// The layout for `size` ranks, or `None` when `size` is 0 or above [`MAX_RANKS`].
    pub fn new(size: usize) -> Option<Layout> {
        (1..=MAX_RANKS).contains(&size).then_some(Layout { size })
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The value stored at [`Layout::magic`] once the launcher has initialised the region.
    pub const MAGIC: u64 = MAGIC;

    /// Total bytes of the region.
    pub fn region_bytes(&self) -> usize {
        self.coll_areas_start() + self.size * self.coll_areas_per_rank() * self.coll_area_bytes()
    }

    /// Header: the magic value (u64).
    pub fn magic(&self) -> usize {
        0
    }
    /// Header: the job size (u32).
    pub fn job_size(&self) -> usize {
        8
    }
    /// Header: the number of node labels (u32).
    pub fn nodes(&self) -> usize {
        12
    }
    /// Header: ranks that have published their slot (u32, futex word).
    pub fn arrived(&self) -> usize {
        16
    }
    /// Header: ranks whose single-copy probe of a peer failed (u32).
    pub fn probe_failures(&self) -> usize {
        20
    }
    /// Header: ranks that have finished probing (u32, futex word).
    pub fn probed(&self) -> usize {
        24
    }
    /// Header: ranks that could not register for process-wide barriers (u32).
    pub fn barrier_failures(&self) -> usize {
        28
    }
    /// Header: 1 + a rank number that two processes claimed, or 0 (u32).
    pub fn duplicate_rank(&self) -> usize {
        32
    }

    fn slot(&self, rank: usize) -> usize {
        debug_assert!(rank < self.size);
        HEADER_BYTES + rank * SLOT_BYTES
    }
    /// Slot: the rank's process id (u32).
    pub fn pid(&self, rank: usize) -> usize {
        self.slot(rank)
    }
    /// Slot: the rank's node label (u32), written by the launcher.
    pub fn node(&self, rank: usize) -> usize {
        self.slot(rank) + 4
    }
    /// Slot: the address of the rank's single-copy probe word (u64).
    pub fn probe_address(&self, rank: usize) -> usize {
        self.slot(rank) + 8
    }
    /// Slot: where the rank is in its life (u32): [`RANK_JOINED`] once `World::init` took
    /// the slot, [`RANK_FINALIZED`] once the runtime ended; 0 before. The launcher reads it
    /// to tell a rank that left the job early from one that finished.
    pub fn state(&self, rank: usize) -> usize {
        self.slot(rank) + 16
    }
    /// Slot: the rank's job-wide setting `index`, as a word of its parsed value (u64), on a
    /// cache line of their own.
    pub fn job_setting(&self, rank: usize, index: usize) -> usize {
        debug_assert!(index < JOB_SETTINGS);
        self.slot(rank) + 128 + 8 * index
    }
    /// Slot: the CPUs the rank may run on (u32).
    pub fn cpus(&self, rank: usize) -> usize {
        self.slot(rank) + 24
    }
    /// Slot: the rank's host (u32), written by the launcher: ranks on different hosts reach
    /// each other over TCP.
    pub fn host(&self, rank: usize) -> usize {
        self.slot(rank) + 28
    }
    /// Slot: how many of the rank's threads sleep on its doorbell (u32), on its own cache
    /// line.
    pub fn sleeping(&self, rank: usize) -> usize {
        self.slot(rank) + 64
    }
    /// Slot: the rank's doorbell futex word (u32).
    pub fn doorbell(&self, rank: usize) -> usize {
        self.slot(rank) + 68
    }

    fn rings_start(&self) -> usize {
        (HEADER_BYTES + self.size * SLOT_BYTES).next_multiple_of(4096)
    }

    /// The control block of the ring that carries cells from `from` to `to`.
    pub fn ring(&self, from: usize, to: usize) -> usize {
        debug_assert!(from < self.size && to < self.size);
        self.rings_start() + (from * self.size + to) * RING_BYTES
    }

    fn coll_areas_start(&self) -> usize {
        self.rings_start() + self.size * self.size * RING_BYTES
    }

    /// Collective areas each rank owns.
    pub fn coll_areas_per_rank(&self) -> usize {
        super::coll_area::areas_per_rank(self.size)
    }

    /// Bytes of one collective area.
    pub fn coll_area_bytes(&self) -> usize {
        super::coll_area::area_bytes(self.size)
    }

    /// Where collective area `index` of `owner`'s pool starts.
    pub fn coll_area(&self, owner: usize, index: usize) -> usize {
        debug_assert!(owner < self.size && index < self.coll_areas_per_rank());
        self.coll_areas_start()
            + (owner * self.coll_areas_per_rank() + index) * self.coll_area_bytes()
    }

    /// Within a ring: the writer's tail index (u64).
    pub const RING_TAIL: usize = 0;
    /// Within a ring: the writer's private copy of the head index (u64), next to the tail.
    pub const RING_CACHED_HEAD: usize = 8;
    /// Within a ring: the reader's head index (u64), on its own cache line.
    pub const RING_HEAD: usize = 64;
    /// Within a ring: where cell 0 starts.
    pub const RING_CELLS: usize = RING_CONTROL_BYTES;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_do_not_overlap_slots_or_each_other() {
        for size in [1, 2, 3, 8, 65] {
            let layout = Layout::new(size).unwrap();
            assert!(layout.ring(0, 0) >= layout.doorbell(size - 1) + 4);
            let last = layout.ring(size - 1, size - 1);
            let areas = layout.coll_area(0, 0);
            assert_eq!(last + RING_BYTES, areas);
            let (owner, index) = (size - 1, layout.coll_areas_per_rank() - 1);
            assert_eq!(
                layout.coll_area(owner, index) + layout.coll_area_bytes(),
                layout.region_bytes()
            );
            if size > 1 {
                assert_eq!(layout.ring(0, 1) - layout.ring(0, 0), RING_BYTES);
            }
        }
        assert!(Layout::new(0).is_none());
        assert!(Layout::new(MAX_RANKS + 1).is_none());
    }
}
