//! Completing receives: the direct fast path straight from a ring, and moving a matched
//! message's bytes into the buffer a call lends.

use super::matching::{Arrival, Body, Pattern};
use super::rendezvous::Remote;
use super::{Direct, Engine, Envelope, Peer, Sink};

/// What [`Engine::start_recv`] did.
pub(crate) enum RecvStart {
    /// The message was here: taken.
    Done(Result<Envelope, P2pError>),
    /// Posted as this receive.
    Posted(u64),
}
use crate::runtime::error::P2pError;
use crate::shm::{CellHeader, CellKind, Ring, Take};
use crate::transport::shm::ShmTransport;

impl Engine {
    /// A receive's fast path, blocking or as a nonblocking one is posted. The oldest
    /// unexpected message it accepts is its message (none is accepted by an older posted
    /// receive, which would have taken it): when whole and copied, its bytes go straight
    /// into `buf`, never posted or matched. With none queued, and no posted receive that
    /// could compete for the next message, the first cell of a source's ring is the next
    /// message to match: a one-cell message that matches goes straight from the ring into
    /// `buf`.
    pub(crate) fn try_direct_recv(
        &mut self,
        fabric: &ShmTransport,
        pattern: &Pattern,
        buf: &mut [u8],
    ) -> Direct {
        if !self.unexpected.is_empty() {
            if let Some((i, id)) = self.oldest_unexpected(pattern) {
                return self.take_unexpected_whole(i, id, buf);
            }
        }
        if !self.posted.is_empty() {
            return Direct::Slow;
        }
        self.take_from_rings(fabric, pattern, buf)
    }

    /// A nonblocking receive's start: done at once when its message is here (as
    /// [`Engine::try_direct_recv`] finds it), else posted. The unexpected queue is scanned
    /// once for both.
    pub(crate) fn start_recv(
        &mut self,
        fabric: &ShmTransport,
        pattern: Pattern,
        buf: &mut [u8],
    ) -> RecvStart {
        // A window's receives are posted with nothing unexpected: no scan then.
        let found =
            if self.unexpected.is_empty() { None } else { self.oldest_unexpected(&pattern) };
        if let Some((i, id)) = found {
            if let Direct::Done(result) = self.take_unexpected_whole(i, id, buf) {
                return RecvStart::Done(result);
            }
        } else if self.posted.is_empty() {
            if let Direct::Done(result) = self.take_from_rings(fabric, &pattern, buf) {
                return RecvStart::Done(result);
            }
        }
        RecvStart::Posted(self.post_recv_at(pattern, found.map(|(i, _)| i)))
    }

    /// Takes unexpected message `id`, the `i`-th queued, into `buf` if it is whole and was
    /// copied.
    #[inline(always)]
    fn take_unexpected_whole(&mut self, i: usize, id: u64, buf: &mut [u8]) -> Direct {
        let whole = self
            .arrivals
            .get(id)
            .is_some_and(|a| matches!(a.body, Body::Copied { received, .. } if received >= a.len));
        if !whole {
            return Direct::Slow;
        }
        self.take_unexpected_at(i);
        let Some(Arrival { rank, tag, len, body: Body::Copied { pending, .. }, .. }) =
            self.arrivals.remove(id)
        else {
            return Direct::Slow;
        };
        let n = pending.len().min(buf.len());
        buf[..n].copy_from_slice(&pending[..n]);
        self.pool.recycle(pending);
        if len > buf.len() {
            return Direct::Done(Err(P2pError::Truncated {
                message_len: len,
                buffer_len: buf.len(),
                source: rank,
                tag,
            }));
        }
        Direct::Done(Ok(Envelope { source: rank as usize, tag, len }))
    }

    /// The same fast path for posted receive `recv` while it is the oldest one posted (a
    /// nonblocking receive's wait, as in a window of them): no unexpected message accepted
    /// by it can be queued, as progress would have matched it, and no other posted receive
    /// may take a message it accepts before it does.
    pub(crate) fn try_direct_posted(
        &mut self,
        fabric: &ShmTransport,
        recv: u64,
        buf: &mut [u8],
    ) -> Direct {
        let pattern = match self.posted.front() {
            Some(&(oldest, pattern)) if oldest == recv => pattern,
            _ => return Direct::Slow,
        };
        let taken = self.take_from_rings(fabric, &pattern, buf);
        if let Direct::Done(_) = taken {
            self.posted.pop_front();
        }
        taken
    }

