//! # commcore-cli: the `commcore` command
//!
//! Layer: **application**, on top of the platform. The `commcore` binary starts jobs through
//! `commcore-linux`'s launcher (`commcore run`), runs the demo (`commcore demo`, [`demo`]) and
//! the benchmarks (`commcore bench NAME`, [`bench`]), which use the simulated worlds of
//! `commcore-sim`. The tests call the benchmarks' entry points directly.

pub mod bench;
pub mod demo;
