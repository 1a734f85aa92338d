//! A table folded onto the live communicators: each CID's handle is the XOR of two cells,
//! one picked by its low bits and one by its high bits.

use core::mem::size_of;
use core::ops::BitXor;

use super::{CidStore, StoreError};
use crate::cid::Cid;

/// The key of a cell that owns no CID (and the one CID the store refuses).
const EMPTY: Cid = Cid::MAX;
/// Smaller tables a rebuild still tries below the one its search settles on.
const REFINE: usize = 8;
/// The smallest home range: `2^MIN_HOME_BITS` cells.
const MIN_HOME_BITS: u32 = 2;
/// A rebuild takes the smallest table whose stash holds at most one CID in this many
/// (one from 32 CIDs, none below), else the one with the smallest stash.
const STASH_GOAL_PER: usize = 48;

/// One cell of a [`Folded`] arena.
#[derive(Clone, Copy, Debug)]
pub struct FoldedSlot<H> {
    key: Cid,
    value: H,
}

impl<H: Copy + Default> FoldedSlot<H> {
    /// An empty cell, to fill the caller's arena with.
    pub fn empty() -> Self {
        Self { key: EMPTY, value: H::default() }
    }
}

/// The end of the use counts of a table of `cells` cells.
fn uses_end(cells: usize) -> usize {
    cells + cells.div_ceil(4)
}

/// Where a CID's two cells are: `home = cid & mask`, `alternate = offset + (cid >> shift)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    /// Cells in the table.
    cells: usize,
    mask: usize,
    shift: u32,
    offset: usize,
}

impl Shape {
    const NONE: Shape = Shape { cells: 0, mask: 0, shift: 0, offset: 0 };

    #[inline]
    fn cells_of(self, cid: Cid) -> (usize, usize) {
        (cid as usize & self.mask, ((cid >> self.shift) as usize).wrapping_add(self.offset))
    }
}

/// CID `c` maps to `table[home(c)].value ^ table[alternate(c)].value`, where `home` takes
/// the low bits (`c & mask`) and `alternate` the high bits (`offset + (c >> shift)`): two
/// loads that do not depend on each other and one XOR, with no branch that depends on
/// where the CID sits: a flat array's load plus a shift and an XOR on the dependent path.
/// Spread CIDs (highest after many frees) collide in their low bits like random keys; a
/// home-only table then sends a fifth of its lookups down a mispredicted second probe,
/// this one sends none. Handles must XOR (integer handles or indices).
///
/// Each CID *owns* one of its two cells, which holds its key, so a lookup checks the key
/// off the critical path. The CID–cell graph (a CID is an edge between its two cells) is
/// kept a forest: a rebuild peels it leaf by leaf and assigns values in reverse, the few
/// CIDs on cycles go to a small stash searched after the table. An insert whose home or
/// alternate cell no CID uses is placed in O(1); otherwise the store rebuilds, choosing
/// the smallest table whose stash stays small, so its size follows the live
/// communicators, not the highest CID (the alternate range leaves room above the highest
/// CID, so the increasing CIDs of the highest-CID algorithm mostly take the O(1) path).
///
/// When the live CIDs are dense (as lowest hands them out), the store switches to a
/// home-only layout: one cell for every CID up to the highest, plain handles, indexed by
/// the CID itself, so a lookup is a flat array's. A masked power-of-two home range was
/// also tried: the mask cost a cycle on every lookup (1.29× flat) and lowest's CIDs
/// rarely fit one smaller than their range (density 0.481 with it, 0.488 without).
///
/// Against a flat array's dependent lookup (one load), the two-load layout adds the mask
/// or shift and the XOR: about two cycles on a chain of seven, which no choice of table
/// size removes (the storage bench times these bare shapes beside the store). A stashed
/// CID's lookup also pays the key check's mispredicted branch, resolved only after both
/// loads: about ten lookups' time, so the stash, not the table, decides how far past the
/// XOR a row lands.
///
/// Arena layout: `[table: cells][uses: cells / 4][stash]`, the rest is scratch for
/// rebuilds (which need `2 × cells + 3 × len` cells). `uses` holds one byte a cell in the
/// keys of its slots: how many CIDs have an end at the cell, sticky once it reaches 255
/// (a cell counted as used is only ever kept, never wrongly reused).
#[derive(Debug)]
pub struct Folded<'a, H> {
    arena: &'a mut [FoldedSlot<H>],
    shape: Shape,
    len: usize,
    stash_len: usize,
    /// Cell `c` holds CID `c`'s plain handle, for every CID up to the highest: a lookup
    /// is one load, as in a flat array (dense CIDs, as lowest hands them out). No use
    /// counts, no stash.
    home_only: bool,
}

