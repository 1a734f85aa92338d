//! Starting sends: eagerly into the peer's ring when it fits and nothing queues before it,
//! else queued (copied, or lent by a blocking caller) for progress to push; announced for a
//! single copy when long and enabled. A message transport's peer gets the whole message at
//! once: copied, or when long lent from the caller's buffer until the peer has it.

use super::links::Link;
use super::{Engine, Outbound, Peer, SendStart};
use crate::runtime::error::P2pError;
use crate::shm::{CellHeader, CellKind, Ring};
use crate::transport::shm::ShmTransport;

// A send of one cell or less is done when `start_send` returns, over either transport:
// collectives hand such sends over and reuse the buffer at once.
const _: () = assert!(Ring::PAYLOAD_BYTES < super::message::LENT_SEND_FROM);

/// A message waiting for room in a peer's ring.
pub(super) enum Outgoing {
    Owned { header: CellHeader, payload: Vec<u8>, sent: usize, started: bool },
    Borrowed { id: u64, header: CellHeader, sent: usize, started: bool },
}

impl Engine {
    /// Starts sending `buf` to `peer`; `lend` says whether the caller will lend it until done
    /// (a blocking send) or needs it free at once unless it goes by single copy (isend).
    #[inline]
    pub(crate) fn start_send(
        &mut self,
        fabric: &ShmTransport,
        peer: Peer,
        envelope: Outbound,
        buf: &[u8],
        lend: bool,
    ) -> Result<SendStart, P2pError> {
        match peer {
            Peer::Shm(slot) => self.start_send_shm(fabric, slot, envelope, buf, lend),
            Peer::Message(index) if buf.len() >= super::message::LENT_SEND_FROM => {
                self.send_message_lent(index, envelope, buf)
            }
            Peer::Message(index) => {
                self.send_message(index, envelope, buf).map(|()| SendStart::Done)
            }
        }
    }

    /// A message of one cell to slot `dest` of this job, written into its ring at once when
    /// nothing is queued to it and the ring has room: the hot path of a small send, with no
    /// step through [`Engine::start_send`]. `false`, and nothing done, otherwise (a guest's
    /// is [`Engine::try_send_guest`]).
    #[inline]
    pub(crate) fn try_send_home(
        &mut self,
        fabric: &ShmTransport,
        dest: usize,
        envelope: Outbound,
        buf: &[u8],
    ) -> bool {
        if dest >= fabric.size
            || buf.len() > Ring::PAYLOAD_BYTES
            || self.peers.get(dest).is_some_and(|c| !c.outbound.is_empty())
        {
            return false;
        }
        let cell = envelope.cell(CellKind::Message, buf.len(), buf.len() as u32, 0, 0);
        let pushed = fabric.outbox(dest).try_push(&cell, buf);
        if pushed {
            fabric.notify(dest);
        }
        pushed
    }

    /// [`Engine::try_send_home`] to a guest, peer `dest` from the job's size up: its rings
    /// were found once, when it came, and are one table load away. Out of line, to keep the
    /// home path's code short.
    #[cold]
    #[inline(never)]
    pub(crate) fn try_send_guest(
        &mut self,
        fabric: &ShmTransport,
        dest: usize,
        envelope: Outbound,
        buf: &[u8],
    ) -> bool {
        if dest < fabric.size
            || buf.len() > Ring::PAYLOAD_BYTES
            || self.peers.get(dest).is_some_and(|c| !c.outbound.is_empty())
        {
            return false;
        }
        let cell = envelope.cell(CellKind::Message, buf.len(), buf.len() as u32, 0, 0);
        self.guests.try_push(fabric, dest, &cell, buf)
    }

