//! # commcore-cli: the `commcore` command
//!
//! Layer: **application**, on top of the platform. The `commcore` binary starts jobs through
//! `commcore-linux`'s launcher (`commcore run`, [`run`]), runs the demo (`commcore demo`,
//! [`demo`]) and the benchmarks (`commcore bench NAME`, [`bench`]), which use the simulated
//! worlds of `commcore-sim`, serves names to unrelated jobs (`commcore nameserver`,
//! [`nameserver`]) and writes the papers' figures as a page of plots (`commcore report`,
//! [`report`]). Its arguments are parsed by clap ([`args`]); every error a user
//! can cause is one message and a documented exit status, never a panic.

pub mod args;
pub mod bench;
pub mod demo;
mod help;
pub mod mpi_library;
pub mod nameserver;
pub mod report;
pub mod run;

use std::process::ExitCode;

/// The `commcore` command on this process's arguments.
pub fn main() -> ExitCode {
    let status = args::dispatch(std::env::args_os().collect());
    ExitCode::from(u8::try_from(status).unwrap_or(1))
}
