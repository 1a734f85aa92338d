//! Communicators: a context and an ordered set of world ranks, with MPI's point-to-point
//! operations and a barrier.

use std::sync::Arc;

use commcore::rankmap::RankMap;

use crate::transport::Route;

use super::engine::{Direct, Feed, Outbound, Pattern, Peer, SendStart, Sink};
use super::error::{CollectiveError, P2pError};
use super::registry::{GroupSet, Groups};
use super::request::{Request, State, Status};
use super::shm_coll::{AreaGrant, ShmColl};
use super::{Runtime, Source, ANY_TAG, MAX_MESSAGE_BYTES};

/// The world communicator's context id; the self communicator's is the next. A
/// communicator with id `cid` carries point-to-point messages in context `2 cid` and its
/// collectives' messages in `2 cid + 1`, so the two never match each other.
pub(super) const WORLD_CID: u32 = 0;
pub(super) const SELF_CID: u32 = 1;
/// The context id whose context carries the leaders' messages while two groups set up an
/// inter-communicator over a bridge (before they have agreed on its id).
pub(super) const BRIDGE_CID: u32 = 2;
/// Ids from here on are agreed for communicators and given back when they go.
pub(super) const FIRST_FREE_CID: u32 = 3;

/// A communicator's context id and rank map, owned by it and its clones: with the last of
/// them the id goes back to the CID space, the map's table, if any, to the arena, and the
/// process groups it reached lose a user (a group nobody reaches any more goes).
pub(super) struct MapHandle {
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
pub(super) struct Members(Arc<MapHandle>);

impl Members {
    pub(super) fn new(runtime: Arc<Runtime>, cid: u32, map: RankMap<'static>) -> Members {
        let reached = GroupSet::reached_by(&map);
        runtime.registry.acquire(reached);
        let groups = runtime.registry.snapshot();
        let broken = std::sync::atomic::AtomicBool::new(false);
        Members(Arc::new(MapHandle { cid, map: Some(map), groups, reached, broken, runtime }))
    }

    /// Notes `error` from an operation on the communicator (see [`MapHandle::broken`]).
    pub(super) fn note(&self, error: &P2pError) {
        if matches!(error, P2pError::GroupFailed { .. }) {
            self.0.broken.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The registry snapshot the map's groups are in.
    pub(super) fn groups(&self) -> &Groups {
        &self.0.groups
    }

    pub(super) fn map(&self) -> &RankMap<'static> {
        // Set at construction, taken only in Drop.
        self.0.map.as_ref().expect("a live communicator has its rank map")
    }

    /// How to reach rank `rank`, found the paper's way: rank map → (pgid, lpid) → the
    /// process's 12-byte entry in its group's address vector → transport selector and
    /// address.
    #[inline]
    pub(super) fn route(&self, rank: usize) -> Option<Route> {
        let rank = u32::try_from(rank).ok()?;
        self.map().entry(&self.0.groups, rank).map(Route::of)
    }

    /// The engine's peer of rank `rank`: its route, then the transport's name for it.
    #[inline]
    pub(super) fn peer(&self, runtime: &Runtime, rank: usize) -> Result<Peer, P2pError> {
        let route = self
            .route(rank)
            .ok_or(P2pError::RankOutOfRange { rank, size: self.map().size() as usize })?;
        runtime.peer(route).ok_or(P2pError::NoTransport { rank, transport: route.transport.0 })
    }

    /// The world rank of rank `rank`, if it is a process of this job's world.
    pub(super) fn to_world(&self, rank: usize) -> Option<usize> {
        let rank = u32::try_from(rank).ok()?;
        match self.map().translate(rank)? {
            (pgid, lpid) if pgid.0 == 0 => Some(lpid as usize),
            _ => None,
        }
    }

    /// The node of rank `rank`, from its address-vector entry (`u32::MAX` for no rank).
    pub(super) fn node(&self, rank: usize) -> u32 {
        let entry = u32::try_from(rank).ok().and_then(|r| self.map().entry(&self.0.groups, r));
        entry.map_or(u32::MAX, |e| e.node().0)
    }
}

/// A communicator (`MPI_Comm`): point-to-point operations address its ranks, and its
/// messages never match another communicator's. Clones share the communicator; it is freed
/// (`MPI_Comm_free`) when the last clone is dropped or [`Comm::free`]d.
#[derive(Clone)]
pub struct Comm {
    pub(super) runtime: Arc<Runtime>,
    pub(super) cid: u32,
    pub(super) context: u32,
    pub(super) rank: usize,
    pub(super) size: usize,
    pub(super) members: Members,
    pub(super) coll: Arc<super::coll::BuiltinTable>,
    /// The context point-to-point sends carry: `context` on an intra-communicator, the
    /// remote group's on an inter-communicator.
    pub(super) remote_context: u32,
    /// The local group of an inter-communicator, whose `members` are the remote group.
    pub(super) inter: Option<Arc<super::intercomm::LocalGroup>>,
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
    pub(super) fn world(
        runtime: Arc<Runtime>,
        map: RankMap<'static>,
    ) -> Result<Comm, CollectiveError> {
        let rank = runtime.fabric.rank;
        let (owner, index) = super::shm_coll::pool::WORLD_AREA;
        let world: Vec<usize> = (0..map.size() as usize).collect();
        let shm = ShmColl::attach(runtime.clone(), AreaGrant { owner, index }, rank, &world);
        Comm::with_area(runtime, WORLD_CID, rank, map, shm)
    }

