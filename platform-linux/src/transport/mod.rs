//! The transport boundary: what the runtime's engine needs from a way of reaching a peer.
//!
//! A transport moves packets, each core's 32-byte wire header ([`commcore::wire::Header`])
//! plus a payload of at most [`Capabilities::max_payload`] bytes, to a peer named by the
//! address word of the peer's address-vector entry ([`PeerAddress`]). It keeps the order of
//! packets per pair, pushes back when a peer's queue is full ([`Transport::try_send`]
//! returns `Ok(false)`), offers arrivals one at a time without copying them first
//! ([`Transport::poll`]), and lets a waiter sleep until a peer [`Transport::notify`]s it or
//! a deadline passes ([`Transport::wait`]). Matching, rendezvous and fragmentation are the
//! engine's, the same over every transport. Shared memory implements [`Transport`];
//! transports of whole messages with their own framing and waiting (TCP, verbs) implement
//! [`message::MessageTransport`], one engine path for both.
//!
//! Which transport reaches a peer is the transport selector of its entry
//! ([`commcore::av::Ave::transport`]): [`SHARED_MEMORY`], [`TCP`] or [`VERBS`]. The engine
//! resolves a peer once, when it first talks to it, and keeps the [`Route`] in its
//! connection table, so a message costs one array load and a `match` on the selector, no
//! trait object and no hash lookup. The contract is written up in the repository's notes
//! (`transport-contract.md`) for transports built elsewhere.

pub mod message;
pub mod shm;
pub mod verbs;

use std::fmt;
use std::time::Instant;

use commcore::av::{Ave, TransportId};
use commcore::wire::Header;

/// The selector of the shared-memory transport in an address-vector entry.
pub const SHARED_MEMORY: TransportId = TransportId(0);
/// The selector of the TCP transport in an address-vector entry.
pub const TCP: TransportId = TransportId(1);
/// The selector of the verbs transport in an address-vector entry (its address word: the
/// peer's link and index, as TCP's).
pub const VERBS: TransportId = TransportId(2);

/// A peer as its transport addresses it: the address word of the peer's address-vector
/// entry, whose meaning is the transport's (shared memory: the peer's slot in the job's
/// region and its process id; TCP: a handle to the peer's socket address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerAddress(pub u64);

/// How the engine reaches one peer: which transport, and the peer's address in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Route {
    /// The entry's transport selector.
    pub transport: TransportId,
    /// The entry's address word.
    pub peer: PeerAddress,
}

impl Route {
    /// The route an address-vector entry names: one mask and shift, one load.
    #[inline]
    pub fn of(entry: &Ave) -> Route {
        Route { transport: entry.transport(), peer: PeerAddress(entry.address_word()) }
    }
}

/// What a transport can do for one peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// The largest payload of one packet: a message up to this many bytes goes eagerly in
    /// one packet, a longer one in several (or by single copy).
    pub max_payload: usize,
    /// Whether [`Transport::read_remote`] and [`Transport::write_remote`] work for the peer
    /// (single copy: `process_vm_readv`/`writev`, later RDMA).
    pub single_copy: bool,
    /// Whether the peer runs on this node (shares memory with this process).
    pub same_node: bool,
}

/// Why a transport failed. Each names the peer, so the job's error can say which rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// The peer sent bytes that are not a packet (a broken queue or stream).
    Corrupt {
        /// The peer.
        peer: PeerAddress,
    },
    /// The peer is gone (its process ended, its connection was reset).
    PeerGone {
        /// The peer.
        peer: PeerAddress,
    },
    /// The address names no peer this transport knows.
    UnknownPeer {
        /// The address.
        peer: PeerAddress,
    },
    /// The operation is not available for this peer (e.g. single copy over TCP).
    Unsupported {
        /// The peer.
        peer: PeerAddress,
    },
    /// A system call failed.
    Os {
        /// The peer.
        peer: PeerAddress,
        /// The error number.
        errno: i32,
    },
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Corrupt { peer } => {
                write!(f, "peer {:#x} sent bytes that are not a packet", peer.0)
            }
            Self::PeerGone { peer } => write!(f, "peer {:#x} is gone", peer.0),
            Self::UnknownPeer { peer } => write!(f, "no peer at address {:#x}", peer.0),
            Self::Unsupported { peer } => {
                write!(f, "peer {:#x} cannot be reached by single copy", peer.0)
            }
            Self::Os { peer, errno } => {
                write!(f, "talking to peer {:#x} failed: errno {errno}", peer.0)
            }
        }
    }
}

