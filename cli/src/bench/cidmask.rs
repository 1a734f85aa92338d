//! `commcore bench cidmask`: the CID space's mask operations written on bare `u32` words
//! (core's `SpaceState`) and on `bitvec`'s `BitArray`, to count under callgrind
//! (`scripts/instructions.sh cidmask`) whether `bitvec` costs more.
//!
//! The four operations, each behind its own non-inlined probe, on a 2,048-CID space (MPICH's
//! layout, 65 words) filled from CID 0 up (`empty`: none used, `half`: 1,024, `full`: all
//! but the top 8):
//! - `scan`: AND a peer's mask into this one (as the BAND allreduce does), then find the
//!   lowest common free CID above the eager segment;
//! - `claim`: take the top CID (`SpaceState::take`);
//! - `lookup`: whether a CID is free, round-robin over the space;
//! - `release`: free the top CID again, which walks down to the new highest used CID.
//!
//! `--probe ours|bitvec --fill empty|half|full [--calls N]` runs the probes N times; without
//! `--probe` the two forms are checked against each other and against core's `CidSpace`.
//!
//! `Words` copies core's code (`cid/space.rs`) so both forms are compiled alike; the check
//! keeps the copy honest.

use std::hint::black_box;

use bitvec::prelude::{BitArray, BitSlice, Lsb0};
use commcore::cid::{words_for, Cid, CidSpace, SpaceConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::option;

/// CIDs of the space (MPICH's width).
pub const WIDTH: u32 = 2048;
/// Words of a mask, as core sizes them (one more than the width needs).
const W: usize = words_for(WIDTH);
/// The eager segment the mask round leaves out of its search.
const EAGER: u32 = 64;
/// The CID the claim and release probes take and free: the top of the space.
const TOP: Cid = WIDTH - 1;

/// The mask side of a process's CID state, as the two forms hold it.
pub trait CidMask: Sized {
    /// A space with CIDs `0..used` in use.
    fn filled(used: u32) -> Self;
    /// A peer's free mask in the same form.
    type Peer;
    /// The peer's mask with CIDs `0..used` in use.
    fn peer(used: u32) -> Self::Peer;
    /// ANDs this member's free mask into `peer`; the lowest CID free in both from `from`.
    fn scan(&self, peer: &mut Self::Peer, from: Cid) -> Option<Cid>;
    fn is_free(&self, cid: Cid) -> bool;
    fn take(&mut self, cid: Cid) -> bool;
    fn put(&mut self, cid: Cid, width: u32) -> bool;
    /// The highest CID in use, and `live`.
    fn summary(&self) -> (Option<Cid>, u32);
}

/// Core's form: bit `c % 32` of word `c / 32`.
pub struct Words {
    free: [u32; W],
    windowed: [u32; W],
    highest: Option<Cid>,
    top: Option<Cid>,
    live: u32,
}

impl Words {
    fn take_for_window(&mut self, cid: Cid) -> bool {
        if !self.is_free(cid) {
            return false;
        }
        self.free[cid as usize / 32] &= !(1 << (cid % 32));
        self.windowed[cid as usize / 32] |= 1 << (cid % 32);
        self.live += 1;
        self.highest = Some(self.highest.map_or(cid, |h| h.max(cid)));
        true
    }

    fn commit(&mut self, cid: Cid, raise: bool) {
        self.windowed[cid as usize / 32] &= !(1 << (cid % 32));
        if raise {
            self.top = Some(self.top.map_or(cid, |t| t.max(cid)));
        }
    }

    fn highest_used_below(&self, cid: Cid, width: u32, skip_windows: bool) -> Option<Cid> {
        let words = (width / 32) as usize;
        let mut index = cid as usize / 32;
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
}

fn lowest_set(mask: &[u32], from: Cid, to: Cid) -> Option<Cid> {
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

fn used_words(used: u32) -> [u32; W] {
    let mut free = [0u32; W];
    for cid in used..WIDTH {
        free[cid as usize / 32] |= 1 << (cid % 32);
    }
    free
}

impl CidMask for Words {
    type Peer = [u32; W];

    fn filled(used: u32) -> Self {
        let highest = used.checked_sub(1);
        Self { free: used_words(used), windowed: [0; W], highest, top: highest, live: used }
    }

    fn peer(used: u32) -> [u32; W] {
        used_words(used)
    }

    fn scan(&self, peer: &mut [u32; W], from: Cid) -> Option<Cid> {
        for (theirs, ours) in peer.iter_mut().zip(&self.free) {
            *theirs &= ours;
        }
        lowest_set(peer, from, WIDTH)
    }

    #[inline]
    fn is_free(&self, cid: Cid) -> bool {
        let word = self.free.get(cid as usize / 32).copied().unwrap_or(0);
        word & (1 << (cid % 32)) != 0
    }

    fn take(&mut self, cid: Cid) -> bool {
        let taken = self.take_for_window(cid);
        if taken {
            self.commit(cid, true);
        }
        taken
    }

    fn put(&mut self, cid: Cid, width: u32) -> bool {
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

    fn summary(&self) -> (Option<Cid>, u32) {
        (self.highest, self.live)
    }
}

/// The same words behind `bitvec`'s bit indexing and searches.
type Bits = BitArray<[u32; W], Lsb0>;

/// The `bitvec` form, written as that crate's API invites.
pub struct BitVec {
    free: Bits,
    windowed: Bits,
    highest: Option<Cid>,
    top: Option<Cid>,
    live: u32,
}

impl BitVec {
    fn take_for_window(&mut self, cid: Cid) -> bool {
        if !self.is_free(cid) {
            return false;
        }
        self.free.set(cid as usize, false);
        self.windowed.set(cid as usize, true);
        self.live += 1;
        self.highest = Some(self.highest.map_or(cid, |h| h.max(cid)));
        true
    }

    fn commit(&mut self, cid: Cid, raise: bool) {
        self.windowed.set(cid as usize, false);
        if raise {
            self.top = Some(self.top.map_or(cid, |t| t.max(cid)));
        }
    }

    fn highest_used_below(&self, cid: Cid, skip_windows: bool) -> Option<Cid> {
        let mut end = cid as usize;
        loop {
            let used = self.free[..end].last_zero()?;
            // Windows are few (at most 32 per request): step past them one by one.
            if !skip_windows || !self.windowed[used] {
                return Some(used as Cid);
            }
            end = used;
        }
    }
}

fn used_bits(used: u32) -> Bits {
    let mut free = Bits::ZERO;
    free[used as usize..WIDTH as usize].fill(true);
    free
}

fn lowest_one(mask: &BitSlice<u32, Lsb0>, from: Cid, to: Cid) -> Option<Cid> {
    let (from, to) = (from as usize, (to as usize).min(mask.len()));
    if from >= to {
        return None;
    }
    mask[from..to].first_one().map(|i| (from + i) as Cid)
}

impl CidMask for BitVec {
    type Peer = Bits;

    fn filled(used: u32) -> Self {
        let highest = used.checked_sub(1);
        Self { free: used_bits(used), windowed: Bits::ZERO, highest, top: highest, live: used }
    }

    fn peer(used: u32) -> Bits {
        used_bits(used)
    }

    fn scan(&self, peer: &mut Bits, from: Cid) -> Option<Cid> {
        *peer &= &self.free;
        lowest_one(peer, from, WIDTH)
    }

    #[inline]
    fn is_free(&self, cid: Cid) -> bool {
        self.free.get(cid as usize).is_some_and(|bit| *bit)
    }

    fn take(&mut self, cid: Cid) -> bool {
        let taken = self.take_for_window(cid);
        if taken {
            self.commit(cid, true);
        }
        taken
    }

    fn put(&mut self, cid: Cid, width: u32) -> bool {
        if cid >= width || self.is_free(cid) {
            return false;
        }
        self.free.set(cid as usize, true);
        self.windowed.set(cid as usize, false);
        self.live -= 1;
        if self.highest == Some(cid) {
            self.highest = self.highest_used_below(cid, false);
        }
        if self.top == Some(cid) {
            self.top = self.highest_used_below(cid, true);
        }
        true
    }

    fn summary(&self) -> (Option<Cid>, u32) {
        (self.highest, self.live)
    }
}

/// The scan probe: one BAND of a peer's mask and the search above the eager segment.
#[inline(never)]
pub fn probe_cidmask_scan<M: CidMask>(mask: &M, peer: &mut M::Peer) -> Option<Cid> {
    mask.scan(peer, EAGER)
}

/// The claim probe.
#[inline(never)]
pub fn probe_cidmask_claim<M: CidMask>(mask: &mut M, cid: Cid) -> bool {
    mask.take(cid)
}

/// The lookup probe.
#[inline(never)]
pub fn probe_cidmask_lookup<M: CidMask>(mask: &M, cid: Cid) -> bool {
    mask.is_free(cid)
}

/// The release probe, with the walk down to the new highest CID.
#[inline(never)]
pub fn probe_cidmask_release<M: CidMask>(mask: &mut M, cid: Cid) -> bool {
    mask.put(cid, WIDTH)
}

/// CIDs in use at each fill.
fn used_at(fill: &str) -> Result<u32, String> {
    match fill {
        "empty" => Ok(0),
        "half" => Ok(WIDTH / 2),
        "full" => Ok(WIDTH - 8),
        other => Err(format!("--fill takes empty, half or full, not {other:?}")),
    }
}

/// Runs the benchmark.
pub fn run(args: &[String]) -> Result<Value, String> {
    let Some(form) = option::<String>(args, "--probe")? else {
        return check(2000);
    };
    let fill = option::<String>(args, "--fill")?.unwrap_or_else(|| "half".into());
    let used = used_at(&fill)?;
    let calls: u64 = option(args, "--calls")?.unwrap_or(100_000);
    let sum = match form.as_str() {
        "ours" => probe_run::<Words>(used, calls)?,
        "bitvec" => probe_run::<BitVec>(used, calls)?,
        other => return Err(format!("--probe takes ours or bitvec, not {other:?}")),
    };
    Ok(json!({ "probe": form, "fill": fill, "used": used, "calls": calls, "checksum": sum }))
}

/// Every probe `calls` times; the claim and release pair leaves the space as it was.
fn probe_run<M: CidMask>(used: u32, calls: u64) -> Result<u64, String> {
    let mut mask = M::filled(used);
    // The peer uses three CIDs more, so the common lowest free CID is not this member's.
    let mut peer = M::peer(used + 3);
    let mut sum = 0u64;
    let mut cid = 0;
    for _ in 0..calls {
        let found = probe_cidmask_scan(black_box(&mask), black_box(&mut peer));
        sum += u64::from(found.unwrap_or(WIDTH));
        sum += u64::from(probe_cidmask_lookup(black_box(&mask), black_box(cid)));
        cid = (cid + 1) % WIDTH;
        if !probe_cidmask_claim(black_box(&mut mask), black_box(TOP))
            || !probe_cidmask_release(black_box(&mut mask), black_box(TOP))
        {
            return Err("the top CID was not free".into());
        }
    }
    if mask.summary() != (used.checked_sub(1), used) {
        return Err("claim and release did not restore the space".into());
    }
    Ok(sum)
}

/// Random claims, releases, lookups and scans on both forms and on core's `CidSpace`: every
/// answer must agree.
fn check(steps: u32) -> Result<Value, String> {
    let config = SpaceConfig { width: WIDTH, eager: EAGER, threaded: false };
    let space = CidSpace::<W>::new(config).map_err(|e| format!("{e:?}"))?;
    let (mut words, mut bits) = (Words::filled(0), BitVec::filled(0));
    let mut rng = ChaCha8Rng::seed_from_u64(27);
    for step in 0..steps {
        // Mostly the low CIDs, where allocation happens, with some anywhere.
        let cid = if rng.gen_bool(0.8) { rng.gen_range(0..96) } else { rng.gen_range(0..WIDTH) };
        let (a, b, c) = if rng.gen_bool(0.55) {
            (space.claim(cid).is_ok(), words.take(cid), bits.take(cid))
        } else {
            (space.release(cid).is_ok(), words.put(cid, WIDTH), bits.put(cid, WIDTH))
        };
        let lookup = rng.gen_range(0..WIDTH + 40);
        let peer_used = rng.gen_range(0..WIDTH);
        let from = rng.gen_range(0..WIDTH);
        let (mut peer_words, mut peer_bits) = (Words::peer(peer_used), BitVec::peer(peer_used));
        let agree = a == b
            && b == c
            && (space.highest(), space.live()) == words.summary()
            && words.summary() == bits.summary()
            && space.is_free(lookup) == words.is_free(lookup)
            && words.is_free(lookup) == bits.is_free(lookup)
            && words.scan(&mut peer_words, from) == bits.scan(&mut peer_bits, from);
        if !agree {
            return Err(format!("the forms disagree at step {step} (CID {cid})"));
        }
    }
    Ok(json!({ "steps": steps, "agree": true, "live": space.live() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_agree_with_core() {
        check(20_000).unwrap();
    }

    #[test]
    fn probes_restore_the_space_at_every_fill() {
        for fill in ["empty", "half", "full"] {
            let used = used_at(fill).unwrap();
            assert_eq!(probe_run::<Words>(used, 3), probe_run::<BitVec>(used, 3));
        }
    }
}
