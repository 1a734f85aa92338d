//! Moving the transport on: completions, the handshake machine's datagrams and events,
//! connections brought up and failed.

use commcore::conn::{ConnectOutcome, Event, FailReason, Identity};

use super::address::{Announced, VerbsAddress, QKEY};
use super::device::{Completed, Completion, Device, SendOp, WorkError, UD_HEADROOM};
use super::error::{PeerFault, VerbsError};
use super::frame::{self, Frame, FrameKind, PREFIX_LEN};
use super::link::{LinkState, Queued};
use super::transport::{
    wr, Held, VerbsTransport, WR_READ, WR_SEND, WR_SRQ, WR_UD_RECV, WR_UD_SEND,
};

/// How often the transport looks for connections that never came up or stopped
/// completing work (microseconds).
pub(super) const WATCH_US: u64 = 100_000;

impl<D: Device> VerbsTransport<D> {
    /// One pass without waiting: completions, handshake timers, connections that never
    /// came up. Returns the first peer failure not reported yet.
    pub fn progress(&mut self) -> Result<(), VerbsError> {
        let mut batch =
            [Completion { wr_id: 0, qpn: self.ud_qp, result: Ok(Completed::Send), byte_len: 0 };
                32];
        loop {
            let n = self.device.poll(&mut batch);
            for c in &batch[..n] {
                self.on_completion(*c)?;
            }
            if n < batch.len() {
                break;
            }
        }
        let now = self.device.now_micros();
        if self.endpoint.poll_timeout().is_some_and(|t| t <= now) {
            self.endpoint.handle_timeout(now);
        }
        self.drive();
        if now >= self.next_watch {
            self.next_watch = now + WATCH_US;
            self.watch(now);
        }
        self.faults.pop_front().map_or(Ok(()), Err)
    }

    /// Every [`WATCH_US`]: connections that never came up, and peers whose queue pair
    /// completed none of the work outstanding to it for `ack_timeout`.
    fn watch(&mut self, now: u64) {
        let limit = (self.settings.ack_timeout.as_micros() as u64).div_ceil(WATCH_US).max(1);
        for peer in 0..self.links.len() {
            let link = &mut self.links[peer];
            let stalled = u64::from(link.watch());
            match link.state {
                LinkState::AwaitReady { deadline } if now >= deadline => {
                    self.fail(peer, PeerFault::NeverReady);
                }
                LinkState::Up | LinkState::AwaitReady { .. } if stalled >= limit => {
                    let waited_ms = stalled * WATCH_US / 1000;
                    self.fail(peer, PeerFault::Unresponsive { waited_ms });
                }
                _ => {}
            }
        }
    }

    /// The earliest time the transport has work of its own to do (timers), on the
    /// device's clock.
    pub fn next_timer(&self) -> Option<u64> {
        let watched = self
            .links
            .iter()
            .any(|l| l.unacked > 0 || matches!(l.state, LinkState::AwaitReady { .. }));
        let watch = watched.then_some(self.next_watch);
        watch.into_iter().chain(self.endpoint.poll_timeout()).min()
    }

    /// Begins the handshake with `peer` (a no-op when it runs or is done).
    pub fn connect(&mut self, peer: usize) -> Result<(), VerbsError> {
        self.report(peer)?;
        if self.links[peer].state != LinkState::Idle || peer == self.rank {
            return Ok(());
        }
        let Some(address) = self.peers[peer] else {
            self.fail(peer, PeerFault::NoDevice);
            return self.report(peer);
        };
        let id = Identity::new(self.pgid, peer as u32);
        let now = self.device.now_micros();
        match self.endpoint.connect(now, id, address.to_addr()) {
            Ok(ConnectOutcome::Started | ConnectOutcome::InProgress) => {}
            Ok(ConnectOutcome::Connected(_)) => {}
            Err(_) => {
                self.fail(peer, PeerFault::TableFull);
                return self.report(peer);
            }
        }
        self.links[peer].state = LinkState::Connecting;
        self.drive();
        self.report(peer)
    }