impl std::error::Error for TransportError {}

/// What [`Transport::poll`]'s callback did with the packet it was offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    /// The packet is consumed; offer the next one.
    Consumed,
    /// Leave the packet at the head of its queue and stop polling this peer (the engine
    /// cannot take it now; it is offered again at the next poll).
    Leave,
}

/// An arrived packet, lent by [`Transport::poll`] to its callback.
pub trait Arrival {
    /// The packet's header.
    fn header(&self) -> &Header;
    /// Bytes of the packet's payload.
    fn payload_len(&self) -> usize;
    /// Copies the first `dst.len()` (at most [`Arrival::payload_len`]) payload bytes to `dst`.
    fn read_payload(&self, dst: &mut [u8]);
}

/// A way of reaching peers. Implementations are used through static dispatch (a `match`
/// on the route's selector), so the methods are generic where that saves a call.
pub trait Transport {
    /// The packet type [`Transport::poll`] lends.
    type Arrival<'a>: Arrival
    where
        Self: 'a;

    /// What the transport can do for `peer`.
    fn capabilities(&self, peer: PeerAddress) -> Capabilities;

    /// Queues one packet to `peer`: `Ok(true)` when it is on its way, `Ok(false)` when the
    /// peer's queue is full now (back-pressure: make progress, then try again). `payload`
    /// is at most [`Capabilities::max_payload`] bytes. Packets to one peer arrive in the
    /// order they were sent. Call [`Transport::notify`] after a batch of sends.
    fn try_send(
        &self,
        peer: PeerAddress,
        header: &Header,
        payload: &[u8],
    ) -> Result<bool, TransportError>;

    /// Whether a send to `peer` would be accepted now.
    fn has_room(&self, peer: PeerAddress) -> bool;

    /// Offers the packets that have arrived from `peer`, oldest first, to `take`, until it
    /// returns [`Taken::Leave`], nothing more waits, or `budget` were consumed; returns how
    /// many were consumed.
    fn poll<F>(&self, peer: PeerAddress, budget: usize, take: F) -> Result<usize, TransportError>
    where
        F: FnMut(&Self::Arrival<'_>) -> Taken;

    /// Whether a packet from any peer waits (cheap enough to call while spinning).
    fn any_arrived(&self) -> bool;

    /// Wakes `peer` if it sleeps in [`Transport::wait`]: call after sending to it, or after
    /// consuming packets from it (room for it to send more).
    fn notify(&self, peer: PeerAddress);

    /// Sleeps until a peer notifies this process, `ready()` holds, or `deadline` passes.
    /// May return early (spuriously); the caller checks what it waits for and waits again.
    fn wait(&self, deadline: Instant, ready: impl Fn() -> bool);

    /// Copies `dst.len()` bytes at `remote` in `peer`'s memory into `dst` (single copy).
    fn read_remote(
        &self,
        peer: PeerAddress,
        remote: u64,
        dst: &mut [u8],
    ) -> Result<(), TransportError> {
        let _ = (remote, dst);
        Err(TransportError::Unsupported { peer })
    }

    /// Copies `src` into `peer`'s memory at `remote` (single copy).
    fn write_remote(
        &self,
        peer: PeerAddress,
        src: &[u8],
        remote: u64,
    ) -> Result<(), TransportError> {
        let _ = (src, remote);
        Err(TransportError::Unsupported { peer })
    }
}
