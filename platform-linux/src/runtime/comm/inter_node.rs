//! Inter-communicator collectives over a group's shared memory. A group whose processes
//! are all of this job and on one node runs its part of a barrier, bcast, reduce or
//! allreduce as a collective of its own node communicator (a hidden dup of the local group
//! that holds a shared-memory area), and only its leader (rank 0) talks to the other
//! group. The other group sees the messages core's inter-communicator schedules send, so
//! each group takes this path or not on its own.
//!
//! The node communicator is made at the first of these calls (all of the group make it
//! there, as they all make the call) and lives as long as the inter-communicator.

use std::sync::OnceLock;

use commcore::coll::{CollArgs, CollOp, Ctx, Datatype, Root, Schedule};

use super::inter::LocalGroup;
use super::Comm;
use crate::runtime::error::{CollectiveError, P2pError};

/// A group's node communicator, once the group's first collective decided it.
#[derive(Default)]
pub(in crate::runtime) struct NodeComm(OnceLock<Option<Comm>>);

impl NodeComm {
    /// The node communicator, if the first collective made one.
    fn made(&self) -> Option<&Comm> {
        self.0.get().and_then(Option::as_ref)
    }
}

impl Comm {
    /// Runs `op` with the local part over the group's node communicator, when `op` is one
    /// the area serves and the group has one; `None` leaves the call to core's schedules.
    pub(in crate::runtime) fn inter_on_node(
        &self,
        local: &LocalGroup,
        op: CollOp,
        args: &CollArgs<'_>,
        send: &[u8],
        recv: &mut [u8],
    ) -> Option<Result<(), CollectiveError>> {
        let receiving_side = matches!(args.root, Root::Rank(_));
        let served = match op {
            CollOp::Barrier | CollOp::Allreduce => true,
            // The root's group sends from the root alone: nothing local to speed up.
            CollOp::Bcast | CollOp::Reduce => receiving_side,
            _ => false,
        };
        if !served {
            return None;
        }
        let node = local.node.0.get_or_init(|| self.make_node_comm(local)).as_ref()?;
        node.coll.shm_for(op)?;
        Some(self.run_on_node(node, op, args, send, recv))
    }

    /// Whether this inter-communicator's barrier, bcast, reduce and allreduce run the
    /// local group's part over a shared-memory area (decided at the first of them; `false`
    /// before it and on an intra-communicator).
    pub fn inter_collectives_on_node(&self) -> bool {
        self.inter.as_ref().and_then(|local| local.node.made()).is_some()
    }

    /// The node communicator of the local group, if the group can have one: more than one
    /// process, all of this job, on one node, and an area granted to the dup.
    fn make_node_comm(&self, local: &LocalGroup) -> Option<Comm> {
        let runtime = &self.runtime;
        let home = (0..local.size).all(|r| local.members.to_world(r).is_some());
        let node = local.members.node(0);
        let one_node = (0..local.size).all(|r| local.members.node(r) == node);
        if local.size < 2 || !runtime.areas_enabled || !home || !one_node {
            return None;
        }
        let nodes = vec![node; local.size];
        let coll = crate::runtime::coll::select(runtime, self.rank, &nodes, None).ok()?;
        // The local group as an intra-communicator in the inter-communicator's own context:
        // only the dup below runs on it, and its messages come from local processes only.
        let view = Comm {
            runtime: runtime.clone(),
            cid: self.cid,
            context: self.context,
            rank: self.rank,
            size: local.size,
            members: local.members.clone(),
            coll: std::sync::Arc::new(coll),
            remote_context: self.context,
            inter: None,
        };
        // A failed dup failed on every member (its agreement is collective); the group
        // then keeps to core's schedules.
        let node_comm = view.dup().ok()?;
        node_comm.coll.shm_for(CollOp::Barrier).is_some().then_some(node_comm)
    }

    fn run_on_node(
        &self,
        node: &Comm,
        op: CollOp,
        args: &CollArgs<'_>,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<(), CollectiveError> {
        let leader = self.rank == 0;
        let to_leader = args.with_root(Root::Rank(0));
        // The leader's exchange with the other group, whose outcome the group then learns
        // from the leader (a failed exchange must not leave the rest waiting on it).
        let exchanged = match op {
            CollOp::Barrier => {
                // Everyone here has entered before the leaders trade that.
                node.barrier()?;
                leader.then(|| self.with_remote_leader(op, args, &[], &mut []))
            }
            CollOp::Bcast => leader.then(|| self.with_remote_leader(op, args, &[], recv)),
            CollOp::Reduce | CollOp::Allreduce => {
                let mut reduced = vec![0u8; if leader { send.len() } else { 0 }];
                node.collective(CollOp::Reduce, &to_leader, send, &mut reduced)?;
                let into: &mut [u8] = if op == CollOp::Allreduce { recv } else { &mut [] };
                leader.then(|| self.with_remote_leader(op, args, &reduced, into))
            }
            _ => return Err(CollectiveError::InterNotSupported),
        };
        let mut outcome = Outcome::of(exchanged.as_ref());
        node.bcast(&mut outcome.0, 0)?;
        if let Some(Err(error)) = exchanged {
            return Err(error);
        }
        outcome.into_result()?;
        match op {
            CollOp::Bcast | CollOp::Allreduce => {
                let whole = CollArgs::new(recv.len(), Datatype::U8).with_root(Root::Rank(0));
                node.collective(CollOp::Bcast, &whole, &[], recv)
            }
            _ => Ok(()),
        }
    }

    /// The leader's part of `op` with the other group: core's inter-communicator schedule
    /// for a group of one, whose local phases are empty or a copy.
    fn with_remote_leader(
        &self,
        op: CollOp,
        args: &CollArgs<'_>,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<(), CollectiveError> {
        let alone = Ctx::new(0, 1).map_err(CollectiveError::Coll)?;
        let schedule =
            Schedule::inter(op, alone, self.size as u32, args).map_err(CollectiveError::Coll)?;
        self.execute(schedule, send, recv)
    }
}

/// The leader's exchange as its group learns it: 0 done, 1 failed on a failed group (the
/// bridge's reason follows), 2 failed otherwise.
struct Outcome([u8; 8]);

impl Outcome {
    fn of(exchanged: Option<&Result<(), CollectiveError>>) -> Outcome {
        let (kind, reason) = match exchanged {
            None | Some(Ok(())) => (0u32, 0u32),
            Some(Err(CollectiveError::P2p(P2pError::GroupFailed { reason }))) => (1, *reason),
            Some(Err(_)) => (2, 0),
        };
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&kind.to_le_bytes());
        bytes[4..].copy_from_slice(&reason.to_le_bytes());
        Outcome(bytes)
    }

    fn into_result(self) -> Result<(), CollectiveError> {
        let word = |at: usize| {
            u32::from_le_bytes([self.0[at], self.0[at + 1], self.0[at + 2], self.0[at + 3]])
        };
        match word(0) {
            0 => Ok(()),
            1 => Err(CollectiveError::P2p(P2pError::GroupFailed { reason: word(4) })),
            _ => Err(CollectiveError::LeaderFailed),
        }
    }
}
