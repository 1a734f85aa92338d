//! The ring protocol: draining every inbound ring (messages, fragments and the single-copy
//! control cells) and pushing what waits to go out, in cells.

use super::links::Guests;
use super::matching::{Arrival, Body};
use super::receive::take_payload;
use super::rendezvous::{written_cell, ClearToSend, CONTROL_BYTES};
use super::send::Outgoing;
use super::{Engine, Feed, Peer, Sink};
use crate::runtime::error::P2pError;
use crate::shm::layout::RING_DEPTH;
use crate::shm::{cma, CellHeader, CellKind, Ring};
use crate::transport::shm::ShmTransport;

impl Engine {
    /// Drains every inbound ring (and takes what the message links hold) and pushes what
    /// waits to go out.
    /// Bytes for the receive in `sink` go straight into it; cells of the streamed send in
    /// `feed` come from it.
    pub(crate) fn progress(
        &mut self,
        fabric: &ShmTransport,
        sink: Option<&mut Sink<'_>>,
        feed: Option<&Feed<'_>>,
    ) -> Result<(), P2pError> {
        self.with_guests(|engine, guests| engine.progress_with(fabric, guests, sink, feed))
    }

    fn progress_with(
        &mut self,
        fabric: &ShmTransport,
        guests: &Guests,
        mut sink: Option<&mut Sink<'_>>,
        feed: Option<&Feed<'_>>,
    ) -> Result<(), P2pError> {
        for source in guests.shm_peers(fabric) {
            if !guests.vacant(fabric, source) {
                self.drain(fabric, guests, source, sink.as_deref_mut())?;
            }
        }
        self.poll_messages(sink)?;
        self.blocked.clear();
        if self.peers.maybe_outbound() {
            for i in 0..self.peers.len() {
                if let Some(dest) = self.peers.waiting(i) {
                    self.push_out(fabric, guests, dest, feed);
                }
            }
            self.peers.settle();
        }
        if std::mem::take(&mut self.news) {
            fabric.notify(fabric.rank);
        }
        Ok(())
    }

    fn drain(
        &mut self,
        fabric: &ShmTransport,
        guests: &Guests,
        source: usize,
        mut sink: Option<&mut Sink<'_>>,
    ) -> Result<(), P2pError> {
        let link = guests.link(fabric, source)?;
        let ring = link.inbox();
        let corrupt = P2pError::CorruptQueue { peer: source };
        let mut popped = false;
        for _ in 0..RING_DEPTH {
            let header = match ring.peek() {
                Ok(Some(header)) => header,
                Ok(None) => break,
                Err(_) => return Err(corrupt),
            };
            match header.kind {
                CellKind::Message | CellKind::ReadyToSend => {
                    if self.peers.inbound(source).is_some() {
                        return Err(corrupt);
                    }
                    let len = header.total_len as usize;
                    let body = if header.kind == CellKind::Message {
                        Body::Copied { pending: self.pool.take(), in_sink: 0, received: 0 }
                    } else {
                        Body::Remote {
                            slot: source,
                            address: header.address,
                            sender_id: header.id,
                            split: None,
                        }
                    };
                    let id = self.arrivals.next_id();
                    let mut arrival = Arrival {
                        context: header.context,
                        source: Peer::Shm(source),
                        rank: header.source,
                        tag: header.tag,
                        len,
                        body,
                        recv: None,
                        discard: false,
                    };
                    // Matched and filled before it is stored: one map insert per message.
                    self.arrive(id, &mut arrival);
                    if header.kind == CellKind::Message {
                        take_payload(&mut arrival, &ring, &header, sink.as_deref_mut());
                        if !arrival.complete() {
                            self.peers.open(source).inbound = Some(id);
                        }
                    }
                    let stored = self.arrivals.insert(arrival);
                    debug_assert_eq!(stored, id);
                }
                CellKind::Fragment => {
                    let id = self.peers.inbound(source).ok_or(corrupt)?;
                    if self.deliver(id, &ring, &header, sink.as_deref_mut()) {
                        self.peers.open(source).inbound = None;
                    }
                }
                CellKind::Finished => {
                    self.rendezvous.remove(&header.id);
                    match self.owned_rendezvous.remove(&header.id) {
                        Some(data) => self.pool.recycle(data),
                        None => {
                            self.finished_sends.insert(header.id);
                        }
                    }
                    self.news = true;
                }
                CellKind::ClearToSend => {
                    // The receiver asks for bytes `offset..offset + part` of the message.
                    let mut bytes = [0u8; CONTROL_BYTES];
                    if header.fragment_len as usize != CONTROL_BYTES {
                        return Err(corrupt);
                    }
                    ring.read_payload(&header, &mut bytes);
                    let (offset, part, target) = ClearToSend::decode(&bytes);
                    let errno = match self.rendezvous.get(&header.id) {
                        Some(&(dest, address, len))
                            if dest == source
                                && offset
                                    .checked_add(part)
                                    .is_some_and(|end| end <= len as u64) =>
                        {
                            let local = address + offset;
                            let part = part as usize;
                            let pid = guests.pid_of(fabric, source).unwrap_or(0);
                            match cma::write(pid, local, target, part) {
                                Ok(()) => 0,
                                Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
                            }
                        }
                        _ => libc::EINVAL,
                    };
                    self.send_control(fabric, guests, source, written_cell(header.id, errno));
                }
                CellKind::Written => {
                    let mut errno = [0u8; 4];
                    if header.fragment_len != 4 {
                        return Err(corrupt);
                    }
                    ring.read_payload(&header, &mut errno);
                    self.written.insert((source, header.id), i32::from_le_bytes(errno));
                    self.news = true;
                }
            }
            ring.pop();
            popped = true;
        }
        if popped {
            link.notify(fabric);
        }
        Ok(())
    }

