//! Two groups that share a bridge become an inter-communicator: each process takes its slot
//! and waits for the other group's, the engine makes the other group's processes its
//! guests, the registry gets the other group as a process group of its own, and the two
//! leaders agree the context ids over the bridge (core's inter-communicator CID request).
//! Every wait is bounded: by the caller's deadline, and by the bridge's failure word, which
//! the launcher sets when a process of either group dies.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use commcore::av::{Address, Ave, NodeId};
use commcore::rankmap::RankMap;

use super::DpmError;
use crate::runtime::comm::BRIDGE_CID;
use crate::runtime::engine::{Outbound, Pattern, Peer, Sink};
use crate::runtime::registry::{GroupTie, LauncherTie, TieKind};
use crate::runtime::{Comm, P2pError, Runtime};
use crate::shm::bridge::{Bridge, FAILED_ABANDONED};
use crate::shm::futex;
use crate::shm::layout::RANK_JOINED;
use crate::transport::shm::ShmTransport;
use crate::transport::SHARED_MEMORY;

/// Which group of a bridge the caller's is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    /// Slots `0..a`: the spawning or accepting group.
    A,
    /// Slots `a..a + b`: the spawned or connecting group.
    B,
}

/// The tag of the leaders' messages in the bridge context.
const LEADER_TAG: i32 = 1;

impl Comm {
    /// The inter-communicator between this intra-communicator's group and the group on the
    /// other side of `bridge` (collective over this communicator; each member has `bridge`
    /// mapped). `leader` is our rank that agrees the ids with the other side's leader.
    pub(super) fn bridge_intercomm(
        &self,
        bridge: Arc<Bridge>,
        side: Side,
        leader: usize,
        deadline: Instant,
        launcher: LauncherTie,
    ) -> Result<Comm, DpmError> {
        let layout = bridge.layout;
        let (ours, theirs) = match side {
            Side::A => (0..layout.a(), layout.a()..layout.slots()),
            Side::B => (layout.a()..layout.slots(), 0..layout.a()),
        };
        if ours.len() != self.size() || self.is_inter() {
            bridge.fail(FAILED_ABANDONED);
            return Err(DpmError::InvalidArgument(format!(
                "the bridge has {} slots for this group of {}",
                ours.len(),
                self.size()
            )));
        }
        let me = ours.start + self.rank();
        let runtime = &self.runtime;
        let fabric = &runtime.fabric;
        bridge.word(layout.pid(me)).store(std::process::id(), Relaxed);
        bridge.word(layout.node(me)).store(fabric.nodes[fabric.rank], Relaxed);
        bridge.word(layout.state(me)).store(RANK_JOINED, Relaxed);
        if self.rank() == leader {
            bridge.word(layout.leader(side == Side::A)).store(me as u32 + 1, Relaxed);
        }
        arrive(runtime, &bridge, deadline)?;
        let remote_leader = bridge.word(layout.leader(side == Side::B)).load(Acquire);
        let Some(remote_leader) = (remote_leader as usize).checked_sub(1) else {
            bridge.fail(FAILED_ABANDONED);
            return Err(DpmError::Handover("the other group named no leader".into()));
        };
        let first = runtime
            .engine()
            .add_guests(fabric, &bridge, me, theirs.clone())
            .ok_or_else(|| DpmError::Handover("the bridge has no rings for a slot".into()))?;
        let count = theirs.len();
        runtime.note_guests(runtime.engine().guest_count());
        let av: Vec<Ave> = theirs
            .clone()
            .enumerate()
            .map(|(i, slot)| {
                let pid = bridge.word(layout.pid(slot)).load(Acquire);
                let node = bridge.word(layout.node(slot)).load(Acquire);
                let address = ShmTransport::address_of(first + i, pid).0;
                Ave::new(Address::Inline(address), SHARED_MEMORY, NodeId(node))
            })
            .collect::<Result<_, _>>()
            .map_err(|e| DpmError::Handover(format!("address vector: {e:?}")))?;
        // The group's entries live as long as the process (a few bytes per process met).
        let av: &'static [Ave] = Box::leak(av.into_boxed_slice());
        let tie = GroupTie { kind: TieKind::Shm { first, count }, launcher };
        let pgid = match runtime.registry.register(av, tie) {
            Ok(pgid) => pgid,
            Err(error) => {
                runtime.engine().remove_guests(fabric, first, count);
                return Err(DpmError::Handover(format!("process groups: {error}")));
            }
        };
        let leader_peer = Peer::Shm(first + (remote_leader - theirs.start));
        let built = self.intercomm_over(pgid, av, leader == self.rank(), leader_peer, side);
        if built.is_err() {
            bridge.fail(FAILED_ABANDONED);
            if let Some(tie) = runtime.registry.abandon(pgid) {
                runtime.untie(vec![tie]);
            }
        }
        built
    }

