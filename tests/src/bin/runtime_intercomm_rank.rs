//! A rank program for the inter-communicator and group-creation tests:
//! `runtime_intercomm_rank SCENARIO [SPLIT]`, started by the launcher. Every failed check
//! panics, so the rank exits non-zero and the launcher names it.

use commcore::coll::{CollArgs, CollOp, Datatype, Op, ReduceOp, Root};
use commcore_linux::runtime::{Comm, CommError, World, ANY_SOURCE, MAX_GROUP_TAG, UNDEFINED};

fn main() {
    let mut args = std::env::args().skip(1);
    let scenario = args.next().unwrap_or_default();
    let split: usize = args.next().map_or(0, |s| s.parse().expect("split point"));
    let world = if scenario == "create-group-threads" {
        World::init_thread_multiple()
    } else {
        World::init()
    };
    let world = world.expect("init");
    let comm = world.comm();
    match scenario.as_str() {
        "create-group" => create_group(comm),
        "create-group-threads" => create_group_threads(comm),
        "intercomm" => intercomm(comm, split),
        "bad-input" => bad_input(comm),
        other => panic!("unknown scenario {other:?}"),
    }
}

/// `comm` has the world ranks `members` in order, and this process is among them.
fn check_members(comm: &Comm, members: &[usize], world_rank: usize) {
    assert_eq!(comm.size(), members.len());
    assert_eq!(members[comm.rank()], world_rank, "rank in the new communicator");
    for (rank, &world) in members.iter().enumerate() {
        assert_eq!(comm.world_rank(rank), Some(world), "world rank of rank {rank}");
    }
    // The members can talk: a sum of world ranks and a ring message.
    let mut sum = [0u8; 8];
    comm.allreduce(&(world_rank as u64).to_le_bytes(), &mut sum, Datatype::U64, ReduceOp::Sum)
        .unwrap();
    let expected: usize = members.iter().sum();
    assert_eq!(u64::from_le_bytes(sum), expected as u64, "sum of members");
    let n = comm.size();
    let mut got = [0u8; 8];
    let status = comm
        .sendrecv(
            &(world_rank as u64).to_le_bytes(),
            (comm.rank() + 1) % n,
            3,
            &mut got,
            (comm.rank() + n - 1) % n,
            3,
        )
        .unwrap();
    assert_eq!(u64::from_le_bytes(got) as usize, members[status.source]);
}

/// Two disjoint groups create communicators at once with different tags; only members call.
fn create_group(world: &Comm) {
    let me = world.rank();
    let n = world.size();
    let low: Vec<usize> = (0..n / 2).collect();
    let high: Vec<usize> = (n / 2..n).rev().collect();
    let (group, tag) = if me < n / 2 { (&low, 1) } else { (&high, 2) };
    let comm = world.create_group(group, tag).unwrap();
    check_members(&comm, group, me);
    // A group of one, and a creation on the new communicator.
    let alone = world.create_group(&[me], 3 + me as u32).unwrap();
    check_members(&alone, &[me], me);
    let all: Vec<usize> = (0..comm.size()).collect();
    let child = comm.create_group(&all, MAX_GROUP_TAG).unwrap();
    check_members(&child, group, me);
    world.barrier().unwrap();
    println!("create-group: groups of {} and {}", low.len(), high.len());
}

/// Overlapping groups created at once from two threads of every rank, told apart by tag.
fn create_group_threads(world: &Comm) {
    const ROUNDS: u32 = 20;
    let me = world.rank();
    let n = world.size();
    let forward: Vec<usize> = (0..n).collect();
    let backward: Vec<usize> = (0..n).rev().collect();
    let evens: Vec<usize> = (0..n).step_by(2).collect();
    std::thread::scope(|scope| {
        for (index, group) in [&forward, &backward, &evens].into_iter().enumerate() {
            if !group.contains(&me) {
                continue;
            }
            scope.spawn(move || {
                for round in 0..ROUNDS {
                    let tag = 10 * round + index as u32;
                    let comm = world.create_group(group, tag).unwrap();
                    check_members(&comm, group, me);
                }
            });
        }
    });
    world.barrier().unwrap();
    println!("create-group-threads: {ROUNDS} rounds");
}

/// Rank `world`'s contribution of `len` bytes to call `call`.
fn contribution(call: u32, world: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(13).wrapping_add(call * 7 + world as u32 * 31) as u8)
        .collect()
}

