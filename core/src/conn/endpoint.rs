//! One endpoint's side of every handshake: the connection table, commands, timers and
//! outputs. Datagram input is in `receive.rs`.

use heapless::Vec;

use super::config::Config;
use super::event::{ConnError, Connection, Datagram, Event, FailReason, Stats};
use super::identity::{Addr, Identity};
use super::packet::{Packet, PacketKind, PACKET_MAX};
use super::slot::{Attempt, Phase, Slot};

/// What [`Endpoint::connect`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnectOutcome {
    /// A handshake began; an [`Event`] will report how it ends.
    Started,
    /// A handshake with the peer is in progress already (ours or the peer's); its
    /// [`Event`] will report how it ends.
    InProgress,
    /// The peer is connected already.
    Connected(Connection),
}

/// Where a peer's handshake stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerState {
    /// We sent requests and wait for an accept.
    Connecting,
    /// We accepted the peer's request and wait for its confirm.
    Accepting,
    /// Connected.
    Established,
    /// The handshake failed; the [`Event::Failed`] has not been polled yet.
    Failed,
}

/// The handshake state machine of one endpoint, talking to at most `N` peers at a time.
///
/// Inputs: [`connect`](Self::connect), [`close`](Self::close),
/// [`handle_datagram`](Self::handle_datagram), [`handle_timeout`](Self::handle_timeout).
/// Outputs, polled until `None` after every input: [`poll_transmit`](Self::poll_transmit),
/// [`poll_event`](Self::poll_event), then [`poll_timeout`](Self::poll_timeout) for when to
/// call `handle_timeout` next. Getters: [`peer_state`](Self::peer_state),
/// [`connection`](Self::connection), [`stats`](Self::stats).
#[derive(Debug)]
pub struct Endpoint<const N: usize> {
    pub(super) local: Identity,
    addr: Addr,
    pub(super) config: Config,
    seed: u64,
    /// Attempts begun so far; an attempt's number is this count once it began.
    pub(super) attempts_begun: u64,
    /// Slots made so far (for their salts).
    slots_made: u64,
    pub(super) slots: Vec<Slot, N>,
    /// Where `poll_transmit` and `poll_event` start scanning, so no peer starves.
    cursor: usize,
    pub(super) stats: Stats,
}