impl<'a, H: Copy + Default + BitXor<Output = H>> Folded<'a, H> {
    /// A store over `arena`, which it clears.
    pub fn new(arena: &'a mut [FoldedSlot<H>]) -> Self {
        arena.fill(FoldedSlot::empty());
        Self { arena, shape: Shape::NONE, len: 0, stash_len: 0, home_only: false }
    }

    /// Live CIDs in the stash: each costs its lookups a mispredicted branch and a search.
    pub fn displaced(&self) -> usize {
        self.stash_len
    }

    /// True when `cid` is live and stashed: its lookups take the mispredicted branch.
    pub fn is_displaced(&self, cid: Cid) -> bool {
        !self.home_only && self.find_stash(cid).is_some()
    }

    fn stash_range(&self) -> core::ops::Range<usize> {
        let cells = self.shape.cells;
        let start = if self.home_only { cells } else { uses_end(cells) };
        start..start + self.stash_len
    }

    /// How many CIDs have an end at `cell` (255: at least that many).
    fn uses(&self, cell: usize) -> u8 {
        let (slot, byte) = (self.shape.cells + cell / 4, cell % 4 * 8);
        (self.arena[slot].key >> byte) as u8
    }

    /// Adds `delta` (±1) to the uses of `cell`, except once they reached 255.
    fn add_use(&mut self, cell: usize, delta: i8) {
        let uses = self.uses(cell);
        if uses != u8::MAX {
            let (slot, byte) = (self.shape.cells + cell / 4, cell % 4 * 8);
            let key = &mut self.arena[slot].key;
            *key = (*key & !(0xFF << byte)) | Cid::from(uses.wrapping_add_signed(delta)) << byte;
        }
    }

    fn find_stash(&self, cid: Cid) -> Option<usize> {
        self.stash_range().find(|&i| self.arena[i].key == cid)
    }

    /// Places `cid` in O(1) when one of its cells is unused.
    fn place_directly(&mut self, cid: Cid, value: H) -> bool {
        let Shape { cells, .. } = self.shape;
        let (home, alternate) = self.shape.cells_of(cid);
        if self.home_only {
            let free = home < cells && self.arena[home].key == EMPTY;
            if free {
                self.arena[home] = FoldedSlot { key: cid, value };
            }
            return free;
        }
        if cells == 0 || alternate >= cells || home == alternate {
            return false;
        }
        let (own, other) = if self.uses(home) == 0 {
            (home, alternate)
        } else if self.uses(alternate) == 0 {
            (alternate, home)
        } else {
            return false;
        };
        self.arena[own] = FoldedSlot { key: cid, value: value ^ self.arena[other].value };
        self.add_use(home, 1);
        self.add_use(alternate, 1);
        true
    }

