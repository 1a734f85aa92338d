//! Messages over message transports (TCP, verbs: [`MessageTransport`]): a send hands the
//! whole message to the transport (its framing and bounded queue), and progress takes
//! messages from it into the matching queues. A long message is announced by its header:
//! progress reads the rest of its payload (a socket read, an RDMA read) straight into its
//! receive's buffer while that is lent, else into its pending bytes.
//!
//! A process may run several links: link 0 reaches its job's ranks on other hosts, and
//! each group connected across hosts gets a link of its own (its own listener, token and
//! numbering). A peer is named by its link and its index there: [`message_peer`]. Each
//! link's transport sits behind its own lock, shared with the runtime's waiting: a thread
//! that sleeps in the transport holds only that lock, never the engine's. Lock order: the
//! engine's, then a transport's. A link is an enum of the transports and each call a
//! `match` on it, so the per-message path is generic code, statically dispatched.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use commcore::wire::{Header, Kind};

use super::matching::{Arrival, Body};
use super::{Engine, Outbound, Peer, SendStart, Sink};
use crate::runtime::error::P2pError;
use crate::shm::bridge::Bridge;
use crate::tcp::TcpTransport;
use crate::transport::message::MessageTransport;
#[cfg(test)]
use crate::transport::verbs::fabric::FabricDevice;
#[cfg(feature = "verbs")]
use crate::transport::verbs::ibverbs::IbvDevice;
#[cfg(any(test, feature = "verbs"))]
use crate::transport::verbs::VerbsTransport;

