//! A flat array folded onto the live communicators: CID modulo a power of two.

use core::mem::size_of;

use super::{CidStore, StoreError};
use crate::cid::Cid;

/// The key of a never-used slot.
const EMPTY: Cid = Cid::MAX;
/// The key of an overflow slot whose communicator was removed (searches walk past it).
const TOMBSTONE: Cid = Cid::MAX - 1;
/// The smallest home table.
const MIN_SIZE: usize = 4;
/// The smallest overflow table.
const MIN_OVERFLOW: usize = 2;

/// One slot of a [`Folded`] table.
#[derive(Clone, Copy, Debug)]
pub struct FoldedSlot<H> {
    key: Cid,
    value: H,
}

impl<H: Copy + Default> FoldedSlot<H> {
    /// An empty slot, to fill the caller's arena with.
    pub fn empty() -> Self {
        Self { key: EMPTY, value: H::default() }
    }
}

/// CID `c` lives in slot `c mod size` of a power-of-two *home* table whenever that slot is
/// free; CIDs allocated near one another (as every algorithm hands them out) land in
/// distinct slots, so a lookup is one load and one compare, as in a flat array. A CID
/// whose home slot holds another goes to a small *overflow* table, searched by double
/// hashing and kept at most 7/8 full; when a home slot frees, an overflow CID of that
/// home moves back into it. The home table follows the number of live communicators (it
/// doubles when they outnumber its slots and halves when they fill less than half of it),
/// not the highest CID. CIDs handed out densely (lowest) stay at home; CIDs spread wide
/// (highest after many frees) collide like random keys, and a lookup of one in the
/// overflow costs a mispredicted branch and a short search.
///
/// Both tables sit at the start of the caller's arena; the rest holds the entries while a
/// rebuild moves them.
#[derive(Debug)]
pub struct Folded<'a, H> {
    arena: &'a mut [FoldedSlot<H>],
    /// Home table: `arena[..=mask]`.
    mask: usize,
    /// Overflow table: `arena[mask + 1..][..=overflow_mask]`.
    overflow_mask: usize,
    len: usize,
    overflow_len: usize,
    tombstones: usize,
}

impl<'a, H: Copy + Default> Folded<'a, H> {
    /// A store over `arena`, which it clears (nothing fits in fewer than 16 slots).
    pub fn new(arena: &'a mut [FoldedSlot<H>]) -> Self {
        arena.fill(FoldedSlot::empty());
        let mask = if arena.len() >= 4 * MIN_SIZE { MIN_SIZE - 1 } else { 0 };
        Self {
            arena,
            mask,
            overflow_mask: MIN_OVERFLOW - 1,
            len: 0,
            overflow_len: 0,
            tombstones: 0,
        }
    }

    fn size(&self) -> usize {
        self.mask + 1
    }

    fn overflow_size(&self) -> usize {
        self.overflow_mask + 1
    }

    fn usable(&self) -> bool {
        self.arena.len() >= 4 * MIN_SIZE
    }

    /// Live CIDs in the overflow table: each costs its lookups a second search.
    pub fn displaced(&self) -> usize {
        self.overflow_len
    }

    /// Start and odd step of the overflow search for `cid`.
    #[inline]
    fn overflow_probe(&self, cid: Cid) -> (usize, usize) {
        let h = cid.wrapping_mul(0x9E37_79B9);
        (
            (h >> 16) as usize & self.overflow_mask,
            (h.rotate_left(7) as usize | 1) & self.overflow_mask,
        )
    }

    /// The arena index of `cid` in the overflow table.
    fn find_overflow(&self, cid: Cid) -> Option<usize> {
        if cid >= TOMBSTONE || self.overflow_len == 0 {
            return None;
        }
        let base = self.size();
        let (mut i, step) = self.overflow_probe(cid);
        loop {
            match self.arena[base + i].key {
                key if key == cid => return Some(base + i),
                EMPTY => return None,
                _ => i = (i + step) & self.overflow_mask,
            }
        }
    }

    /// Puts `cid` at home, or in the overflow table (which must have room).
    fn place(&mut self, cid: Cid, value: H) {
        let home = cid as usize & self.mask;
        if self.arena[home].key == EMPTY {
            self.arena[home] = FoldedSlot { key: cid, value };
            return;
        }
        let base = self.size();
        let (mut i, step) = self.overflow_probe(cid);
        while !matches!(self.arena[base + i].key, EMPTY | TOMBSTONE) {
            i = (i + step) & self.overflow_mask;
        }
        if self.arena[base + i].key == TOMBSTONE {
            self.tombstones -= 1;
        }
        self.arena[base + i] = FoldedSlot { key: cid, value };
        self.overflow_len += 1;
    }

