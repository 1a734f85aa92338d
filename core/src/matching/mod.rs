//! Message matching: which posted receive an arriving message completes, independent of the
//! transport that carried it.
//!
//! MPI matches a message to a receive on the triple ⟨context id, source, tag⟩; a receive
//! may name any source and any tag. Two queues hold what has not matched yet:
//!
//! ```text
//!   post_recv(pattern) ──► search unexpected (arrival order) ──found──► Matched
//!                                    │ none
//!                                    ▼
//!                           posted queue (posting order)
//!
//!   arrive(envelope)   ──► search posted (posting order)    ──found──► Matched
//!                                    │ none
//!                                    ▼
//!                           unexpected queue (arrival order)
//! ```
//!
//! Order: both queues are searched oldest first, so, given that a transport delivers the
//! messages of one sender in the order they were sent, two messages of one sender that both
//! match a receive are received in the order they were sent (MPI's non-overtaking rule), and
//! two receives that both match a message are satisfied in the order they were posted.
//!
//! Bounds: the posted queue holds at most `P` receives and the unexpected queue at most `U`
//! messages (const generics, no heap). A full queue is an `Err` naming its capacity: the
//! caller applies back-pressure (stops polling the transport) or fails the operation.
//! Searching is linear in the queue length, which MPI's ordering rules make hard to avoid
//! for wildcards; the queues are short in practice.
//!
//! The matcher never touches payloads: a message is a small `Copy` handle of the caller's
//! (a buffer index, a rendezvous descriptor) plus its length, and a receive is the caller's
//! request handle plus its capacity. A message longer than the receive's capacity still
//! matches and is reported as truncated, as MPI reports `MPI_ERR_TRUNCATE` on the receive.

mod envelope;
mod error;
mod matcher;

pub use envelope::{Envelope, Pattern, SourceSel, TagSel};
pub use error::MatchError;
pub use matcher::{Arrival, Matched, Matcher, Posting, RecvId};

#[cfg(test)]
mod tests;
