//! Shared memory between the ranks of a job: the mapped region, its layout, the per-pair
//! queues, the collective areas, futex waits, process-wide barriers and single-copy reads
//! from a peer's memory.
//!
//! Every `unsafe` block of the runtime that touches shared memory or the kernel lives in
//! this module's files ([`region`], [`futex`], [`membarrier`], [`cma`], [`coll_area`]); the
//! rest of the runtime works through their safe, bounds-checked functions. Elsewhere, only
//! `runtime/layout_words.rs` (a node layout's heap words, kept alive for its table) and
//! `runtime/affinity.rs` (binding ranks to CPUs) use `unsafe`.

pub mod bridge;
pub mod cma;
pub mod coll_area;
#[cfg(all(test, loom))]
mod coll_area_loom;
pub mod futex;
pub mod layout;
#[cfg(all(test, loom))]
mod loom_model;
pub mod membarrier;
pub mod region;
pub mod ring;

pub use bridge::{Bridge, BridgeLayout};
pub use coll_area::CollArea;
pub use layout::Layout;
pub use region::Region;
pub use ring::{CellHeader, CellKind, Ring, Take, TakeRun};
