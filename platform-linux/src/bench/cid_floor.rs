//! What a lookup's shape alone costs: the storage bench's dependent lookups through bare
//! slices, with no key check, no stash and no collision handling, so a structure's ratio
//! to flat can be read against the floor of its shape.
//!
//! - `masked`: one load at `cid & mask` (a table indexed by the low bits);
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

    /// Best nanoseconds per dependent lookup of `sequence`: (flat, masked, two-load XOR).
    pub(super) fn time(&self, sequence: &[Cid]) -> (f64, f64, f64) {
        let (mask, shift) = (self.mask, self.shift);
        let (home, alternate) = self.table.split_at(self.table.len() / 2);
        (
            chain(sequence, |cid| self.flat.get(cid as usize).copied().unwrap_or(0)),
            chain(sequence, |cid| home[(cid & mask) as usize]),
            chain(sequence, |cid| home[(cid & mask) as usize] ^ alternate[(cid >> shift) as usize]),
        )
    }
}

/// The fewest cells of a one-load table (its index one mask, shift or subtraction away
/// from the CID) that gives every CID of `live` a cell of its own: a bit-field of the
/// CID, or the range from the lowest CID to the highest.
pub(super) fn one_load_cells(live: &[Cid]) -> usize {
    let (Some(&lowest), Some(&highest)) = (live.iter().min(), live.iter().max()) else {
        return 0;
    };
    let range = (highest - lowest) as usize + 1;
    let separates = |width: u32, shift: u32| {
        let mut taken = vec![false; 1 << width];
        live.iter().all(|&cid| {
            let cell = ((cid >> shift) & ((1 << width) - 1)) as usize;
            !std::mem::replace(&mut taken[cell], true)
        })
    };
    let first = usize::BITS - live.len().saturating_sub(1).leading_zeros();
    (first..Cid::BITS)
        .map(|width| 1usize << width)
        .take_while(|&cells| cells < range)
        .find(|&cells| {
            (0..=Cid::BITS - cells.trailing_zeros()).any(|s| separates(cells.trailing_zeros(), s))
        })
        .unwrap_or(range)
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

#[cfg(test)]
mod tests {
    use super::one_load_cells;

    #[test]
    fn one_load_cells_finds_the_narrowest_separating_field_or_the_range() {
        assert_eq!(one_load_cells(&[]), 0);
        assert_eq!(one_load_cells(&[0, 1, 2, 3]), 4);
        // Low bits collide, bits 3 and 4 do not.
        assert_eq!(one_load_cells(&[0, 8, 16, 24]), 4);
        // Ten CIDs in a row past 100: the range is narrower than any power of two that
        // separates them.
        assert_eq!(one_load_cells(&(100..110).collect::<Vec<_>>()), 10);
        // 0 and 1024 agree on every field narrower than eleven bits but bit 10.
        assert_eq!(one_load_cells(&[0, 1024]), 2);
        // Told apart only by bits 0 and 10 together: a field spanning both is wider than
        // the range.
        assert_eq!(one_load_cells(&[0, 1, 1024, 1025]), 1026);
    }
}
