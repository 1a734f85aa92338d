//! Context-id agreement for many hosted ranks, with creations and frees.

use commcore::cid::store::Flat;
use commcore::cid::{Algorithm, Cid, CidRequest, CidSpace, SpaceConfig};

use super::{AllreduceFailed, SelftestError, XorShift};
use crate::cid::{agree, AgreeError, AgreeStats, Allreduce, Member, SharedStore};

/// The algorithms the self-test runs, in report order.
pub const ALGORITHMS: [Algorithm; 3] = [Algorithm::Lowest, Algorithm::Mask, Algorithm::Highest];

/// Live communicators at most, besides the predefined ones.
const MAX_LIVE: usize = 96;
/// CIDs each rank also uses in communicators the others are not in.
const PRIVATE: u32 = 4;
/// Rounds an agreement may take before it counts as stalled.
const MAX_ROUNDS: u32 = 10_000;

/// What [`cids`] measured, per algorithm in [`ALGORITHMS`] order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CidReport {
    /// Ranks hosted.
    pub ranks: u32,
    /// Communicators created per algorithm.
    pub creations: u32,
    /// Communicators freed per algorithm.
    pub frees: u32,
    /// Calls of the kernel's allreduce, per algorithm.
    pub allreduces: [u32; 3],
    /// The highest CID agreed, per algorithm.
    pub highest: [Cid; 3],
    /// CID-store lookups checked.
    pub lookups: u64,
}

/// A CID rank `rank` uses privately (in communicators the other ranks are not in).
fn private(rank: usize, k: u32) -> Cid {
    2 + (rank as u32 * 37 + k * 101) % 400
}

/// For each algorithm: `RANKS` hosted ranks, each with a fresh space in `spaces` laid out
/// by `config` and its own flat CID store (`config.width` of `slots` per rank), create
/// `creations` communicators and free them again in a seeded order, agreeing through the
/// kernel's `net`. Every agreement is checked: one CID on every rank, not one a rank had
/// taken, and every rank's store maps it to the same communicator.
pub fn cids<const W: usize, const RANKS: usize, A: Allreduce>(
    spaces: &mut [CidSpace<W>; RANKS],
    slots: &mut [Option<u16>],
    config: SpaceConfig,
    creations: u32,
    net: &mut A,
    seed: u64,
) -> Result<CidReport, SelftestError> {
    let width = config.width as usize;
    if slots.len() < RANKS * width {
        return Err(SelftestError::TooSmall { what: "cid store slots", needed: RANKS * width });
    }
    let mut report = CidReport { ranks: RANKS as u32, creations, ..CidReport::default() };
    for (a, algorithm) in ALGORITHMS.into_iter().enumerate() {
        let mut rng = XorShift::new(seed ^ a as u64);
        for (rank, space) in spaces.iter_mut().enumerate() {
            *space = CidSpace::new(config)
                .map_err(|_| SelftestError::TooSmall { what: "cid space", needed: width })?;
            // World and self, then the private ones (a collision is taken already).
            let _ = space.claim(0);
            let _ = space.claim(1);
            for k in 0..PRIVATE {
                let _ = space.claim(private(rank, k));
            }
        }
        let mut stores: heapless::Vec<SharedStore<Flat<'_, u16>, u16>, RANKS> =
            slots.chunks_mut(width).take(RANKS).map(|s| SharedStore::new(Flat::new(s))).collect();
        let mut live: heapless::Vec<(Cid, u16), MAX_LIVE> = heapless::Vec::new();
        let mut stats = AgreeStats::default();
        for creation in 0..creations {
            if live.is_full() || (!live.is_empty() && rng.below(3) == 0) {
                let (cid, handle) = live.swap_remove(rng.below(live.len() as u64) as usize);
                free(spaces, &stores, cid, handle, creation)?;
                report.frees += 1;
            }
            let parent = live.get(rng.below(live.len() as u64 + 1) as usize).map_or(0, |l| l.0);
            let cid = create(spaces, algorithm, parent, net, &mut stats)
                .map_err(|error| SelftestError::Agree { creation, error })?;
            let handle = creation as u16;
            let reused = cid < 2 || live.iter().any(|l| l.0 == cid);
            for (rank, store) in stores.iter_mut().enumerate() {
                let private = (0..PRIVATE).any(|k| private(rank, k) == cid);
                if reused || private || store.insert(cid, handle).is_err() {
                    return Err(SelftestError::CidWrong { creation, rank: rank as u32, cid });
                }
            }
            for (rank, store) in stores.iter().enumerate() {
                if store.get(cid) != Some(handle) {
                    return Err(SelftestError::CidWrong { creation, rank: rank as u32, cid });
                }
                report.lookups += 1;
            }
            report.highest[a] = report.highest[a].max(cid);
            // Cannot fail: an entry was removed above when the list was full.
            let _ = live.push((cid, handle));
        }
        while let Some((cid, handle)) = live.pop() {
            free(spaces, &stores, cid, handle, creations)?;
            report.frees += 1;
        }
        report.allreduces[a] = stats.allreduces;
        for (rank, (space, store)) in spaces.iter().zip(&stores).enumerate() {
            if !space.is_quiescent() || space.live() > 2 + PRIVATE || !store.is_empty() {
                let rank = rank as u32;
                return Err(SelftestError::CidWrong { creation: creations, rank, cid: 0 });
            }
        }
        stores.clear();
    }
    report.frees /= ALGORITHMS.len() as u32;
    Ok(report)
}

