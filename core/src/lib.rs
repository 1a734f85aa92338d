//! # commcore: the communicator core of an MPI implementation
//!
//! Layer: **core**. This crate decides; platforms act. It holds the mechanisms that need no
//! operating system: who every process is (address vectors, [`av`]), how a communicator's
//! ranks map to those processes ([`rankmap`]), how members agree on a context identifier
//! ([`cid`]) and which collective algorithm runs and in which steps ([`coll`]); and, for the
//! message path, which receive an arriving message completes ([`matching`]), the
//! point-to-point header ([`wire`]) and the on-demand connection handshake ([`conn`]); and, for dynamic processes, the port
//! names jobs connect through ([`port`]).
//!
//! Rules, checked by CI:
//! - `#![no_std]`; `std` only under `cfg(test)`. CI builds this crate for
//!   `x86_64-unknown-none`, so a dependency that pulls `std` in fails the build.
//! - No heap: capacities are const generics or the caller hands in storage. A full
//!   structure is an `Err`, never a panic.
//! - No `unsafe` (`forbid`).
//! - Never calls the platform back, never reads a clock, never draws randomness: algorithms
//!   that communicate are sans-IO state machines which return the next step to perform and
//!   take its result back.
//! - Thread-shared state is reached through [`sync`] only, so loom can replace it.
//!
//! Panics: none on any path reachable with caller input; internal invariants are
//! `debug_assert!`ed.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod av;
pub mod cid;
pub mod coll;
pub mod conn;
pub mod matching;
pub mod port;
pub mod rankmap;
pub mod sync;
pub mod wire;
