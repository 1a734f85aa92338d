//! TCP, the transport between ranks on different hosts (and between any two ranks when
//! `COMMCORE_TRANSPORT=tcp`).
//!
//! - Every rank listens on one socket whose address the others learn at start-up (from the
//!   launcher's key-value exchange, [`crate::launch::kv`]).
//! - Connections are made on demand, at the first message to a peer. The handshake is core's
//!   sans-IO machine ([`commcore::conn`]): its datagrams travel as frames on TCP streams.
//!   A datagram to a listening address goes on a stream this rank dials to it; an answer
//!   goes back on the stream the datagram came by (the address the machine sees is a token
//!   naming that stream). When both ranks dial each other at once, the machine picks one
//!   handshake; its stream ([`commcore::conn::Connection::via`]) carries the connection, and
//!   each side closes the streams it dialed for the handshake that lost. A peer that never
//!   answers fails the first send to it after the handshake's timeout.
//! - Framing ([`frame`]): a 5-byte prefix (length, kind), then a handshake datagram, or
//!   core's 32-byte wire header ([`commcore::wire`]) and the payload, or a goodbye.
//! - Back-pressure: at most `queue_bytes` wait to be written to one peer (messages sent
//!   before the connection is up count too). A send beyond that moves traffic until there
//!   is room; after `send_timeout` without room the peer counts as no longer reading and
//!   the send fails naming it. Memory per peer is bounded by the queue plus one message.
//! - Latency: TCP_NODELAY on every stream; a message is written straight from the caller's
//!   buffer when nothing is queued before it; waiting spins briefly over the sockets, then
//!   sleeps in `poll(2)`.
//! - Long messages (payload ≥ [`LONG_PAYLOAD`]): the header is announced as soon as it is
//!   here, and the rest is read from the socket straight into the receive's buffer while
//!   that is lent; a send of ≥ 64 KiB is written from the caller's buffer by address.
//!   There is no rendezvous: a long message nobody receives yet is read into memory of
//!   its own, so a peer's stream never stalls behind it.
//! - Ends: a rank that finishes says goodbye on each connection; any other end of a
//!   connection (the rank exited or was killed: EOF; a reset) is an error naming the rank,
//!   reported by every later call, since the job cannot go on without it.

pub mod error;
pub mod frame;
mod message;
mod outbound;
pub mod socket;
mod start;
mod stream;
mod transport;

pub use error::{PeerFault, TcpError};
pub(crate) use start::random;
pub use start::{interface_ip, listen_ip, set_default_listen_ip, StartError, ENV_LISTEN_IP};
pub use stream::LONG_PAYLOAD;
pub use transport::{Arrival, TcpSettings, TcpTransport, MAX_PEERS};