/// An inter-communicator between world ranks `0..split` and `split..n`.
fn intercomm(world: &Comm, split: usize) {
    let (me, n) = (world.rank(), world.size());
    assert!(0 < split && split < n, "split point {split} for {n} ranks");
    let low = me < split;
    let local_group = world.split(i32::from(!low), me as i32).unwrap().unwrap();
    let remote_leader = if low { split } else { 0 };
    let inter = local_group.intercomm_create(0, world, remote_leader, 77).unwrap();
    let (local, remote): (Vec<usize>, Vec<usize>) = if low {
        ((0..split).collect(), (split..n).collect())
    } else {
        ((split..n).collect(), (0..split).collect())
    };
    assert!(inter.is_inter());
    assert_eq!(inter.size(), local.len());
    assert_eq!(inter.remote_size(), Some(remote.len()));
    assert_eq!(local[inter.rank()], me);
    for (rank, &w) in remote.iter().enumerate() {
        assert_eq!(inter.world_rank(rank), Some(w), "remote rank {rank}");
    }
    for (rank, &w) in local.iter().enumerate() {
        assert_eq!(inter.local_world_rank(rank), Some(w), "local rank {rank}");
    }
    // Point-to-point addresses the remote group: one message to each remote rank, received
    // from any source, each naming its sender's world rank.
    let sends: Vec<Vec<u8>> =
        (0..remote.len()).map(|_| (me as u64).to_le_bytes().to_vec()).collect();
    let requests: Vec<_> =
        sends.iter().enumerate().map(|(r, buf)| inter.isend(buf, r, 5).unwrap()).collect();
    let mut seen = vec![false; remote.len()];
    for _ in 0..remote.len() {
        let mut got = [0u8; 8];
        let status = inter.recv(&mut got, ANY_SOURCE, 5).unwrap();
        assert!(!seen[status.source], "two messages from remote rank {}", status.source);
        seen[status.source] = true;
        assert_eq!(u64::from_le_bytes(got) as usize, remote[status.source], "sender");
    }
    for request in requests {
        request.wait().unwrap();
    }
    // A long message between the two leaders (rendezvous or streaming).
    if inter.rank() == 0 {
        let mine = contribution(1, me, 70_000);
        let mut theirs = vec![0u8; 70_000];
        inter.sendrecv(&mine, 0, 6, &mut theirs, 0, 6).unwrap();
        assert_eq!(theirs, contribution(1, remote[0], 70_000), "long message");
    }
    inter.barrier().unwrap();
    // Bcast from each group in turn, from its last rank.
    for (call, from_low) in [(2u32, true), (3, false)] {
        let root_group: Vec<usize> =
            if from_low { (0..split).collect() } else { (split..n).collect() };
        let root_world = *root_group.last().unwrap();
        let len = 1000;
        let mut buf = vec![0u8; len];
        let root = if low == from_low {
            if me == root_world {
                buf = contribution(call, me, len);
                Root::Here
            } else {
                Root::Elsewhere
            }
        } else {
            Root::Rank(root_group.len() as u32 - 1)
        };
        inter.bcast_root(&mut buf, root).unwrap();
        if low != from_low {
            assert_eq!(buf, contribution(call, root_world, len), "bcast from {root_world}");
        }
    }
    // Allreduce: each group gets the sum of the other's contributions.
    for words in [1usize, 1000] {
        let mine: Vec<u8> =
            (0..words).flat_map(|i| ((me * 1000 + i) as u64).to_le_bytes()).collect();
        let mut sum = vec![0u8; mine.len()];
        inter.allreduce(&mine, &mut sum, Datatype::U64, ReduceOp::Sum).unwrap();
        for (i, chunk) in sum.chunks_exact(8).enumerate() {
            let expected: u64 = remote.iter().map(|&r| (r * 1000 + i) as u64).sum();
            assert_eq!(u64::from_le_bytes(chunk.try_into().unwrap()), expected, "allreduce");
        }
    }
    // Allgather: each group gets the other's blocks in remote rank order.
    let len = 24;
    let mut all = vec![0u8; len * remote.len()];
    inter.allgather(&contribution(4, me, len), &mut all).unwrap();
    for (j, block) in all.chunks_exact(len).enumerate() {
        assert_eq!(block, &contribution(4, remote[j], len)[..], "allgather block {j}");
    }
    // Alltoall: block j to remote rank j, block i from remote rank i.
    let len = 16;
    let send: Vec<u8> =
        (0..remote.len()).flat_map(|j| contribution(5 + j as u32, me, len)).collect();
    let mut got = vec![0u8; send.len()];
    inter.alltoall(&send, &mut got).unwrap();
    for (i, block) in got.chunks_exact(len).enumerate() {
        let expected = contribution(5 + inter.rank() as u32, remote[i], len);
        assert_eq!(block, &expected[..], "alltoall block {i}");
    }
    // Reduce to the high group's rank 0: it gets the sum of the low group's words.
    let mine = ((me + 1) as u64).to_le_bytes();
    let mut out = [0u8; 8];
    let root = match (low, inter.rank()) {
        (true, _) => Root::Rank(0),
        (false, 0) => Root::Here,
        (false, _) => Root::Elsewhere,
    };
    let args = CollArgs::new(1, Datatype::U64).with_op(Op::Builtin(ReduceOp::Sum)).with_root(root);
    inter.collective(CollOp::Reduce, &args, &mine, &mut out).unwrap();
    if root == Root::Here {
        assert_eq!(
            u64::from_le_bytes(out),
            (1..=split as u64).sum::<u64>(),
            "reduce to the high root"
        );
    }
    // A group of more than one process on this job's shared memory ran its part of
    // these collectives over its node communicator (world rank 0 reports its group's).
    if me == 0 {
        println!("group of {}: on node {}", local.len(), inter.inter_collectives_on_node());
    }
    // Merges: the group passing `high = false` first; ties put the group of world rank 0
    // first.
    for (high_low, high_high) in [(false, true), (true, false), (false, false), (true, true)] {
        let high = if low { high_low } else { high_high };
        let merged = inter.intercomm_merge(high).unwrap();
        // The high side goes first only when it alone passes `false`.
        let low_first = !high_low || high_high;
        let order: Vec<usize> =
            if low_first { (0..n).collect() } else { (split..n).chain(0..split).collect() };
        check_members(&merged, &order, me);
        let mut ids = vec![0u8; 4 * n];
        merged.allgather(&merged.context_id().to_le_bytes(), &mut ids).unwrap();
        assert!(ids.chunks_exact(4).all(|id| id == &ids[..4]), "one context id for all");
    }
    dup_intercomm(&inter, &remote, me);
    split_intercomm(&inter, &local, &remote, me, n);
    // An intra-communicator operation on an inter-communicator is an error, and the reverse.
    assert_eq!(inter.create_group(&[0], 1).unwrap_err(), CommError::NotIntra);
    assert_eq!(world.intercomm_merge(false).unwrap_err(), CommError::NotInter);
    world.barrier().unwrap();
    println!("intercomm: {} and {} ranks", split, n - split);
}

