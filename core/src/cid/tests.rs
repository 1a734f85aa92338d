//! Requests driven in lock step over a few processes (one request each).

use std::vec::Vec;

use super::*;

const W: usize = words_for(256);

fn spaces(n: usize, config: SpaceConfig) -> Vec<CidSpace<W>> {
    (0..n).map(|_| CidSpace::new(config).unwrap()).collect()
}

/// Drives one request per process to the end; every member must agree.
fn agree(spaces: &[CidSpace<W>], algorithm: Algorithm) -> Result<(Cid, u32), CidError> {
    let mut requests: Vec<CidRequest<W>> =
        spaces.iter().map(|_| CidRequest::new(algorithm, 0, 0)).collect();
    loop {
        let mut reduced: Option<(ReduceOp, Vec<u32>)> = None;
        let mut done = Vec::new();
        for (request, space) in requests.iter_mut().zip(spaces) {
            match request.poll(space)? {
                Step::Done(cid) => done.push(cid),
                Step::Wait => panic!("a lone request never waits"),
                Step::Allreduce { op, words } => match &mut reduced {
                    None => reduced = Some((op, words.to_vec())),
                    Some((o, acc)) => {
                        assert_eq!(*o, op);
                        assert_eq!(acc.len(), words.len());
                        op.fold(acc, words);
                    }
                },
            }
        }
        if done.len() == spaces.len() {
            assert!(done.iter().all(|c| *c == done[0]), "members disagree: {done:?}");
            for space in spaces {
                assert!(!space.is_free(done[0]) && space.is_quiescent());
            }
            return Ok((done[0], requests[0].allreduces()));
        }
        assert!(done.is_empty(), "members finished at different rounds");
        let (_, words) = reduced.unwrap();
        let results: Vec<_> = requests
            .iter_mut()
            .zip(spaces)
            .map(|(request, space)| request.handle_allreduce(space, &words))
            .collect();
        if let Some(error) = results.iter().find_map(|r| r.err()) {
            assert!(results.iter().all(|r| *r == Err(error)), "members failed apart: {results:?}");
            return Err(error);
        }
    }
}

const ALL: [Algorithm; 4] =
    [Algorithm::Lowest, Algorithm::Mask, Algorithm::Highest, Algorithm::MaskWithoutSync];

#[test]
fn every_algorithm_avoids_cids_used_anywhere() {
    for algorithm in ALL {
        for threaded in [false, true] {
            let config = SpaceConfig { width: 256, eager: 32, threaded };
            let spaces = spaces(3, config);
            spaces[0].claim(0).unwrap();
            spaces[1].claim(1).unwrap();
            spaces[2].claim(2).unwrap();
            let (cid, _) = agree(&spaces, algorithm).unwrap();
            assert!(cid > 2, "{algorithm:?} picked {cid}");
        }
    }
}

#[test]
fn round_counts_match_each_algorithm() {
    let single = SpaceConfig { width: 256, eager: 32, threaded: false };
    let threaded = SpaceConfig { threaded: true, ..single };
    assert_eq!(agree(&spaces(4, single), Algorithm::Highest).unwrap().1, 1);
    assert_eq!(agree(&spaces(4, threaded), Algorithm::Highest).unwrap().1, 2);
    assert_eq!(agree(&spaces(4, single), Algorithm::Lowest).unwrap().1, 2);
    assert_eq!(agree(&spaces(4, single), Algorithm::Mask).unwrap().1, 1);
    assert_eq!(agree(&spaces(4, single), Algorithm::MaskWithoutSync).unwrap().1, 1);
}

#[test]
fn lowest_retries_above_a_failed_candidate_and_reuses_freed_cids() {
    let spaces = spaces(2, SpaceConfig { width: 256, eager: 0, threaded: false });
    // Process 0 has 0 and 2 taken, process 1 has 1: candidate 1 fails at process 1, then
    // 2 at process 0, then 3 holds.
    for (p, cid) in [(0, 0), (0, 2), (1, 1)] {
        spaces[p].claim(cid).unwrap();
    }
    assert_eq!(agree(&spaces, Algorithm::Lowest).unwrap(), (3, 4));
    spaces[0].release(2).unwrap();
    assert_eq!(agree(&spaces, Algorithm::Lowest).unwrap(), (2, 4));
}

#[test]
fn exhaustion_is_an_error_for_every_algorithm() {
    for algorithm in ALL {
        let spaces = spaces(2, SpaceConfig { width: 64, eager: 32, threaded: true });
        for cid in 0..64 {
            spaces[(cid % 2) as usize].claim(cid).unwrap();
        }
        assert_eq!(agree(&spaces, algorithm).unwrap_err(), CidError::Exhausted, "{algorithm:?}");
        for space in &spaces {
            assert!(space.is_quiescent(), "{algorithm:?} left holds behind");
        }
    }
}

#[test]
fn highest_falls_back_to_a_free_cid_below_the_width() {
    let spaces = spaces(2, SpaceConfig { width: 64, eager: 0, threaded: false });
    spaces[0].claim(63).unwrap();
    spaces[1].claim(0).unwrap();
    assert_eq!(agree(&spaces, Algorithm::Highest).unwrap(), (1, 2));
    assert_eq!(agree(&spaces, Algorithm::Highest).unwrap(), (2, 2));
}