    pub(super) fn intercomm_over(
        &self,
        pgid: commcore::av::Pgid,
        av: &'static [Ave],
        leader: bool,
        leader_peer: Peer,
        side: Side,
    ) -> Result<Comm, DpmError> {
        let runtime = &self.runtime;
        let me = self.rank() as u32;
        let pair = self.agree_inter_cids(leader, 0, |local| {
            let mut theirs = [0u8; 4];
            runtime.sendrecv_peer(leader_peer, me, &local.to_le_bytes(), &mut theirs)?;
            Ok(u32::from_le_bytes(theirs))
        })?;
        let held = crate::runtime::context_id::HeldCid::new(runtime, pair.local);
        let local = {
            let mut arena = runtime.arena.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            self.rank_map().dup(&mut arena).map_err(crate::runtime::CommError::RankMap)?
        };
        let remote = RankMap::direct(pgid, av);
        let pair = commcore::cid::InterCidPair { local: held.hand_over(), remote: pair.remote };
        Ok(Comm::inter(runtime.clone(), pair, self.rank(), (local, remote), Some(side == Side::A))?)
    }
}

/// Counts this process in and waits for everyone of both groups, at most until `deadline`
/// and never past a failure, moving the process's other traffic on meanwhile; a timeout
/// marks the bridge failed, so the other side stops waiting too.
fn arrive(runtime: &Runtime, bridge: &Bridge, deadline: Instant) -> Result<(), DpmError> {
    let arrived = bridge.word(bridge.layout.arrived());
    let all = bridge.layout.slots() as u32;
    let since = Instant::now();
    let mut seen = arrived.fetch_add(1, AcqRel) + 1;
    if seen >= all {
        futex::wake_all(arrived);
    }
    while seen < all {
        if let Some(reason) = bridge.failure() {
            return Err(DpmError::Comm(P2pError::GroupFailed { reason }.into()));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bridge.fail(FAILED_ABANDONED);
            return Err(DpmError::TimedOut(format!(
                "{seen} of {all} processes of the two groups arrived"
            )));
        }
        runtime.progress_once();
        futex::yield_then_wait(arrived, seen, since, left.min(Duration::from_millis(1)));
        seen = arrived.load(Acquire);
    }
    bridge
        .failure()
        .map_or(Ok(()), |reason| Err(DpmError::Comm(P2pError::GroupFailed { reason }.into())))
}

impl Runtime {
    /// Sends `send` to `peer` and receives its message of the same kind into `recv`, in the
    /// bridge context (leaders setting up an inter-communicator); `me` is our rank there.
    pub(super) fn sendrecv_peer(
        &self,
        peer: Peer,
        me: u32,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<usize, P2pError> {
        let context = 2 * BRIDGE_CID;
        let pattern = Pattern { context, source: Some(peer), tag: Some(LEADER_TAG) };
        let id = self.engine().post_recv(pattern);
        let envelope = Outbound { context, tag: LEADER_TAG, source: me };
        if let Err(error) = self.engine().start_send_copied(&self.fabric, peer, envelope, send) {
            self.engine().cancel_recv(&self.fabric, id);
            return Err(error);
        }
        let mut sink = Sink::new(id, recv, true);
        let received = self.block(|engine, fabric| {
            if let Some(envelope) = engine.finish_recv(fabric, &mut sink)? {
                return Ok(Some(envelope));
            }
            engine.progress(fabric, Some(&mut sink), None)?;
            engine.finish_recv(fabric, &mut sink)
        });
        match received {
            Ok(envelope) => Ok(envelope.len),
            Err(error) => {
                self.engine().cancel_recv(&self.fabric, id);
                Err(error)
            }
        }
    }
}