/// A dup of `inter` (remote group: world ranks `remote`) has the same groups and ranks and
/// a context of its own, on both sides; so does a dup of the dup.
fn dup_intercomm(inter: &Comm, remote: &[usize], me: usize) {
    let copy = inter.dup().unwrap();
    let copy_of_copy = copy.dup().unwrap();
    for dup in [&copy, &copy_of_copy] {
        assert!(dup.is_inter());
        assert_eq!((dup.rank(), dup.size()), (inter.rank(), inter.size()));
        assert_eq!(dup.remote_size(), inter.remote_size());
        assert_eq!(dup.local_world_rank(dup.rank()), Some(me));
        for (rank, &w) in remote.iter().enumerate() {
            assert_eq!(dup.world_rank(rank), Some(w), "remote rank {rank} of the dup");
        }
    }
    let ids = [inter.context_id(), copy.context_id(), copy_of_copy.context_id()];
    assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2], "context ids {ids:?}");
    // The leaders send the same tag on all three, in order; each is received on its own
    // communicator, in the reverse order.
    if inter.rank() == 0 {
        let comms = [inter, &copy, &copy_of_copy];
        let payloads: Vec<[u8; 1]> = (0..3u8).map(|i| [i]).collect();
        let sends: Vec<_> =
            comms.iter().zip(&payloads).map(|(c, p)| c.isend(p, 0, 9).unwrap()).collect();
        for (i, comm) in comms.iter().enumerate().rev() {
            let mut got = [0u8];
            comm.recv(&mut got, 0, 9).unwrap();
            assert_eq!(got[0], i as u8, "message of communicator {i}");
        }
        for send in sends {
            send.wait().unwrap();
        }
    }
    // A collective on the copy: each group gets the sum of the other's world ranks.
    let mut sum = [0u8; 8];
    copy.allreduce(&(me as u64).to_le_bytes(), &mut sum, Datatype::U64, ReduceOp::Sum).unwrap();
    assert_eq!(u64::from_le_bytes(sum), remote.iter().sum::<usize>() as u64, "sum on the dup");
}

