//! Messages over TCP: a send hands the whole message to the TCP transport (its framing and
//! bounded queue), and progress takes whole messages from it into the matching queues.
//!
//! The transport sits behind its own lock, shared with the runtime's waiting: a thread that
//! sleeps in `poll(2)` on the sockets holds only that lock, never the engine's. Lock order:
//! the engine's, then the transport's.

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

impl Engine {
    /// Sends `buf` whole to TCP peer `peer`; the transport copies it out, so the buffer is
    /// free on return. Waits (moving TCP traffic) while the peer's queue is full.
    pub(super) fn send_tcp(
        &mut self,
        peer: usize,
        envelope: Outbound,
        buf: &[u8],
    ) -> Result<(), P2pError> {
        let no_tcp = P2pError::NoTransport { rank: peer, transport: crate::transport::TCP.0 };
        let tcp = self.tcp.as_ref().ok_or(no_tcp)?;
        let header = Header {
            kind: Kind::Eager,
            context: envelope.context,
            source: envelope.source,
            tag: envelope.tag,
            sequence: 0,
            length: buf.len() as u64,
        };
        tcp.lock().send(peer, &header, buf).map_err(P2pError::Tcp)
    }

    /// Takes every message the TCP transport holds into the matching queues (a matched one
    /// is copied into its receive's buffer when that buffer is lent, as a ring's is).
    pub(super) fn poll_tcp(&mut self) -> Result<(), P2pError> {
        let Some(tcp) = self.tcp.clone() else { return Ok(()) };
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
                source: Peer::Tcp(message.from),
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

    /// Whether TCP is in use and anything waits in its queues to be written.
    pub(super) fn tcp_has_outbound(&self) -> bool {
        self.tcp.as_ref().is_some_and(|tcp| tcp.lock().has_queued())
    }
}