    /// Rebuilds both tables with a home table of `size` slots and room in the overflow
    /// table for `extra` more CIDs: the live entries are packed at the end of the arena,
    /// the tables cleared and the entries placed again, home first. When the arena is too
    /// small the old sizes are kept (the entries fitted in them) and the answer is `Full`.
    fn rebuild(&mut self, size: usize, extra: usize) -> Result<(), StoreError> {
        let end = self.arena.len();
        let used = self.size() + self.overflow_size();
        let mut packed = end;
        for i in (0..used).rev() {
            let slot = self.arena[i];
            if slot.key < TOMBSTONE {
                packed -= 1;
                self.arena[packed] = slot;
            }
        }
        // Count the entries that will not find their home, marking homes in the cleared
        // home table as they are claimed.
        let clear = used.max(size).min(packed);
        self.arena[..clear].fill(FoldedSlot::empty());
        let mut homeless = 0;
        for i in packed..end {
            let home = self.arena[i].key as usize & (size - 1);
            if home < packed && self.arena[home].key == EMPTY {
                self.arena[home].key = TOMBSTONE;
            } else {
                homeless += 1;
            }
        }
        let mut overflow = MIN_OVERFLOW;
        while (homeless + extra + 1) * 8 > overflow * 7 {
            overflow *= 2;
        }
        let fits = size + overflow <= packed;
        if fits {
            self.mask = size - 1;
            self.overflow_mask = overflow - 1;
        }
        let tables = (self.size() + self.overflow_size()).min(packed);
        self.arena[..clear.max(tables)].fill(FoldedSlot::empty());
        self.overflow_len = 0;
        self.tombstones = 0;
        for i in packed..end {
            let slot = self.arena[i];
            self.arena[i] = FoldedSlot::empty();
            self.place(slot.key, slot.value);
        }
        if fits {
            Ok(())
        } else {
            Err(StoreError::Full)
        }
    }

    /// The smallest home table with a slot for each of `len` CIDs.
    fn home_size_for(len: usize) -> usize {
        let mut size = MIN_SIZE;
        while len > size {
            size *= 2;
        }
        size
    }
}

impl<H: Copy + Default> CidStore<H> for Folded<'_, H> {
    fn insert(&mut self, cid: Cid, handle: H) -> Result<(), StoreError> {
        if cid >= TOMBSTONE {
            return Err(StoreError::OutOfRange);
        }
        if !self.usable() {
            return Err(StoreError::Full);
        }
        if self.get(cid).is_some() {
            return Err(StoreError::Occupied);
        }
        let home_full = self.len + 1 > self.size();
        let homeless = self.arena[cid as usize & self.mask].key != EMPTY;
        let overflow_full =
            homeless && (self.overflow_len + self.tombstones + 1) * 8 > self.overflow_size() * 7;
        if home_full || overflow_full {
            let size = Self::home_size_for(self.len + 1).max(self.size());
            self.rebuild(size, 1)?;
        }
        if self.arena[cid as usize & self.mask].key != EMPTY
            && (self.overflow_len + self.tombstones + 1) * 8 > self.overflow_size() * 7
        {
            // The rebuilt tables placed the CID's home differently; grow the overflow.
            self.rebuild(self.size(), 1)?;
        }
        // Keep the tables and the live CIDs within the arena, so the next rebuild can pack
        // the CIDs behind the tables.
        if self.size() + self.overflow_size() + self.len + 1 > self.arena.len() {
            return Err(StoreError::Full);
        }
        self.place(cid, handle);
        self.len += 1;
        Ok(())
    }

    fn remove(&mut self, cid: Cid) -> Option<H> {
        if cid >= TOMBSTONE || !self.usable() {
            return None;
        }
        let home = cid as usize & self.mask;
        let value;
        if self.arena[home].key == cid {
            value = self.arena[home].value;
            self.arena[home] = FoldedSlot::empty();
            // An overflow CID of this home moves back into it.
            if self.overflow_len > 0 {
                let base = self.size();
                if let Some(i) = (base..base + self.overflow_size()).find(|&i| {
                    self.arena[i].key < TOMBSTONE && self.arena[i].key as usize & self.mask == home
                }) {
                    self.arena[home] = self.arena[i];
                    self.arena[i] = FoldedSlot { key: TOMBSTONE, value: H::default() };
                    self.overflow_len -= 1;
                    self.tombstones += 1;
                }
            }
        } else {
            let at = self.find_overflow(cid)?;
            value = self.arena[at].value;
            self.arena[at] = FoldedSlot { key: TOMBSTONE, value: H::default() };
            self.overflow_len -= 1;
            self.tombstones += 1;
        }
        self.len -= 1;
        if self.size() > MIN_SIZE && self.len * 2 < self.size() {
            // Shrinking never needs more room than the tables had.
            let _ = self.rebuild(self.size() / 2, 0);
        }
        Some(value)
    }

    #[inline]
    fn get(&self, cid: Cid) -> Option<H> {
        let slot = self.arena.get(cid as usize & self.mask)?;
        if slot.key == cid && cid < TOMBSTONE {
            return Some(slot.value);
        }
        self.find_overflow(cid).map(|at| self.arena[at].value)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn cells(&self) -> usize {
        if self.usable() {
            self.size() + self.overflow_size()
        } else {
            0
        }
    }

    fn bytes(&self) -> usize {
        self.cells() * size_of::<FoldedSlot<H>>()
    }
}
