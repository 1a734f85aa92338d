//! Messages over TCP: a send hands the whole message to a TCP transport (its framing and
//! bounded queue), and progress takes messages from it into the matching queues. A long
//! message is announced by its header: progress reads the rest of its payload from the
//! socket straight into its receive's buffer while that is lent (one copy, as the kernel
//! makes it), else into its pending bytes.
//!
//! A process may run several TCP transports ("links"): link 0 reaches its job's ranks on
//! other hosts, and each group connected across hosts gets a link of its own (its own
//! listener, token and numbering). A TCP peer is named by its link and its index there:
//! [`tcp_peer`]. Each transport sits behind its own lock, shared with the runtime's waiting:
//! a thread that sleeps in `poll(2)` on the sockets holds only that lock, never the
//! engine's. Lock order: the engine's, then a transport's.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use commcore::wire::{Header, Kind};

use super::matching::{Arrival, Body};
use super::{Engine, Outbound, Peer, SendStart, Sink};
use crate::runtime::error::P2pError;
use crate::shm::bridge::Bridge;
use crate::tcp::TcpTransport;

/// The TCP transport as the engine and the runtime's waiters share it, and the failure
/// word the launcher marks when a process of the group it reaches dies (a spawned group:
/// a peer that dies before it ever connected closes no stream of ours).
#[derive(Clone)]
pub(crate) struct TcpLink {
    transport: Arc<Mutex<TcpTransport>>,
    watch: Option<Arc<Bridge>>,
}

impl TcpLink {
    pub(crate) fn new(transport: TcpTransport) -> TcpLink {
        TcpLink::watching(transport, None)
    }

