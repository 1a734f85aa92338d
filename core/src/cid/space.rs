//! The per-process CID state that every request of the process shares.

use core::hash::{Hash, Hasher};

use super::error::SpaceError;
use super::Cid;
use crate::sync::Mutex;

/// The widest CID space: 16-bit CIDs, 2,048 words of mask.
pub const MAX_WIDTH: u32 = 65_536;

/// How many requests one process tracks in progress at once (its priority list).
pub const MAX_REQUESTS: usize = 64;

/// The most lanes the eager segment can be cut into (one hold bit each).
pub const MAX_EAGER_LANES: u32 = 64;

/// The words a [`CidSpace`] and a [`CidRequest`](super::CidRequest) need for `width` CIDs:
/// the mask plus one flag word. Use it as the const argument: `CidSpace<{ words_for(2048) }>`.
pub const fn words_for(width: u32) -> usize {
    width as usize / 32 + 1
}

/// How a process's CID space is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpaceConfig {
    /// CIDs are `0..width`: a multiple of 32, at most [`MAX_WIDTH`].
    pub width: u32,
    /// The mask algorithm's eager segment, `0..eager`: a multiple of 32 below `width`
    /// (0 keeps only the synchronising allreduce).
    pub eager: u32,
    /// Whether several threads of the process may allocate at once. Only the highest
    /// algorithm uses it: single-threaded, it skips the confirmation round.
    pub threaded: bool,
}

impl SpaceConfig {
    /// MPICH's layout: 2,048 CIDs, the first 64 eager, threads allowed.
    pub const MPICH: SpaceConfig = SpaceConfig { width: 2048, eager: 64, threaded: true };
}

/// The state behind the lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SpaceState<const W: usize> {
    /// Bit `c % 32` of word `c / 32` is set when CID `c` is free.
    pub free: [u32; W],
    /// Set for CIDs reserved by a confirmation window (used, but not yet anyone's).
    pub windowed: [u32; W],
    /// The highest CID in use or reserved.
    pub highest: Option<Cid>,
    /// The highest CID in use or proposed, leaving out confirmation windows (or a CID
    /// above it when the exact one was released): the highest algorithm proposes above it.
    pub top: Option<Cid>,
    /// CIDs in use or reserved.
    pub live: u32,
    /// Bit `l`: a request holds eager lane `l` for its allreduce.
    pub eager_held: u64,
    /// A request holds the base mask for its allreduce.
    pub mask_in_use: bool,
    /// ⟨parent cid, tag⟩ of the requests past their synchronising allreduce; the least
    /// has priority.
    pub waiting: heapless::Vec<u64, MAX_REQUESTS>,
}

impl<const W: usize> SpaceState<W> {
    #[inline]
    pub fn is_free(&self, cid: Cid) -> bool {
        let word = self.free.get(cid as usize / 32).copied().unwrap_or(0);
        word & (1 << (cid % 32)) != 0
    }

    /// Marks `cid` used; false when it was not free.
    pub fn take(&mut self, cid: Cid) -> bool {
        let taken = self.take_for_window(cid);
        if taken {
            self.commit(cid, true);
        }
        taken
    }

    /// Marks `cid` reserved for a confirmation window, without moving `top`.
    pub fn take_for_window(&mut self, cid: Cid) -> bool {
        if !self.is_free(cid) {
            return false;
        }
        self.free[cid as usize / 32] &= !(1 << (cid % 32));
        self.windowed[cid as usize / 32] |= 1 << (cid % 32);
        self.live += 1;
        self.highest = Some(self.highest.map_or(cid, |h| h.max(cid)));
        true
    }

    /// Turns a window reservation of `cid` into a use; counts it in `top` when `raise`.
    pub fn commit(&mut self, cid: Cid, raise: bool) {
        self.windowed[cid as usize / 32] &= !(1 << (cid % 32));
        if raise {
            self.top = Some(self.top.map_or(cid, |t| t.max(cid)));
        }
    }

    /// Marks `cid` free again; false when it was free already or outside the space.
    pub fn put(&mut self, cid: Cid, width: u32) -> bool {
        if cid >= width || self.is_free(cid) {
            return false;
        }
        self.free[cid as usize / 32] |= 1 << (cid % 32);
        self.windowed[cid as usize / 32] &= !(1 << (cid % 32));
        self.live -= 1;
        if self.highest == Some(cid) {
            self.highest = self.highest_used_below(cid, width, false);
        }
        if self.top == Some(cid) {
            self.top = self.highest_used_below(cid, width, true);
        }
        true
    }

