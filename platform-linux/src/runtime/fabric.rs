//! One process's view of the job's shared region: its rings to and from every peer, the
//! peers' process ids and nodes, and the doorbells that let a rank sleep instead of spin.

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{compiler_fence, fence, AtomicU32};
use std::time::Duration;

use crate::shm::{futex, membarrier, Layout, Region, Ring};

/// How long one futex sleep lasts at most before the waiter looks again on its own.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

pub(crate) struct Fabric {
    pub(crate) region: Region,
    pub(crate) layout: Layout,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    pub(crate) pids: Vec<u32>,
    pub(crate) nodes: Vec<u32>,
    pub(crate) node_count: usize,
    pub(crate) wake: WakeFence,
}

/// How a waker and a sleeper order their ring update and sleeping flag (Dekker's pattern:
/// each stores, then loads the other's word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WakeFence {
    /// Both sides fence. Every push pays a full fence, which waits for the cell's cache line
    /// to reach this core.
    Symmetric,
    /// The sleeper, which is about to block for a long time anyway, runs a process-wide
    /// barrier ([`membarrier::global`]) that stands in for the waker's fence; wakers only
    /// keep the compiler from reordering. Needs every process of the job registered.
    Asymmetric,
}

impl Fabric {
    /// The ring this process writes to reach `to`.
    pub(crate) fn outbox(&self, to: usize) -> Ring<'_> {
        Ring::new(&self.region, &self.layout, self.rank, to)
    }

    /// The ring this process reads for messages from `from`.
    pub(crate) fn inbox(&self, from: usize) -> Ring<'_> {
        Ring::new(&self.region, &self.layout, from, self.rank)
    }

    /// Whether any peer's ring holds a cell for us.
    pub(crate) fn any_inbound(&self) -> bool {
        (0..self.size).any(|source| !self.inbox(source).is_empty())
    }

    fn doorbell(&self, rank: usize) -> &AtomicU32 {
        self.region.atomic_u32(self.layout.doorbell(rank))
    }

    fn sleeping(&self, rank: usize) -> &AtomicU32 {
        self.region.atomic_u32(self.layout.sleeping(rank))
    }

    /// Wakes `rank` if it sleeps: call after giving it a cell or freeing room in its ring.
    /// Our fence (or, with [`WakeFence::Asymmetric`], the sleeper's process-wide barrier)
    /// pairs with the one in [`Fabric::sleep`]: either the sleeper sees our ring update
    /// before it sleeps, or we see its sleeping flag and ring the bell.
    pub(crate) fn notify(&self, rank: usize) {
        self.waker_fence();
        if self.sleeping(rank).load(Relaxed) != 0 {
            self.doorbell(rank).fetch_add(1, Release);
            futex::wake_all(self.doorbell(rank));
        }
    }

    /// What a waker runs between publishing and reading a sleeper count, the pair of the
    /// sleeper's fence (or process-wide barrier) in [`Fabric::sleep`].
    pub(crate) fn waker_fence(&self) {
        match self.wake {
            WakeFence::Symmetric => fence(SeqCst),
            WakeFence::Asymmetric => compiler_fence(SeqCst),
        }
    }

    /// Sleeps on this rank's doorbell unless `ready()` already holds.
    pub(crate) fn sleep(&self, ready: impl Fn() -> bool) {
        let bell = self.doorbell(self.rank);
        let seen = bell.load(Acquire);
        // A count, not a flag: several threads of this process may sleep at once.
        self.sleeping(self.rank).fetch_add(1, Relaxed);
        fence(SeqCst);
        if self.wake == WakeFence::Asymmetric {
            // Every waker now either has its ring update visible to `ready` below, or runs
            // its check of our flag after this barrier and sees it.
            membarrier::global();
        }
        if !ready() {
            futex::wait(bell, seen, SLEEP_SLICE);
        }
        self.sleeping(self.rank).fetch_sub(1, Relaxed);
    }
}