    pub(super) fn own(
        runtime: Arc<Runtime>,
        map: RankMap<'static>,
    ) -> Result<Comm, CollectiveError> {
        Comm::with(runtime, SELF_CID, 0, map)
    }

    pub(super) fn with(
        runtime: Arc<Runtime>,
        cid: u32,
        rank: usize,
        map: RankMap<'static>,
    ) -> Result<Comm, CollectiveError> {
        Comm::with_area(runtime, cid, rank, map, None)
    }

    /// A communicator whose collectives may use the shared-memory area `shm` joined.
    pub(super) fn with_area(
        runtime: Arc<Runtime>,
        cid: u32,
        rank: usize,
        map: RankMap<'static>,
        shm: Option<ShmColl>,
    ) -> Result<Comm, CollectiveError> {
        let size = map.size() as usize;
        let members = Members::new(runtime.clone(), cid, map);
        let nodes: Vec<u32> = (0..size).map(|r| members.node(r)).collect();
        let coll = Arc::new(super::coll::select(&runtime, rank, &nodes, shm)?);
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

    pub(super) fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Notes a failed operation on the communicator: the handle that owns its context id
    /// (the local group's, on an inter-communicator) retires the id if a connected group
    /// failed.
    pub(super) fn note_failure(&self, error: &P2pError) {
        match &self.inter {
            Some(local) => local.members.note(error),
            None => self.members.note(error),
        }
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

    /// This process's rank in the communicator.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks in the communicator (in its local group, on an
    /// inter-communicator).
    pub fn size(&self) -> usize {
        self.inter.as_ref().map_or(self.size, |local| local.size)
    }

    /// The engine's peer of rank `rank` (of the remote group, on an inter-communicator),
    /// through its address-vector entry.
    pub(super) fn check_rank(&self, rank: usize) -> Result<Peer, P2pError> {
        self.members.peer(&self.runtime, rank)
    }

    fn check_send(&self, buf: &[u8], dest: usize, tag: i32) -> Result<Peer, P2pError> {
        if tag < 0 {
            return Err(P2pError::InvalidTag(tag));
        }
        if buf.len() > MAX_MESSAGE_BYTES {
            return Err(P2pError::CountOutOfRange { len: buf.len(), max: MAX_MESSAGE_BYTES });
        }
        self.check_rank(dest)
    }

    /// The header fields of a message this rank sends in `context` with `tag`: the
    /// receiver learns our rank from it, with no translation.
    pub(super) fn outbound(&self, context: u32, tag: i32) -> Outbound {
        // Fits: communicators have at most u32::MAX ranks (rank maps count in u32).
        Outbound { context, tag, source: self.rank as u32 }
    }

    fn pattern(&self, context: u32, source: Source, tag: i32) -> Result<Pattern, P2pError> {
        if tag < 0 && tag != ANY_TAG {
            return Err(P2pError::InvalidTag(tag));
        }
        let source = match source {
            Source::Any => None,
            Source::Rank(rank) => Some(self.check_rank(rank)?),
        };
        Ok(Pattern { context, source, tag: (tag != ANY_TAG).then_some(tag) })
    }

    /// Sends `buf` to rank `dest` with `tag` (`MPI_Send`); returns once `buf` may be reused.
    pub fn send(&self, buf: &[u8], dest: usize, tag: i32) -> Result<(), P2pError> {
        self.send_on(self.remote_context, buf, dest, tag)
    }

    pub(super) fn send_on(
        &self,
        context: u32,
        buf: &[u8],
        dest: usize,
        tag: i32,
    ) -> Result<(), P2pError> {
        let sent = self.send_unnoted(context, buf, dest, tag);
        if let Err(error) = &sent {
            self.note_failure(error);
        }
        sent
    }

    fn send_unnoted(
        &self,
        context: u32,
        buf: &[u8],
        dest: usize,
        tag: i32,
    ) -> Result<(), P2pError> {
        let dest = self.check_send(buf, dest, tag)?;
        let runtime = &self.runtime;
        let start = runtime.engine().start_send(
            &runtime.fabric,
            dest,
            self.outbound(context, tag),
            buf,
            true,
        )?;
        match start {
            SendStart::Done => Ok(()),
            SendStart::Rendezvous(id) => runtime.block(|engine, fabric| {
                engine.progress(fabric, None, None)?;
                Ok(engine.send_finished(id).then_some(()))
            }),
            SendStart::Streaming(id) => runtime.block(|engine, fabric| {
                engine.progress(fabric, None, Some(&Feed { send: id, buf }))?;
                Ok((!engine.send_queued(dest, id)).then_some(()))
            }),
        }
    }

    /// Receives into `buf` a message from `source` (a rank or [`super::ANY_SOURCE`]) with
    /// `tag` (or [`ANY_TAG`]) (`MPI_Recv`). A longer message is an error
    /// ([`P2pError::Truncated`]) that still consumes it.
    pub fn recv(
        &self,
        buf: &mut [u8],
        source: impl Into<Source>,
        tag: i32,
    ) -> Result<Status, P2pError> {
        self.recv_on(self.context, buf, source.into(), tag)
    }

    pub(super) fn recv_on(
        &self,
        context: u32,
        buf: &mut [u8],
        source: Source,
        tag: i32,
    ) -> Result<Status, P2pError> {
        let received = self.recv_unnoted(context, buf, source, tag);
        if let Err(error) = &received {
            self.note_failure(error);
        }
        received
    }

    fn recv_unnoted(
        &self,
        context: u32,
        buf: &mut [u8],
        source: Source,
        tag: i32,
    ) -> Result<Status, P2pError> {
        let pattern = self.pattern(context, source, tag)?;
        let runtime = &self.runtime;
        let mut posted = false;
        let mut sink = Sink { recv: 0, buf, blocking: true };
        let envelope = runtime.block(|engine, fabric| {
            if !posted {
                match engine.try_direct_recv(fabric, &pattern, sink.buf) {
                    Direct::Done(result) => return result.map(Some),
                    Direct::Empty => {
                        // Keep other peers' traffic and our queued sends moving meanwhile.
                        if engine.has_outbound() || engine.inbound_anywhere(fabric) {
                            engine.progress(fabric, None, None)?;
                        }
                        return Ok(None);
                    }
                    Direct::Slow => {
                        sink.recv = engine.post_recv(pattern);
                        posted = true;
                    }
                }
            }
            if let Some(envelope) = engine.finish_recv(fabric, &mut sink)? {
                return Ok(Some(envelope));
            }
            engine.progress(fabric, Some(&mut sink), None)?;
            engine.finish_recv(fabric, &mut sink)
        })?;
        Ok(Status { source: envelope.source, tag: envelope.tag, len: envelope.len })
    }

    /// Starts sending `buf` (`MPI_Isend`). A long message that goes by single copy keeps
    /// `buf` borrowed until the request completes; others are copied out at once.
    pub fn isend<'a>(&self, buf: &'a [u8], dest: usize, tag: i32) -> Result<Request<'a>, P2pError> {
        let world_dest = self.check_send(buf, dest, tag)?;
        let runtime = &self.runtime;
        let start = runtime.engine().start_send(
            &runtime.fabric,
            world_dest,
            self.outbound(self.remote_context, tag),
            buf,
            false,
        )?;
        let status = Status { source: dest, tag, len: buf.len() };
        let state = match start {
            SendStart::Rendezvous(id) => State::Send { id, status, _buf: buf },
            SendStart::Done | SendStart::Streaming(_) => State::Done(Ok(status)),
        };
        Ok(Request { runtime: self.runtime.clone(), state })
    }

    /// Starts receiving into `buf` (`MPI_Irecv`); matching follows posting order.
    pub fn irecv<'a>(
        &self,
        buf: &'a mut [u8],
        source: impl Into<Source>,
        tag: i32,
    ) -> Result<Request<'a>, P2pError> {
        let pattern = self.pattern(self.context, source.into(), tag)?;
        let id = self.runtime.engine().post_recv(pattern);
        Ok(Request { runtime: self.runtime.clone(), state: State::Recv { id, buf } })
    }

    /// Sends to `dest` and receives from `source` at once (`MPI_Sendrecv`).
    pub fn sendrecv(
        &self,
        send: &[u8],
        dest: usize,
        send_tag: i32,
        recv: &mut [u8],
        source: impl Into<Source>,
        recv_tag: i32,
    ) -> Result<Status, P2pError> {
        let incoming = self.irecv(recv, source, recv_tag)?;
        let outgoing = self.isend(send, dest, send_tag)?;
        let status = incoming.wait()?;
        outgoing.wait()?;
        Ok(status)
    }
}