    /// [`Engine::start_send`] to shared-memory peer `dest`.
    #[inline]
    pub(crate) fn start_send_shm(
        &mut self,
        fabric: &ShmTransport,
        dest: usize,
        envelope: Outbound,
        buf: &[u8],
        lend: bool,
    ) -> Result<SendStart, P2pError> {
        if dest < fabric.size {
            // A slot of this job: its rings need no guest table (the hot path).
            let link = Link::Home { fabric, slot: dest };
            return self.start_send_linked(fabric, link, dest, envelope, buf, lend);
        }
        self.with_guests(|engine, guests| {
            let link = guests.link(fabric, dest)?;
            engine.start_send_linked(fabric, link, dest, envelope, buf, lend)
        })
    }

    /// [`Engine::start_send_shm`] through `link`, the rings of peer `dest`.
    fn start_send_linked(
        &mut self,
        fabric: &ShmTransport,
        link: Link<'_>,
        dest: usize,
        envelope: Outbound,
        buf: &[u8],
        lend: bool,
    ) -> Result<SendStart, P2pError> {
        // Fits: a message is at most MAX_MESSAGE_BYTES (i32::MAX) long.
        let total_len = buf.len() as u32;
        let header = |kind, fragment_len: usize, address: u64, id: u64| {
            envelope.cell(kind, fragment_len, total_len, address, id)
        };
        let idle = self.peers.get(dest).map_or(true, |c| c.outbound.is_empty());
        if buf.len() <= Ring::PAYLOAD_BYTES {
            let cell = header(CellKind::Message, buf.len(), 0, 0);
            if idle && link.outbox().try_push(&cell, buf) {
                link.notify(fabric);
            } else {
                let mut payload = self.pool.take();
                payload.extend_from_slice(buf);
                self.peers.queue(dest).outbound.push_back(Outgoing::Owned {
                    header: cell,
                    payload,
                    sent: 0,
                    started: false,
                });
            }
            return Ok(SendStart::Done);
        }
        if self.single_copy_above.is_some_and(|limit| buf.len() > limit) {
            return Ok(self.announce(fabric, link, dest, envelope, buf));
        }
        let id = self.fresh_id();
        let cell = header(CellKind::Message, 0, 0, id);
        if lend {
            self.peers.queue(dest).outbound.push_back(Outgoing::Borrowed {
                id,
                header: cell,
                sent: 0,
                started: false,
            });
            Ok(SendStart::Streaming(id))
        } else {
            let payload = buf.to_vec();
            self.peers.queue(dest).outbound.push_back(Outgoing::Owned {
                header: cell,
                payload,
                sent: 0,
                started: false,
            });
            Ok(SendStart::Done)
        }
    }

    /// Announces `buf` to shared-memory peer `dest` for the receiver to read by single copy
    /// (rendezvous): the send finishes once a receive has taken it.
    fn announce(
        &mut self,
        fabric: &ShmTransport,
        link: Link<'_>,
        dest: usize,
        envelope: Outbound,
        buf: &[u8],
    ) -> SendStart {
        let idle = self.peers.get(dest).map_or(true, |c| c.outbound.is_empty());
        let id = self.fresh_id();
        let address = buf.as_ptr() as usize as u64;
        self.rendezvous.insert(id, (dest, address, buf.len()));
        // Fits: a message is at most MAX_MESSAGE_BYTES (i32::MAX) long.
        let cell = envelope.cell(CellKind::ReadyToSend, 0, buf.len() as u32, address, id);
        if idle && link.outbox().try_push(&cell, &[]) {
            link.notify(fabric);
        } else {
            self.peers.queue(dest).outbound.push_back(Outgoing::Owned {
                header: cell,
                payload: Vec::new(),
                sent: 0,
                started: false,
            });
        }
        SendStart::Rendezvous(id)
    }

