//! The registry of process groups, each with its address vector.

use core::fmt;

use super::Ave;

/// A process group's identifier: its index in the [`ProcessGroups`] registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pgid(pub u16);

/// A process's index in its group's address vector.
pub type Lpid = u32;

/// Why the registry refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupsError {
    /// Every slot holds a group already.
    Full,
    /// An address vector holds more than `u32::MAX` entries.
    TooLarge,
    /// No group is registered under this id.
    Unknown(Pgid),
}

impl fmt::Display for GroupsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full => f.write_str("process-group registry full"),
            Self::TooLarge => f.write_str("address vector larger than u32::MAX entries"),
            Self::Unknown(p) => write!(f, "no process group {}", p.0),
        }
    }
}

/// At most `N` process groups, each owning one address vector that the caller filled in its
/// own storage. Group 0 is usually the caller's own `MPI_COMM_WORLD`; spawned or connected
/// groups come after it.
///
/// The registry keeps the address vectors as `&'a [Ave]`, so rank maps built from it copy
/// the slice they need and never borrow the registry itself: registering a group while
/// communicators exist is fine.
#[derive(Clone, Debug)]
pub struct ProcessGroups<'a, const N: usize> {
    avs: [&'a [Ave]; N],
    live: [bool; N],
}

static_assertions::assert_impl_all!(ProcessGroups<'static, 4>: Send, Sync);

impl<'a, const N: usize> ProcessGroups<'a, N> {
    /// An empty registry.
    pub const fn new() -> Self {
        Self { avs: [&[]; N], live: [false; N] }
    }

    /// Registers a group whose address vector is `av` (filled already) and returns its id:
    /// the lowest free one.
    pub fn register(&mut self, av: &'a [Ave]) -> Result<Pgid, GroupsError> {
        if av.len() > u32::MAX as usize {
            return Err(GroupsError::TooLarge);
        }
        let slot = self.live.iter().position(|l| !l).ok_or(GroupsError::Full)?;
        let pgid = Pgid(u16::try_from(slot).map_err(|_| GroupsError::Full)?);
        self.avs[slot] = av;
        self.live[slot] = true;
        Ok(pgid)
    }

    /// Fills `storage` (the caller's memory for the new group's address vector) with
    /// `entry(lpid)` for every process, then registers it: the storage is read-only from then
    /// on. The registry is checked for room first, so a full registry costs no fill.
    pub fn register_filled(
        &mut self,
        storage: &'a mut [Ave],
        mut entry: impl FnMut(Lpid) -> Ave,
    ) -> Result<Pgid, GroupsError> {
        if storage.len() > u32::MAX as usize {
            return Err(GroupsError::TooLarge);
        }
        if self.live.iter().all(|l| *l) {
            return Err(GroupsError::Full);
        }
        for (lpid, slot) in storage.iter_mut().enumerate() {
            *slot = entry(lpid as Lpid);
        }
        let av: &'a [Ave] = storage;
        self.register(av)
    }

    /// Removes group `pgid` (after its last communicator is gone); its id may be reused.
    pub fn unregister(&mut self, pgid: Pgid) -> Result<(), GroupsError> {
        let slot = pgid.0 as usize;
        match self.live.get(slot) {
            Some(true) => {
                self.live[slot] = false;
                self.avs[slot] = &[];
                Ok(())
            }
            _ => Err(GroupsError::Unknown(pgid)),
        }
    }

    /// The address vector of `pgid`; an unknown group has an empty one.
    #[inline]
    pub fn av(&self, pgid: Pgid) -> &'a [Ave] {
        match self.avs.get(pgid.0 as usize) {
            Some(av) => av,
            None => &[],
        }
    }

    /// Whether `pgid` is registered.
    pub fn contains(&self, pgid: Pgid) -> bool {
        self.live.get(pgid.0 as usize).copied().unwrap_or(false)
    }

    /// The entry of process `(pgid, lpid)`.
    #[inline]
    pub fn entry(&self, pgid: Pgid, lpid: Lpid) -> Option<&'a Ave> {
        self.av(pgid).get(lpid as usize)
    }

    /// The entry of process `lpid` of the group in slot `index` (an mlut's lookup, which
    /// holds the pgid as a plain index, always below `N`: it was packed from a registered
    /// group). With `N` a power of two the index is masked instead of checked: the same slot
    /// for every index below `N`, one compare and branch fewer.
    #[inline(always)]
    pub(crate) fn entry_at(&self, index: usize, lpid: Lpid) -> Option<&'a Ave> {
        let av =
            if N.is_power_of_two() { self.avs[index & (N - 1)] } else { self.avs.get(index)? };
        av.get(lpid as usize)
    }

    /// Number of registered groups.
    pub fn len(&self) -> usize {
        self.live.iter().filter(|l| **l).count()
    }

    /// Whether no group is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<const N: usize> Default for ProcessGroups<'_, N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::av::{Address, NodeId, TransportId};

    #[test]
    fn registers_until_full_and_reuses_freed_ids() {
        let a = [Ave::new(Address::Inline(5), TransportId(0), NodeId(2)).unwrap(); 3];
        let b = [Ave::EMPTY; 2];
        let mut groups: ProcessGroups<'_, 2> = ProcessGroups::new();
        assert_eq!(groups.register(&a), Ok(Pgid(0)));
        assert_eq!(groups.register(&b), Ok(Pgid(1)));
        assert_eq!(groups.register(&b), Err(GroupsError::Full));
        assert_eq!(groups.entry(Pgid(0), 2).map(Ave::node), Some(NodeId(2)));
        assert_eq!(groups.entry(Pgid(0), 3), None);
        assert_eq!(groups.entry(Pgid(7), 0), None);
        groups.unregister(Pgid(0)).unwrap();
        assert_eq!(groups.unregister(Pgid(0)), Err(GroupsError::Unknown(Pgid(0))));
        assert_eq!(groups.len(), 1);
        assert_eq!(groups.register(&a), Ok(Pgid(0)));
    }

    #[test]
    fn fills_caller_storage_then_registers_it() {
        let mut storage = [Ave::EMPTY; 5];
        let mut groups: ProcessGroups<'_, 1> = ProcessGroups::new();
        let node_of = |lpid: Lpid| {
            Ave::new(Address::Inline(100 + lpid as u64), TransportId(0), NodeId(lpid / 2)).unwrap()
        };
        let pgid = groups.register_filled(&mut storage, node_of).unwrap();
        assert_eq!(groups.entry(pgid, 4).map(Ave::node), Some(NodeId(2)));
        assert_eq!(groups.entry(pgid, 4).map(Ave::address_word), Some(104));
        let mut more = [Ave::EMPTY; 1];
        assert_eq!(groups.register_filled(&mut more, |_| unreachable!()), Err(GroupsError::Full));
    }
}