/// Splits of `inter` (groups: world ranks `local` and `remote`), the job's last rank left
/// out and keys reversing the order: by parity of the world rank (a color without
/// processes in the other group gives `None`), and with one color; then a create of the
/// two leaders.
fn split_intercomm(inter: &Comm, local: &[usize], remote: &[usize], me: usize, n: usize) {
    for colors in [2, 1] {
        let color_of = |w: usize| if w == n - 1 { UNDEFINED } else { (w % colors) as i32 };
        // Same color, highest world rank first.
        let same = |group: &[usize]| -> Vec<usize> {
            let mut picked: Vec<usize> = group
                .iter()
                .copied()
                .filter(|&w| w != n - 1 && color_of(w) == color_of(me))
                .collect();
            picked.reverse();
            picked
        };
        let split = inter.split(color_of(me), -(me as i32)).unwrap();
        let (new_local, new_remote) = (same(local), same(remote));
        match split {
            None => assert!(
                me == n - 1 || new_remote.is_empty(),
                "rank {me}: no communicator, yet {new_remote:?} share its color"
            ),
            Some(part) => {
                assert!(me != n - 1 && !new_remote.is_empty(), "rank {me} got a communicator");
                assert!(part.is_inter());
                assert_eq!(part.size(), new_local.len());
                assert_eq!(part.remote_size(), Some(new_remote.len()));
                assert_eq!(new_local[part.rank()], me, "rank in the split");
                for (rank, &w) in new_remote.iter().enumerate() {
                    assert_eq!(part.world_rank(rank), Some(w), "remote rank {rank} of the split");
                }
                for (rank, &w) in new_local.iter().enumerate() {
                    assert_eq!(part.local_world_rank(rank), Some(w), "local rank {rank}");
                }
                let mut sum = [0u8; 8];
                let mine = (me as u64).to_le_bytes();
                part.allreduce(&mine, &mut sum, Datatype::U64, ReduceOp::Sum).unwrap();
                let expected = new_remote.iter().sum::<usize>() as u64;
                assert_eq!(u64::from_le_bytes(sum), expected, "sum over the other group");
            }
        }
    }
    // The two leaders alone: one message each way.
    let leaders = inter.create(&[0]).unwrap();
    assert_eq!(leaders.is_some(), inter.rank() == 0);
    if let Some(pair) = leaders {
        assert_eq!((pair.size(), pair.remote_size()), (1, Some(1)));
        let mut got = [0u8; 8];
        pair.sendrecv(&(me as u64).to_le_bytes(), 0, 4, &mut got, 0, 4).unwrap();
        assert_eq!(u64::from_le_bytes(got) as usize, remote[0], "the other leader");
    }
    assert_eq!(inter.create(&[0, 0]).unwrap_err(), CommError::BadGroup { rank: 0 });
    assert_eq!(inter.split(-5, 0).unwrap_err(), CommError::InvalidColor(-5));
}

fn bad_input(world: &Comm) {
    let (me, n) = (world.rank(), world.size());
    let low = me < n / 2;
    let local = world.split(i32::from(!low), 0).unwrap().unwrap();
    let remote_leader = if low { n / 2 } else { 0 };
    // A local leader outside the local communicator: every rank sees it.
    let error = local.intercomm_create(local.size(), world, remote_leader, 9).unwrap_err();
    assert_eq!(error, CommError::BadLeader { rank: local.size() });
    // A remote leader outside the peer communicator, or the leader itself: the leaders say
    // so and the others learn that their leader failed.
    let own_leader = if low { 0 } else { n / 2 };
    for bad in [n, own_leader] {
        let error = local.intercomm_create(0, world, bad, 9).unwrap_err();
        if local.rank() == 0 {
            assert_eq!(error, CommError::BadLeader { rank: bad });
        } else {
            assert_eq!(error, CommError::LeaderFailed);
        }
    }
    // create_group: a caller outside its group, a repeated rank, a tag too large.
    let others: Vec<usize> = (0..n).filter(|&r| r != me).collect();
    assert_eq!(world.create_group(&others, 1).unwrap_err(), CommError::NotInGroup);
    assert_eq!(world.create_group(&[me, me], 1).unwrap_err(), CommError::BadGroup { rank: me });
    assert_eq!(world.create_group(&[me, n], 1).unwrap_err(), CommError::BadGroup { rank: n });
    assert_eq!(
        world.create_group(&[me], MAX_GROUP_TAG + 1).unwrap_err(),
        CommError::InvalidGroupTag(MAX_GROUP_TAG + 1)
    );
    // After the errors, a good one works.
    let inter = local.intercomm_create(0, world, remote_leader, 9).unwrap();
    inter.barrier().unwrap();
    // A group whose ranks disagree on `high`: both groups fail the merge, then a good one
    // still works.
    let high = low && local.rank() == 0;
    assert_eq!(inter.intercomm_merge(high).unwrap_err(), CommError::InconsistentHigh);
    let merged = inter.intercomm_merge(!low).unwrap();
    assert_eq!(merged.rank(), me, "the low group first");
    world.barrier().unwrap();
    println!("bad-input: errors returned");
}
