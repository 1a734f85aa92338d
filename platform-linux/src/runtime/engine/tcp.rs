//! Messages over TCP: a send hands the whole message to a TCP transport (its framing and
//! bounded queue), and progress takes whole messages from it into the matching queues.
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
use super::{Engine, Outbound, Peer};
use crate::runtime::error::P2pError;
use crate::tcp::TcpTransport;

/// The TCP transport as the engine and the runtime's waiters share it.
#[derive(Clone)]
pub(crate) struct TcpLink(Arc<Mutex<TcpTransport>>);

impl TcpLink {
    pub(crate) fn new(transport: TcpTransport) -> TcpLink {
        TcpLink(Arc::new(Mutex::new(transport)))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, TcpTransport> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The engine's name for peer `index` of TCP link `link` (also the address word of its
/// address-vector entry).
pub(crate) fn tcp_peer(link: usize, index: usize) -> usize {
    (link << 32) | index
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
        let header = Header {
            kind: Kind::Eager,
            context: envelope.context,
            source: envelope.source,
            tag: envelope.tag,
            sequence: 0,
            length: buf.len() as u64,
        };
        tcp.lock().send(index, &header, buf).map_err(P2pError::Tcp)
    }

    /// Takes every message the TCP links hold into the matching queues.
    pub(super) fn poll_tcp(&mut self) -> Result<(), P2pError> {
        for link in 0..self.tcp.len() {
            if let Some(tcp) = self.tcp[link].clone() {
                self.poll_link(link, &tcp)?;
            }
        }
        Ok(())
    }

    fn poll_link(&mut self, link: usize, tcp: &TcpLink) -> Result<(), P2pError> {
        let mut transport = tcp.lock();
        while let Some(message) = transport.poll().map_err(P2pError::Tcp)? {
            let header = message.header;
            let len = message.payload.len();
            if header.kind != Kind::Eager || header.length != len as u64 {
                return Err(P2pError::CorruptQueue { peer: message.from });
            }
            let id = self.fresh_id();
            let mut arrival = Arrival {
                context: header.context,
                source: Peer::Tcp(tcp_peer(link, message.from)),
                rank: header.source,
                tag: header.tag,
                len,
                body: Body::Copied { pending: message.payload, in_sink: 0, received: len },
                recv: None,
                discard: false,
            };
            self.arrive(id, &mut arrival);
            self.arrivals.insert(id, arrival);
        }
        Ok(())
    }

    /// Whether anything waits in a TCP link's queues to be written.
    pub(super) fn tcp_has_outbound(&self) -> bool {
        self.tcp.iter().flatten().any(|tcp| tcp.lock().has_queued())
    }
}