    /// Rebuilds the table for the live CIDs and `extra`. Returns `Full`, having changed
    /// nothing, when the arena cannot hold the scratch of any shape.
    fn rebuild(&mut self, extra: Option<(Cid, H)>) -> Result<(), StoreError> {
        let n = self.len + usize::from(extra.is_some());
        let end = self.arena.len();
        let kept = self.stash_range().end;
        if kept + n > end {
            return Err(StoreError::Full);
        }
        // Pack the live entries at the end of the arena.
        let packed = end - n;
        let mut at = packed;
        for i in (0..self.shape.cells).chain(self.stash_range()) {
            let key = self.arena[i].key;
            if key != EMPTY {
                // Table cells hold XOR-encoded values; decode them.
                let value = self.get(key).unwrap_or(self.arena[i].value);
                self.arena[at] = FoldedSlot { key, value };
                at += 1;
            }
        }
        if let Some((key, value)) = extra {
            self.arena[at] = FoldedSlot { key, value };
        }
        let highest = self.arena[packed..].iter().map(|s| s.key).max().unwrap_or(0);
        let fits = |shape: &Shape| 2 * shape.cells + 2 * n <= packed;
        let mut shapes = Shapes::new(n, highest);
        shapes.retain(fits);
        if shapes.len() > 0 && self.place_home_only(n, highest, kept) {
            return Ok(());
        }
        let goal = (n / STASH_GOAL_PER).max(usize::from(n >= 32));
        // Stashes mostly shrink as tables grow: search for the smallest table within the
        // goal, and scan for the smallest stash only when none is.
        let (mut low, mut high) = (0, shapes.len());
        let mut last = None;
        let mut best = None;
        while low < high {
            let middle = (low + high) / 2;
            let shape = shapes.list[middle];
            last = Some(shape);
            match self.peel(shape, n, goal) {
                Some(stashed) => {
                    best = Some((stashed, shape));
                    high = middle;
                }
                None => low = middle + 1,
            }
        }
        // The stash does not fall evenly with the table size: try a few smaller tables.
        for &shape in shapes.list[low.saturating_sub(REFINE)..low].iter().rev() {
            last = Some(shape);
            if let Some(stashed) = self.peel(shape, n, goal) {
                best = Some((stashed, shape));
            }
        }
        if best.is_none() {
            for &shape in &shapes.list[..shapes.len()] {
                last = Some(shape);
                // Only a smaller stash than the best so far is worth finishing.
                let limit = best.map_or(n, |(s, _)| s - 1);
                if let Some(stashed) = self.peel(shape, n, limit) {
                    best = Some((stashed, shape));
                    if stashed == 0 {
                        break;
                    }
                }
            }
        }
        let Some((mut stashed, shape)) = best else {
            // Nothing but the packed copy was written.
            self.arena[packed..].fill(FoldedSlot::empty());
            return Err(StoreError::Full);
        };
        if last != Some(shape) {
            stashed = self.peel(shape, n, n).unwrap_or(stashed);
        }
        self.assign(shape, n, stashed);
        // Leave nothing of a larger old layout behind.
        let end = self.stash_range().end;
        self.arena[end..kept.max(end)].fill(FoldedSlot::empty());
        Ok(())
    }

    /// Lays the packed entries out home-only, one cell for every CID up to `highest`,
    /// when that takes fewer cells than twice the power of two at or above `n`; `kept` is
    /// where the old layout ended.
    fn place_home_only(&mut self, n: usize, highest: Cid, kept: usize) -> bool {
        let packed = self.arena.len() - n;
        let bits = usize::BITS - n.max(2).saturating_sub(1).leading_zeros();
        let cells = highest as usize + 1;
        let too_sparse = cells >= 1 << (bits.max(MIN_HOME_BITS) + 1);
        if cells > packed || too_sparse {
            return false;
        }
        self.arena[..cells].fill(FoldedSlot::empty());
        for i in packed..packed + n {
            let entry = self.arena[i];
            self.arena[entry.key as usize] = entry;
        }
        self.arena[cells..kept.max(cells)].fill(FoldedSlot::empty());
        self.arena[packed..].fill(FoldedSlot::empty());
        self.shape = Shape { cells, mask: usize::MAX, shift: 0, offset: 0 };
        self.stash_len = 0;
        self.home_only = true;
        true
    }

