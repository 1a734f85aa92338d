//! The mask algorithm's eager lanes: concurrent agreements of one process on different
//! lanes each finish in one round; two on one lane still agree, one of them in the base
//! mask.

use std::vec;
use std::vec::Vec;

use super::*;

const W: usize = words_for(256);
const CONFIG: SpaceConfig = SpaceConfig { width: 256, eager: 128, threaded: true };

fn laned(n: usize, lanes: u32) -> Vec<CidSpace<W>> {
    (0..n).map(|_| CidSpace::with_eager_lanes(CONFIG, lanes).unwrap()).collect()
}

/// Runs agreements with these ⟨parent, tag⟩ pairs at once, each over every process: every
/// agreement's members all poll before any result is handed back, so the agreements hold
/// their lanes at the same time. Returns each one's CID and allreduce count.
fn agree_at_once(spaces: &[CidSpace<W>], priorities: &[(u32, u32)]) -> Vec<(Cid, u32)> {
    let mut requests: Vec<Vec<CidRequest<W>>> = priorities
        .iter()
        .map(|(parent, tag)| {
            spaces.iter().map(|_| CidRequest::new(Algorithm::Mask, *parent, *tag)).collect()
        })
        .collect();
    let mut results = vec![None; priorities.len()];
    for _round in 0..16 {
        let mut reduced: Vec<Option<Vec<u32>>> = vec![None; priorities.len()];
        for (a, members) in requests.iter_mut().enumerate() {
            for (request, space) in members.iter_mut().zip(spaces) {
                match request.poll(space).unwrap() {
                    Step::Done(cid) => results[a] = Some((cid, request.allreduces())),
                    Step::Wait => panic!("mask requests never wait"),
                    Step::Allreduce { op, words } => match &mut reduced[a] {
                        None => reduced[a] = Some(words.to_vec()),
                        Some(acc) => op.fold(acc, words),
                    },
                }
            }
        }
        for (a, members) in requests.iter_mut().enumerate() {
            if let Some(words) = &reduced[a] {
                for (request, space) in members.iter_mut().zip(spaces) {
                    request.handle_allreduce(space, words).unwrap();
                }
            }
        }
        if results.iter().all(Option::is_some) {
            break;
        }
    }
    assert!(spaces.iter().all(CidSpace::is_quiescent), "holds left behind");
    results.into_iter().map(|r| r.expect("an agreement did not finish")).collect()
}

/// Tags under `parent` whose lanes are distinct (`distinct`) or all one lane.
fn tags(space: &CidSpace<W>, parent: u32, n: usize, distinct: bool) -> Vec<(u32, u32)> {
    let lane = |tag: u32| space.eager_lane(u64::from(parent) << 32 | u64::from(tag)).0;
    let mut picked: Vec<u32> = Vec::new();
    for tag in 0..10_000 {
        let fits = if distinct {
            picked.iter().all(|t| lane(*t) != lane(tag))
        } else {
            picked.first().map_or(true, |t| lane(*t) == lane(tag))
        };
        if fits {
            picked.push(tag);
        }
        if picked.len() == n {
            break;
        }
    }
    picked.into_iter().map(|tag| (parent, tag)).collect()
}

#[test]
fn lanes_are_checked() {
    let bad = |eager, lanes| {
        CidSpace::<W>::with_eager_lanes(SpaceConfig { eager, ..CONFIG }, lanes).unwrap_err()
    };
    assert_eq!(bad(128, 0), SpaceError::BadLanes { max: MAX_EAGER_LANES });
    assert_eq!(bad(128, 3), SpaceError::BadLanes { max: MAX_EAGER_LANES });
    assert_eq!(bad(96, 2), SpaceError::BadLanes { max: MAX_EAGER_LANES });
    assert_eq!(bad(33, 1), SpaceError::BadEager);
    assert!(CidSpace::<W>::with_eager_lanes(CONFIG, 4).is_ok());
}

#[test]
fn agreements_on_different_lanes_each_take_one_round() {
    let spaces = laned(3, 4);
    spaces[1].claim(0).unwrap();
    let priorities = tags(&spaces[0], 7, 4, true);
    let results = agree_at_once(&spaces, &priorities);
    let mut cids: Vec<Cid> = results.iter().map(|r| r.0).collect();
    for ((cid, rounds), (parent, tag)) in results.iter().zip(&priorities) {
        assert_eq!(*rounds, 1, "agreement {tag} took {rounds} rounds");
        let (_, lane) = spaces[0].eager_lane(u64::from(*parent) << 32 | u64::from(*tag));
        assert!(lane.contains(cid), "cid {cid} is outside its lane {lane:?}");
    }
    cids.sort_unstable();
    cids.dedup();
    assert_eq!(cids.len(), 4, "one CID was given twice");
    for space in &spaces {
        assert!(results.iter().all(|(cid, _)| !space.is_free(*cid)));
    }
}

#[test]
fn one_eager_segment_makes_concurrent_agreements_retry() {
    // The same four agreements with the segment as one lane: only one holds it.
    let spaces = laned(3, 1);
    let priorities = tags(&spaces[0], 7, 4, false);
    let rounds: u32 = agree_at_once(&spaces, &priorities).iter().map(|r| r.1).sum();
    assert!(rounds > 4, "{rounds} rounds for four agreements");
}

#[test]
fn agreements_sharing_a_lane_still_agree_apart() {
    let spaces = laned(2, 4);
    let priorities = tags(&spaces[0], 9, 3, false);
    let results = agree_at_once(&spaces, &priorities);
    let mut cids: Vec<Cid> = results.iter().map(|r| r.0).collect();
    assert_eq!(results[0].1, 1, "the first on the lane holds it");
    assert!(results[1..].iter().all(|r| r.1 > 1), "the others fall back: {results:?}");
    cids.sort_unstable();
    cids.dedup();
    assert_eq!(cids.len(), 3, "one CID was given twice");
}

#[test]
fn a_full_lane_falls_back_to_the_base_mask() {
    let spaces = laned(2, 4);
    let (parent, tag) = (5, 1);
    let (_, lane) = spaces[0].eager_lane(u64::from(parent) << 32 | u64::from(tag));
    for cid in lane.clone() {
        spaces[(cid % 2) as usize].claim(cid).unwrap();
    }
    let (cid, rounds) = agree_at_once(&spaces, &[(parent, tag)])[0];
    assert!(cid >= CONFIG.eager && rounds == 2, "cid {cid} after {rounds} rounds");
}
