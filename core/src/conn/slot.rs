//! One peer's entry in the connection table.

use super::event::{Connection, ConnectionId, FailReason};
use super::identity::{Addr, Identity};
use super::packet::PacketKind;

/// Our own request to a peer: its nonce, its number in our count of attempts, and where
/// requests go.
#[derive(Clone, Copy, Debug)]
pub(super) struct Attempt {
    pub nonce: u64,
    pub number: u64,
    pub to: Addr,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Phase {
    /// We sent requests and wait for an accept.
    Connecting(Attempt),
    /// We accepted the peer's requests and wait for a confirm. `initiator_nonce` is the
    /// latest request's, which our repeated accepts answer; `initiator_number` the highest
    /// number among the requests. `own` is our attempt when the peer's request won a
    /// tie-break: kept alive, because that request may be stale (the peer gave up on it),
    /// in which case the peer will accept ours.
    Accepting { initiator_nonce: u64, initiator_number: u64, peer_addr: Addr, own: Option<Attempt> },
    /// `peer_count` is the highest count the peer sent in the handshake that made the
    /// connection: its requests numbered up to it began before, so they are stale.
    Established { conn: Connection, unreported: bool, peer_count: u64 },
    /// Kept until the failure is polled.
    Failed(FailReason),
}

/// Datagrams owed to a peer, as bits, so that repeats coalesce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Owed(u8);

impl Owed {
    fn bit(kind: PacketKind) -> u8 {
        match kind {
            PacketKind::Request => 1,
            PacketKind::Accept => 2,
            PacketKind::Confirm => 4,
        }
    }

    pub fn add(&mut self, kind: PacketKind) {
        self.0 |= Self::bit(kind);
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn clear(&mut self) {
        self.0 = 0;
    }

    /// Removes and returns one owed kind.
    pub fn take(&mut self) -> Option<PacketKind> {
        let kind = [PacketKind::Request, PacketKind::Accept, PacketKind::Confirm]
            .into_iter()
            .find(|k| self.0 & Self::bit(*k) != 0)?;
        self.0 &= !Self::bit(kind);
        Some(kind)
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    pub peer: Identity,
    /// Where answers (accepts, confirms) go: the path the peer's latest datagram came by.
    pub reply_to: Addr,
    pub phase: Phase,
    pub owed: Owed,
    /// Retransmission rounds so far.
    pub rounds: u32,
    /// When to retransmit; `u64::MAX` until the round's first datagram is sent.
    pub retry_at: u64,
    /// When the handshake fails; set when the handshake begins, never extended by datagrams.
    pub deadline: u64,
    /// A connection the peer replaced with a new handshake, not reported yet.
    pub superseded: Option<ConnectionId>,
    /// `connect` was called while we accepted the peer's request: where our own attempt
    /// goes if that handshake fails.
    pub then_connect: Option<Addr>,
    /// Drawn afresh for every slot and mixed into the responder's nonces: once a slot is
    /// closed and made again, a late confirm of an accept the old slot sent matches no
    /// accept of the new one.
    pub salt: u64,
    /// The address announced to this peer in requests and accepts, when the platform set
    /// one of its own for it ([`super::Endpoint::announce`]); otherwise the endpoint's.
    pub announce: Option<Addr>,
}

impl Slot {
    pub fn new(peer: Identity, reply_to: Addr, phase: Phase, deadline: u64, salt: u64) -> Self {
        let mut slot = Slot {
            peer,
            reply_to,
            phase,
            owed: Owed::default(),
            rounds: 0,
            retry_at: u64::MAX,
            deadline,
            superseded: None,
            then_connect: None,
            salt,
            announce: None,
        };
        slot.owe_round();
        slot
    }

    /// Owes the datagrams of one (re)transmission round of an open handshake.
    pub fn owe_round(&mut self) {
        match self.phase {
            Phase::Connecting(_) => self.owed.add(PacketKind::Request),
            Phase::Accepting { own, .. } => {
                self.owed.add(PacketKind::Accept);
                if own.is_some() {
                    self.owed.add(PacketKind::Request);
                }
            }
            Phase::Established { .. } | Phase::Failed(_) => {}
        }
    }

    /// When the handshake's timers next need `handle_timeout`.
    pub fn timer(&self) -> Option<u64> {
        match self.phase {
            Phase::Connecting(_) | Phase::Accepting { .. } => {
                Some(self.retry_at.min(self.deadline))
            }
            Phase::Established { .. } | Phase::Failed(_) => None,
        }
    }
}
