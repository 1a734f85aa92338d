//! # commcore-linux: the Linux platform of commcore
//!
//! Layer: **platform**. It owns memory, clocks, threads, processes and the network, hands
//! core the storage and the results of communication, and performs the steps core returns.
//! It also carries the simulated worlds that tests and benchmarks share ([`sim`]) and the
//! benchmarks behind the `commcore` binary ([`bench`]).
//!
//! Rules: every `unsafe` block carries a `// SAFETY:` comment (clippy denies one without);
//! no panic on a path a user's input can reach: command-line and runtime errors are values.

pub mod bench;
pub mod demo;
pub mod launch;
pub mod runtime;
pub mod shm;
pub mod sim;
