//! Verbs: InfiniBand and RoCE queue pairs, the transport between nodes on the networks
//! clusters use (the dynamic-process paper's design).
//!
//! - Every process has one unreliable-datagram (UD) queue pair; its address (GID, LID,
//!   queue pair number, key: [`VerbsAddress`]) is what the process's address-vector entry
//!   leads to over verbs.
//! - Reliable connections (RC) are made on demand: the first message to a peer starts core's
//!   handshake ([`commcore::conn`]) over UD datagrams. Each side makes an RC queue pair for
//!   the connection and announces it in its request or accept; on the handshake's end both
//!   move it to ready-to-send towards the other. The responder is up at once and sends
//!   `Ready`; the initiator sends its first frame after that `Ready`, so nothing reaches a
//!   queue pair that is not ready to receive. [`ConnectMode::Eager`] connects every pair at
//!   start-up instead (the all-to-all baseline).
//! - Data: a frame ([`frame`]) of up to `eager_max` payload bytes is copied into a
//!   registered send buffer and lands in one shared receive queue, so receive buffers do not
//!   grow with peers. Each peer may have `credits` data frames unread at the receiver;
//!   credits come back on every frame, or alone once half are owed. A peer out of credits
//!   queues at the sender, up to `queue_bytes`; past that a send waits, and after
//!   `send_timeout` the peer counts as no longer receiving.
//! - Long messages: the sender registers its buffer (through a bounded registration cache,
//!   [`reg_cache`]) and announces it; the receiver's owner reads it with RDMA into its own
//!   registered buffer ([`VerbsTransport::read_remote`]) and says `Done`. Only the device
//!   copies a long message.
//! - Faults: a peer whose queue pair stops answering (retries exceeded), a handshake that
//!   times out, or a connection whose other side never came up fails that peer, naming its
//!   rank; every queue pair, region and buffer is released when the transport is dropped.
//!
//! The transport is written against [`device::Device`], the small set of verbs calls it
//! makes. [`fabric`] implements it in process (queues, copies, lossy datagrams, deaths) for
//! the tests and the handshake figures; the implementation on `libibverbs` lives behind the
//! cargo feature `verbs`, so the default build needs no RDMA package.
//!
//! Why a cargo feature and not loading `libibverbs` at run time: the calls that move data
//! (`ibv_post_send`, `ibv_poll_cq`, ...) are inline functions in `verbs.h` that call through
//! the context's table, so a run-time loader would have to restate that table's layout by
//! hand; `ibverbs-sys` generates it from rdma-core's headers. The default build does not
//! need it; `scripts/test.sh` builds the feature and runs it on soft-RoCE in a guest.
//!
//! The runtime reaches it through the message-transport boundary
//! ([`crate::transport::message::MessageTransport`], the engine's one path for TCP and
//! verbs): `COMMCORE_TRANSPORT=verbs` makes every pair of a job talk over verbs (entries
//! with the [`crate::transport::VERBS`] selector), the addresses exchanged through the
//! launcher's exchange ([`join`]). A build without the feature, or a machine without a
//! device, says so at start-up. Not yet: verbs chosen per peer between hosts, and groups
//! spawned or connected over verbs (they meet over TCP).

pub mod address;
pub mod device;
pub mod error;
pub mod fabric;
pub mod frame;
#[cfg(feature = "verbs")]
pub mod ibverbs;
pub mod join;
mod link;
mod message;
mod progress;
pub mod reg_cache;
mod rendezvous;
pub mod simulate;
mod slab;
mod transport;

#[cfg(test)]
mod tests;

pub use address::VerbsAddress;
pub use error::{PeerFault, VerbsError};
pub use transport::{Arrival, ConnectMode, Resources, VerbsSettings, VerbsTransport, MAX_PEERS};