    /// Peels the CID graph of the packed entries under `shape` into the scratch: returns
    /// how many CIDs it had to stash, or `None` when a CID's alternate cell falls outside
    /// the table or the stash would exceed `limit`. Scratch: `table.key` holds the XOR of
    /// `1 + index` of the entries with an end there, the next `cells` keys their count;
    /// the peel order grows from the start of the region after those, stashed indices
    /// from its end.
    fn peel(&mut self, shape: Shape, n: usize, limit: usize) -> Option<usize> {
        let cells = shape.cells;
        let packed = self.arena.len() - n;
        let order = 2 * cells;
        self.arena[..order + n].fill(FoldedSlot { key: 0, value: H::default() });
        let (mut peeled, mut stashed) = (0, 0);
        for i in 0..n {
            let (home, alternate) = shape.cells_of(self.arena[packed + i].key);
            if alternate >= cells {
                return None;
            }
            if home == alternate {
                stashed += 1;
                if stashed > limit {
                    return None;
                }
                self.arena[order + n - stashed].key = i as Cid;
                continue;
            }
            for cell in [home, alternate] {
                self.arena[cell].key ^= i as Cid + 1;
                self.arena[cells + cell].key += 1;
            }
        }
        for start in 0..cells {
            peeled = self.peel_from(shape, packed, start, peeled);
        }
        // What is left lies on cycles: stash one CID at a time and peel what it frees.
        for i in 0..n {
            if peeled + stashed == n {
                break;
            }
            let (home, alternate) = shape.cells_of(self.arena[packed + i].key);
            let alive = |arena: &[FoldedSlot<H>], c: usize| {
                arena[cells + c].key > 0 || arena[c].key != i as Cid + 1
            };
            if home == alternate || !alive(self.arena, home) || !alive(self.arena, alternate) {
                continue;
            }
            stashed += 1;
            if stashed > limit {
                return None;
            }
            self.arena[order + n - stashed].key = i as Cid;
            for cell in [home, alternate] {
                self.arena[cell].key ^= i as Cid + 1;
                self.arena[cells + cell].key -= 1;
            }
            for cell in [home, alternate] {
                peeled = self.peel_from(shape, packed, cell, peeled);
            }
        }
        Some(stashed)
    }

    /// Peels the chain of single-use cells that starts at `cell`; returns the new count of
    /// peeled entries.
    fn peel_from(
        &mut self,
        shape: Shape,
        packed: usize,
        mut cell: usize,
        mut peeled: usize,
    ) -> usize {
        let cells = shape.cells;
        while self.arena[cells + cell].key == 1 {
            let index = (self.arena[cell].key - 1) as usize;
            self.arena[2 * cells + peeled].key = cell as Cid;
            peeled += 1;
            self.arena[cells + cell].key = 0;
            let (home, alternate) = shape.cells_of(self.arena[packed + index].key);
            let other = if home == cell { alternate } else { home };
            self.arena[other].key ^= index as Cid + 1;
            self.arena[cells + other].key -= 1;
            cell = other;
        }
        peeled
    }

    /// Turns a successful peel into the table: values in reverse peel order, then owners,
    /// uses and the stash; clears the scratch.
    fn assign(&mut self, shape: Shape, n: usize, stashed: usize) {
        let cells = shape.cells;
        let end = self.arena.len();
        let packed = end - n;
        let order = 2 * cells;
        let peeled = n - stashed;
        // A cell that owns an entry keeps `1 + index` in its key until assigned; the
        // others hold 0 and a default value.
        for step in (0..peeled).rev() {
            let own = self.arena[order + step].key as usize;
            let entry = self.arena[packed + (self.arena[own].key - 1) as usize];
            let (home, alternate) = shape.cells_of(entry.key);
            let other = if home == own { alternate } else { home };
            self.arena[cells + own].key = 1;
            self.arena[own] = FoldedSlot { key: entry.key, value: entry.value };
            self.arena[own].value = entry.value ^ self.arena[other].value;
        }
        for cell in 0..cells {
            if self.arena[cells + cell].key == 0 {
                self.arena[cell].key = EMPTY;
            }
            self.arena[cells + cell].key = 0;
        }
        // Stashed indices sit at the end of the order region: replace each by its entry,
        // then move them behind the use counts.
        for at in order + peeled..order + n {
            self.arena[at] = self.arena[packed + self.arena[at].key as usize];
        }
        let stash = uses_end(cells);
        self.arena.copy_within(order + peeled..order + n, stash);
        self.shape = shape;
        self.stash_len = stashed;
        self.home_only = false;
        for i in 0..n {
            let entry = self.arena[packed + i];
            let (home, alternate) = shape.cells_of(entry.key);
            let on_table = home != alternate
                && (self.arena[home].key == entry.key || self.arena[alternate].key == entry.key);
            if on_table {
                self.add_use(home, 1);
                self.add_use(alternate, 1);
            }
        }
        self.arena[stash + stashed..order + n].fill(FoldedSlot::empty());
        self.arena[packed..].fill(FoldedSlot::empty());
    }
}

/// The shapes a rebuild tries for `n` CIDs up to `highest`, smallest table first: home
/// ranges around `n`, alternate ranges of `highest` (with room above it) shifted to about
/// the same size, placed after, across or inside the home range.
struct Shapes {
    list: [Shape; 192],
    len: usize,
}

