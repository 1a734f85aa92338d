//! An endpoint's datagram input: each handshake datagram against the peer's entry.

use super::endpoint::Endpoint;
use super::event::{Connection, ConnectionId};
use super::identity::Addr;
use super::packet::{Packet, PacketKind};
use super::slot::{Phase, Slot};

impl<const N: usize> Endpoint<N> {
    /// Takes in one datagram that arrived from `from`. Anything that is not a valid step of
    /// a handshake with this endpoint is dropped and counted in [`stats`](Self::stats).
    pub fn handle_datagram(&mut self, now: u64, from: Addr, bytes: &[u8]) {
        let Ok(p) = Packet::decode(bytes) else {
            self.stats.malformed += 1;
            return;
        };
        if p.token != self.config.token {
            self.stats.bad_token += 1;
            return;
        }
        if p.receiver != self.local || p.sender == self.local {
            self.stats.misdirected += 1;
            return;
        }
        match p.kind {
            PacketKind::Request => self.on_request(now, from, &p),
            PacketKind::Accept => self.on_accept(from, &p),
            PacketKind::Confirm => self.on_confirm(from, &p),
        }
    }

    fn on_request(&mut self, now: u64, from: Addr, p: &Packet) {
        let accepting = |own| Phase::Accepting {
            initiator_nonce: p.initiator_nonce,
            initiator_number: p.count,
            peer_addr: p.addr,
            own,
        };
        let deadline = now.saturating_add(self.config.timeout);
        let salt = self.next_salt();
        let Some(i) = self.slot(p.sender) else {
            let fresh = Slot::new(p.sender, from, accepting(None), deadline, salt);
            if self.slots.push(fresh).is_err() {
                self.stats.table_full += 1;
            }
            return;
        };
        let slot = &mut self.slots[i];
        match slot.phase {
            // Both sides are connecting: the attempt of the lower identity wins.
            Phase::Connecting(own) if p.sender < self.local => {
                slot.phase = accepting(Some(own));
            }
            Phase::Accepting { initiator_nonce, .. } if initiator_nonce == p.initiator_nonce => {
                // Our accept was lost or is late: answer again, now.
                self.stats.duplicates += 1;
            }
            // Another attempt of the peer's: a new one (its earlier one ended) or a stale
            // one. Each is answered with the accept that belongs to it, so neither undoes
            // the other; repeats follow the latest.
            Phase::Accepting { own, initiator_number, .. } => {
                slot.phase = Phase::Accepting {
                    initiator_nonce: p.initiator_nonce,
                    initiator_number: initiator_number.max(p.count),
                    peer_addr: p.addr,
                    own,
                };
            }
            Phase::Established { conn, .. }
                if conn.id.initiator == p.sender
                    && conn.id.initiator_nonce == p.initiator_nonce =>
            {
                self.stats.duplicates += 1;
                return;
            }
            // The peer began this attempt after the connection was made: it closed or lost
            // its side. Follow it; the old connection is reported gone.
            Phase::Established { conn, unreported, peer_count } if p.count > peer_count => {
                // The platform knows of the connection it was last told of: this one, or an
                // earlier one already superseded but not reported yet.
                let told = slot.superseded.or((!unreported).then_some(conn.id));
                *slot = Slot::new(p.sender, from, accepting(None), deadline, salt);
                slot.superseded = told;
                return;
            }
            Phase::Connecting(_) | Phase::Established { .. } | Phase::Failed(_) => {
                self.stats.unsolicited += 1;
                return;
            }
        }
        slot.reply_to = from;
        slot.owed.add(PacketKind::Accept);
    }

    fn on_accept(&mut self, from: Addr, p: &Packet) {
        let Some(i) = self.slot(p.sender) else {
            self.stats.unsolicited += 1;
            return;
        };
        let local = self.local;
        let slot = &mut self.slots[i];
        let id = ConnectionId {
            initiator: local,
            initiator_nonce: p.initiator_nonce,
            responder_nonce: p.responder_nonce,
        };
        // While we accept the peer's request, an accept of ours counts only if the peer
        // sent it after it began that request: otherwise its request is the newer attempt,
        // and wins.
        let current = match slot.phase {
            Phase::Connecting(own) => own.nonce == p.initiator_nonce,
            Phase::Accepting { own: Some(own), initiator_number, .. } => {
                own.nonce == p.initiator_nonce && p.count >= initiator_number
            }
            _ => false,
        };
        match slot.phase {
            Phase::Connecting(_) | Phase::Accepting { .. } if current => {
                let conn = Connection { peer: p.sender, peer_addr: p.addr, via: from, id };
                slot.phase = Phase::Established { conn, unreported: true, peer_count: p.count };
                slot.owed.clear();
                slot.owed.add(PacketKind::Confirm);
                slot.reply_to = from;
            }
            Phase::Established { conn, .. } if conn.id == id => {
                // Our confirm was lost: the responder repeats its accept until it arrives.
                // Answer by the path this repeat came (the first may have been a replay).
                self.stats.duplicates += 1;
                slot.owed.add(PacketKind::Confirm);
                slot.reply_to = from;
            }
            Phase::Connecting(_) | Phase::Established { .. } => self.stats.bad_nonce += 1,
            Phase::Accepting { own: Some(_), .. } => self.stats.bad_nonce += 1,
            Phase::Accepting { own: None, .. } | Phase::Failed(_) => self.stats.unsolicited += 1,
        }
    }

    fn on_confirm(&mut self, from: Addr, p: &Packet) {
        let Some(i) = self.slot(p.sender) else {
            self.stats.unsolicited += 1;
            return;
        };
        let ours = p.responder_nonce == self.responder_nonce(i, p.initiator_nonce);
        let slot = &mut self.slots[i];
        let id = ConnectionId {
            initiator: p.sender,
            initiator_nonce: p.initiator_nonce,
            responder_nonce: p.responder_nonce,
        };
        // A confirm counts only if the peer sent it after it began the newest request we
        // accept from it: an older one belongs to a connection the peer has given up since
        // (it closed and connected again), and must not revive it.
        match slot.phase {
            Phase::Accepting { peer_addr, initiator_number, .. }
                if ours && p.count >= initiator_number =>
            {
                let conn = Connection { peer: p.sender, peer_addr, via: from, id };
                slot.phase = Phase::Established { conn, unreported: true, peer_count: p.count };
                slot.owed.clear();
            }
            Phase::Established { conn, .. } if conn.id == id => self.stats.duplicates += 1,
            Phase::Accepting { .. } | Phase::Established { .. } => self.stats.bad_nonce += 1,
            Phase::Connecting(_) | Phase::Failed(_) => self.stats.unsolicited += 1,
        }
    }
}
