//! # commcore-bare: commcore for lightweight kernels
//!
//! Layer: **platform**. A kernel with no operating system beneath it, no heap and no libc
//! embeds commcore through this crate. Everything comes from memory the kernel owns
//! (`static` items, its stack) and every structure has a capacity fixed by a const generic:
//!
//! - [`storage`]: [`StaticCell`] (taken once at boot, no `unsafe`), [`AvStorage`] for
//!   address vectors, [`TableWords`] for rank-map tables, [`CidSlots`] for CID stores.
//! - [`job`]: [`Job`] registers process groups, builds and frees communicators' rank maps.
//! - [`cid`]: [`agree`] runs a context-id agreement for the ranks this kernel hosts through
//!   the kernel's own [`Allreduce`]; [`SharedStore`] is the CID → communicator map behind a
//!   spin lock.
//! - [`transport`]: [`RankRun`] runs one rank's collective schedule through the kernel's
//!   own send and receive callbacks ([`Transport`]).
//! - [`exec`]: [`Executor`] runs the schedules of ranks that share the kernel's address
//!   space, round-robin, over bounded per-pair queues ([`Mailboxes`]), and reports a
//!   deadlock with its step count instead of spinning.
//! - [`selftest`]: the checks the QEMU test kernel runs at boot, also run by the host tests.
//!
//! Rules: `#![no_std]`, no `alloc`, no `unsafe`; a full structure or bad input is an `Err`
//! with a sentence saying what to change, never a panic; every loop that waits for other
//! ranks has a bound.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod cid;
pub mod exec;
pub mod job;
pub mod selftest;
pub mod storage;
pub mod transport;

pub use cid::{agree, AgreeError, AgreeStats, Allreduce, Member, SharedStore};
pub use exec::{ExecError, ExecStats, Executor, Mailboxes};
pub use job::{Job, JobError, RANK_MAP_BYTES};
pub use storage::{
    av_storage, cid_slots, AlreadyTaken, AvStorage, CidSlots, StaticCell, TableWords,
};
pub use transport::{RankBufs, RankRun, RunError, RunStatus, Transport};
