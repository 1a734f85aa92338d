//! The arrivals the engine holds, by id: a slab, so that finding one is an array index
//! rather than a hash. An id names a slot and the count of that slot's uses, so the id of
//! an arrival that is gone never finds the slot's next one.

use super::matching::Arrival;

/// Bits of an id that name the slot; the rest count the slot's uses.
const SLOT_BITS: u32 = 32;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;

#[derive(Default)]
pub(super) struct Arrivals {
    /// Each slot's latest id, and its arrival while held.
    slots: Vec<(u64, Option<Arrival>)>,
    /// Empty slots, the last emptied on top.
    free: Vec<usize>,
}

impl Arrivals {
    /// The id the next [`Arrivals::insert`] gives: the caller matches it before storing.
    #[inline]
    pub(super) fn next_id(&self) -> u64 {
        match self.free.last() {
            Some(&slot) => self.slots[slot].0 + (1 << SLOT_BITS),
            // The slot count fits 32 bits: an engine holds fewer arrivals than u32::MAX.
            None => self.slots.len() as u64,
        }
    }

    /// Stores `arrival` under [`Arrivals::next_id`]; returns that id.
    #[inline]
    pub(super) fn insert(&mut self, arrival: Arrival) -> u64 {
        let id = self.next_id();
        match self.free.pop() {
            Some(slot) => self.slots[slot] = (id, Some(arrival)),
            None => self.slots.push((id, Some(arrival))),
        }
        id
    }

    #[inline]
    fn slot(&self, id: u64) -> Option<usize> {
        let slot = (id & SLOT_MASK) as usize;
        (self.slots.get(slot)?.0 == id).then_some(slot)
    }

    #[inline]
    pub(super) fn get(&self, id: u64) -> Option<&Arrival> {
        let slot = self.slot(id)?;
        self.slots[slot].1.as_ref()
    }

    #[inline]
    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut Arrival> {
        let slot = self.slot(id)?;
        self.slots[slot].1.as_mut()
    }

    #[inline]
    pub(super) fn remove(&mut self, id: u64) -> Option<Arrival> {
        let slot = self.slot(id)?;
        let arrival = self.slots[slot].1.take()?;
        self.free.push(slot);
        Some(arrival)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::engine::matching::Body;
    use crate::runtime::engine::Peer;

    fn arrival(tag: i32) -> Arrival {
        Arrival {
            context: 1,
            source: Peer::Shm(0),
            rank: 0,
            tag,
            len: 0,
            body: Body::Copied { pending: Vec::new(), in_sink: 0, received: 0 },
            recv: None,
            discard: false,
        }
    }

    #[test]
    fn an_old_id_does_not_find_its_slots_next_arrival() {
        let mut arrivals = Arrivals::default();
        let first = arrivals.next_id();
        assert_eq!(arrivals.insert(arrival(1)), first);
        let second = arrivals.insert(arrival(2));
        assert_eq!(arrivals.get(first).map(|a| a.tag), Some(1));
        assert_eq!(arrivals.remove(first).map(|a| a.tag), Some(1));
        assert!(arrivals.get(first).is_none() && arrivals.remove(first).is_none());
        let third = arrivals.insert(arrival(3));
        assert_ne!(third, first, "the slot is reused under a new id");
        assert!(arrivals.get_mut(first).is_none());
        assert_eq!(arrivals.get(third).map(|a| a.tag), Some(3));
        assert_eq!(arrivals.get(second).map(|a| a.tag), Some(2));
        assert!(arrivals.get(third + 1).is_none());
    }
}
