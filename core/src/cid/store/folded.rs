//! A flat array folded onto the live communicators: CID modulo a power of two.

use core::mem::size_of;

use super::{CidStore, StoreError};
use crate::cid::Cid;

/// The key of a never-used slot.
const EMPTY: Cid = Cid::MAX;
/// The key of a slot whose communicator was removed (lookups walk past it).
const TOMBSTONE: Cid = Cid::MAX - 1;
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

/// CID `c` lives in slot `c mod size` of a power-of-two table whenever that slot is free
/// when it is inserted; CIDs allocated near one another (as every algorithm hands them
/// out) land in distinct slots, so a lookup is one load and one compare, as in a flat
/// array. A CID whose slot is taken goes where double hashing from a multiplicative hash
/// of it finds room, so one collision does not push its neighbours along. The
/// table follows the number of live communicators (rebuilt larger past 7/8 full, counting
/// removed slots, and smaller below 3/8), not the highest CID. Where live CIDs spread
/// wider than the table (the highest algorithm after many frees), CIDs that share a home
/// sit away from it and their lookups cost a second probe and a mispredicted branch.
///
/// The table sits at the start of the caller's arena; the rest holds the entries while a
/// rebuild moves them, so a table can grow to half the arena.
#[derive(Debug)]
pub struct Folded<'a, H> {
    arena: &'a mut [FoldedSlot<H>],
    mask: usize,
    len: usize,
    tombstones: usize,
    /// Live CIDs away from their home slot.
    away: usize,
}

impl<'a, H: Copy + Default> Folded<'a, H> {
    /// A store over `arena`, which it clears. It holds up to 7/8 of the largest power of two
    /// not above half the arena (nothing when the arena holds fewer than 16 slots).
    pub fn new(arena: &'a mut [FoldedSlot<H>]) -> Self {
        arena.fill(FoldedSlot::empty());
        let mask = if arena.len() >= 2 * MIN_SIZE { MIN_SIZE - 1 } else { 0 };
        Self { arena, mask, len: 0, tombstones: 0, away: 0 }
    }

    fn size(&self) -> usize {
        self.mask + 1
    }

    /// Live CIDs stored away from their home slot: each costs a lookup a second probe.
    pub fn displaced(&self) -> usize {
        (0..self.cells())
            .filter(|&i| {
                self.arena[i].key < TOMBSTONE && self.arena[i].key as usize & self.mask != i
            })
            .count()
    }

    fn usable(&self) -> bool {
        self.arena.len() >= 2 * MIN_SIZE
    }

    /// Where the search continues when the home slot holds another CID, and the odd step
    /// it continues by (double hashing: CIDs packed at their homes form long runs, which
    /// a step of one would walk along).
    #[inline]
    fn second(&self, cid: Cid) -> (usize, usize) {
        let h = cid.wrapping_mul(0x9E37_79B9);
        ((h >> 16) as usize & self.mask, (h.rotate_left(7) as usize | 1) & self.mask)
    }

    /// The slot holding `cid`.
    fn find(&self, cid: Cid) -> Option<usize> {
        if cid >= TOMBSTONE {
            // The marker keys are never stored.
            return None;
        }
        let home = cid as usize & self.mask;
        match self.arena[home].key {
            key if key == cid => return Some(home),
            EMPTY => return None,
            _ => {}
        }
        let (mut i, step) = self.second(cid);
        loop {
            match self.arena[i].key {
                key if key == cid => return Some(i),
                EMPTY => return None,
                _ => i = (i + step) & self.mask,
            }
        }
    }

    /// Where `cid` (known absent) goes.
    fn free_slot(&self, cid: Cid) -> usize {
        let home = cid as usize & self.mask;
        if matches!(self.arena[home].key, EMPTY | TOMBSTONE) {
            return home;
        }
        let (mut i, step) = self.second(cid);
        while !matches!(self.arena[i].key, EMPTY | TOMBSTONE) {
            i = (i + step) & self.mask;
        }
        i
    }

    fn place(&mut self, cid: Cid, value: H) {
        let at = self.free_slot(cid);
        self.away += usize::from(at != cid as usize & self.mask);
        if self.arena[at].key == TOMBSTONE {
            self.tombstones -= 1;
        }
        self.arena[at] = FoldedSlot { key: cid, value };
    }

    /// Rebuilds the table with `size` slots: the live entries are packed at the end of the
    /// arena, the table cleared, and the entries placed again.
    fn rebuild(&mut self, size: usize) {
        let end = self.arena.len();
        let mut packed = end;
        for i in (0..self.size()).rev() {
            let slot = self.arena[i];
            if slot.key < TOMBSTONE {
                packed -= 1;
                self.arena[packed] = slot;
            }
        }
        // Both tables fit in the first half and the live entries in the second.
        let clear = size.max(self.size()).min(packed);
        self.arena[..clear].fill(FoldedSlot::empty());
        self.mask = size - 1;
        self.tombstones = 0;
        self.away = 0;
        for i in packed..end {
            let slot = self.arena[i];
            self.arena[i] = FoldedSlot::empty();
            self.place(slot.key, slot.value);
        }
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
        if self.find(cid).is_some() {
            return Err(StoreError::Occupied);
        }
        if (self.len + self.tombstones + 1) * 8 > self.size() * 7 {
            let mut size = self.size();
            while (self.len + 1) * 16 > size * 7 {
                size *= 2;
            }
            if size * 2 > self.arena.len() {
                return Err(StoreError::Full);
            }
            self.rebuild(size);
        }
        self.place(cid, handle);
        self.len += 1;
        Ok(())
    }

    fn remove(&mut self, cid: Cid) -> Option<H> {
        if cid >= TOMBSTONE || !self.usable() {
            return None;
        }
        let at = self.find(cid)?;
        let value = self.arena[at].value;
        self.away -= usize::from(at != cid as usize & self.mask);
        self.arena[at] = FoldedSlot { key: TOMBSTONE, value: H::default() };
        self.len -= 1;
        self.tombstones += 1;
        if self.size() > MIN_SIZE && self.len * 8 < self.size() * 3 {
            self.rebuild(self.size() / 2);
        }
        Some(value)
    }

    #[inline]
    fn get(&self, cid: Cid) -> Option<H> {
        let slot = self.arena.get(cid as usize & self.mask)?;
        if slot.key == cid && cid < TOMBSTONE {
            return Some(slot.value);
        }
        if slot.key == EMPTY || !self.usable() {
            return None;
        }
        self.find(cid).map(|at| self.arena[at].value)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn cells(&self) -> usize {
        if self.usable() {
            self.size()
        } else {
            0
        }
    }

    fn bytes(&self) -> usize {
        self.cells() * size_of::<FoldedSlot<H>>()
    }
}