/// SplitMix64's output function: a bijection that spreads a counter over 64 bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<const N: usize> Endpoint<N> {
    /// The endpoint of process `local`, reachable at `addr`. `seed` (from the platform's
    /// randomness) makes its nonces unpredictable to other processes.
    pub fn new(local: Identity, addr: Addr, config: Config, seed: u64) -> Result<Self, ConnError> {
        config.check()?;
        Ok(Self {
            local,
            addr,
            config,
            seed,
            attempts_begun: 0,
            slots_made: 0,
            slots: Vec::new(),
            cursor: 0,
            stats: Stats::default(),
        })
    }

    /// This endpoint's identity.
    pub fn local(&self) -> Identity {
        self.local
    }

    /// Where the handshake with `peer` stands; `None` when no state is kept for it.
    pub fn peer_state(&self, peer: Identity) -> Option<PeerState> {
        self.slot(peer).map(|i| match self.slots[i].phase {
            Phase::Connecting(_) => PeerState::Connecting,
            Phase::Accepting { .. } => PeerState::Accepting,
            Phase::Established { .. } => PeerState::Established,
            Phase::Failed(_) => PeerState::Failed,
        })
    }

    /// The connection to `peer`, if it is up.
    pub fn connection(&self, peer: Identity) -> Option<Connection> {
        match self.slots[self.slot(peer)?].phase {
            Phase::Established { conn, .. } => Some(conn),
            _ => None,
        }
    }

    /// Peers with state in the table (at most `N`).
    pub fn peers(&self) -> usize {
        self.slots.len()
    }

    /// Datagrams dropped or answered again, by cause.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Begins a handshake with `peer`, reachable at `addr`, unless one is in progress or
    /// done (a connection not yet reported is returned, and its event still comes). A
    /// failure not yet polled is dropped: this attempt replaces it. While we
    /// accept the peer's request, our attempt waits: it begins only if that handshake
    /// fails (the request was stale), so it ends within twice the timeout.
    pub fn connect(
        &mut self,
        now: u64,
        peer: Identity,
        addr: Addr,
    ) -> Result<ConnectOutcome, ConnError> {
        if peer == self.local {
            return Err(ConnError::SelfConnect);
        }
        let deadline = now.saturating_add(self.config.timeout);
        let i = match self.slot(peer) {
            Some(i) => i,
            None => {
                let own = self.begin_attempt(addr);
                let salt = self.next_salt();
                let fresh = Slot::new(peer, addr, Phase::Connecting(own), deadline, salt);
                self.slots.push(fresh).map_err(|_| ConnError::TableFull { capacity: N })?;
                return Ok(ConnectOutcome::Started);
            }
        };
        match self.slots[i].phase {
            Phase::Connecting(_) | Phase::Accepting { own: Some(_), .. } => {
                Ok(ConnectOutcome::InProgress)
            }
            Phase::Established { conn, .. } => Ok(ConnectOutcome::Connected(conn)),
            Phase::Failed(_) => {
                self.restart_connecting(i, addr, deadline);
                Ok(ConnectOutcome::Started)
            }
            // Accepting the peer's request: its handshake may make the connection. If it
            // fails (the request was stale), our own attempt follows.
            Phase::Accepting { own: None, .. } => {
                self.slots[i].then_connect = Some(addr);
                Ok(ConnectOutcome::InProgress)
            }
        }
    }

    /// Forgets `peer` (a connection the platform closed, or a handshake it abandons).
    /// Returns whether any state was kept for it.
    pub fn close(&mut self, peer: Identity) -> bool {
        match self.slot(peer) {
            Some(i) => {
                self.slots.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// From now on, announces `addr` to `peer` in requests and accepts instead of the
    /// endpoint's own address, until the peer's handshake ends or starts over (a failure,
    /// a new attempt, a superseded connection: [`unannounced`](Self::unannounced) then
    /// names the peer again). For a platform that makes a resource per connection before
    /// it is up, e.g. a reliable queue pair whose number the peer must know. Returns
    /// whether any state is kept for `peer`.
    pub fn announce(&mut self, peer: Identity, addr: Addr) -> bool {
        match self.slot(peer) {
            Some(i) => {
                self.slots[i].announce = Some(addr);
                true
            }
            None => false,
        }
    }

    /// A peer whose handshake is open (we connect or accept) with no address of its own
    /// announced yet, with the address the peer announced to us (empty while we only
    /// connect). A platform that uses [`announce`](Self::announce) asks this after every
    /// input and announces before it polls datagrams; one that does not ignores it.
    pub fn unannounced(&self) -> Option<(Identity, Addr)> {
        self.slots.iter().find_map(|s| match s.phase {
            _ if s.announce.is_some() => None,
            Phase::Connecting(_) => Some((s.peer, Addr::EMPTY)),
            Phase::Accepting { peer_addr, .. } => Some((s.peer, peer_addr)),
            Phase::Established { .. } | Phase::Failed(_) => None,
        })
    }

    /// Runs the timers due at `now`: retransmissions and deadlines.
    pub fn handle_timeout(&mut self, now: u64) {
        for i in 0..self.slots.len() {
            let slot = &mut self.slots[i];
            let reason = match slot.phase {
                Phase::Connecting(_) | Phase::Accepting { own: Some(_), .. } => {
                    FailReason::NoAnswer
                }
                Phase::Accepting { own: None, .. } => FailReason::Unconfirmed,
                Phase::Established { .. } | Phase::Failed(_) => continue,
            };
            if now < slot.deadline {
                if now >= slot.retry_at {
                    slot.owe_round();
                    slot.retry_at = u64::MAX;
                }
                continue;
            }
            match slot.then_connect.take() {
                Some(addr) => {
                    let deadline = now.saturating_add(self.config.timeout);
                    self.restart_connecting(i, addr, deadline);
                }
                None => {
                    slot.phase = Phase::Failed(reason);
                    slot.owed.clear();
                }
            }
        }
    }

    /// The earliest time [`handle_timeout`](Self::handle_timeout) has work to do.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.slots.iter().filter_map(Slot::timer).min()
    }

    /// The next datagram to send, if any is owed.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Datagram> {
        let i = self.next_from_cursor(|s| !s.owed.is_empty())?;
        let count = self.attempts_begun;
        let slot = &mut self.slots[i];
        let kind = slot.owed.take()?;
        let (initiator_nonce, responder_nonce, count, addr, to) = match (kind, slot.phase) {
            (PacketKind::Request, Phase::Connecting(own))
            | (PacketKind::Request, Phase::Accepting { own: Some(own), .. }) => {
                (own.nonce, 0, own.number, slot.announce.unwrap_or(self.addr), own.to)
            }
            (PacketKind::Accept, Phase::Accepting { initiator_nonce, .. }) => {
                let nonce = responder_nonce(self.seed ^ slot.salt, slot.peer, initiator_nonce);
                let addr = slot.announce.unwrap_or(self.addr);
                (initiator_nonce, nonce, count, addr, slot.reply_to)
            }
            (PacketKind::Confirm, Phase::Established { conn, .. }) => {
                let id = conn.id;
                (id.initiator_nonce, id.responder_nonce, count, Addr::EMPTY, slot.reply_to)
            }
            _ => {
                debug_assert!(false, "owed {kind:?} in {:?}", slot.phase);
                return None;
            }
        };
        if kind != PacketKind::Confirm && slot.retry_at == u64::MAX {
            slot.retry_at = now.saturating_add(self.config.retry_after(slot.rounds));
            slot.rounds = slot.rounds.saturating_add(1);
        }
        let packet = Packet {
            kind,
            token: self.config.token,
            sender: self.local,
            receiver: slot.peer,
            initiator_nonce,
            responder_nonce,
            count,
            addr,
        };
        let mut bytes = [0u8; PACKET_MAX];
        let len = packet.encode(&mut bytes);
        Some(Datagram::new(to, bytes, len))
    }

    /// The next event, if any. A failed peer's state is dropped once its failure is polled.
    pub fn poll_event(&mut self) -> Option<Event> {
        let i = self.next_from_cursor(|s| {
            s.superseded.is_some()
                || matches!(s.phase, Phase::Established { unreported: true, .. } | Phase::Failed(_))
        })?;
        let slot = &mut self.slots[i];
        if let Some(id) = slot.superseded.take() {
            return Some(Event::Superseded { peer: slot.peer, id });
        }
        match &mut slot.phase {
            Phase::Established { conn, unreported, .. } => {
                *unreported = false;
                Some(Event::Connected(*conn))
            }
            Phase::Failed(reason) => {
                let event = Event::Failed { peer: slot.peer, reason: *reason };
                self.slots.swap_remove(i);
                Some(event)
            }
            _ => None,
        }
    }

    pub(super) fn slot(&self, peer: Identity) -> Option<usize> {
        self.slots.iter().position(|s| s.peer == peer)
    }

    /// The first slot from the cursor on (wrapping) that `wanted` accepts; the cursor moves
    /// past it.
    fn next_from_cursor(&mut self, wanted: impl Fn(&Slot) -> bool) -> Option<usize> {
        let n = self.slots.len();
        let i = (0..n).map(|k| (self.cursor + k) % n).find(|&i| wanted(&self.slots[i]))?;
        self.cursor = i + 1;
        Some(i)
    }

    /// The responder's nonce for a request of `peer`'s accepted in slot `i`: a hash of the
    /// request keyed by the seed and the slot's salt (not cryptographic), so every request
    /// gets its own accept without state, and only a confirm that saw that accept matches.
    pub(super) fn responder_nonce(&self, i: usize, initiator_nonce: u64) -> u64 {
        let slot = &self.slots[i];
        responder_nonce(self.seed ^ slot.salt, slot.peer, initiator_nonce)
    }

    /// A salt for a new slot (see [`Slot::salt`]).
    pub(super) fn next_salt(&mut self) -> u64 {
        self.slots_made += 1;
        mix(self.seed ^ self.slots_made.wrapping_mul(0xc2b2_ae3d_27d4_eb4f))
    }

    /// Slot `i` starts over with a new attempt of ours; a superseded connection not reported
    /// yet is still reported.
    fn restart_connecting(&mut self, i: usize, addr: Addr, deadline: u64) {
        let own = self.begin_attempt(addr);
        let salt = self.next_salt();
        let old = self.slots[i];
        self.slots[i] = Slot::new(old.peer, addr, Phase::Connecting(own), deadline, salt);
        self.slots[i].superseded = old.superseded;
    }

    /// A new attempt: the next number, and a nonce drawn from the seed (never zero).
    fn begin_attempt(&mut self, to: Addr) -> Attempt {
        self.attempts_begun += 1;
        let golden = self.attempts_begun.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let nonce = mix(self.seed ^ golden).max(1);
        Attempt { nonce, number: self.attempts_begun, to }
    }
}

fn responder_nonce(seed: u64, peer: Identity, initiator_nonce: u64) -> u64 {
    let key = mix(seed ^ 0x5851_f42d_4c95_7f2d);
    let peer_bits = (u64::from(peer.pgid.0) << 32) | u64::from(peer.lpid);
    mix(mix(key ^ initiator_nonce) ^ peer_bits).max(1)
}
