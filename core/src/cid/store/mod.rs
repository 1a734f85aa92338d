//! CID → communicator storage: one trait, four bounded structures.
//!
//! | structure | lookup | memory |
//! |---|---|---|
//! | [`Flat`] | one load | every CID up to the highest ever used |
//! | [`Radix`] | four loads (8-bit levels) | 256-CID chunks, freed when empty |
//! | [`RbTree`] | up to 2 log n loads | one node per live communicator |
//! | [`Folded`] | one load (dense CIDs), else two independent loads and an XOR | about two cells a live CID, and a use-count byte a cell |
//!
//! All take their memory from the caller (a slice or node pools) and return
//! [`StoreError::Full`] when it runs out.

mod flat;
mod folded;
mod radix;
mod rbtree;

use core::fmt;

pub use flat::Flat;
pub use folded::{Folded, FoldedSlot};
pub use radix::{Radix, RadixInner, RadixLeaf};
pub use rbtree::{RbNode, RbTree};

use super::Cid;

/// Why a store refused an insert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreError {
    /// The CID already maps to a communicator.
    Occupied,
    /// The caller's storage is used up.
    Full,
    /// The structure cannot hold this CID at all (beyond a flat slice, or a reserved key).
    OutOfRange,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreError::Occupied => "cid already maps to a communicator",
            StoreError::Full => "storage is full",
            StoreError::OutOfRange => "cid is outside what this storage holds",
        })
    }
}

/// A map from CID to a caller-chosen communicator handle `H`.
pub trait CidStore<H: Copy> {
    /// Maps `cid` to `handle`.
    fn insert(&mut self, cid: Cid, handle: H) -> Result<(), StoreError>;
    /// Removes `cid`'s mapping and returns it.
    fn remove(&mut self, cid: Cid) -> Option<H>;
    /// The handle `cid` maps to: the hot path of every incoming message.
    fn get(&self, cid: Cid) -> Option<H>;
    /// Live mappings.
    fn len(&self) -> usize;
    /// True when nothing is mapped.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Cells currently set aside for mappings (live or empty): `len / cells` is the
    /// density.
    fn cells(&self) -> usize;
    /// Bytes of caller storage currently in use (the rest could be returned to an
    /// allocator).
    fn bytes(&self) -> usize;
}

#[cfg(test)]
mod tests;