    fn highest_used_below(&self, cid: Cid, width: u32, skip_windows: bool) -> Option<Cid> {
        let words = (width / 32) as usize;
        let mut index = cid as usize / 32;
        // Bits at or above `cid` in its word are free by now or above the old highest.
        let mut below = (1u32 << (cid % 32)) - 1;
        loop {
            let windows = if skip_windows { self.windowed[index] } else { 0 };
            let used = !self.free[index] & !windows & below;
            if used != 0 {
                return Some(index as u32 * 32 + 31 - used.leading_zeros());
            }
            if index == 0 || index > words {
                return None;
            }
            index -= 1;
            below = u32::MAX;
        }
    }

    /// The lowest free CID in `from..to`.
    pub fn lowest_free(&self, from: Cid, to: Cid) -> Option<Cid> {
        lowest_set(&self.free, from, to)
    }

    /// Whether the request with `priority` is the least of the waiting ones.
    pub fn is_top(&self, priority: u64) -> bool {
        self.waiting.iter().min() == Some(&priority)
    }

    pub fn register(&mut self, priority: u64) -> Result<(), super::CidError> {
        if self.waiting.contains(&priority) {
            return Err(super::CidError::DuplicatePriority);
        }
        self.waiting.push(priority).map_err(|_| super::CidError::TooManyRequests)
    }

    pub fn unregister(&mut self, priority: u64) {
        if let Some(i) = self.waiting.iter().position(|p| *p == priority) {
            self.waiting.swap_remove(i);
        }
    }
}

/// The lowest set bit of `mask` in `from..to`, as a CID.
pub(crate) fn lowest_set(mask: &[u32], from: Cid, to: Cid) -> Option<Cid> {
    let to = to.min(mask.len() as u32 * 32);
    if from >= to {
        return None;
    }
    let mut index = from as usize / 32;
    let mut word = mask[index] & (u32::MAX << (from % 32));
    loop {
        if word != 0 {
            let cid = index as u32 * 32 + word.trailing_zeros();
            return (cid < to).then_some(cid);
        }
        index += 1;
        if index as u32 * 32 >= to {
            return None;
        }
        word = mask[index];
    }
}

/// A process's CID space: which CIDs are free, and which request may hold the mask.
///
/// Every thread of the process shares one space (it is `Sync`); requests lock it briefly
/// and never across an allreduce. `W` is the capacity in words, [`words_for`] the width.
#[derive(Debug)]
pub struct CidSpace<const W: usize> {
    config: SpaceConfig,
    lanes: u32,
    state: Mutex<SpaceState<W>>,
}

impl<const W: usize> CidSpace<W> {
    /// An empty space (every CID free) laid out by `config`, its eager segment one lane.
    pub fn new(config: SpaceConfig) -> Result<Self, SpaceError> {
        Self::with_eager_lanes(config, 1)
    }

    /// An empty space whose eager segment is cut into `lanes` equal lanes, each a
    /// multiple of 32 CIDs (at most [`MAX_EAGER_LANES`]). A mask request's eager round
    /// takes the lane its ⟨parent cid, tag⟩ hashes to, with a hold of that lane only:
    /// concurrent creations on different parents rarely share a lane, so they no longer
    /// void each other's eager rounds (one hold for the whole segment made threads retry
    /// 2-8 rounds per creation).
    pub fn with_eager_lanes(config: SpaceConfig, lanes: u32) -> Result<Self, SpaceError> {
        let capacity = (W.saturating_sub(1) as u64 * 32).min(MAX_WIDTH as u64) as u32;
        if config.width == 0 || config.width % 32 != 0 || config.width > capacity {
            return Err(SpaceError::BadWidth { max: capacity });
        }
        if config.eager % 32 != 0 || config.eager >= config.width {
            return Err(SpaceError::BadEager);
        }
        if lanes == 0 || lanes > MAX_EAGER_LANES || config.eager % (32 * lanes) != 0 {
            return Err(SpaceError::BadLanes { max: MAX_EAGER_LANES });
        }
        let mut free = [0u32; W];
        free[..(config.width / 32) as usize].fill(u32::MAX);
        let state = SpaceState {
            free,
            windowed: [0; W],
            highest: None,
            top: None,
            live: 0,
            eager_held: 0,
            mask_in_use: false,
            waiting: heapless::Vec::new(),
        };
        Ok(Self { config, lanes, state: Mutex::new(state) })
    }

    /// The layout.
    pub fn config(&self) -> SpaceConfig {
        self.config
    }

    /// How many lanes the eager segment is cut into.
    pub fn eager_lanes(&self) -> u32 {
        self.lanes
    }

    /// The eager lane of a request with `priority` (⟨parent cid, tag⟩, alike on every
    /// member, so every member picks the same lane): its index and its CIDs.
    #[inline]
    pub(crate) fn eager_lane(&self, priority: u64) -> (u32, core::ops::Range<Cid>) {
        let width = self.config.eager / self.lanes;
        // splitmix64's finaliser: consecutive tags and nearby parents land apart, so
        // threads that create in step do not meet on one lane round after round.
        let mut z = priority.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let lane = ((z ^ (z >> 31)) >> 32) as u32 % self.lanes;
        (lane, lane * width..(lane + 1) * width)
    }

