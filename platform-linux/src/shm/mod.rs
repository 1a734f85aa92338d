//! Shared memory between the ranks of a job: the mapped region, its layout, the per-pair
//! queues, futex waits, process-wide barriers and single-copy reads from a peer's memory.
//!
//! Every `unsafe` block of the runtime lives in this module's files ([`region`], [`futex`],
//! [`membarrier`], [`cma`]); the rest of the runtime works through their safe, bounds-checked functions.

pub mod cma;
pub mod futex;
pub mod layout;
#[cfg(all(test, loom))]
mod loom_model;
pub mod membarrier;
pub mod region;
pub mod ring;

pub use layout::Layout;
pub use region::Region;
pub use ring::{CellHeader, CellKind, Ring};
