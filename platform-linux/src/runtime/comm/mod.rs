//! Communicators: a context and an ordered set of processes. One concern a file:
//! [`members`] (the rank map, context id and groups a communicator holds), [`p2p`]
//! (point-to-point), [`create`] (dup, split, create), [`group`] (create_group), [`inter`]
//! (inter-communicators: create, merge, dup, split), [`inter_node`] (their collectives over
//! a group's shared memory) and [`context_id`] (agreeing ids, held
//! by a guard until a communicator owns them). Collectives are in `runtime::coll`, dynamic
//! processes in `runtime::dpm`.

pub(in crate::runtime) mod context_id;
pub(in crate::runtime) mod create;
pub(in crate::runtime) mod group;
pub(in crate::runtime) mod inter;
mod inter_node;
mod members;
mod p2p;

pub(in crate::runtime) use members::Members;

use std::sync::Arc;

use commcore::rankmap::RankMap;

use crate::runtime::error::{CollectiveError, P2pError};
use crate::runtime::shm_coll::{AreaGrant, ShmColl};
use crate::runtime::Runtime;

/// The world communicator's context id; the self communicator's is the next. A
/// communicator with id `cid` carries point-to-point messages in context `2 cid` and its
/// collectives' messages in `2 cid + 1`, so the two never match each other.
pub(in crate::runtime) const WORLD_CID: u32 = 0;
pub(in crate::runtime) const SELF_CID: u32 = 1;
/// The context id whose context carries the leaders' messages while two groups set up an
/// inter-communicator over a bridge (before they have agreed on its id).
pub(in crate::runtime) const BRIDGE_CID: u32 = 2;
/// Ids from here on are agreed for communicators and given back when they go.
pub(in crate::runtime) const FIRST_FREE_CID: u32 = 3;

/// A communicator (`MPI_Comm`): point-to-point operations address its ranks, and its
/// messages never match another communicator's. Clones share the communicator; it is freed
/// (`MPI_Comm_free`) when the last clone is dropped or [`Comm::free`]d.
#[derive(Clone)]
pub struct Comm {
    pub(in crate::runtime) runtime: Arc<Runtime>,
    pub(in crate::runtime) cid: u32,
    pub(in crate::runtime) context: u32,
    pub(in crate::runtime) rank: usize,
    pub(in crate::runtime) size: usize,
    pub(in crate::runtime) members: Members,
    pub(in crate::runtime) coll: Arc<crate::runtime::coll::BuiltinTable>,
    /// The context point-to-point sends carry: `context` on an intra-communicator, the
    /// remote group's on an inter-communicator.
    pub(in crate::runtime) remote_context: u32,
    /// The local group of an inter-communicator, whose `members` are the remote group.
    pub(in crate::runtime) inter: Option<Arc<inter::LocalGroup>>,
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comm")
            .field("context_id", &self.cid)
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("rank_map", &self.rank_map().kind())
            .finish()
    }
}

impl Comm {
    pub(in crate::runtime) fn world(
        runtime: Arc<Runtime>,
        map: RankMap<'static>,
    ) -> Result<Comm, CollectiveError> {
        let rank = runtime.fabric.rank;
        let (owner, index) = crate::runtime::shm_coll::pool::WORLD_AREA;
        let world: Vec<usize> = (0..map.size() as usize).collect();
        let shm = ShmColl::attach(runtime.clone(), AreaGrant { owner, index }, rank, &world);
        Comm::with_area(runtime, WORLD_CID, rank, map, shm)
    }

    pub(in crate::runtime) fn own(
        runtime: Arc<Runtime>,
        map: RankMap<'static>,
    ) -> Result<Comm, CollectiveError> {
        Comm::with(runtime, SELF_CID, 0, map)
    }

    pub(in crate::runtime) fn with(
        runtime: Arc<Runtime>,
        cid: u32,
        rank: usize,
        map: RankMap<'static>,
    ) -> Result<Comm, CollectiveError> {
        Comm::with_area(runtime, cid, rank, map, None)
    }

    /// A communicator whose collectives may use the shared-memory area `shm` joined.
    pub(in crate::runtime) fn with_area(
        runtime: Arc<Runtime>,
        cid: u32,
        rank: usize,
        map: RankMap<'static>,
        shm: Option<ShmColl>,
    ) -> Result<Comm, CollectiveError> {
        let size = map.size() as usize;
        let members = Members::new(runtime.clone(), cid, map);
        let nodes: Vec<u32> = (0..size).map(|r| members.node(r)).collect();
        let coll = Arc::new(crate::runtime::coll::select(&runtime, rank, &nodes, shm)?);
        let context = 2 * cid;
        Ok(Comm {
            runtime,
            cid,
            context,
            rank,
            size,
            members,
            coll,
            remote_context: context,
            inter: None,
        })
    }

    pub(in crate::runtime) fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Notes a failed operation on the communicator: the handle that owns its context id
    /// (the local group's, on an inter-communicator) retires the id if a connected group
    /// failed.
    pub(in crate::runtime) fn note_failure(&self, error: &P2pError) {
        match &self.inter {
            Some(local) => local.members.note(error),
            None => self.members.note(error),
        }
    }

    /// `result`, its failure noted ([`Comm::note_failure`]).
    pub(in crate::runtime) fn noted<T>(&self, result: Result<T, P2pError>) -> Result<T, P2pError> {
        if let Err(error) = &result {
            self.note_failure(error);
        }
        result
    }

    /// The rank map that translates this communicator's ranks to processes (the remote
    /// group's, on an inter-communicator).
    pub fn rank_map(&self) -> &RankMap<'static> {
        self.members.map()
    }

    /// The context id all members agreed on for this communicator.
    pub fn context_id(&self) -> u32 {
        self.cid
    }

    /// The world rank of this communicator's rank `rank` (a remote rank, on an
    /// inter-communicator), if it exists.
    pub fn world_rank(&self, rank: usize) -> Option<usize> {
        self.members.to_world(rank)
    }

    /// The transport that carries messages to rank `rank` (a remote rank, on an
    /// inter-communicator): the selector of its address-vector entry, e.g.
    /// [`crate::transport::VERBS`].
    pub fn transport_to(&self, rank: usize) -> Option<commcore::av::TransportId> {
        self.members.route(rank).map(|route| route.transport)
    }

    /// This process's rank in the communicator.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks in the communicator (in its local group, on an
    /// inter-communicator).
    pub fn size(&self) -> usize {
        self.inter.as_ref().map_or(self.size, |local| local.size)
    }
}
