//! A simulated lossy datagram network that runs N connection endpoints on virtual time.
//!
//! - [`Network`]: datagrams in flight, each lost, duplicated or delayed past later ones
//!   (reordered) with configurable probabilities, all drawn from one seeded generator, so a
//!   run is a function of its seed.
//! - [`World`]: N [`commcore::conn::Endpoint`]s on the network, driven as a platform drives
//!   them (inputs, then every `poll_*` until `None`), on virtual time that jumps to the next
//!   delivery or timer. Endpoints can be killed, datagrams injected, and every event is
//!   logged per endpoint.
//!
//! A run never hangs: more steps than its limit is [`SimError::Livelock`], and a world with
//! nothing left to deliver and no timer while a handshake is still open is
//! [`SimError::Deadlock`]; both carry the step count.

mod network;
mod world;

pub use network::{Faults, Network, NetworkStats};
pub use world::{SimError, World, WorldConfig};
