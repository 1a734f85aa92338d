//! The densest a CID table can be when a lookup is one load whose address is at most one
//! single-cycle operation away from the CID: the only shapes the storage bench times within
//! 1.2× of a flat array (a masked load costs 1.12–1.17× flat, two loads and an XOR or a
//! second index operation 1.26–1.32×; `cid_floor` times them).
//!
//! The operations, each with a constant chosen for the live set at hand:
//! - subtract (free through the address mode): the range from the lowest CID to the highest;
//! - AND: the smallest mask that keeps the CIDs apart (cleared greedily from the top bit, which
//!   gives the smallest value, since a mask that merges two CIDs merges them with any of its
//!   bits cleared too);
//! - shift right, when it keeps the CIDs apart;
//! - XOR: the constant that makes the largest index smallest.
//!
//! The others need no fewer cells: OR and add (up) never lower the largest index, a left
//! shift or a multiply raises it, and a rotation is a shift right unless it carries a set
//! bit to the top of the word, which puts that index above every CID. Per sample the bound
//! takes the best operation and constant afresh, as if the table were rebuilt for free at
//! every insert, so it is an upper bound on the mean density of every structure of this
//! shape.

use std::collections::BTreeSet;

use commcore::cid::Cid;

use commcore_sim::cid_world::StoreEvent;

/// Samples per trace list above which the bound is sampled at every k-th insert only.
const SAMPLES: usize = 1 << 17;

/// The fewest cells a one-load table with a one-operation index needs for `sorted` (strictly
/// increasing CIDs), with `seen` as scratch.
pub(super) fn one_load_cells(sorted: &[Cid], seen: &mut Seen) -> usize {
    let (Some(&lowest), Some(&highest)) = (sorted.first(), sorted.last()) else {
        return 0;
    };
    let n = sorted.len();
    let range = (highest - lowest) as usize + 1;
    if range == n {
        return n;
    }
    // The masks and shifts below never index past `highest`.
    seen.cover(highest);
    let mut mask = u32::MAX >> highest.leading_zeros();
    for bit in (0..Cid::BITS - highest.leading_zeros()).rev() {
        let cleared = mask & !(1 << bit);
        if seen.distinct(sorted, |cid| cid & cleared) {
            mask = cleared;
        }
    }
    let shift = (1..Cid::BITS)
        .take_while(|&s| seen.distinct(sorted, |cid| cid >> s))
        .last()
        .map_or(usize::MAX, |s| (highest >> s) as usize + 1);
    let xor = smallest_largest_xor(sorted, Cid::BITS - 1) as usize + 1;
    range.min(mask as usize + 1).min(shift).min(xor)
}

/// The smallest `max(cid ^ c)` over constants `c`, for CIDs that agree above `bit`: where
/// they differ at a bit, the half that keeps it set decides the maximum, whatever the
/// constant's lower bits, so only that half's lower bits matter.
fn smallest_largest_xor(sorted: &[Cid], bit: u32) -> Cid {
    if sorted.len() <= 1 {
        return 0;
    }
    let split = sorted.partition_point(|&cid| cid >> bit & 1 == 0);
    let below = |part: &[Cid]| if bit == 0 { 0 } else { smallest_largest_xor(part, bit - 1) };
    if split == 0 || split == sorted.len() {
        return below(sorted);
    }
    (1 << bit) + below(&sorted[..split]).min(below(&sorted[split..]))
}

/// A bitmap of table cells, left clear between checks.
pub(super) struct Seen(Vec<u64>);

impl Seen {
    pub(super) fn new() -> Self {
        Self(Vec::new())
    }

    /// Makes room for cells up to `highest`.
    fn cover(&mut self, highest: Cid) {
        let words = highest as usize / 64 + 1;
        if self.0.len() < words {
            self.0.resize(words, 0);
        }
    }

    /// True when `index` sends no two of `cids` to the same cell.
    fn distinct(&mut self, cids: &[Cid], index: impl Fn(Cid) -> Cid) -> bool {
        let mut marked = 0;
        let mut apart = true;
        for &cid in cids {
            let cell = index(cid) as usize;
            let (word, bit) = (cell / 64, 1u64 << (cell % 64));
            if self.0[word] & bit != 0 {
                apart = false;
                break;
            }
            self.0[word] |= bit;
            marked += 1;
        }
        for &cid in &cids[..marked] {
            let cell = index(cid) as usize;
            self.0[cell / 64] &= !(1u64 << (cell % 64));
        }
        apart
    }
}

