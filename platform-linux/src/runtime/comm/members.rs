//! A communicator's members: its rank map and context id, owned by the communicator and its
//! clones, and the way from a rank to the engine's peer.

use std::sync::Arc;

use commcore::rankmap::RankMap;

use super::FIRST_FREE_CID;
use crate::runtime::engine::Peer;
use crate::runtime::error::P2pError;
use crate::runtime::registry::{GroupSet, Groups};
use crate::runtime::Runtime;
use crate::transport::Route;

/// A communicator's context id and rank map, owned by it and its clones: with the last of
/// them the id goes back to the CID space, the map's table, if any, to the arena, and the
/// process groups it reached lose a user (a group nobody reaches any more goes).
pub(in crate::runtime) struct MapHandle {
    cid: u32,
    map: Option<RankMap<'static>>,
    /// The registry as it was when the map was made: the map's groups are in it.
    groups: Arc<Groups>,
    reached: GroupSet,
    /// An operation on the communicator failed because a connected group failed: its
    /// members may have left it at different steps, and messages of theirs may still come
    /// in its contexts, so its id is never handed out again.
    broken: std::sync::atomic::AtomicBool,
    runtime: Arc<Runtime>,
}

impl Drop for MapHandle {
    fn drop(&mut self) {
        if self.cid >= FIRST_FREE_CID && !self.broken.load(std::sync::atomic::Ordering::Relaxed) {
            // Only fails for an id that is not ours, which a communicator's never is.
            let _ = self.runtime.cids.release(self.cid);
        }
        if let Some(map) = self.map.take() {
            let mut arena =
                self.runtime.arena.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // Freeing only fails for a table the arena does not know, which cannot happen
            // for maps it handed out.
            let _ = map.free(&mut arena);
        }
        let gone = self.runtime.registry.release(self.reached);
        self.runtime.untie(gone);
    }
}

/// A communicator's members: core's rank map from communicator ranks to processes of the
/// registry's groups.
#[derive(Clone)]
pub(in crate::runtime) struct Members(Arc<MapHandle>);

impl Members {
    pub(in crate::runtime) fn new(
        runtime: Arc<Runtime>,
        cid: u32,
        map: RankMap<'static>,
    ) -> Members {
        let reached = GroupSet::reached_by(&map);
        runtime.registry.acquire(reached);
        let groups = runtime.registry.snapshot();
        let broken = std::sync::atomic::AtomicBool::new(false);
        Members(Arc::new(MapHandle { cid, map: Some(map), groups, reached, broken, runtime }))
    }

    /// Notes `error` from an operation on the communicator (see [`MapHandle::broken`]).
    pub(in crate::runtime) fn note(&self, error: &P2pError) {
        if matches!(error, P2pError::GroupFailed { .. }) {
            self.0.broken.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The registry snapshot the map's groups are in.
    pub(in crate::runtime) fn groups(&self) -> &Groups {
        &self.0.groups
    }

    pub(in crate::runtime) fn map(&self) -> &RankMap<'static> {
        // Set at construction, taken only in Drop.
        self.0.map.as_ref().expect("a live communicator has its rank map")
    }

    /// How to reach rank `rank`, found the paper's way: rank map → (pgid, lpid) → the
    /// process's 12-byte entry in its group's address vector → transport selector and
    /// address.
    #[inline]
    pub(in crate::runtime) fn route(&self, rank: usize) -> Option<Route> {
        let rank = u32::try_from(rank).ok()?;
        self.map().entry(&self.0.groups, rank).map(Route::of)
    }

    /// The engine's peer of rank `rank`: its route, then the transport's name for it.
    #[inline]
    pub(in crate::runtime) fn peer(
        &self,
        runtime: &Runtime,
        rank: usize,
    ) -> Result<Peer, P2pError> {
        let route = self
            .route(rank)
            .ok_or(P2pError::RankOutOfRange { rank, size: self.map().size() as usize })?;
        runtime.peer(route).ok_or(P2pError::NoTransport { rank, transport: route.transport.0 })
    }

    /// The world rank of rank `rank`, if it is a process of this job's world.
    pub(in crate::runtime) fn to_world(&self, rank: usize) -> Option<usize> {
        let rank = u32::try_from(rank).ok()?;
        match self.map().translate(rank)? {
            (pgid, lpid) if pgid.0 == 0 => Some(lpid as usize),
            _ => None,
        }
    }

    /// The node of rank `rank`, from its address-vector entry (`u32::MAX` for no rank).
    pub(in crate::runtime) fn node(&self, rank: usize) -> u32 {
        let entry = u32::try_from(rank).ok().and_then(|r| self.map().entry(&self.0.groups, r));
        entry.map_or(u32::MAX, |e| e.node().0)
    }
}
