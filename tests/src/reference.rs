//! Naive reference models: a communicator as a plain vector of `(pgid, lpid)`, composed by
//! hand, and the fixtures (address vectors, arena storage) that rank-map tests share.

use std::sync::atomic::AtomicU32;

use commcore::av::{Address, Ave, NodeId, Pgid, ProcessGroups, TransportId};
use commcore::rankmap::{RankMap, TableArena};
use rand::seq::SliceRandom;
use rand::Rng;

/// A communicator as the list of its processes, rank by rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefMap {
    /// `procs[rank] = (pgid, lpid)`.
    pub procs: Vec<(u16, u32)>,
}

impl RefMap {
    /// The world of group `pgid`: rank `r` is process `r`.
    pub fn world(pgid: u16, size: u32) -> Self {
        Self { procs: (0..size).map(|r| (pgid, r)).collect() }
    }

    /// The child whose rank `i` is this map's rank `indirect[i]`; `None` when an entry is out
    /// of range.
    pub fn create(&self, indirect: &[u32]) -> Option<Self> {
        let procs =
            indirect.iter().map(|&r| self.procs.get(r as usize).copied()).collect::<Option<_>>()?;
        Some(Self { procs })
    }

    /// The merge of two inter-communicator sides, `first` first.
    pub fn merge(first: &Self, second: &Self) -> Self {
        Self { procs: first.procs.iter().chain(&second.procs).copied().collect() }
    }
}

/// The address every test entry of process `(pgid, lpid)` holds.
pub fn address_of(pgid: u16, lpid: u32) -> u64 {
    ((pgid as u64) << 40) | lpid as u64
}

/// The node every test entry of process `lpid` is on: four processes a node.
pub fn node_of(lpid: u32) -> NodeId {
    NodeId(lpid / 4)
}

/// Address vectors whose entries name their own process, one per group size.
pub fn address_vectors(sizes: &[u32]) -> Vec<Vec<Ave>> {
    sizes
        .iter()
        .enumerate()
        .map(|(pgid, &size)| {
            (0..size)
                .map(|lpid| {
                    let address = Address::Inline(address_of(pgid as u16, lpid));
                    Ave::new(address, TransportId((lpid % 2) as u8), node_of(lpid))
                        .expect("test entry fits")
                })
                .collect()
        })
        .collect()
}

/// Registers every address vector, group `i` as pgid `i`.
pub fn register<'a, const N: usize>(avs: &'a [Vec<Ave>]) -> ProcessGroups<'a, N> {
    let mut groups = ProcessGroups::new();
    for (i, av) in avs.iter().enumerate() {
        assert_eq!(groups.register(av), Ok(Pgid(i as u16)));
    }
    groups
}

/// `words` words of zeroed arena storage.
pub fn arena_words(words: usize) -> Vec<AtomicU32> {
    (0..words).map(|_| AtomicU32::new(0)).collect()
}

/// Checks `map` against `reference` on every rank and just past the end: the process, the
/// entry's address, transport and node. Returns a description of the first mismatch.
pub fn check<const N: usize>(
    map: &RankMap<'_>,
    reference: &RefMap,
    groups: &ProcessGroups<'_, N>,
) -> Result<(), String> {
    if map.size() as usize != reference.procs.len() {
        return Err(format!("size {} != reference {}", map.size(), reference.procs.len()));
    }
    for (rank, &(pgid, lpid)) in reference.procs.iter().enumerate() {
        let rank = rank as u32;
        let got = map.translate(rank);
        if got != Some((Pgid(pgid), lpid)) {
            return Err(format!(
                "{:?} rank {rank}: translate {got:?} != ({pgid}, {lpid})",
                map.kind()
            ));
        }
        let entry = map
            .entry(groups, rank)
            .ok_or_else(|| format!("{:?} rank {rank}: no entry", map.kind()))?;
        if entry.address_word() != address_of(pgid, lpid) || entry.node() != node_of(lpid) {
            return Err(format!(
                "{:?} rank {rank}: entry {entry:?} is not ({pgid}, {lpid})",
                map.kind()
            ));
        }
        if entry.transport() != TransportId((lpid % 2) as u8) {
            return Err(format!("{:?} rank {rank}: wrong transport", map.kind()));
        }
        if map.address_word(groups, rank) != Some(entry.address_word()) {
            return Err(format!("{:?} rank {rank}: address word differs from entry", map.kind()));
        }
    }
    for rank in [map.size(), map.size().saturating_add(1), u32::MAX] {
        if rank >= map.size()
            && (map.translate(rank).is_some()
                || map.entry(groups, rank).is_some()
                || map.address_word(groups, rank).is_some())
        {
            return Err(format!("{:?}: rank {rank} past the end translates", map.kind()));
        }
    }
    if let Some(pgid) = map.pgid() {
        if reference.procs.iter().any(|&(p, _)| p != pgid.0) {
            return Err(format!("{:?} claims one group {pgid:?} but members differ", map.kind()));
        }
    }
    Ok(())
}

/// Indirect-mapping shapes the tests draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// `o, o+1, …`.
    Offset,
    /// `o, o+s, …`, `s ≥ 2`.
    Stride,
    /// `o, o−s, …`, `s ≥ 1`.
    NegativeStride,
    /// Runs of `b ≥ 2` consecutive ranks, starts `S > b` apart.
    BlockStride,
    /// A random subset in random order.
    Irregular,
}