/// One agreement over every hosted rank.
fn create<const W: usize, const RANKS: usize, A: Allreduce>(
    spaces: &[CidSpace<W>; RANKS],
    algorithm: Algorithm,
    parent: Cid,
    net: &mut A,
    stats: &mut AgreeStats,
) -> Result<Cid, AgreeError<AllreduceFailed>> {
    let mut members: heapless::Vec<Member<'_, W>, RANKS> = spaces
        .iter()
        .map(|space| Member { space, request: CidRequest::new(algorithm, parent, 0) })
        .collect();
    agree(&mut members, net, MAX_ROUNDS, stats).map_err(|e| match e {
        AgreeError::Allreduce(_) => AgreeError::Allreduce(AllreduceFailed),
        AgreeError::Cid(e) => AgreeError::Cid(e),
        AgreeError::NoMembers => AgreeError::NoMembers,
        AgreeError::Mismatch => AgreeError::Mismatch,
        AgreeError::Disagree { first, other } => AgreeError::Disagree { first, other },
        AgreeError::Stalled { rounds } => AgreeError::Stalled { rounds },
    })
}

/// Every rank frees communicator `handle` with `cid`.
fn free<const W: usize>(
    spaces: &[CidSpace<W>],
    stores: &[SharedStore<Flat<'_, u16>, u16>],
    cid: Cid,
    handle: u16,
    creation: u32,
) -> Result<(), SelftestError> {
    for (rank, (space, store)) in spaces.iter().zip(stores).enumerate() {
        if store.remove(cid) != Some(handle) || space.release(cid).is_err() {
            return Err(SelftestError::CidWrong { creation, rank: rank as u32, cid });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::boxed::Box;
    use std::vec;

    use commcore::cid::{words_for, ReduceOp};

    use super::*;

    struct Alone(u32);

    impl Allreduce for Alone {
        type Error = ();
        fn allreduce(&mut self, _: ReduceOp, _: &mut [u32]) -> Result<(), ()> {
            self.0 += 1;
            Ok(())
        }
    }

    const CONFIG: SpaceConfig = SpaceConfig { width: 2048, eager: 64, threaded: false };
    const W: usize = words_for(2048);

    #[test]
    fn sixty_four_ranks_create_and_free_with_every_algorithm() {
        let mut spaces: Box<[CidSpace<W>; 64]> =
            Box::new(core::array::from_fn(|_| CidSpace::new(CONFIG).unwrap()));
        let mut slots = vec![None; 64 * 2048];
        let mut net = Alone(0);
        let report = cids(&mut spaces, &mut slots, CONFIG, 300, &mut net, 5).unwrap();
        assert_eq!((report.ranks, report.creations, report.frees), (64, 300, 300));
        assert_eq!(report.lookups, 3 * 300 * 64);
        assert_eq!(report.allreduces.iter().sum::<u32>(), net.0);
        assert!(report.allreduces.iter().all(|a| *a >= 300));
        // The highest algorithm moves up through the space; lowest reuses freed CIDs.
        assert!(report.highest[2] > report.highest[0], "{report:?}");
    }

    #[test]
    fn too_few_slots_is_an_error() {
        let mut spaces: [CidSpace<W>; 2] = core::array::from_fn(|_| CidSpace::new(CONFIG).unwrap());
        let e = cids(&mut spaces, &mut [None; 10], CONFIG, 1, &mut Alone(0), 1).unwrap_err();
        assert_eq!(e, SelftestError::TooSmall { what: "cid store slots", needed: 4096 });
    }
}