    pub(super) fn push_out(
        &mut self,
        fabric: &ShmTransport,
        guests: &Guests,
        dest: usize,
        feed: Option<&Feed<'_>>,
    ) {
        let Ok(link) = guests.link(fabric, dest) else {
            // The peer's group is gone: what waited for it goes nowhere.
            self.peers.forget(dest);
            return;
        };
        let ring = link.outbox();
        let mut pushed = false;
        let Self { peers, pool, blocked, .. } = self;
        let peer = peers.open(dest);
        while let Some(cell) = peer.control.front() {
            if !ring.try_push(&cell.header, cell.payload()) {
                break;
            }
            peer.control.pop_front();
            pushed = true;
        }
        'queue: while let Some(out) = peer.outbound.front_mut() {
            let (header, payload, sent, started) = match out {
                Outgoing::Owned { header, payload, sent, started } => {
                    (*header, &payload[..], sent, started)
                }
                Outgoing::Borrowed { id, header, sent, started } => match feed {
                    Some(feed) if feed.send == *id => (*header, feed.buf, sent, started),
                    _ => break,
                },
            };
            while !*started || *sent < payload.len() {
                let chunk = &payload[*sent..payload.len().min(*sent + Ring::PAYLOAD_BYTES)];
                let cell = if *started {
                    CellHeader {
                        kind: CellKind::Fragment,
                        fragment_len: chunk.len() as u32,
                        ..header
                    }
                } else {
                    CellHeader { fragment_len: chunk.len() as u32, ..header }
                };
                if !ring.try_push(&cell, chunk) {
                    break 'queue;
                }
                *started = true;
                *sent += chunk.len();
                pushed = true;
            }
            if let Some(Outgoing::Owned { payload, .. }) = peer.outbound.pop_front() {
                pool.recycle(payload);
            }
        }
        // A waiter watches home rings for room; a guest rings our bridge bell when it pops.
        if peer.has_outbound() && !ring.has_room() && dest < fabric.size {
            blocked.push(dest);
        }
        if pushed {
            link.notify(fabric);
        }
    }
}
