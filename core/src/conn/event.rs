//! What the machine reports and hands out: events, datagrams, counters, errors.

use core::fmt;

use super::identity::{Addr, Identity};
use super::packet::PACKET_MAX;

/// Names one connection; both ends report the same id for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectionId {
    /// The endpoint whose attempt became the connection.
    pub initiator: Identity,
    /// The initiator's nonce.
    pub initiator_nonce: u64,
    /// The responder's nonce.
    pub responder_nonce: u64,
}

/// An established connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Connection {
    /// The other end.
    pub peer: Identity,
    /// The address the peer announced for itself.
    pub peer_addr: Addr,
    /// Where the handshake's datagrams from the peer came from: for a stream transport,
    /// the stream that carried the winning handshake (the platform closes the others).
    pub via: Addr,
    /// The connection's id, the same at both ends.
    pub id: ConnectionId,
}

/// Why a handshake failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailReason {
    /// We asked to connect and the peer did not accept before the deadline.
    NoAnswer,
    /// The peer asked to connect, we accepted, and it did not confirm before the deadline.
    Unconfirmed,
}

impl fmt::Display for FailReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FailReason::NoAnswer => "the peer did not answer the connection request in time",
            FailReason::Unconfirmed => "the peer did not confirm the accepted connection in time",
        })
    }
}

/// Something the platform should know about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// A connection is up (whichever side began it).
    Connected(Connection),
    /// The peer began a new handshake while connected (it closed its side, or lost it):
    /// the connection `id` is gone, the platform drops what it kept for it, and an event
    /// reports how the new handshake ends.
    Superseded {
        /// The other end.
        peer: Identity,
        /// The connection that is gone.
        id: ConnectionId,
    },
    /// A handshake with `peer` failed; no state is kept for it any more.
    Failed {
        /// The other end.
        peer: Identity,
        /// Why.
        reason: FailReason,
    },
}

/// A datagram to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram {
    /// The destination.
    pub to: Addr,
    len: u8,
    bytes: [u8; PACKET_MAX],
}

impl Datagram {
    pub(super) fn new(to: Addr, bytes: [u8; PACKET_MAX], len: usize) -> Self {
        Self { to, len: len as u8, bytes }
    }

    /// The bytes to send.
    pub fn payload(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Datagrams the machine did not act on, by cause, and repeats it answered again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stats {
    /// Not a handshake datagram, or its fields do not fit together.
    pub malformed: u64,
    /// Carried another job's (or a forger's) token.
    pub bad_token: u64,
    /// Addressed to another identity, or claiming to come from this one.
    pub misdirected: u64,
    /// Nonces that do not match the handshake in progress (stale or forged), and confirms
    /// sent before the peer began the request in progress.
    pub bad_nonce: u64,
    /// Refer to no handshake in progress: requests that lost the tie-break or began
    /// before the connection that is up, answers to requests never sent or given up.
    pub unsolicited: u64,
    /// Repeats of a datagram already handled (answered again where that helps the peer).
    pub duplicates: u64,
    /// Requests from new peers refused because the connection table was full.
    pub table_full: u64,
}

/// Why a command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnError {
    /// The connection table holds `capacity` peers already: close connections or build
    /// the endpoint with a larger capacity.
    TableFull {
        /// The table's capacity (the endpoint's `N`).
        capacity: usize,
    },
    /// An endpoint cannot connect to itself.
    SelfConnect,
    /// The configuration's timers do not fit: `initial_retry` must be at least 1,
    /// `max_retry` at least `initial_retry`, and `timeout` at least `max_retry`.
    BadConfig,
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::TableFull { capacity } => write!(
                f,
                "connection table full ({capacity} peers): close a connection or raise the capacity"
            ),
            ConnError::SelfConnect => f.write_str("an endpoint cannot connect to itself"),
            ConnError::BadConfig => f.write_str(
                "handshake timers must satisfy 1 <= initial_retry <= max_retry <= timeout",
            ),
        }
    }
}