    /// Peer `peer` cannot be reached: its queue pair goes, its queued frames are dropped,
    /// its long sends end, and the failure is reported once.
    pub(super) fn fail(&mut self, peer: usize, fault: PeerFault) {
        let Some(link) = self.links.get_mut(peer) else { return };
        if matches!(link.state, LinkState::Failed(_)) {
            return;
        }
        link.state = LinkState::Failed(fault);
        link.queue.clear();
        link.queued_bytes = 0;
        if let Some((qpn, _)) = link.qp.take() {
            self.by_qpn.remove(&qpn);
            let _ = self.device.destroy_qp(qpn);
        }
        self.endpoint.close(Identity::new(self.pgid, peer as u32));
        let ended: Vec<u64> =
            self.lent.iter().filter(|(_, (p, _))| *p == peer).map(|(&id, _)| id).collect();
        for id in ended {
            if let Some((_, used)) = self.lent.remove(&id) {
                self.release(used);
            }
        }
        self.faults.push_back(VerbsError::peer(peer, fault));
    }

    /// Sends the datagrams the handshake machine owes and acts on its events.
    pub(super) fn drive(&mut self) {
        let now = self.device.now_micros();
        // Every open handshake announces the RC queue pair made for it.
        while let Some((id, _)) = self.endpoint.unannounced() {
            let peer = id.lpid as usize;
            if id.pgid.0 != self.pgid || peer >= self.links.len() || peer == self.rank {
                self.endpoint.close(id);
                continue;
            }
            let qp = match self.links[peer].qp {
                Some(qp) => qp,
                None => match self.device.create_rc_qp() {
                    Ok(qp) => {
                        self.links[peer].qp = Some(qp);
                        self.by_qpn.insert(qp.0, peer);
                        qp
                    }
                    Err(_) => {
                        self.endpoint.close(id);
                        self.fail(peer, PeerFault::TableFull);
                        continue;
                    }
                },
            };
            self.endpoint.announce(id, self.me.announce(Some(qp)));
            if self.links[peer].state == LinkState::Idle {
                self.links[peer].state = LinkState::Connecting;
            }
        }
        while let Some(datagram) = self.endpoint.poll_transmit(now) {
            let Some(to) = Announced::from_addr(&datagram.to) else { continue };
            let Some(slot) = self.ud_send_free.pop() else { continue }; // retransmitted later
            let bytes = datagram.payload();
            self.ud_send.buffer_mut(slot)[..bytes.len()].copy_from_slice(bytes);
            let sge = self.ud_send.sge(slot, bytes.len());
            let op = SendOp::Datagram(to.ud.ud_dest());
            match self.device.post_send(self.ud_qp, wr(WR_UD_SEND, slot), sge, op) {
                Ok(()) => {
                    if let Some(link) = self
                        .peers
                        .iter()
                        .position(|a| a.is_some_and(|a| a.ud_dest() == to.ud.ud_dest()))
                        .and_then(|p| self.links.get_mut(p))
                    {
                        link.datagrams += 1;
                    }
                }
                Err(_) => self.ud_send_free.push(slot),
            }
        }
        while let Some(event) = self.endpoint.poll_event() {
            match event {
                Event::Connected(conn) => self.connected(
                    conn.peer,
                    &conn.peer_addr,
                    conn.id.initiator == self.endpoint.local(),
                ),
                Event::Superseded { peer, .. } => {
                    self.fail(peer.lpid as usize, PeerFault::Reconnected)
                }
                Event::Failed { peer, reason } => {
                    let fault = match reason {
                        FailReason::NoAnswer => PeerFault::NoAnswer,
                        FailReason::Unconfirmed => PeerFault::Unconfirmed,
                    };
                    self.fail(peer.lpid as usize, fault);
                }
            }
        }
    }

    /// The handshake with `id` finished: the RC queue pair connects to the one the peer
    /// announced. The responder is up at once and says so; the initiator waits for that.
    fn connected(&mut self, id: Identity, peer_addr: &commcore::conn::Addr, initiator: bool) {
        let peer = id.lpid as usize;
        let (Some(dest), Some((qpn, _))) = (
            Announced::from_addr(peer_addr).and_then(|a| a.rc_dest()),
            self.links.get(peer).and_then(|l| l.qp),
        ) else {
            self.fail(peer, PeerFault::Corrupt);
            return;
        };
        if self.device.connect_rc_qp(qpn, dest).is_err() {
            self.fail(peer, PeerFault::Corrupt);
            return;
        }
        let link = &mut self.links[peer];
        link.credits = self.settings.credits;
        if initiator {
            let timeout = self.settings.handshake.timeout;
            link.state = LinkState::AwaitReady { deadline: self.device.now_micros() + timeout };
        } else {
            link.state = LinkState::Up;
            link.push(Queued { kind: FrameKind::Ready, bytes: vec![0u8; PREFIX_LEN] }, true);
            let _ = self.flush(peer);
        }
    }

