//! What a lookup's shape alone costs: the storage bench's dependent lookups through bare
//! slices, with no key check, no stash and no collision handling, so a structure's ratio
//! to flat can be read against the floor of its shape.
//!
//! - `masked`: one load at `cid & mask` (a table indexed by the low bits);
//! - `bit_field`: one load at `(cid >> shift) & mask` (two operations on the index);
//! - `two_load_xor`: loads at `cid & mask` and `offset + (cid >> shift)`, then an XOR (the
//!   folded store's spread layout).
//!
//! The tables are sized as a store that follows `live` would size them (a power of two
//! at or above the live count), so they sit in the same cache level; which CIDs collide
//! does not matter, since nothing is checked.

use std::hint::black_box;
use std::time::Instant;

use commcore::cid::Cid;

/// Bare tables for one live set; cells are 8 bytes, as in the stores.
pub(super) struct Floor {
    flat: Vec<u64>,
    table: Vec<u64>,
    mask: u32,
    shift: u32,
}

impl Floor {
    pub(super) fn new(live: &[Cid]) -> Self {
        let highest = live.iter().copied().max().unwrap_or(0);
        let home = live.len().max(2).next_power_of_two();
        // The smallest shift that brings every CID's high bits inside the home range.
        let shift = (0..Cid::BITS).find(|&s| ((highest >> s) as usize) < home).unwrap_or(0);
        Self {
            flat: (0..=u64::from(highest)).collect(),
            table: (0..2 * home as u64).collect(),
            mask: home as u32 - 1,
            shift,
        }
    }

    /// Best nanoseconds per dependent lookup of `sequence`: [flat, masked, bit field,
    /// two-load XOR].
    pub(super) fn time(&self, sequence: &[Cid]) -> [f64; 4] {
        let (mask, shift) = (self.mask, self.shift);
        let (home, alternate) = self.table.split_at(self.table.len() / 2);
        [
            chain(sequence, |cid| self.flat.get(cid as usize).copied().unwrap_or(0)),
            chain(sequence, |cid| home[(cid & mask) as usize]),
            chain(sequence, |cid| home[((cid >> shift) & mask) as usize]),
            chain(sequence, |cid| home[(cid & mask) as usize] ^ alternate[(cid >> shift) as usize]),
        ]
    }
}

/// Nanoseconds per lookup, each key taken through the previous result as in the storage
/// bench's dependent timing.
#[inline(always)]
fn chain(sequence: &[Cid], lookup: impl Fn(Cid) -> u64) -> f64 {
    let zero = black_box(0u32);
    let started = Instant::now();
    let mut last = 0u32;
    for &cid in black_box(sequence) {
        last = lookup(cid ^ (last & zero)) as u32;
    }
    black_box(last);
    started.elapsed().as_nanos() as f64 / sequence.len().max(1) as f64
}
