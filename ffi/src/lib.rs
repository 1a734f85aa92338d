//! # commcore-ffi: the C ABI of commcore (`libcommcore`, header `include/commcore.h`)
//!
//! Layer: **platform boundary**. The host (an MPI implementation) owns memory,
//! communication and threads; commcore returns what to do next: the allreduces a context-id
//! agreement needs, the send/receive/reduce/copy steps of a collective. The shape follows
//! embeddable collective libraries (UCC): the host brings its own allreduce and
//! point-to-point and drives explicit state machines.
//!
//! Boundary rules, for every exported function:
//! - It returns a `commcore_result` (0 on success, codes from 7000 on) and records a
//!   sentence for `commcore_last_error()` on the calling thread when it fails. The rank
//!   translation returns a process word or a negative code instead.
//! - No panic unwinds into C: every export catches it and returns `COMMCORE_ERR_PANIC`.
//! - NULL pointers, overflowing lengths, handles of another type and freed handles are
//!   errors. Handles are tagged shells that are never returned to the allocator (see
//!   `handle`), so a stale handle reads a poisoned tag rather than freed memory.
//! - Ownership and thread-safety are stated on every type and function.
#![deny(missing_docs)]
#![allow(non_camel_case_types)]
// The exports are the C boundary: `unsafe` on them would be invisible to their C callers, so
// each states its pointer contract in the header instead, and checks what it can.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

mod cid;
mod cid_inter;
mod cid_store;
mod coll;
mod groups;
mod handle;
mod in_place;
mod rankmap;
mod reduce;
mod result;
mod schedule;
mod storage;

pub use cid::*;
pub use cid_inter::*;
pub use cid_store::*;
pub use coll::*;
pub use groups::*;
pub use rankmap::*;
pub use reduce::*;
pub use result::*;
pub use schedule::*;

#[cfg(test)]
mod tests;