    fn on_completion(&mut self, c: Completion) -> Result<(), VerbsError> {
        let kind = c.wr_id >> 56;
        let index = (c.wr_id & ((1 << 56) - 1)) as usize;
        match (kind, c.result) {
            (WR_UD_SEND, _) => self.ud_send_free.push(index),
            (WR_UD_RECV, Ok(Completed::Datagram { gid, lid, qpn })) => {
                let from = VerbsAddress { gid, lid, qpn, qkey: QKEY }.to_addr();
                let len = (c.byte_len as usize).min(self.ud_recv.size() - UD_HEADROOM);
                let now = self.device.now_micros();
                let bytes = &self.ud_recv.buffer(index)[UD_HEADROOM..UD_HEADROOM + len];
                self.endpoint.handle_datagram(now, from, bytes);
                self.repost_ud(index)?;
                self.drive();
            }
            (WR_UD_RECV, _) => self.repost_ud(index)?,
            (WR_SEND, result) => {
                self.send_free.push(index);
                if let Err(e) = result {
                    self.fail_qp(c.qpn, e);
                } else if let Some(&peer) = self.by_qpn.get(&c.qpn) {
                    self.links[peer].acked();
                    self.flush(peer)?;
                }
            }
            (WR_READ, result) => {
                if let Some(&peer) = self.by_qpn.get(&c.qpn) {
                    self.links[peer].acked();
                }
                if let Some(slot) = self.reads.get_mut(&(index as u64)) {
                    *slot = Some(result.is_ok());
                }
                if let Err(e) = result {
                    self.fail_qp(c.qpn, e);
                }
            }
            (WR_SRQ, Ok(_)) => self.on_frame(c.qpn, index, c.byte_len as usize)?,
            (WR_SRQ, Err(e)) => {
                self.fail_qp(c.qpn, e);
                self.repost_srq(index)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn fail_qp(&mut self, qpn: super::device::Qpn, e: WorkError) {
        if let Some(&peer) = self.by_qpn.get(&qpn) {
            self.fail(peer, PeerFault::Gone(e));
        }
    }

    /// A frame landed in receive buffer `index` on the queue pair of a peer.
    fn on_frame(
        &mut self,
        qpn: super::device::Qpn,
        index: usize,
        len: usize,
    ) -> Result<(), VerbsError> {
        let Some(&peer) = self.by_qpn.get(&qpn) else {
            return self.repost_srq(index); // a queue pair destroyed meanwhile
        };
        let parsed = frame::parse(&self.srq.buffer(index)[..len]).map(|(credits, f)| {
            let kind = match f {
                Frame::Data(..) => FrameKind::Data,
                Frame::Long(..) => FrameKind::Long,
                Frame::Done(id) => return (credits, FrameKind::Done, id),
                Frame::Ready => FrameKind::Ready,
                Frame::Credit => FrameKind::Credit,
                Frame::Bye => FrameKind::Bye,
            };
            (credits, kind, 0)
        });
        let Some((credits, kind, id)) = parsed else {
            self.fail(peer, PeerFault::Corrupt);
            return self.repost_srq(index);
        };
        let link = &mut self.links[peer];
        link.credits = link.credits.saturating_add(credits);
        if kind.takes_credit() {
            self.held.push_back(Held { from: peer, buffer: index, len });
            return Ok(());
        }
        match kind {
            FrameKind::Ready if matches!(link.state, LinkState::AwaitReady { .. }) => {
                link.state = LinkState::Up
            }
            FrameKind::Bye => link.state = LinkState::Finished,
            FrameKind::Done => {
                if let Some((_, used)) = self.lent.remove(&id) {
                    self.release(used);
                    self.written.push(id);
                }
            }
            _ => {}
        }
        self.repost_srq(index)?;
        if self.links[peer].state == LinkState::Up {
            self.flush(peer)?;
        }
        Ok(())
    }
}
