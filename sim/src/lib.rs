//! # commcore-sim: deterministic simulated worlds
//!
//! Layer: **simulation**, beside the platform. It runs core's state machines among many
//! simulated ranks in one process, without shared memory or processes: the context-ID world
//! ([`cid_world`]), the collective executor ([`coll_exec`]) and a lossy datagram network
//! running connection endpoints ([`lossy_net`]). The tests, the fuzz targets and the
//! benchmarks of `commcore-cli` share it. It depends on `commcore` only (and a seeded random
//! generator for its workloads), never on a platform.

pub mod cid_world;
pub mod coll_exec;
pub mod lossy_net;
