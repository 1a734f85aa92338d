//! A flat array indexed by CID: one load per lookup.

use core::mem::size_of;

use super::{CidStore, StoreError};
use crate::cid::Cid;

/// A flat array over a caller slice: cell `c` holds CID `c`'s handle. Like a resizable
/// pointer array that never shrinks, the cells in use run up to the highest CID ever
/// mapped.
#[derive(Debug)]
pub struct Flat<'a, H> {
    slots: &'a mut [Option<H>],
    len: usize,
    high_water: usize,
}

impl<'a, H: Copy> Flat<'a, H> {
    /// A store over `slots`, which it clears; it holds CIDs `0..slots.len()`.
    pub fn new(slots: &'a mut [Option<H>]) -> Self {
        slots.fill(None);
        Self { slots, len: 0, high_water: 0 }
    }
}

impl<H: Copy> CidStore<H> for Flat<'_, H> {
    fn insert(&mut self, cid: Cid, handle: H) -> Result<(), StoreError> {
        let slot = self.slots.get_mut(cid as usize).ok_or(StoreError::OutOfRange)?;
        if slot.is_some() {
            return Err(StoreError::Occupied);
        }
        *slot = Some(handle);
        self.len += 1;
        self.high_water = self.high_water.max(cid as usize + 1);
        Ok(())
    }

    fn remove(&mut self, cid: Cid) -> Option<H> {
        let taken = self.slots.get_mut(cid as usize)?.take();
        self.len -= usize::from(taken.is_some());
        taken
    }

    #[inline]
    fn get(&self, cid: Cid) -> Option<H> {
        self.slots.get(cid as usize).copied().flatten()
    }

    fn len(&self) -> usize {
        self.len
    }

    fn cells(&self) -> usize {
        self.high_water
    }

    fn bytes(&self) -> usize {
        self.high_water * size_of::<Option<H>>()
    }
}