/// The bound on `density_mean`: each trace replayed from the world and self CIDs, the live
/// count over [`one_load_cells`] after every insert (every k-th when the traces hold more
/// than `SAMPLES` inserts), averaged over the trace and then over the traces. Returns (the
/// bound, k).
pub(super) fn density_bound(traces: &[Vec<StoreEvent>]) -> (f64, usize) {
    let inserts: usize =
        traces.iter().flatten().filter(|event| matches!(event, StoreEvent::Insert(_))).count();
    let every = inserts.div_ceil(SAMPLES).max(1);
    let mut seen = Seen::new();
    let mut sorted = Vec::new();
    let mut bound = 0.0;
    for trace in traces {
        let mut live = BTreeSet::from([0, 1]);
        let (mut sum, mut samples, mut inserted) = (0.0, 0usize, 0usize);
        for event in trace {
            match *event {
                StoreEvent::Insert(cid) => {
                    live.insert(cid);
                    inserted += 1;
                    if inserted % every == 0 {
                        sorted.clear();
                        sorted.extend(live.iter().copied());
                        sum += live.len() as f64 / one_load_cells(&sorted, &mut seen) as f64;
                        samples += 1;
                    }
                }
                StoreEvent::Remove(cid) => {
                    live.remove(&cid);
                }
            }
        }
        bound += sum / samples.max(1) as f64 / traces.len().max(1) as f64;
    }
    (bound, every)
}

#[cfg(test)]
mod tests {
    use super::{density_bound, one_load_cells, Seen};
    use commcore_sim::cid_world::StoreEvent;

    fn cells(cids: &[u32]) -> usize {
        one_load_cells(cids, &mut Seen::new())
    }

    #[test]
    fn each_operation_wins_where_it_should() {
        assert_eq!(cells(&[]), 0);
        assert_eq!(cells(&[0, 1, 2, 3]), 4);
        // Subtract: ten CIDs in a row past 100.
        assert_eq!(cells(&(100..110).collect::<Vec<_>>()), 10);
        // Shift: multiples of 8 up to 24 land in cells 0..=3 (AND and XOR need 25).
        assert_eq!(cells(&[0, 8, 16, 24]), 4);
        // AND: bits 0 and 1 alone tell 0, 1, 4098 and 4099 apart.
        assert_eq!(cells(&[0, 1, 4098, 4099]), 4);
        // XOR with 1024 sends 0, 1024 and 1025 to 1024, 0 and 1: one cell fewer than the
        // range or the mask 1025.
        assert_eq!(cells(&[0, 1024, 1025]), 1025);
        // Told apart only by bits 0 and 10 together: nothing beats the range.
        assert_eq!(cells(&[0, 1, 1024, 1025]), 1026);
    }

    #[test]
    fn the_bound_follows_the_live_set_and_is_one_for_consecutive_cids() {
        let dense: Vec<StoreEvent> = (2..40).map(StoreEvent::Insert).collect();
        assert_eq!(density_bound(&[dense]), (1.0, 1));
        // 0, 1 and 1000 (bits 3, 5, 6, 7, 8, 9): the mask 9 keeps them apart in 10 cells.
        let (bound, every) = density_bound(&[vec![StoreEvent::Insert(1000)]]);
        assert_eq!(every, 1);
        assert!((bound - 0.3).abs() < 1e-12, "{bound}");
        // A rank that never inserts contributes nothing, as in the density it bounds.
        assert_eq!(density_bound(&[vec![], vec![StoreEvent::Insert(2)]]).0, 0.5);
    }

    #[test]
    fn matches_every_constant_tried_on_small_sets() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut seen = Seen::new();
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u32
        };
        for _ in 0..2000 {
            // 1 to 12 distinct CIDs below 128, sorted.
            let mut cids: Vec<u32> = (0..1 + next() % 12).map(|_| next() % 128).collect();
            cids.sort_unstable();
            cids.dedup();
            let apart = |index: &dyn Fn(u32) -> u32| {
                let mut cells: Vec<u32> = cids.iter().map(|&c| index(c)).collect();
                cells.sort_unstable();
                cells.windows(2).all(|w| w[0] != w[1])
            };
            let largest = |index: &dyn Fn(u32) -> u32| cids.iter().map(|&c| index(c)).max();
            let mut best = (cids[cids.len() - 1] - cids[0]) as usize + 1;
            for c in 0..256u32 {
                if apart(&|cid| cid & c) {
                    best = best.min(c as usize + 1);
                }
                best = best.min(largest(&|cid| cid ^ c).unwrap() as usize + 1);
            }
            for s in 1..8 {
                if apart(&|cid| cid >> s) {
                    best = best.min(largest(&|cid| cid >> s).unwrap() as usize + 1);
                }
            }
            assert_eq!(one_load_cells(&cids, &mut seen), best, "{cids:?}");
        }
    }
}
