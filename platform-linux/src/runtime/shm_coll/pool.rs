//! This process's pool of collective areas: the areas of the job's region that it owns and
//! hands to the communicators it leads.
//!
//! An area is free, offered (promised to a creation in progress), or handed out to a
//! communicator of `members` ranks. A handed-out area becomes free again once all its
//! members have left it (its `left` count reaches `members`); it is reset before it is
//! offered again, so the next communicator starts from call 0.

use std::sync::atomic::Ordering::Acquire;
use std::sync::{Mutex, PoisonError};

use crate::shm::coll_area::members_max;
use crate::shm::{CollArea, Layout, Region};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    Offered,
    Handed { members: u32 },
}

/// The areas this rank owns and their states.
pub(in crate::runtime) struct AreaPool {
    owner: usize,
    states: Mutex<Vec<State>>,
}

impl AreaPool {
    /// The pool of `owner`; the world's area (rank 0's first) starts handed out to all
    /// `world_size` ranks.
    pub(in crate::runtime) fn new(layout: &Layout, owner: usize) -> AreaPool {
        let mut states = vec![State::Free; layout.coll_areas_per_rank()];
        if owner == WORLD_AREA.0 && layout.size() > 1 {
            states[WORLD_AREA.1] = State::Handed { members: layout.size() as u32 };
        }
        AreaPool { owner, states: Mutex::new(states) }
    }

    /// Area `index` as a communicator of `members` ranks saw it.
    fn area<'r>(
        &self,
        region: &'r Region,
        layout: &Layout,
        index: usize,
        members: usize,
    ) -> CollArea<'r> {
        CollArea::new(region, layout.coll_area(self.owner, index), members, layout.size())
            .expect("an area has members_max slots")
    }

    /// Takes a free area (or one all of whose members have left) for a creation in
    /// progress, resets it, and returns its index; `None` when every area is in use.
    pub(in crate::runtime) fn offer(&self, region: &Region, layout: &Layout) -> Option<u32> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let (index, used_by) =
            states.iter().enumerate().find_map(|(index, state)| match *state {
                State::Free => Some((index, 0)),
                State::Offered => None,
                State::Handed { members } => {
                    let members = (members as usize).min(members_max(layout.size()));
                    let left = self.area(region, layout, index, members).left();
                    (left.load(Acquire) as usize >= members).then_some((index, members))
                }
            })?;
        states[index] = State::Offered;
        drop(states);
        // Only the slots its last communicator had: the others were never written.
        self.area(region, layout, index, used_by).reset();
        Some(index as u32)
    }

    /// The creation chose offered area `index` for a communicator of `members` ranks.
    pub(in crate::runtime) fn hand_out(&self, index: u32, members: usize) {
        self.set(index, State::Handed { members: members as u32 });
    }

    /// The creation did not take offered area `index`.
    pub(in crate::runtime) fn withdraw(&self, index: u32) {
        self.set(index, State::Free);
    }

    fn set(&self, index: u32, state: State) {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = states.get_mut(index as usize) {
            if *slot == State::Offered {
                *slot = state;
            }
        }
    }

    /// Areas that are neither free nor reusable right now (for tests of reuse).
    #[cfg(test)]
    fn busy(&self, region: &Region, layout: &Layout) -> usize {
        let states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        (0..states.len())
            .filter(|&i| match states[i] {
                State::Free => false,
                State::Offered => true,
                State::Handed { members } => {
                    let area = self.area(region, layout, i, members as usize);
                    area.left().load(Acquire) < members
                }
            })
            .count()
    }
}

/// The world communicator's area: (owner, index).
pub(in crate::runtime) const WORLD_AREA: (usize, usize) = (0, 0);

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn areas_come_back_only_after_every_member_left() {
        let layout = Layout::new(4).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let pool = AreaPool::new(&layout, 1);
        let all = layout.coll_areas_per_rank();
        let offered: Vec<u32> = (0..all).map(|_| pool.offer(&region, &layout).unwrap()).collect();
        assert!(pool.offer(&region, &layout).is_none(), "every area is offered");
        pool.withdraw(offered[0]);
        assert_eq!(pool.offer(&region, &layout), Some(offered[0]), "a withdrawn area is free");
        pool.hand_out(offered[1], 3);
        pool.withdraw(offered[1]); // no effect: it is handed out, not offered
        assert_eq!(pool.busy(&region, &layout), all);
        let left = pool.area(&region, &layout, offered[1] as usize, 3).left();
        left.fetch_add(2, Relaxed);
        assert!(pool.offer(&region, &layout).is_none(), "one member is still in it");
        left.fetch_add(1, Relaxed);
        assert_eq!(pool.offer(&region, &layout), Some(offered[1]));
        assert_eq!(left.load(Relaxed), 0, "reset for its next communicator");
    }

    #[test]
    fn the_world_area_starts_handed_out() {
        let layout = Layout::new(2).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let pool = AreaPool::new(&layout, 0);
        assert_ne!(pool.offer(&region, &layout), Some(WORLD_AREA.1 as u32));
        assert_eq!(pool.busy(&region, &layout), 2);
    }
}
