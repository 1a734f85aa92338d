//! The shared-memory collective component (`shm`): for a communicator whose members share
//! one node, barrier, bcast, reduce, allreduce, allgather and alltoall run over the
//! communicator's collective area (see [`crate::shm::coll_area`]) instead of schedules of
//! messages: every member writes its contribution once into its own cell and reads the
//! others' straight from theirs.
//!
//! A call moves its data in one or more area calls of at most a cell per member each;
//! every member numbers area calls alike because the number a call takes depends only on
//! its arguments, which MPI requires to match. Reductions fold the contributions in rank
//! order, so non-commutative operations give the same result as the schedules.

mod ops;
pub(super) mod pool;
mod single_copy;
mod staged;
mod wait;

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::sync::{Arc, Mutex};

use commcore::coll::component::OpSet;
use commcore::coll::{CollOp, CommInfo, CommKind, Component, Module};

use super::Runtime;
use crate::shm::coll_area::members_max;
use crate::shm::CollArea;

/// The component's name in control strings (`coll=^shm` turns it off).
pub(super) const NAME: &str = "shm";

/// Above hier's 50 and tuned's 30: on one node, the area beats any schedule of messages.
const PRIORITY: u8 = 60;

/// The operations the area serves.
const OPS: OpSet = OpSet::of(&[
    CollOp::Barrier,
    CollOp::Bcast,
    CollOp::Reduce,
    CollOp::Allreduce,
    CollOp::Allgather,
    CollOp::Alltoall,
]);

/// Where a communicator's area is: its owner's world rank and the index in its pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct AreaGrant {
    pub(super) owner: usize,
    pub(super) index: usize,
}

/// This member's use of its communicator's area; leaves it when dropped.
pub(super) struct ShmColl {
    runtime: Arc<Runtime>,
    base: usize,
    /// This member's rank in the communicator.
    me: usize,
    /// The members' world ranks, in communicator order.
    world: Vec<usize>,
    /// The last area call this member made.
    call: AtomicU64,
    /// A call every other member is known to have published (see `CollArea::cell_free`).
    free_through: AtomicU64,
    /// Room for one contribution that single-copy reductions fold in.
    scratch: Mutex<Vec<u8>>,
    /// Which staging buffer comes next, and who may still read each (see `staged.rs`).
    staging: staged::StagingTurns,
}

/// Whether a communicator of `members` may use the area `grant`.
fn fits(runtime: &Runtime, grant: AreaGrant, members: usize) -> bool {
    let layout = &runtime.fabric.layout;
    runtime.areas_enabled
        && members > 1
        && members <= members_max(layout.size())
        && grant.owner < layout.size()
        && grant.index < layout.coll_areas_per_rank()
}

/// Maps the world's area into this process (see [`CollArea::prefault`]). The world's area
/// lives as long as the job, so it is worth its page faults up front; a communicator that
/// may live briefly maps its pages as it uses them. Called once start-up is over (a
/// spawned child has met its parents): it cost 1.2 ms of each child's start.
pub(super) fn prefault_world_area(runtime: &Runtime) {
    let (owner, index) = pool::WORLD_AREA;
    let grant = AreaGrant { owner, index };
    let (layout, members) = (&runtime.fabric.layout, runtime.fabric.size);
    if !fits(runtime, grant, members) {
        return;
    }
    let base = layout.coll_area(owner, index);
    if let Some(area) = CollArea::new(&runtime.fabric.region, base, members, layout.size()) {
        area.prefault(runtime.fabric.rank);
    }
}

impl ShmColl {
    /// Joins the area `grant` as rank `me` of a communicator of the world ranks `world`;
    /// `None` when the area has no room for that many members.
    pub(super) fn attach(
        runtime: Arc<Runtime>,
        grant: AreaGrant,
        me: usize,
        world: &[usize],
    ) -> Option<ShmColl> {
        if !fits(&runtime, grant, world.len()) {
            return None;
        }
        let base = runtime.fabric.layout.coll_area(grant.owner, grant.index);
        let world = world.to_vec();
        let (call, free_through) = (AtomicU64::new(0), AtomicU64::new(0));
        let (scratch, staging) = (Mutex::new(Vec::new()), staged::StagingTurns::default());
        Some(ShmColl { runtime, base, me, world, call, free_through, scratch, staging })
    }

    fn area(&self) -> CollArea<'_> {
        let fabric = &self.runtime.fabric;
        CollArea::new(&fabric.region, self.base, self.world.len(), fabric.layout.size())
            .expect("attach checked the member count")
    }

    /// Numbers the next `calls` area calls; returns the first. A load and a store, not a
    /// read-modify-write: MPI has one thread at a time call a communicator's collectives
    /// (concurrent calls would break the numbering either way), and the locked add cost
    /// a tenth of an 8-byte bcast's time.
    fn next_calls(&self, calls: u64) -> u64 {
        let first = self.call.load(Relaxed) + 1;
        self.call.store(first + calls - 1, Relaxed);
        first
    }

    fn size(&self) -> usize {
        self.world.len()
    }
}

impl Drop for ShmColl {
    fn drop(&mut self) {
        // After this member's last read: the owner may reuse the area once all have left.
        let area = self.area();
        area.note_last_call(self.call.load(Relaxed));
        area.left().fetch_add(1, Release);
    }
}

/// The `shm` component: answers intra-communicators on one node that have an area.
pub(super) struct ShmComponent {
    pub(super) attached: bool,
}

impl Component for ShmComponent {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_priority(&self) -> u8 {
        PRIORITY
    }

    fn query<'a>(&self, comm: &CommInfo<'a>) -> Option<Module<'a>> {
        // The runtime gives a layout only to communicators that span several node labels.
        let one_node = comm.layout.is_none();
        (self.attached && comm.kind == CommKind::Intra && one_node).then_some(Module::Native(OPS))
    }
}
