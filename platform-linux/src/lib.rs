//! # commcore-linux: the Linux platform of commcore
//!
//! Layer: **platform**. It owns memory, clocks, threads, processes and the network, hands
//! core the storage and the results of communication, and performs the steps core returns:
//! the runtime ([`runtime`]), shared memory ([`shm`]), TCP ([`tcp`]), the launcher ([`launch`]) and the
//! dynamic-process pieces built so far ([`dpm`]: descriptor handover, the name service). It
//! depends on `commcore` and `libc` only. The simulated worlds live in `commcore-sim`; the
//! `commcore` binary with its demo and benchmarks lives in `commcore-cli`.
//!
//! Rules: every `unsafe` block carries a `// SAFETY:` comment (clippy denies one without);
//! no panic on a path a user's input can reach: command-line and runtime errors are values.

pub mod dpm;
pub mod launch;
pub mod runtime;
pub mod shm;
pub mod tcp;
pub mod transport;