    /// Takes a one-cell message that `pattern` accepts from the head of a source's ring
    /// into `buf`, when no competing message may come first (see the callers).
    fn take_from_rings(
        &mut self,
        fabric: &ShmTransport,
        pattern: &Pattern,
        buf: &mut [u8],
    ) -> Direct {
        let guests = &self.guests;
        let sources = match pattern.source {
            Some(Peer::Shm(source)) => source..source + 1,
            // A message transport's messages reach the queues only through progress: the
            // general path.
            Some(Peer::Message(_)) => return Direct::Slow,
            None if self.has_message_links() => return Direct::Slow,
            None => guests.shm_peers(fabric),
        };
        let peers = &self.peers;
        for source in sources {
            let Ok(link) = guests.link(fabric, source) else {
                // A guest that is gone: the general path reports it.
                if pattern.source.is_some() {
                    return Direct::Slow;
                }
                continue;
            };
            let accept = |header: &CellHeader| {
                header.kind == CellKind::Message
                    && header.fragment_len == header.total_len
                    && header.context == pattern.context
                    && pattern.tag.map_or(true, |t| t == header.tag)
                    && peers.inbound(source).is_none()
            };
            let header = match link.inbox().take_if(buf, accept) {
                Ok(Take::Empty) => continue,
                Ok(Take::Taken(header)) => header,
                Ok(Take::Left) | Err(_) => return Direct::Slow,
            };
            link.notify(fabric);
            let len = header.total_len as usize;
            if len > buf.len() {
                return Direct::Done(Err(P2pError::Truncated {
                    message_len: len,
                    buffer_len: buf.len(),
                    source: header.source,
                    tag: header.tag,
                }));
            }
            return Direct::Done(Ok(Envelope {
                source: header.source as usize,
                tag: header.tag,
                len,
            }));
        }
        Direct::Empty
    }

    /// Completes receive `recv` into `sink` if its whole message is here; the envelope or a
    /// truncation error once done, `None` while it is not.
    pub(crate) fn finish_recv(
        &mut self,
        fabric: &ShmTransport,
        sink: &mut Sink<'_>,
    ) -> Result<Option<Envelope>, P2pError> {
        let Some(arrival_id) = self.matched.get(sink.recv) else { return Ok(None) };
        let Some(arrival) = self.arrivals.get_mut(arrival_id) else { return Ok(None) };
        let mut read_error = None;
        match &mut arrival.body {
            Body::Copied { pending, in_sink, received } => {
                if !pending.is_empty() {
                    let start = (*in_sink).min(sink.buf.len());
                    let end = (*in_sink + pending.len()).min(sink.buf.len());
                    sink.buf[start..end].copy_from_slice(&pending[..end - start]);
                    pending.clear();
                    *in_sink = *received;
                }
                if *received < arrival.len {
                    return Ok(None);
                }
            }
            &mut Body::Remote { slot, address, sender_id, split } => {
                let remote = Remote { source: slot, len: arrival.len, address, sender_id };
                let finished = self.with_guests(|engine, guests| {
                    engine.finish_remote(fabric, guests, sink, arrival_id, remote, split)
                });
                match finished {
                    None => return Ok(None),
                    Some(result) => read_error = result.err(),
                }
            }
        }
        self.matched.remove(sink.recv);
        let Some(arrival) = self.arrivals.remove(arrival_id) else { return Ok(None) };
        let envelope =
            Envelope { source: arrival.rank as usize, tag: arrival.tag, len: arrival.len };
        self.recycle_arrival(arrival);
        if let Some(error) = read_error {
            return Err(error);
        }
        if envelope.len > sink.buf.len() {
            return Err(P2pError::Truncated {
                message_len: envelope.len,
                buffer_len: sink.buf.len(),
                // Fits: ranks count in u32 (rank maps do).
                source: envelope.source as u32,
                tag: envelope.tag,
            });
        }
        Ok(Some(envelope))
    }

    /// Adds a fragment to arrival `id`; whether the message is now whole (or was dropped).
    pub(super) fn deliver(
        &mut self,
        id: u64,
        ring: &Ring<'_>,
        header: &CellHeader,
        sink: Option<&mut Sink<'_>>,
    ) -> bool {
        let Some(arrival) = self.arrivals.get_mut(id) else { return true };
        take_payload(arrival, ring, header, sink);
        let complete = arrival.complete();
        if arrival.discard && complete {
            if let Some(arrival) = self.arrivals.remove(id) {
                self.recycle_arrival(arrival);
            }
        }
        complete
    }
}

/// Copies the payload of the ring's oldest cell into `arrival`: straight into `sink` when it
/// is the arrival's receive and nothing is held back, else into the pending bytes (unless
/// the receive was cancelled).
pub(super) fn take_payload(
    arrival: &mut Arrival,
    ring: &Ring<'_>,
    header: &CellHeader,
    sink: Option<&mut Sink<'_>>,
) {
    let n = (header.fragment_len as usize).min(arrival.len);
    let recv = arrival.recv;
    let Body::Copied { pending, in_sink, received } = &mut arrival.body else { return };
    match sink {
        Some(sink) if Some(sink.recv) == recv && pending.is_empty() && *in_sink == *received => {
            let start = (*received).min(sink.buf.len());
            let end = (*received + n).min(sink.buf.len());
            ring.read_payload(header, &mut sink.buf[start..end]);
            *in_sink += n;
        }
        _ => {
            if !arrival.discard {
                let old = pending.len();
                pending.resize(old + n, 0);
                ring.read_payload(header, &mut pending[old..]);
            }
        }
    }
    *received += n;
}