    /// Marks `cid` used without agreement: predefined communicators (world, self), or a
    /// CID another protocol agreed on.
    pub fn claim(&self, cid: Cid) -> Result<(), SpaceError> {
        if cid >= self.config.width {
            return Err(SpaceError::OutOfRange);
        }
        if self.state.lock().take(cid) {
            Ok(())
        } else {
            Err(SpaceError::WrongState)
        }
    }

    /// Frees `cid` (the communicator was freed, or this process is not a member of the new
    /// one). It is free for the next allocation; one in flight sees it at its next round.
    pub fn release(&self, cid: Cid) -> Result<(), SpaceError> {
        if cid >= self.config.width {
            return Err(SpaceError::OutOfRange);
        }
        if self.state.lock().put(cid, self.config.width) {
            Ok(())
        } else {
            Err(SpaceError::WrongState)
        }
    }

    /// Whether `cid` is free here.
    pub fn is_free(&self, cid: Cid) -> bool {
        cid < self.config.width && self.state.lock().is_free(cid)
    }

    /// CIDs in use or reserved.
    pub fn live(&self) -> u32 {
        self.state.lock().live
    }

    /// The highest CID in use or reserved.
    pub fn highest(&self) -> Option<Cid> {
        self.state.lock().highest
    }

    /// True when no request holds the mask or the eager segment or waits for priority:
    /// the state every quiescent process must return to.
    pub fn is_quiescent(&self) -> bool {
        let state = self.state.lock();
        state.eager_held == 0 && !state.mask_in_use && state.waiting.is_empty()
    }

    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut SpaceState<W>) -> R) -> R {
        f(&mut self.state.lock())
    }
}

impl<const W: usize> Clone for CidSpace<W> {
    fn clone(&self) -> Self {
        Self {
            config: self.config,
            lanes: self.lanes,
            state: Mutex::new(self.state.lock().clone()),
        }
    }
}

/// Hashes the whole state, so a simulator can tell two world states apart.
impl<const W: usize> Hash for CidSpace<W> {
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        self.config.hash(hasher);
        self.lanes.hash(hasher);
        self.state.lock().hash(hasher);
    }
}

impl<const W: usize> PartialEq for CidSpace<W> {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config
            && self.lanes == other.lanes
            && *self.state.lock() == *other.state.lock()
    }
}

impl<const W: usize> Eq for CidSpace<W> {}

#[cfg(test)]
mod tests {
    use super::*;

    const W: usize = words_for(256);

    #[test]
    fn config_is_checked() {
        let bad = |width, eager| CidSpace::<W>::new(SpaceConfig { width, eager, threaded: true });
        assert_eq!(bad(0, 0).unwrap_err(), SpaceError::BadWidth { max: 256 });
        assert_eq!(bad(288, 0).unwrap_err(), SpaceError::BadWidth { max: 256 });
        assert_eq!(bad(100, 0).unwrap_err(), SpaceError::BadWidth { max: 256 });
        assert_eq!(bad(256, 256).unwrap_err(), SpaceError::BadEager);
        assert_eq!(bad(256, 33).unwrap_err(), SpaceError::BadEager);
        assert!(bad(256, 32).is_ok());
    }

    #[test]
    fn claim_release_track_highest_and_live() {
        let space =
            CidSpace::<W>::new(SpaceConfig { width: 256, eager: 0, threaded: false }).unwrap();
        assert_eq!(space.highest(), None);
        for cid in [0, 5, 37, 200] {
            space.claim(cid).unwrap();
        }
        assert_eq!(space.claim(5), Err(SpaceError::WrongState));
        assert_eq!(space.claim(256), Err(SpaceError::OutOfRange));
        assert_eq!((space.live(), space.highest()), (4, Some(200)));
        space.release(200).unwrap();
        assert_eq!(space.highest(), Some(37));
        space.release(5).unwrap();
        assert_eq!(space.highest(), Some(37));
        space.release(37).unwrap();
        assert_eq!(space.highest(), Some(0));
        space.release(0).unwrap();
        assert_eq!((space.live(), space.highest()), (0, None));
        assert_eq!(space.release(0), Err(SpaceError::WrongState));
        assert!(space.is_free(5) && !space.is_free(300));
    }

    #[test]
    fn lowest_set_respects_bounds() {
        let mask = [0u32, 1 << 4, u32::MAX];
        assert_eq!(lowest_set(&mask, 0, 96), Some(36));
        assert_eq!(lowest_set(&mask, 37, 96), Some(64));
        assert_eq!(lowest_set(&mask, 37, 64), None);
        assert_eq!(lowest_set(&mask, 95, 200), Some(95));
        assert_eq!(lowest_set(&mask, 96, 200), None);
    }
}
