//! A large job's address vector and communicators, translated rank by rank.

use commcore::av::{Address, Ave, Lpid, NodeId, Pgid, TransportId};
use commcore::rankmap::{Rank, RankMap};

use super::{SelftestError, XorShift};
use crate::{Job, RANK_MAP_BYTES};

/// Processes a node runs in the test job (so node ids need a division, as on a machine).
const PER_NODE: u32 = 48;

/// The entry of process `lpid`: an address, a transport and a node derived from it.
pub fn reference_entry(lpid: Lpid) -> Ave {
    let address = Address::Inline(0x4000_0000_0000 | (u64::from(lpid) << 8) | 0x11);
    // Cannot fail: lpid / 48 fits the 24-bit node id and the transport is 0 or 1.
    Ave::new(address, TransportId((lpid % 2) as u8), NodeId(lpid / PER_NODE)).unwrap_or(Ave::EMPTY)
}

/// What [`rankmaps`] measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankmapReport {
    /// Processes in the job.
    pub processes: u32,
    /// Odd/even splits built.
    pub splits: u32,
    /// Bytes of the address vector.
    pub av_bytes: usize,
    /// Bytes of the world's and the splits' rank maps (tables included: none).
    pub split_map_bytes: usize,
    /// The job with its splits: address vector plus rank maps.
    pub job_bytes: usize,
    /// The reversed communicator: rank map plus table.
    pub reversed_bytes: usize,
    /// The random communicator: rank map plus table.
    pub random_bytes: usize,
    /// Ranks translated and checked.
    pub translations: u64,
}

/// Builds a job of `av.len()` processes in `av`, then `maps.len()` odd/even splits of its
/// world (kept in `maps`), a reversed and a random (permuted with `seed`) communicator;
/// translates every rank of each against its formula and frees everything. `scratch` is
/// the working list for building communicators (one entry per process).
pub fn rankmaps<'a, const G: usize, const T: usize>(
    job: &mut Job<'a, G, T>,
    av: &'a mut [Ave],
    maps: &mut [Option<RankMap<'a>>],
    scratch: &mut [Rank],
    seed: u64,
) -> Result<RankmapReport, SelftestError> {
    let n = av.len();
    if scratch.len() < n {
        return Err(SelftestError::TooSmall { what: "working list", needed: n });
    }
    let pgid = job.register_group(av, reference_entry)?;
    let world = job.world(pgid)?;
    let mut report =
        RankmapReport { processes: n as u32, av_bytes: job.av_bytes(), ..RankmapReport::default() };
    check(&world, "world", &mut report, Some)?;
    check_entries(job, &world)?;
    let half = n / 2;
    for (k, slot) in maps.iter_mut().enumerate() {
        let parity = (k % 2) as Rank;
        let split = job.create(&world, half, |r| 2 * r + parity, scratch)?;
        if split.table().is_some() {
            return Err(SelftestError::NotRegular { comm: "odd/even split" });
        }
        check(&split, "odd/even split", &mut report, |r| Some(2 * r + parity))?;
        *slot = Some(split);
        report.splits += 1;
    }
    report.split_map_bytes = (maps.len() + 1) * RANK_MAP_BYTES + job.table_bytes();
    report.job_bytes = report.av_bytes + report.split_map_bytes;

    let last = n as Rank - 1;
    let reversed = job.create(&world, n, |r| last - r, scratch)?;
    if reversed.table().is_some() {
        return Err(SelftestError::NotRegular { comm: "reversed" });
    }
    report.reversed_bytes = RANK_MAP_BYTES + job.table_bytes();
    check(&reversed, "reversed", &mut report, |r| Some(last - r))?;

    let before = job.table_bytes();
    let permutation = &mut scratch[..n];
    shuffle(permutation, seed);
    let random = job.create_from(&world, permutation)?;
    report.random_bytes = RANK_MAP_BYTES + job.table_bytes() - before;
    check(&random, "random", &mut report, |r| permutation.get(r as usize).copied())?;

    job.free(random)?;
    job.free(reversed)?;
    for slot in maps.iter_mut() {
        if let Some(map) = slot.take() {
            job.free(map)?;
        }
    }
    if job.table_bytes() != 0 {
        return Err(SelftestError::NotRegular { comm: "freed" });
    }
    Ok(report)
}

