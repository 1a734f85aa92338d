//! A bounded cache of memory registrations, so that a buffer sent or read from again is not
//! registered again (registration pins pages and costs a system call or more).
//!
//! Sans-IO: the cache decides, the transport makes the device calls. [`RegCache::acquire`]
//! finds a registration that covers a range (a hit) and counts a use; on a miss the caller
//! registers the range and hands the keys to [`RegCache::insert`], which may evict the
//! least recently used entries to stay within its bounds and returns the keys to
//! deregister now. An entry in use by a request is never deregistered under it: eviction
//! only hides it from lookups, and its last [`RegCache::release`] returns its keys.
//!
//! A registration pins the pages mapped at its range when it is made. Memory freed and
//! mapped again at the same address (large allocations are unmapped on `free`) has other
//! pages, which an idle registration kept for the address would not reach: the device
//! would read and write the old ones. So by default an entry leaves the cache with its last
//! use, and the cache shares registrations among the requests that use a range at once;
//! [`RegCache::keep_idle`] keeps idle entries for callers whose memory stays mapped.

use super::device::MemoryKeys;

/// Counts of what the cache did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegStats {
    /// Lookups a cached registration covered.
    pub hits: u64,
    /// Lookups that needed a new registration.
    pub misses: u64,
    /// Entries evicted to stay within the bounds.
    pub evictions: u64,
}

/// A use of a cached registration, returned by [`RegCache::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegUse(u64);

#[derive(Clone, Copy, Debug)]
struct Entry {
    id: u64,
    addr: u64,
    len: usize,
    keys: MemoryKeys,
    uses: u32,
    last_used: u64,
    /// Out of the cache, deregistered when its last use is released.
    evicted: bool,
}

/// The cache, bounded in entries and in registered bytes.
#[derive(Debug)]
pub struct RegCache {
    entries: Vec<Entry>,
    max_entries: usize,
    max_bytes: usize,
    tick: u64,
    stats: RegStats,
    /// Whether an entry stays after its last use (its memory is known to stay mapped).
    keep_idle: bool,
}