/// Every pattern.
pub const PATTERNS: [Pattern; 5] = [
    Pattern::Offset,
    Pattern::Stride,
    Pattern::NegativeStride,
    Pattern::BlockStride,
    Pattern::Irregular,
];

/// A random indirect mapping of `pattern` over a parent of `parent_size` ranks (empty when
/// the parent is too small for the pattern).
pub fn indirect<R: Rng>(rng: &mut R, pattern: Pattern, parent_size: u32) -> Vec<u32> {
    let p = parent_size as i64;
    if p == 0 {
        return Vec::new();
    }
    let o = rng.gen_range(0..p);
    let seq = |n: i64, f: &dyn Fn(i64) -> i64| (0..n).map(|i| f(i) as u32).collect::<Vec<_>>();
    match pattern {
        Pattern::Offset => seq(rng.gen_range(0..=p - o), &|i| o + i),
        Pattern::Stride => {
            let s = rng.gen_range(2..=p.max(2));
            seq(rng.gen_range(0..=(p - 1 - o) / s + 1), &|i| o + i * s)
        }
        Pattern::NegativeStride => {
            let s = rng.gen_range(1..=p);
            seq(rng.gen_range(0..=o / s + 1), &|i| o - i * s)
        }
        Pattern::BlockStride => {
            let b = rng.gen_range(2..=8);
            let step = rng.gen_range(b + 1..=b + 8);
            let span = p - o;
            let blocks = span / step + i64::from(span % step >= b);
            let n = rng.gen_range(0..=blocks * b);
            seq(n, &|i| o + (i / b) * step + i % b)
        }
        Pattern::Irregular => {
            let mut all: Vec<u32> = (0..parent_size).collect();
            all.shuffle(rng);
            all.truncate(rng.gen_range(0..=parent_size as usize));
            all
        }
    }
}

/// Builds a parent map of `kind` over group 0 (size `world`) and group 1, with its
/// reference: the rows of the paper's Table II and the views beyond it.
pub fn parent<'a, R: Rng, const N: usize, const T: usize>(
    rng: &mut R,
    kind: &str,
    groups: &ProcessGroups<'a, N>,
    arena: &mut TableArena<'a, T>,
) -> (RankMap<'a>, RefMap) {
    let av0 = groups.av(Pgid(0));
    let world = RankMap::direct(Pgid(0), av0);
    let w = av0.len() as u32;
    let world_ref = RefMap::world(0, w);
    let via = |indirect: Vec<u32>, arena: &mut TableArena<'a, T>| {
        let map =
            commcore::rankmap::create(&world, &indirect, groups, arena).expect("parent builds");
        let reference = world_ref.create(&indirect).expect("parent indirect in range");
        (map, reference)
    };
    let mut shuffled: Vec<u32> = (0..w).collect();
    shuffled.shuffle(rng);
    match kind {
        "direct" => (world.dup(arena).expect("dup"), world_ref),
        "offset" => via((w / 3..w).collect(), arena),
        "stride" => via((0..w).step_by(3).collect(), arena),
        "negative_stride" => via((0..w).rev().step_by(2).collect(), arena),
        "blockstride" => via((0..w).filter(|r| r % 8 < 3).collect(), arena),
        "lut" => via(shuffled, arena),
        "lut_view" | "lut_stride_view" => {
            let (lut, lut_ref) = via(shuffled, arena);
            let n = lut.size();
            let ind: Vec<u32> = if kind == "lut_view" {
                (n / 4..n).collect()
            } else {
                (0..n).rev().step_by(2).collect()
            };
            let map = commcore::rankmap::create(&lut, &ind, groups, arena).expect("view builds");
            lut.free(arena).expect("free");
            (map, lut_ref.create(&ind).expect("in range"))
        }
        "mlut" | "mlut_view" | "mlut_stride_view" => {
            let av1 = groups.av(Pgid(1));
            let mut members: Vec<(Pgid, u32)> = (0..w).map(|l| (Pgid(0), l)).collect();
            members.extend((0..av1.len() as u32).map(|l| (Pgid(1), l)));
            members.shuffle(rng);
            let mlut =
                commcore::rankmap::from_processes(&members, groups, arena).expect("mlut builds");
            let mlut_ref = RefMap { procs: members.iter().map(|&(p, l)| (p.0, l)).collect() };
            if kind == "mlut" {
                return (mlut, mlut_ref);
            }
            let n = mlut.size();
            let ind: Vec<u32> =
                if kind == "mlut_view" { (1..n).collect() } else { (0..n).step_by(3).collect() };
            let map = commcore::rankmap::create(&mlut, &ind, groups, arena).expect("view builds");
            mlut.free(arena).expect("free");
            (map, mlut_ref.create(&ind).expect("in range"))
        }
        other => panic!("unknown parent kind {other}"),
    }
}

/// Every parent kind [`parent`] builds.
pub const PARENT_KINDS: [&str; 11] = [
    "direct",
    "offset",
    "stride",
    "negative_stride",
    "blockstride",
    "lut",
    "lut_view",
    "lut_stride_view",
    "mlut",
    "mlut_view",
    "mlut_stride_view",
];
