//! Context-ID allocation: agreeing on a communicator identifier (CID) free on every member.
//!
//! Three algorithms share one request type, [`CidRequest`], a sans-IO state machine that a
//! host drives with its own allreduce:
//!
//! ```text
//! loop {
//!     match request.poll(&space)? {
//!         Step::Allreduce { op, words } => { /* reduce `words` over the members */ }
//!         Step::Wait => { /* yield to this process's other threads */ continue }
//!         Step::Done(cid) => break cid,
//!     }
//!     request.handle_allreduce(&space, &reduced)?;
//! }
//! ```
//!
//! - [`Algorithm::Lowest`]: the lowest locally free CID is proposed, a MAX allreduce picks
//!   the candidate, an AND allreduce confirms that it is free everywhere; a failed round
//!   retries above the failed candidate. After a failed first round only the process's
//!   priority request (least ⟨parent cid, tag⟩) searches; the others [`Step::Wait`].
//! - [`Algorithm::Mask`]: one BAND allreduce of the free-CID mask. An eager segment is tried
//!   first; that allreduce also proves every member arrived, which prevents the hold-and-wait
//!   deadlock of the original algorithm. Threads of one process take turns holding the
//!   mask by ⟨parent cid, tag⟩ priority; threads that do not hold it contribute zeros.
//!   The eager segment may be cut into lanes ([`CidSpace::with_eager_lanes`]): a request
//!   takes the lane its ⟨parent cid, tag⟩ hashes to (alike on every member) and holds that
//!   lane only, so creations on different parents in different threads each agree in one
//!   round instead of voiding each other's; two on one lane fall back to the base mask, as
//!   a request finding the one eager segment held did. Lanes are disjoint and each has one
//!   holder, so no CID is taken twice; the eager round still proves every member arrived
//!   before any base round, so the deadlock argument stands.
//! - [`Algorithm::Highest`]: one MAX allreduce of one integer (the highest CID in use plus
//!   one); a mask round when the highest CID would leave the configured width, so it never
//!   fails while a common free CID exists. When threads allocate concurrently
//!   ([`SpaceConfig::threaded`]) a confirmation round follows: the first allreduce reserves
//!   nothing and proves every member arrived; then, while it has its process's priority,
//!   the request reserves a window of 32 CIDs (the maximum, then CIDs on a lane chosen by
//!   its ⟨parent cid, tag⟩) and one BAND allreduce of a word picks the first CID reserved
//!   everywhere. Concurrent requests that agreed on the same maximum thus rarely need a
//!   third round; a failed window is passed, not waited for, so no request holds CIDs that
//!   another needs while it waits.
//!
//! The per-process state that threads share is a [`CidSpace`]; every request of a process
//! runs against the same space, and all requests of one space use the same algorithm (the
//! mask rounds and the reservations of the others do not coordinate). Group-collective creation (`comm_create_group`) is the same
//! request with a tag, driven over the subgroup only; inter-communicators pair two local
//! allocations through [`InterCidRequest`]. CIDs map to communicators through a
//! [`store::CidStore`].

mod error;
mod inter;
mod request;
mod space;
mod step;
pub mod store;

#[cfg(test)]
mod lane_tests;
#[cfg(test)]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;

pub use error::{CidError, SpaceError};
pub use inter::{InterCidPair, InterCidRequest, InterStep};
pub use request::{Algorithm, CidRequest};
pub use space::{words_for, CidSpace, SpaceConfig, MAX_EAGER_LANES, MAX_WIDTH};
pub use step::{ReduceOp, Step};

/// A context identifier: an index below the space's width.
pub type Cid = u32;
