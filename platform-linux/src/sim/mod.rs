//! Deterministic simulated worlds, shared by the tests and the benchmarks.

pub mod cid_world;
pub mod coll_exec;
