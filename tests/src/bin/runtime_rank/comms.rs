//! Communicator-creation scenarios: dup, split, create, random splits and concurrent
//! creations from threads.

use commcore_linux::runtime::{Comm, CommError, UNDEFINED};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Checks a new communicator against the world ranks it should hold, in order: its size and
/// rank, that every member agreed on its context id, and that its point-to-point traffic
/// reaches the right processes (a ring of world ranks).
pub(crate) fn check_members(comm: &Comm, expected: &[usize], world_rank: usize) {
    assert_eq!(comm.size(), expected.len());
    assert_eq!(expected[comm.rank()], world_rank);
    let (next, prev) =
        ((comm.rank() + 1) % comm.size(), (comm.rank() + comm.size() - 1) % comm.size());
    let mut mine = [0u8; 8];
    mine[..4].copy_from_slice(&comm.context_id().to_le_bytes());
    mine[4..].copy_from_slice(&(world_rank as u32).to_le_bytes());
    let mut got = [0u8; 8];
    comm.sendrecv(&mine, next, 5, &mut got, prev, 5).unwrap();
    assert_eq!(got[..4], mine[..4], "members disagree on the context id");
    assert_eq!(u32::from_le_bytes(got[4..].try_into().unwrap()) as usize, expected[prev]);
    for (rank, &world) in expected.iter().enumerate() {
        assert_eq!(comm.world_rank(rank), Some(world));
    }
}

pub(crate) fn communicators(world: &Comm) {
    let (me, size) = (world.rank(), world.size());
    let all: Vec<usize> = (0..size).collect();
    let dup = world.dup().unwrap();
    assert_ne!(dup.context_id(), world.context_id());
    check_members(&dup, &all, me);
    // A message on the duplicate never matches a receive on the original.
    if size > 1 {
        let peer = (me + 1) % size;
        let from = (me + size - 1) % size;
        world.send(b"world", peer, 1).unwrap();
        dup.send(b"dup!!", peer, 1).unwrap();
        let mut buf = [0u8; 5];
        dup.recv(&mut buf, from, 1).unwrap();
        assert_eq!(&buf, b"dup!!");
        world.recv(&mut buf, from, 1).unwrap();
        assert_eq!(&buf, b"world");
    }
    // Reverse order by key; odd and even ranks apart.
    let reversed = world.split(0, -(me as i32)).unwrap().unwrap();
    check_members(&reversed, &all.iter().rev().copied().collect::<Vec<_>>(), me);
    let parity = world.split((me % 2) as i32, 0).unwrap().unwrap();
    check_members(
        &parity,
        &all.iter().copied().filter(|r| r % 2 == me % 2).collect::<Vec<_>>(),
        me,
    );
    // Rank 0 stays out.
    let rest = world.split(if me == 0 { UNDEFINED } else { 1 }, 0).unwrap();
    assert_eq!(rest.is_none(), me == 0);
    if let Some(rest) = &rest {
        check_members(rest, &all[1..], me);
    }
    // A group in a chosen order; a communicator of a communicator.
    let group: Vec<usize> = all.iter().rev().copied().step_by(2).collect();
    let created = parity.create(&(0..parity.size()).rev().collect::<Vec<_>>()).unwrap().unwrap();
    let parity_members: Vec<usize> =
        all.iter().copied().filter(|r| r % 2 == me % 2).rev().collect();
    check_members(&created, &parity_members, me);
    let picked = world.create(&group).unwrap();
    assert_eq!(picked.is_some(), group.contains(&me));
    if let Some(picked) = &picked {
        check_members(picked, &group, me);
    }
    // Bad input.
    assert_eq!(world.split(-5, 0).unwrap_err(), CommError::InvalidColor(-5));
    assert!(matches!(world.create(&[0, 0]), Err(CommError::BadGroup { rank: 0 })));
    assert!(matches!(world.create(&[size]), Err(CommError::BadGroup { .. })));
    for comm in [dup, reversed, parity, created] {
        comm.free();
    }
    world.barrier().unwrap();
}

/// 1,000 random splits of random live communicators with random frees, all members checking
/// that they agree. Every rank draws the same choices from the same seed, one color and key
/// per world rank, so each knows what every split must produce.
pub(crate) fn splits(world: &Comm) {
    let (me, size) = (world.rank(), world.size());
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    // Index i holds this rank's communicator from the i-th kept split (None when it gave
    // UNDEFINED), with its members as world ranks: the same indices on every rank.
    let mut live: Vec<(Option<Comm>, Vec<usize>)> =
        vec![(Some(world.clone()), (0..size).collect())];
    let (mut calls, mut checked) = (0, 0);
    for _ in 0..1000 {
        let parent = rng.gen_range(0..live.len());
        let colors: Vec<i32> = (0..size).map(|_| rng.gen_range(-1..3)).collect();
        let keys: Vec<i32> = (0..size).map(|_| rng.gen_range(0..4)).collect();
        let free = (live.len() > 1 && rng.gen_bool(0.3)).then(|| rng.gen_range(1..live.len()));
        let child = match &live[parent] {
            (Some(comm), members) => {
                let child = comm.split(colors[me], keys[me]).unwrap();
                calls += 1;
                assert_eq!(child.is_some(), colors[me] != UNDEFINED);
                let mut expected: Vec<(i32, usize, usize)> = members
                    .iter()
                    .enumerate()
                    .filter(|&(_, &w)| colors[w] == colors[me])
                    .map(|(rank, &w)| (keys[w], rank, w))
                    .collect();
                expected.sort();
                let expected: Vec<usize> = expected.into_iter().map(|(_, _, w)| w).collect();
                if let Some(child) = &child {
                    check_members(child, &expected, me);
                    checked += 1;
                }
                (child, expected)
            }
            (None, _) => (None, Vec::new()),
        };
        if live.len() < 16 {
            live.push(child);
        }
        if let Some(index) = free {
            if index < live.len() {
                live.swap_remove(index);
            }
        }
    }
    world.barrier().unwrap();
    println!("rank {me}: {calls} splits, {checked} communicators checked");
}

/// The CID papers' deadlock scenario for real: two communicators over the same processes,
/// and in each process two threads creating communicators from them at once, started in
/// opposite orders on even and odd ranks. Every creation must complete, every member agree.
pub(crate) fn threads(world: &Comm) {
    const ROUNDS: usize = 30;
    let parents = [world.dup().unwrap(), world.dup().unwrap()];
    let me = world.rank();
    let all: Vec<usize> = (0..world.size()).collect();
    std::thread::scope(|scope| {
        for (index, parent) in parents.iter().enumerate() {
            let all = &all;
            scope.spawn(move || {
                if index != me % 2 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                for _ in 0..ROUNDS {
                    let child = parent.dup().unwrap();
                    check_members(&child, all, me);
                    child.free();
                }
            });
        }
    });
    world.barrier().unwrap();
    println!("threads: {} creations per thread completed", ROUNDS);
}