impl RegCache {
    /// A cache of at most `max_entries` registrations and `max_bytes` registered bytes
    /// (both at least 1; entries in use may exceed them until released).
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            entries: Vec::new(),
            max_entries: max_entries.max(1),
            max_bytes: max_bytes.max(1),
            tick: 0,
            stats: RegStats::default(),
            keep_idle: true,
        }
    }

    /// Whether entries stay registered after their last use (`true` from [`RegCache::new`]):
    /// sound only when no cached memory is unmapped while cached.
    pub fn keep_idle(mut self, keep: bool) -> Self {
        self.keep_idle = keep;
        self
    }

    /// The counts so far.
    pub fn stats(&self) -> RegStats {
        self.stats
    }

    /// Registrations held (cached or in use).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no registration is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes registered through the cache now.
    pub fn bytes(&self) -> usize {
        self.entries.iter().map(|e| e.len).sum()
    }

    /// A cached registration covering `len` bytes at `addr`, with one more use counted; a
    /// miss is counted when there is none (then register and [`RegCache::insert`]).
    pub fn acquire(&mut self, addr: u64, len: usize) -> Option<(RegUse, MemoryKeys)> {
        self.tick += 1;
        let end = addr.saturating_add(len as u64);
        let found = self
            .entries
            .iter_mut()
            .find(|e| !e.evicted && e.addr <= addr && end <= e.addr + e.len as u64);
        match found {
            Some(e) => {
                e.uses += 1;
                e.last_used = self.tick;
                self.stats.hits += 1;
                Some((RegUse(e.id), e.keys))
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// Caches a registration just made for `len` bytes at `addr`, in use once; evicts the
    /// least recently used entries beyond the bounds. Returns the use and the keys to
    /// deregister now (evicted entries no request uses).
    pub fn insert(&mut self, addr: u64, len: usize, keys: MemoryKeys) -> (RegUse, Vec<MemoryKeys>) {
        self.tick += 1;
        let id = self.tick;
        let entry = Entry { id, addr, len, keys, uses: 1, last_used: self.tick, evicted: false };
        self.entries.push(entry);
        let mut dead = Vec::new();
        while self.over_bounds() {
            let victim = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| !e.evicted && e.id != id)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(i, _)| i);
            let Some(i) = victim else { break };
            self.stats.evictions += 1;
            if self.entries[i].uses == 0 {
                dead.push(self.entries.swap_remove(i).keys);
            } else {
                self.entries[i].evicted = true;
            }
        }
        (RegUse(id), dead)
    }

    /// Ends one use; returns the keys to deregister when it was the last use of an evicted
    /// entry, or of any entry when idle ones are not kept. An unknown use is ignored.
    pub fn release(&mut self, used: RegUse) -> Option<MemoryKeys> {
        let i = self.entries.iter().position(|e| e.id == used.0)?;
        let e = &mut self.entries[i];
        e.uses = e.uses.saturating_sub(1);
        let gone = e.evicted || !self.keep_idle;
        (e.uses == 0 && gone).then(|| self.entries.swap_remove(i).keys)
    }

    /// Empties the cache: every registration's keys, to deregister (at the transport's end,
    /// when no request is left).
    pub fn drain(&mut self) -> Vec<MemoryKeys> {
        self.entries.drain(..).map(|e| e.keys).collect()
    }

    fn over_bounds(&self) -> bool {
        let live = self.entries.iter().filter(|e| !e.evicted);
        let (count, bytes) = live.fold((0, 0), |(c, b), e| (c + 1, b + e.len));
        count > self.max_entries || bytes > self.max_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: u32) -> MemoryKeys {
        MemoryKeys { lkey: n, rkey: n + 1000 }
    }

    #[test]
    fn a_covered_range_hits_and_an_uncovered_one_misses() {
        let mut cache = RegCache::new(4, 1 << 20);
        assert!(cache.acquire(0x1000, 64).is_none());
        let (first, dead) = cache.insert(0x1000, 4096, keys(1));
        assert!(dead.is_empty());
        let (second, k) = cache.acquire(0x1800, 100).expect("inside the registered range");
        assert_eq!(k, keys(1));
        assert!(cache.acquire(0x1f00, 512).is_none(), "runs past the registered range");
        assert_eq!(cache.stats(), RegStats { hits: 1, misses: 2, evictions: 0 });
        assert_eq!(cache.release(first), None);
        assert_eq!(cache.release(second), None, "cached entries stay registered");
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn the_least_recently_used_idle_entry_is_evicted_and_deregistered_at_once() {
        let mut cache = RegCache::new(2, 1 << 20);
        let (a, _) = cache.insert(0x1000, 64, keys(1));
        let (b, _) = cache.insert(0x2000, 64, keys(2));
        cache.release(a);
        cache.release(b);
        let (used, _) = cache.acquire(0x1000, 64).unwrap(); // a is now the most recent
        cache.release(used);
        let (_, dead) = cache.insert(0x3000, 64, keys(3));
        assert_eq!(dead, vec![keys(2)]);
        assert_eq!(cache.stats().evictions, 1);
        assert!(cache.acquire(0x2000, 64).is_none());
    }

    #[test]
    fn an_evicted_entry_in_use_is_deregistered_only_at_its_last_release() {
        let mut cache = RegCache::new(1, 1 << 20);
        let (a, _) = cache.insert(0x1000, 64, keys(1));
        let (a2, _) = cache.acquire(0x1000, 64).unwrap();
        let (c, dead) = cache.insert(0x3000, 64, keys(3));
        assert!(dead.is_empty(), "still used by two requests");
        assert!(cache.acquire(0x1000, 64).is_none(), "evicted entries are not found");
        assert_eq!(cache.release(a), None);
        assert_eq!(cache.release(a2), Some(keys(1)));
        assert_eq!(cache.release(c), None);
        assert_eq!(cache.drain(), vec![keys(3)]);
        assert!(cache.is_empty());
    }

    #[test]
    fn without_keeping_idle_entries_a_range_is_shared_while_used_and_dropped_after() {
        let mut cache = RegCache::new(4, 1 << 20).keep_idle(false);
        let (a, _) = cache.insert(0x1000, 4096, keys(1));
        let (a2, _) = cache.acquire(0x1000, 64).expect("used now: shared");
        assert_eq!(cache.release(a), None);
        assert_eq!(cache.release(a2), Some(keys(1)), "its last use deregisters it");
        assert!(cache.is_empty());
        assert!(cache.acquire(0x1000, 64).is_none(), "the address may map other pages now");
    }

    #[test]
    fn the_byte_bound_evicts_too() {
        let mut cache = RegCache::new(100, 1000);
        let (a, _) = cache.insert(0x1000, 600, keys(1));
        cache.release(a);
        let (_, dead) = cache.insert(0x9000, 600, keys(2));
        assert_eq!(dead, vec![keys(1)]);
        assert_eq!(cache.bytes(), 600);
    }
}