#[test]
fn host_mistakes_are_errors() {
    let space = CidSpace::<W>::new(SpaceConfig::MPICH).unwrap_err();
    assert_eq!(space, SpaceError::BadWidth { max: 256 });
    let space = CidSpace::<W>::new(SpaceConfig { width: 256, eager: 32, threaded: true }).unwrap();
    let mut request = CidRequest::new(Algorithm::Highest, 0, 0);
    assert_eq!(request.handle_allreduce(&space, &[1]), Err(CidError::NotPosted));
    let Step::Allreduce { words, .. } = request.poll(&space).unwrap() else { panic!() };
    assert_eq!(words, [0]);
    assert_eq!(
        request.handle_allreduce(&space, &[1, 2]),
        Err(CidError::WrongLength { expected: 1 })
    );
    request.poll(&space).unwrap();
    request.handle_allreduce(&space, &[5]).unwrap();
    let Step::Allreduce { words, .. } = request.poll(&space).unwrap() else { panic!() };
    // The window starts at the agreed CID; its other CIDs lie on the request's lane, some
    // of them beyond this small width.
    let offered = words[0];
    assert_eq!(offered & 1, 1, "{offered:b}");
    assert!(space.live() as usize == offered.count_ones() as usize && !space.is_free(5));
    assert_eq!(
        request.handle_allreduce(&space, &[offered | 1 << 31]),
        Err(CidError::InconsistentResult)
    );

    let mut request = CidRequest::new(Algorithm::Highest, 0, 0);
    request.poll(&space).unwrap();
    request.handle_allreduce(&space, &[5]).unwrap();
    let Step::Allreduce { words, .. } = request.poll(&space).unwrap() else { panic!() };
    let offered = words[0];
    assert_eq!(request.handle_allreduce(&space, &[offered]), Ok(()));
    assert_eq!(request.poll(&space).unwrap(), Step::Done(5));
    assert!(space.is_free(0) && !space.is_free(5) && space.live() == 1, "the window is released");
    assert_eq!(request.handle_allreduce(&space, &[0]), Err(CidError::Finished));

    // A MAX below this member's own proposal cannot be a reduction of it.
    space.claim(0).unwrap();
    let mut request = CidRequest::new(Algorithm::Lowest, 0, 0);
    assert_eq!(request.poll(&space).unwrap(), Step::Allreduce { op: ReduceOp::Max, words: &[1] });
    assert_eq!(request.handle_allreduce(&space, &[0]), Err(CidError::InconsistentResult));
    assert_eq!(request.poll(&space), Err(CidError::Finished));
    assert!(space.is_free(1) && space.is_quiescent());

    // Two requests with one ⟨parent, tag⟩ in one process break MPI's rules.
    let mut a = CidRequest::new(Algorithm::MaskWithoutSync, 3, 9);
    let mut b = CidRequest::new(Algorithm::MaskWithoutSync, 3, 9);
    a.poll(&space).unwrap();
    assert_eq!(b.poll(&space), Err(CidError::DuplicatePriority));
    a.abort(&space);
    assert!(space.is_quiescent());
}

#[test]
fn inter_communicator_pairs_meet_in_the_middle() {
    let config = SpaceConfig { width: 256, eager: 32, threaded: false };
    let (left, right) = (spaces(2, config), spaces(3, config));
    right.iter().for_each(|s| s.claim(0).unwrap());
    let mut sides: Vec<Vec<InterCidRequest<W>>> = [2, 3]
        .iter()
        .map(|n| (0..*n).map(|i| InterCidRequest::new(Algorithm::Highest, 0, 0, i == 0)).collect())
        .collect();
    let groups = [&left, &right];
    let mut leader_cids = [None, None];
    let mut pairs = Vec::new();
    for _ in 0..10 {
        for side in 0..2 {
            let mut acc: Option<Vec<u32>> = None;
            let mut posted = 0;
            for (i, request) in sides[side].iter_mut().enumerate() {
                match request.poll(&groups[side][i]).unwrap() {
                    InterStep::Allreduce { op, words } => {
                        posted += 1;
                        match &mut acc {
                            None => acc = Some(words.to_vec()),
                            Some(a) => op.fold(a, words),
                        }
                    }
                    InterStep::Wait => panic!("a lone request never waits"),
                    InterStep::Exchange { local } => leader_cids[side] = Some(local),
                    InterStep::Done(pair) => pairs.push((side, pair)),
                }
            }
            if let (true, Some(words)) = (posted == sides[side].len(), acc) {
                for (i, request) in sides[side].iter_mut().enumerate() {
                    request.handle_allreduce(&groups[side][i], &words).unwrap();
                }
            }
        }
        if let [Some(l), Some(r)] = leader_cids {
            sides[0][0].handle_exchange(r).unwrap();
            sides[1][0].handle_exchange(l).unwrap();
            leader_cids = [None, None];
        }
        if pairs.len() == 5 {
            break;
        }
    }
    assert_eq!(pairs.len(), 5);
    for (side, pair) in pairs {
        let expect = if side == 0 {
            InterCidPair { local: 0, remote: 1 }
        } else {
            InterCidPair { local: 1, remote: 0 }
        };
        assert_eq!(pair, expect);
    }
}