impl Shapes {
    fn new(n: usize, highest: Cid) -> Self {
        let mut shapes = Shapes { list: [Shape::NONE; 192], len: 0 };
        let room = highest.saturating_add(highest / 16).saturating_add(4);
        let bits = usize::BITS - n.max(2).saturating_sub(1).leading_zeros();
        for home_bits in bits.saturating_sub(1).max(MIN_HOME_BITS)..=bits.max(MIN_HOME_BITS) + 1 {
            let home = 1usize << home_bits;
            for shift in 0..Cid::BITS {
                let alternate = (room >> shift) as usize + 1;
                if alternate > 2 * home || (alternate < home / 8 && shift + 1 < Cid::BITS) {
                    continue;
                }
                for eighth in 0..=8 {
                    let offset = home - (alternate * eighth / 8).min(home);
                    let cells = home.max(offset + alternate);
                    shapes.push(Shape { cells, mask: home - 1, shift, offset });
                }
            }
        }
        shapes.list[..shapes.len].sort_unstable_by_key(|s| s.cells);
        shapes
    }

    fn len(&self) -> usize {
        self.len
    }

    fn retain(&mut self, keep: impl Fn(&Shape) -> bool) {
        let mut kept = 0;
        for i in 0..self.len {
            if keep(&self.list[i]) {
                self.list[kept] = self.list[i];
                kept += 1;
            }
        }
        self.len = kept;
    }

    fn push(&mut self, shape: Shape) {
        if self.len < self.list.len() && !self.list[..self.len].contains(&shape) {
            self.list[self.len] = shape;
            self.len += 1;
        }
    }
}

impl<H: Copy + Default + BitXor<Output = H>> CidStore<H> for Folded<'_, H> {
    fn insert(&mut self, cid: Cid, handle: H) -> Result<(), StoreError> {
        if cid == EMPTY {
            return Err(StoreError::OutOfRange);
        }
        if self.get(cid).is_some() {
            return Err(StoreError::Occupied);
        }
        if !self.place_directly(cid, handle) {
            self.rebuild(Some((cid, handle)))?;
        }
        self.len += 1;
        Ok(())
    }

    fn remove(&mut self, cid: Cid) -> Option<H> {
        let value = self.get(cid)?;
        let Shape { cells, .. } = self.shape;
        let (home, alternate) = self.shape.cells_of(cid);
        if self.home_only {
            self.arena[home] = FoldedSlot::empty();
        } else if let Some(at) = self.find_stash(cid) {
            let last = self.stash_range().end - 1;
            self.arena[at] = self.arena[last];
            self.arena[last] = FoldedSlot::empty();
            self.stash_len -= 1;
        } else {
            // The owner's value stays: other CIDs may read it.
            let owner = if self.arena[home].key == cid { home } else { alternate };
            self.arena[owner].key = EMPTY;
            self.add_use(home, -1);
            self.add_use(alternate, -1);
        }
        self.len -= 1;
        if self.len * 9 < cells * 4 && cells > 1 << (MIN_HOME_BITS + 1) {
            // Shrinking needs no more room than the table had; on `Full` it stays.
            let _ = self.rebuild(None);
        }
        Some(value)
    }

    #[inline]
    fn get(&self, cid: Cid) -> Option<H> {
        let Shape { cells, mask, shift, offset } = self.shape;
        if self.home_only {
            // Unmasked: a mask here would be a cycle on every lookup's dependent path.
            let home = self.arena[..cells].get(cid as usize)?;
            return (home.key == cid && cid != EMPTY).then_some(home.value);
        }
        let home = self.arena[..cells].get(cid as usize & mask)?;
        // The alternate range as its own slice, so that its offset is not added per lookup.
        let alternate = self.arena.get(offset..cells)?.get((cid >> shift) as usize)?;
        // The key check is a predicted branch: the value does not wait for it.
        if (home.key ^ cid).min(alternate.key ^ cid) == 0 && cid != EMPTY {
            return Some(home.value ^ alternate.value);
        }
        self.find_stash(cid).map(|at| self.arena[at].value)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn cells(&self) -> usize {
        self.shape.cells + self.stash_len
    }

    fn bytes(&self) -> usize {
        self.stash_range().end * size_of::<FoldedSlot<H>>()
    }
}
