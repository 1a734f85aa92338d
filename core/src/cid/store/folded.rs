//! A flat array folded onto the live communicators: CID modulo a power of two.

use core::mem::size_of;

use super::{CidStore, StoreError};
use crate::cid::Cid;

/// The key of an empty slot; the one CID this store cannot hold.
const EMPTY: Cid = Cid::MAX;
/// The smallest table.
const MIN_SIZE: usize = 8;

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

/// CID `c` lives in slot `c mod size` of a power-of-two table, or the next free slot after
/// it (linear probing). CIDs handed out near one another land in distinct slots, so a lookup
/// is one load and one compare, as in a flat array; but the table follows the number of
/// live communicators (it doubles past 7/8 full and halves below 3/8), not the highest
/// CID. The caller's arena holds two tables of up to half its length, used in turn while
/// resizing.
#[derive(Debug)]
pub struct Folded<'a, H> {
    arena: &'a mut [FoldedSlot<H>],
    base: usize,
    mask: usize,
    len: usize,
}

impl<'a, H: Copy + Default> Folded<'a, H> {
    /// A store over `arena`, which it clears. It holds up to 7/8 of the largest power of two
    /// not above half the arena, at least 16 slots in all.
    pub fn new(arena: &'a mut [FoldedSlot<H>]) -> Self {
        arena.fill(FoldedSlot::empty());
        Self { arena, base: 0, mask: MIN_SIZE - 1, len: 0 }
    }

    fn size(&self) -> usize {
        self.mask + 1
    }

    fn max_size(&self) -> usize {
        let half = self.arena.len() / 2;
        if half < MIN_SIZE {
            0
        } else {
            1 << (usize::BITS - 1 - half.leading_zeros())
        }
    }

    /// The slot holding `cid`, or the empty slot where its probe ends.
    #[inline]
    fn probe(&self, cid: Cid) -> (usize, bool) {
        let mut i = cid as usize & self.mask;
        loop {
            let key = self.arena[self.base + i].key;
            if key == cid {
                return (i, true);
            }
            if key == EMPTY {
                return (i, false);
            }
            i = (i + 1) & self.mask;
        }
    }

    fn resize(&mut self, size: usize) {
        let half = self.arena.len() / 2;
        let (old_base, old_size) = (self.base, self.size());
        let new_base = if old_base == 0 { half } else { 0 };
        self.arena[new_base..new_base + size].fill(FoldedSlot::empty());
        self.base = new_base;
        self.mask = size - 1;
        for i in old_base..old_base + old_size {
            let slot = self.arena[i];
            if slot.key != EMPTY {
                let (at, _) = self.probe(slot.key);
                self.arena[self.base + at] = slot;
            }
        }
        self.arena[old_base..old_base + old_size].fill(FoldedSlot::empty());
    }
}

impl<H: Copy + Default> CidStore<H> for Folded<'_, H> {
    fn insert(&mut self, cid: Cid, handle: H) -> Result<(), StoreError> {
        if cid == EMPTY {
            return Err(StoreError::OutOfRange);
        }
        if self.max_size() == 0 {
            return Err(StoreError::Full);
        }
        if self.probe(cid).1 {
            return Err(StoreError::Occupied);
        }
        if (self.len + 1) * 8 > self.size() * 7 {
            if self.size() * 2 > self.max_size() {
                return Err(StoreError::Full);
            }
            self.resize(self.size() * 2);
        }
        let (at, _) = self.probe(cid);
        self.arena[self.base + at] = FoldedSlot { key: cid, value: handle };
        self.len += 1;
        Ok(())
    }

    fn remove(&mut self, cid: Cid) -> Option<H> {
        if cid == EMPTY || self.len == 0 {
            return None;
        }
        let (mut hole, found) = self.probe(cid);
        if !found {
            return None;
        }
        let value = self.arena[self.base + hole].value;
        // Backward-shift deletion: pull later members of the run into the hole when their
        // home slot does not lie between the hole and them.
        let mut i = hole;
        loop {
            i = (i + 1) & self.mask;
            let slot = self.arena[self.base + i];
            if slot.key == EMPTY {
                break;
            }
            let home = slot.key as usize & self.mask;
            let distance_home = i.wrapping_sub(home) & self.mask;
            let distance_hole = i.wrapping_sub(hole) & self.mask;
            if distance_home >= distance_hole {
                self.arena[self.base + hole] = slot;
                hole = i;
            }
        }
        self.arena[self.base + hole] = FoldedSlot::empty();
        self.len -= 1;
        if self.size() > MIN_SIZE && self.len * 8 < self.size() * 3 {
            self.resize(self.size() / 2);
        }
        Some(value)
    }

    #[inline]
    fn get(&self, cid: Cid) -> Option<H> {
        if self.len == 0 || cid == EMPTY {
            return None;
        }
        let slot = &self.arena[self.base + (cid as usize & self.mask)];
        if slot.key == cid {
            return Some(slot.value);
        }
        if slot.key == EMPTY {
            return None;
        }
        let (at, found) = self.probe(cid);
        found.then(|| self.arena[self.base + at].value)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn cells(&self) -> usize {
        self.size()
    }

    fn bytes(&self) -> usize {
        self.size() * size_of::<FoldedSlot<H>>()
    }
}