/// A transport shared by the engine and the runtime's waiters.
pub(crate) struct Shared<T>(Arc<Mutex<T>>);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> Shared<T> {
    pub(crate) fn new(transport: T) -> Self {
        Shared(Arc::new(Mutex::new(transport)))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The transports a link runs.
#[derive(Clone)]
pub(crate) enum LinkTransport {
    Tcp(Shared<TcpTransport>),
    /// Verbs on a device through `libibverbs`.
    #[cfg(feature = "verbs")]
    Verbs(Shared<VerbsTransport<IbvDevice>>),
    /// Verbs on the in-process fabric: the engine's tests (a job's ranks are processes,
    /// which the fabric does not reach).
    #[cfg(test)]
    Fabric(Shared<VerbsTransport<FabricDevice>>),
}

/// A message transport as the engine and the runtime's waiters share it, and the failure
/// word the launcher marks when a process of the group it reaches dies (a spawned group:
/// a peer that dies before it ever connected closes no stream of ours).
#[derive(Clone)]
pub(crate) struct MessageLink {
    transport: LinkTransport,
    watch: Option<Arc<Bridge>>,
}

/// Runs `$body` with `$t` the link's transport, locked (one arm per transport).
macro_rules! on_transport {
    ($link:expr, |$t:ident| $body:expr) => {
        match &$link.transport {
            LinkTransport::Tcp(shared) => {
                let $t = &mut *shared.lock();
                $body
            }
            #[cfg(feature = "verbs")]
            LinkTransport::Verbs(shared) => {
                let $t = &mut *shared.lock();
                $body
            }
            #[cfg(test)]
            LinkTransport::Fabric(shared) => {
                let $t = &mut *shared.lock();
                $body
            }
        }
    };
}

impl MessageLink {
    pub(crate) fn tcp(transport: TcpTransport) -> MessageLink {
        MessageLink::tcp_watching(transport, None)
    }

    /// A TCP link whose group's failures the launcher marks in `watch`'s failure word.
    pub(crate) fn tcp_watching(
        mut transport: TcpTransport,
        watch: Option<Arc<Bridge>>,
    ) -> MessageLink {
        transport.announce_long_payloads();
        MessageLink { transport: LinkTransport::Tcp(Shared::new(transport)), watch }
    }

    /// A verbs link on a device.
    #[cfg(feature = "verbs")]
    pub(crate) fn verbs(transport: VerbsTransport<IbvDevice>) -> MessageLink {
        MessageLink::verbs_watching(transport, None)
    }

    /// A verbs link whose group's failures the launcher marks in `watch`'s failure word.
    #[cfg(feature = "verbs")]
    pub(crate) fn verbs_watching(
        transport: VerbsTransport<IbvDevice>,
        watch: Option<Arc<Bridge>>,
    ) -> MessageLink {
        MessageLink { transport: LinkTransport::Verbs(Shared::new(transport)), watch }
    }

    /// A verbs link on the in-process fabric.
    #[cfg(test)]
    pub(crate) fn fabric(transport: VerbsTransport<FabricDevice>) -> MessageLink {
        MessageLink { transport: LinkTransport::Fabric(Shared::new(transport)), watch: None }
    }

    /// Why the launcher marked the watched group failed, if it did.
    pub(super) fn failure(&self) -> Option<u32> {
        self.watch.as_ref().and_then(|bridge| bridge.failure())
    }

    pub(super) fn watched(&self) -> bool {
        self.watch.is_some()
    }

    /// Waits in the transport until something arrived (`Ok(true)`) or `deadline` passed.
    pub(crate) fn wait(&self, deadline: Instant) -> Result<bool, P2pError> {
        on_transport!(self, |t| MessageTransport::wait(t, deadline).map_err(P2pError::from))
    }

    /// Delivers what is queued (until `deadline`) and says goodbye to every peer.
    pub(crate) fn finish(&self, deadline: Instant) -> Result<(), P2pError> {
        on_transport!(self, |t| MessageTransport::finish(t, deadline).map_err(P2pError::from))
    }

    fn has_queued(&self) -> bool {
        on_transport!(self, |t| MessageTransport::has_queued(t))
    }
}

/// A send of at least this many bytes goes from the caller's buffer (the request borrows it
/// until the transport has it all); shorter ones are copied, which costs less than waiting.
pub(super) const LENT_SEND_FROM: usize = 64 * 1024;

/// Bytes of a long message read per step into its pending bytes or the scratch buffer.
const SCRATCH: usize = 64 * 1024;

/// The engine's name for peer `index` of link `link` (also the address word of its
/// address-vector entry).
pub(crate) fn message_peer(link: usize, index: usize) -> usize {
    (link << 32) | index
}

/// The wire header of a message of `len` bytes.
fn header(envelope: Outbound, len: usize) -> Header {
    Header {
        kind: Kind::Eager,
        context: envelope.context,
        source: envelope.source,
        tag: envelope.tag,
        sequence: 0,
        length: len as u64,
    }
}

/// The link and index of peer `peer`.
fn split(peer: usize) -> (usize, usize) {
    (peer >> 32, peer & 0xffff_ffff)
}

impl Engine {
    /// Whether any message link is up.
    pub(super) fn has_message_links(&self) -> bool {
        self.message_links.iter().any(Option::is_some)
    }

    /// Adds a link (a transport for a group connected across hosts); returns its number.
    /// Numbers of links that went are reused; link 0 is the job's own.
    pub(crate) fn add_message_link(&mut self, link: MessageLink) -> usize {
        match self.message_links.iter().skip(1).position(Option::is_none) {
            Some(free) => {
                self.message_links[free + 1] = Some(link);
                free + 1
            }
            None => {
                if self.message_links.is_empty() {
                    self.message_links.push(None);
                }
                self.message_links.push(Some(link));
                self.message_links.len() - 1
            }
        }
    }

    /// Takes link `link` out (its group disconnected); the caller finishes it.
    pub(crate) fn remove_message_link(&mut self, link: usize) -> Option<MessageLink> {
        let taken = self.message_links.get_mut(link).and_then(Option::take);
        while matches!(self.message_links.last(), Some(None)) && self.message_links.len() > 1 {
            self.message_links.pop();
        }
        taken
    }

    /// Every link up, for waiting in their transports.
    pub(crate) fn links_up(&self) -> Vec<MessageLink> {
        self.message_links.iter().flatten().cloned().collect()
    }

    fn link(&self, link: usize, index: usize) -> Result<&MessageLink, P2pError> {
        let missing = P2pError::NoTransport { rank: index, transport: crate::transport::TCP.0 };
        self.message_links.get(link).and_then(Option::as_ref).ok_or(missing)
    }

    /// Sends `buf` whole to peer `peer`; the transport copies it out, so the buffer is free
    /// on return. Waits (moving the link's traffic) while the peer's queue is full.
    pub(super) fn send_message(
        &mut self,
        peer: usize,
        envelope: Outbound,
        buf: &[u8],
    ) -> Result<(), P2pError> {
        let (link, index) = split(peer);
        let header = header(envelope, buf.len());
        let link = self.link(link, index)?;
        on_transport!(link, |t| MessageTransport::send(t, index, &header, buf)
            .map_err(P2pError::from))
    }

    /// Sends `buf` to peer `peer` from the caller's memory when the transport can lend: the
    /// send is done once [`Engine::send_finished`] says so, and the caller keeps `buf`
    /// unchanged until then. Else by copy, done at once.
    pub(super) fn send_message_lent(
        &mut self,
        peer: usize,
        envelope: Outbound,
        buf: &[u8],
    ) -> Result<SendStart, P2pError> {
        let (link, index) = split(peer);
        let id = self.fresh_id();
        let header = header(envelope, buf.len());
        let lent = match self.message_links.get(link).and_then(Option::as_ref) {
            Some(link) => on_transport!(link, |t| {
                // SAFETY: the send's request borrows `buf` until the engine reports `id`
                // finished (the caller's contract for a `SendStart::Rendezvous`).
                let lent = unsafe { MessageTransport::send_lent(t, index, &header, buf, id) };
                lent.map_err(P2pError::from)
            }),
            None => Ok(false),
        };
        if lent? {
            Ok(SendStart::Rendezvous(id))
        } else {
            self.send_message(peer, envelope, buf).map(|()| SendStart::Done)
        }
    }

    /// Takes every message the links hold into the matching queues, and the bytes of long
    /// messages on their way (into `sink` when it is their receive's).
    pub(super) fn poll_messages(
        &mut self,
        mut sink: Option<&mut Sink<'_>>,
    ) -> Result<(), P2pError> {
        for link in 0..self.message_links.len() {
            if let Some(shared) = self.message_links[link].clone() {
                let sink = sink.as_deref_mut();
                on_transport!(shared, |t| self.poll_link(link, t, sink))?;
            }
        }
        Ok(())
    }

    fn poll_link<T: MessageTransport>(
        &mut self,
        link: usize,
        transport: &mut T,
        mut sink: Option<&mut Sink<'_>>,
    ) -> Result<(), P2pError>
    where
        P2pError: From<T::Error>,
    {
        self.read_long_messages(link, transport, sink.as_deref_mut())?;
        while let Some(message) = MessageTransport::poll(transport)? {
            let header = message.header;
            let received = message.payload.len();
            let len = received + message.rest;
            if header.kind != Kind::Eager || header.length != len as u64 {
                return Err(P2pError::CorruptQueue { peer: message.from });
            }
            let id = self.arrivals.next_id();
            let peer = message_peer(link, message.from);
            let mut arrival = Arrival {
                context: header.context,
                source: Peer::Message(peer),
                rank: header.source,
                tag: header.tag,
                len,
                body: Body::Copied { pending: message.payload, in_sink: 0, received },
                recv: None,
                discard: false,
            };
            self.arrive(id, &mut arrival);
            let stored = self.arrivals.insert(arrival);
            debug_assert_eq!(stored, id);
            if message.rest > 0 {
                self.message_long.push((peer, id));
                // Nothing comes from this peer before the rest of the payload.
                self.read_long_messages(link, transport, sink.as_deref_mut())?;
            }
        }
        MessageTransport::take_written(transport, &mut self.message_written);
        if !self.message_written.is_empty() {
            self.news = true;
            self.finished_sends.extend(self.message_written.drain(..));
        }
        Ok(())
    }

    /// Reads what is here of link `link`'s long messages on their way.
    fn read_long_messages<T: MessageTransport>(
        &mut self,
        link: usize,
        transport: &mut T,
        mut sink: Option<&mut Sink<'_>>,
    ) -> Result<(), P2pError>
    where
        P2pError: From<T::Error>,
    {
        let mut i = 0;
        while i < self.message_long.len() {
            let (peer, id) = self.message_long[i];
            let (peer_link, index) = split(peer);
            if peer_link != link {
                i += 1;
                continue;
            }
            if self.read_long(transport, index, id, sink.as_deref_mut())? {
                self.message_long.swap_remove(i);
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Reads the bytes of arrival `id` (a long message from peer `index`) that are here:
    /// into its receive's buffer when that is lent (the sink's or one beside it), else into
    /// its pending bytes (none are kept for a cancelled receive, or past the end of a
    /// receive's buffer). Whether the message is now whole.
    fn read_long<T: MessageTransport>(
        &mut self,
        transport: &mut T,
        index: usize,
        id: u64,
        sink: Option<&mut Sink<'_>>,
    ) -> Result<bool, P2pError>
    where
        P2pError: From<T::Error>,
    {
        if self.message_scratch.is_empty() {
            self.message_scratch = vec![0; SCRATCH];
        }
        let Some(arrival) = self.arrivals.get_mut(id) else { return Ok(true) };
        let len = arrival.len;
        let (recv, discard) = (arrival.recv, arrival.discard);
        let Body::Copied { pending, in_sink, received } = &mut arrival.body else {
            return Ok(true);
        };
        let lent = match (sink, recv) {
            (Some(sink), Some(recv)) => sink.buffer_of(recv),
            _ => None,
        };
        let mut read = |dest: &mut [u8]| {
            MessageTransport::read_rest(transport, index, dest).map_err(P2pError::from)
        };
        match lent {
            Some(buf) => {
                // Earlier bytes first, then the socket straight into the buffer.
                let start = (*in_sink).min(buf.len());
                let end = (*in_sink + pending.len()).min(buf.len());
                buf[start..end].copy_from_slice(&pending[..end - start]);
                pending.clear();
                *in_sink = *received;
                let room = len.min(buf.len());
                while *received < len {
                    let n = if *received < room {
                        read(&mut buf[*received..room])?
                    } else {
                        read(&mut self.message_scratch[..(len - *received).min(SCRATCH)])?
                    };
                    if n == 0 {
                        break;
                    }
                    *received += n;
                    *in_sink = *received;
                }
            }
            None => {
                while *received < len {
                    let want = (len - *received).min(SCRATCH);
                    let n = if discard {
                        read(&mut self.message_scratch[..want])?
                    } else {
                        let old = pending.len();
                        pending.resize(old + want, 0);
                        let n = read(&mut pending[old..])?;
                        pending.truncate(old + n);
                        n
                    };
                    if n == 0 {
                        break;
                    }
                    *received += n;
                }
            }
        }
        let whole = *received >= len;
        if whole {
            self.news = true;
            if discard {
                if let Some(arrival) = self.arrivals.remove(id) {
                    self.recycle_arrival(arrival);
                }
            }
        }
        Ok(whole)
    }

    /// Whether anything waits in a link's queues to be sent.
    pub(super) fn messages_outbound(&self) -> bool {
        self.message_links.iter().flatten().any(MessageLink::has_queued)
    }
}