    /// Starts a synchronous send (`MPI_Ssend`): to a shared-memory peer of this job, with
    /// single-copy transfers on, the message is announced whatever its length, so the send
    /// finishes only once a receive has taken it; otherwise as [`Engine::start_send`].
    pub(crate) fn start_send_sync(
        &mut self,
        fabric: &ShmTransport,
        peer: Peer,
        envelope: Outbound,
        buf: &[u8],
    ) -> Result<SendStart, P2pError> {
        match peer {
            Peer::Shm(slot) if slot < fabric.size && self.single_copy_above.is_some() => {
                Ok(self.announce(fabric, Link::Home { fabric, slot }, slot, envelope, buf))
            }
            _ => self.start_send(fabric, peer, envelope, buf, false),
        }
    }

    /// Sends a copy of `data`, so that no caller buffer stays borrowed (collective
    /// schedules, which reuse their regions at once). Over a message transport the transport
    /// copies what it does not send at once; else the copy is made into a buffer of the engine's
    /// pool, which comes back to it once delivered (no allocation for messages up to its
    /// buffers' size, and no fresh pages).
    pub(crate) fn start_send_copied(
        &mut self,
        fabric: &ShmTransport,
        peer: Peer,
        envelope: Outbound,
        data: &[u8],
    ) -> Result<(), P2pError> {
        if let Peer::Message(index) = peer {
            return self.send_message(index, envelope, data);
        }
        let mut owned = self.pool.take();
        owned.extend_from_slice(data);
        self.start_send_owned(fabric, peer, envelope, owned)
    }

    /// Sends `data`, which the engine keeps until it is delivered: no caller buffer stays
    /// borrowed, so any number of such sends may be in flight (collective schedules).
    pub(crate) fn start_send_owned(
        &mut self,
        fabric: &ShmTransport,
        peer: Peer,
        envelope: Outbound,
        data: Vec<u8>,
    ) -> Result<(), P2pError> {
        let dest = match peer {
            Peer::Shm(slot) => slot,
            Peer::Message(index) => {
                let sent = self.send_message(index, envelope, &data);
                self.pool.recycle(data);
                return sent;
            }
        };
        self.guests.link(fabric, dest)?;
        let single_copy = self.single_copy_above.is_some_and(|limit| data.len() > limit);
        if data.len() <= Ring::PAYLOAD_BYTES || !single_copy {
            if data.len() <= Ring::PAYLOAD_BYTES {
                let started = self.start_send_shm(fabric, dest, envelope, &data, false);
                self.pool.recycle(data);
                started?;
            } else {
                let id = self.fresh_id();
                let header = CellHeader {
                    kind: CellKind::Message,
                    context: envelope.context,
                    tag: envelope.tag,
                    fragment_len: 0,
                    // Fits: a message is at most MAX_MESSAGE_BYTES (i32::MAX) long.
                    total_len: data.len() as u32,
                    source: envelope.source,
                    address: 0,
                    id,
                };
                self.peers.queue(dest).outbound.push_back(Outgoing::Owned {
                    header,
                    payload: data,
                    sent: 0,
                    started: false,
                });
                // Start it now: the caller may not call in again for a while.
                self.with_guests(|engine, guests| engine.push_out(fabric, guests, dest, None));
            }
            return Ok(());
        }
        // The vector's heap block does not move while the engine holds it.
        if let SendStart::Rendezvous(id) =
            self.start_send_shm(fabric, dest, envelope, &data, true)?
        {
            self.owned_rendezvous.insert(id, data);
        }
        Ok(())
    }

    /// Whether the single-copy send `id` has been read by its receiver (consumes the news).
    pub(crate) fn send_finished(&mut self, id: u64) -> bool {
        self.finished_sends.remove(&id)
    }

    /// Whether the streamed send `id` to `dest` still has cells to push.
    pub(crate) fn send_queued(&self, dest: Peer, id: u64) -> bool {
        let Peer::Shm(dest) = dest else { return false };
        self.peers.get(dest).is_some_and(|c| {
            c.outbound.iter().any(|o| matches!(o, Outgoing::Borrowed { id: i, .. } if *i == id))
        })
    }
}