    /// A link whose group's failures the launcher marks in `watch`'s failure word.
    pub(crate) fn watching(mut transport: TcpTransport, watch: Option<Arc<Bridge>>) -> TcpLink {
        transport.announce_long_payloads();
        TcpLink { transport: Arc::new(Mutex::new(transport)), watch }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, TcpTransport> {
        self.transport.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Why the launcher marked the watched group failed, if it did.
    pub(super) fn failure(&self) -> Option<u32> {
        self.watch.as_ref().and_then(|bridge| bridge.failure())
    }

    pub(super) fn watched(&self) -> bool {
        self.watch.is_some()
    }
}

/// A send of at least this many bytes goes from the caller's buffer (the request borrows it
/// until the kernel has it all); shorter ones are copied, which costs less than waiting.
pub(super) const TCP_LENT_FROM: usize = 64 * 1024;

/// Bytes of a long message read per step into its pending bytes or the scratch buffer.
const SCRATCH: usize = 64 * 1024;

/// The engine's name for peer `index` of TCP link `link` (also the address word of its
/// address-vector entry).
pub(crate) fn tcp_peer(link: usize, index: usize) -> usize {
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

/// The link and index of TCP peer `peer`.
fn split(peer: usize) -> (usize, usize) {
    (peer >> 32, peer & 0xffff_ffff)
}

impl Engine {
    /// Whether any TCP link is up.
    pub(super) fn has_tcp(&self) -> bool {
        self.tcp.iter().any(Option::is_some)
    }

    /// Adds a TCP link (a transport for a group connected across hosts); returns its
    /// number. Numbers of links that went are reused; link 0 is the job's own.
    pub(crate) fn add_tcp_link(&mut self, link: TcpLink) -> usize {
        match self.tcp.iter().skip(1).position(Option::is_none) {
            Some(free) => {
                self.tcp[free + 1] = Some(link);
                free + 1
            }
            None => {
                if self.tcp.is_empty() {
                    self.tcp.push(None);
                }
                self.tcp.push(Some(link));
                self.tcp.len() - 1
            }
        }
    }

    /// Takes link `link` out (its group disconnected); the caller finishes it.
    pub(crate) fn remove_tcp_link(&mut self, link: usize) -> Option<TcpLink> {
        let taken = self.tcp.get_mut(link).and_then(Option::take);
        while matches!(self.tcp.last(), Some(None)) && self.tcp.len() > 1 {
            self.tcp.pop();
        }
        taken
    }

    /// Every TCP link up, for waiting on their sockets.
    pub(crate) fn tcp_links(&self) -> Vec<TcpLink> {
        self.tcp.iter().flatten().cloned().collect()
    }

    /// Sends `buf` whole to TCP peer `peer`; the transport copies it out, so the buffer is
    /// free on return. Waits (moving TCP traffic) while the peer's queue is full.
    pub(super) fn send_tcp(
        &mut self,
        peer: usize,
        envelope: Outbound,
        buf: &[u8],
    ) -> Result<(), P2pError> {
        let (link, index) = split(peer);
        let no_tcp = P2pError::NoTransport { rank: index, transport: crate::transport::TCP.0 };
        let tcp = self.tcp.get(link).and_then(Option::as_ref).ok_or(no_tcp)?;
        tcp.lock().send(index, &header(envelope, buf.len()), buf).map_err(P2pError::Tcp)
    }

    /// Sends `buf` to TCP peer `peer` from the caller's memory when the peer is connected:
    /// the send is done once [`Engine::send_finished`] says so, and the caller keeps `buf`
    /// unchanged until then. Else by copy, done at once.
    pub(super) fn send_tcp_lent(
        &mut self,
        peer: usize,
        envelope: Outbound,
        buf: &[u8],
    ) -> Result<SendStart, P2pError> {
        let (link, index) = split(peer);
        let id = self.fresh_id();
        let lent = match self.tcp.get(link).and_then(Option::as_ref) {
            Some(tcp) => tcp.lock().send_lent(index, &header(envelope, buf.len()), buf, id),
            None => Ok(false),
        };
        if lent.map_err(P2pError::Tcp)? {
            Ok(SendStart::Rendezvous(id))
        } else {
            self.send_tcp(peer, envelope, buf).map(|()| SendStart::Done)
        }
    }

    /// Takes every message the TCP links hold into the matching queues, and the bytes of
    /// long messages on their way (into `sink` when it is their receive's).
    pub(super) fn poll_tcp(&mut self, mut sink: Option<&mut Sink<'_>>) -> Result<(), P2pError> {
        for link in 0..self.tcp.len() {
            if let Some(tcp) = self.tcp[link].clone() {
                self.poll_link(link, &tcp, sink.as_deref_mut())?;
            }
        }
        Ok(())
    }

    fn poll_link(
        &mut self,
        link: usize,
        tcp: &TcpLink,
        mut sink: Option<&mut Sink<'_>>,
    ) -> Result<(), P2pError> {
        let mut transport = tcp.lock();
        self.read_long_messages(link, &mut transport, sink.as_deref_mut())?;
        while let Some(message) = transport.poll().map_err(P2pError::Tcp)? {
            let header = message.header;
            let received = message.payload.len();
            let len = received + message.rest;
            if header.kind != Kind::Eager || header.length != len as u64 {
                return Err(P2pError::CorruptQueue { peer: message.from });
            }
            let id = self.arrivals.next_id();
            let peer = tcp_peer(link, message.from);
            let mut arrival = Arrival {
                context: header.context,
                source: Peer::Tcp(peer),
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
                self.tcp_long.push((peer, id));
                // Nothing comes from this peer before the rest of the payload.
                self.read_long_messages(link, &mut transport, sink.as_deref_mut())?;
            }
        }
        transport.take_written(&mut self.tcp_written);
        if !self.tcp_written.is_empty() {
            self.news = true;
            self.finished_sends.extend(self.tcp_written.drain(..));
        }
        Ok(())
    }

    /// Reads what is here of link `link`'s long messages on their way.
    fn read_long_messages(
        &mut self,
        link: usize,
        transport: &mut TcpTransport,
        mut sink: Option<&mut Sink<'_>>,
    ) -> Result<(), P2pError> {
        let mut i = 0;
        while i < self.tcp_long.len() {
            let (peer, id) = self.tcp_long[i];
            let (peer_link, index) = split(peer);
            if peer_link != link {
                i += 1;
                continue;
            }
            if self.read_long(transport, index, id, sink.as_deref_mut())? {
                self.tcp_long.swap_remove(i);
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
    fn read_long(
        &mut self,
        transport: &mut TcpTransport,
        index: usize,
        id: u64,
        sink: Option<&mut Sink<'_>>,
    ) -> Result<bool, P2pError> {
        if self.tcp_scratch.is_empty() {
            self.tcp_scratch = vec![0; SCRATCH];
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
        let mut read = |dest: &mut [u8]| transport.read_rest(index, dest).map_err(P2pError::Tcp);
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
                        read(&mut self.tcp_scratch[..(len - *received).min(SCRATCH)])?
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
                        read(&mut self.tcp_scratch[..want])?
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

    /// Whether anything waits in a TCP link's queues to be written.
    pub(super) fn tcp_has_outbound(&self) -> bool {
        self.tcp.iter().flatten().any(|tcp| tcp.lock().has_queued())
    }
}