/// `ranks[i] = i`, then a Fisher–Yates shuffle from `seed`.
fn shuffle(ranks: &mut [Rank], seed: u64) {
    let mut rng = XorShift::new(seed);
    for (i, r) in ranks.iter_mut().enumerate() {
        *r = i as Rank;
    }
    for i in (1..ranks.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        ranks.swap(i, j);
    }
}

/// Every rank of `map` translates to the process `lpid(rank)` names; one past the end to
/// nothing.
fn check(
    map: &RankMap<'_>,
    comm: &'static str,
    report: &mut RankmapReport,
    lpid: impl Fn(Rank) -> Option<Lpid>,
) -> Result<(), SelftestError> {
    let pgid = map.pgid().unwrap_or(Pgid(u16::MAX));
    for rank in 0..map.size() {
        if map.translate(rank) != lpid(rank).map(|l| (pgid, l)) {
            return Err(SelftestError::Translate { comm, rank });
        }
    }
    if map.translate(map.size()).is_some() {
        return Err(SelftestError::Translate { comm, rank: map.size() });
    }
    report.translations += u64::from(map.size());
    Ok(())
}

/// Every world rank's entry, compared with [`reference_entry`].
fn check_entries<const G: usize, const T: usize>(
    job: &Job<'_, G, T>,
    world: &RankMap<'_>,
) -> Result<(), SelftestError> {
    for rank in 0..world.size() {
        match world.entry(job.groups(), rank) {
            Some(e) if *e == reference_entry(rank) => {}
            _ => return Err(SelftestError::Translate { comm: "world entries", rank }),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::vec;

    use super::*;
    use crate::TableWords;

    #[test]
    fn a_job_of_4096_with_ten_splits_is_regular_and_counted() {
        let n = 4096;
        let words = TableWords::<4096>::new();
        let mut av = vec![Ave::EMPTY; n];
        let mut scratch = vec![0; n];
        let mut maps: [Option<RankMap<'_>>; 10] = Default::default();
        let mut job: Job<'_, 1, 4> = Job::new(words.words());
        let report = rankmaps(&mut job, &mut av, &mut maps, &mut scratch, 7).unwrap();
        assert_eq!(report.av_bytes, n * 12);
        assert_eq!(report.splits, 10);
        assert_eq!(report.split_map_bytes, 11 * RANK_MAP_BYTES);
        assert_eq!(report.job_bytes, n * 12 + 11 * RANK_MAP_BYTES);
        assert_eq!(report.reversed_bytes, RANK_MAP_BYTES);
        assert_eq!(report.random_bytes, RANK_MAP_BYTES + n * 4);
        assert_eq!(report.translations, (n + 10 * n / 2 + 2 * n) as u64);
        assert_eq!(job.table_bytes(), 0);
        assert!(maps.iter().all(Option::is_none));
    }

    #[test]
    fn too_little_memory_is_an_error() {
        let words = TableWords::<16>::new();
        let mut av = vec![Ave::EMPTY; 64];
        let mut job: Job<'_, 1, 4> = Job::new(words.words());
        let e = rankmaps(&mut job, &mut av, &mut [], &mut [0; 8], 1).unwrap_err();
        assert_eq!(e, SelftestError::TooSmall { what: "working list", needed: 64 });
        let mut av = vec![Ave::EMPTY; 64];
        let e = rankmaps(&mut job, &mut av, &mut [], &mut [0; 64], 1).unwrap_err();
        assert!(matches!(e, SelftestError::Job(_)), "a 64-word lut does not fit 16 words: {e}");
    }

    #[test]
    fn the_shuffle_is_a_seeded_permutation() {
        let (mut a, mut b) = ([0; 100], [0; 100]);
        shuffle(&mut a, 3);
        shuffle(&mut b, 3);
        assert_eq!(a, b);
        let mut sorted = a;
        sorted.sort_unstable();
        assert!(sorted.iter().enumerate().all(|(i, r)| *r == i as Rank));
        assert_ne!(a, sorted);
    }
}
