//! On-demand connection set-up: a sans-IO handshake over unreliable datagrams.
//!
//! Every process is an [`Identity`] (process group, index in it) reachable at an opaque
//! [`Addr`]. The first message to a peer makes the platform call [`Endpoint::connect`]; the
//! endpoint then trades three datagrams with the peer's endpoint, and both report
//! [`Event::Connected`] with the same [`ConnectionId`]. The platform carries the datagrams
//! over whatever it has: UDP, a TCP stream per attempt (where [`Connection::via`] names
//! the stream that won), a verbs UD queue pair before opening an RC connection, or a
//! simulated network. The same exchange gives a spawned or connected group's root the
//! other root's address (each datagram announces its sender's address).
//!
//! ```text
//!   initiator (connect)                               responder
//!        |  Request {token, me, you, nonce_i, my addr}  |
//!        | -------------------------------------------> |  Accepting, nonce_r =
//!        |                                              |  keyed hash of the request
//!        |  Accept  {token, me, you, nonce_i, nonce_r,  |
//!        |           my addr}                           |
//!        | <------------------------------------------- |
//!  Connected                                            |
//!        |  Confirm {token, me, you, nonce_i, nonce_r}  |
//!        | -------------------------------------------> |  Connected
//! ```
//!
//! Losses and repeats:
//! - The initiator retransmits its request, and the responder its accept, after
//!   `initial_retry`, doubling up to `max_retry` between transmissions ([`Config`]).
//! - A repeated request is answered with the same accept; a repeated accept (the confirm
//!   was lost) with the same confirm; a repeated confirm is dropped. Nothing is created
//!   twice, so duplicates are harmless.
//! - A handshake not finished `timeout` after it began fails: [`Event::Failed`] with
//!   [`FailReason::NoAnswer`] (we asked) or [`FailReason::Unconfirmed`] (we accepted).
//!   A peer that never answers or vanishes mid-handshake is thus reported `timeout` after
//!   the entry for it was made (by `connect` or by its first request), once the platform
//!   calls `handle_timeout` at the time `poll_timeout` names. Nothing extends a deadline.
//! - The initiator is connected on the accept, the responder on the confirm. If every
//!   confirm and repeated accept is lost until the responder's deadline, the initiator
//!   believes in a connection the responder failed: the first message on it then fails at
//!   the transport. Retransmissions make this as unlikely as the platform needs.
//!
//! Simultaneous connects: when both ends send requests, the request of the lower
//! identity wins. The lower end ignores the higher end's requests; the higher end accepts
//! the lower end's request and keeps repeating its own request too, in case the request
//! it accepted is a stale one the lower end no longer waits on (the lower end then
//! accepts the higher end's request). Only one of the two can complete: the lower end
//! accepts a request from the higher end only while it is not connecting itself, and the
//! higher end takes an accept of its own request only if the lower end sent it after it
//! began the request the higher end is accepting (see counts below). A `connect` while we
//! accept the peer's request waits for that handshake; if it fails, our own attempt
//! begins then (so such a connect ends within twice the timeout).
//!
//! Counts and reconnection: every endpoint counts the attempts it begins; a request carries
//! its attempt's number, an accept or confirm the sender's count when sent. The connection
//! remembers the highest count the peer sent in the handshake that made it. A request
//! numbered up to that count began before the connection, so it is stale and dropped; one
//! numbered above began after, so the peer closed or lost its side: the old connection is
//! reported [`Event::Superseded`] and the new handshake answered. Likewise a confirm counts
//! only if its count is at least the number of the newest request the responder accepts
//! from that peer: a lower one was sent before the peer began that request, for a
//! connection it has closed since, and is dropped (it must not revive that connection
//! while the peer waits on the new one). Disconnect and reconnect therefore needs no
//! coordination: either side closes and connects again.
//!
//! Security and stale datagrams: every datagram carries the job's token. The initiator's
//! nonce is drawn from the seed the platform gives; the responder's is a hash of the
//! request keyed by that seed, so each request gets its own accept and a late or replayed
//! request never undoes the handshake in progress (the responder keeps no state per
//! request: its repeats answer the latest). An accept must carry the initiator's nonce
//! and a confirm the responder's. A datagram with a wrong token, identity or nonce, or one
//! from a finished handshake, is dropped and counted in [`Stats`]; decoding any bytes never
//! panics. Hashes and counts are not authenticated: the token keeps other jobs out (a
//! restarted process needs a new token or identity, as its count starts again), and an
//! attacker who reads the traffic is the transport's concern.
//!
//! Bounds: at most `N` peers have state ([`Endpoint`]'s const generic), only peers that
//! were talked to; [`Endpoint::connect`] on a full table is [`ConnError::TableFull`] and a
//! request from a new peer is dropped (the peer's handshake then fails in time). Each peer
//! owes at most one datagram of each kind and holds at most two unpolled events (a
//! superseded connection and the outcome of the handshake after it), so no queue grows.
//! Lookups scan the table (fine for the tens of peers a process talks to; a platform with
//! thousands keeps its own index). A connection stays until [`Endpoint::close`].

mod config;
mod endpoint;
mod event;
mod identity;
mod packet;
mod receive;
mod slot;

pub use config::Config;
pub use endpoint::{ConnectOutcome, Endpoint, PeerState};
pub use event::{ConnError, Connection, ConnectionId, Datagram, Event, FailReason, Stats};
pub use identity::{Addr, Identity, ADDR_MAX};
pub use packet::PACKET_MAX;

#[cfg(test)]
mod tests;
