//! Collective scenarios: every collective against hand-composed results, area reuse, a
//! non-commutative operation and queued sends across collectives.

use commcore_linux::runtime::{CollectiveError, Comm, World};

/// Rank `rank`'s contribution of `len` bytes to collective call `call`.
pub(crate) fn contribution(call: u32, rank: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(7).wrapping_add(call * 13 + rank as u32 * 101) as u8)
        .collect()
}

/// Allgatherv and alltoallv with uneven blocks whose counts are built for this call (they
/// need live only as long as the call); returns how many collectives it checked.
pub(crate) fn vector_collectives(comm: &Comm, call: u32) -> usize {
    use commcore::coll::{Blocks, CollArgs, CollOp, Datatype};
    let (me, n) = (comm.rank(), comm.size());
    let displs = |counts: &[usize]| -> Vec<usize> {
        counts.iter().scan(0, |at, c| Some(std::mem::replace(at, *at + c))).collect()
    };
    // Allgatherv: rank r contributes r * 1000 + 1 bytes (long blocks take the message path).
    let counts: Vec<usize> = (0..n).map(|r| r * 1000 + 1).collect();
    let at = displs(&counts);
    let mine = contribution(call, me, counts[me]);
    let mut all = vec![0u8; counts.iter().sum()];
    let args =
        CollArgs::new(counts[me], Datatype::U8).with_recv(Blocks { counts: &counts, displs: &at });
    comm.collective(CollOp::Allgatherv, &args, &mine, &mut all).unwrap();
    for r in 0..n {
        assert_eq!(
            all[at[r]..at[r] + counts[r]],
            contribution(call, r, counts[r]),
            "allgatherv {r}"
        );
    }
    // Alltoallv: rank i sends rank j (i + j) % 3 * 500 + 1 bytes, so what one sends the
    // other expects.
    let pair = |i: usize, j: usize| (i + j) % 3 * 500 + 1;
    let send_counts: Vec<usize> = (0..n).map(|j| pair(me, j)).collect();
    let recv_counts: Vec<usize> = (0..n).map(|i| pair(i, me)).collect();
    let (send_at, recv_at) = (displs(&send_counts), displs(&recv_counts));
    let send: Vec<u8> =
        (0..n).flat_map(|j| contribution(call + 1, me * n + j, send_counts[j])).collect();
    let mut got = vec![0u8; recv_counts.iter().sum()];
    let args = CollArgs::new(0, Datatype::U8)
        .with_send(Blocks { counts: &send_counts, displs: &send_at })
        .with_recv(Blocks { counts: &recv_counts, displs: &recv_at });
    comm.collective(CollOp::Alltoallv, &args, &send, &mut got).unwrap();
    for i in 0..n {
        let block = &got[recv_at[i]..recv_at[i] + recv_counts[i]];
        assert_eq!(block, contribution(call + 1, i * n + me, recv_counts[i]), "alltoallv from {i}");
    }
    2
}

/// Every collective the runtime offers, at several sizes and roots, against results
/// composed by hand from every rank's contribution; printed as a count by rank 0.
pub(crate) fn collectives(world: &World) {
    use commcore::coll::{CollOp, Datatype, ReduceOp};
    let comm = world.comm();
    let (me, n) = (comm.rank(), comm.size());
    let mut call = 0u32;
    let mut checked = 0;
    // 300,000 B: more pieces than an area member has cells, so a pipelining root waits for
    // its readers to free cells within one call, or among ranks sharing CPUs more
    // buffer-fulls than a member has staging buffers, so that it waits for them to be read.
    for len in [8usize, 1000, 70_000, 300_000] {
        call += 1;
        comm.barrier().unwrap();
        for root in [0, n - 1, n / 2] {
            call += 1;
            let mut buf = if me == root { contribution(call, root, len) } else { vec![0u8; len] };
            comm.bcast(&mut buf, root).unwrap();
            assert_eq!(buf, contribution(call, root, len), "bcast {len} B from {root}");
            checked += 1;
        }
        // Sums of u64 words, and maxima of i32 words.
        call += 1;
        let words = len / 8;
        let mine: Vec<u8> =
            (0..words).flat_map(|i| ((me * 1000 + i) as u64).to_le_bytes()).collect();
        let mut sum = vec![0u8; mine.len()];
        comm.allreduce(&mine, &mut sum, Datatype::U64, ReduceOp::Sum).unwrap();
        for (i, chunk) in sum.chunks_exact(8).enumerate() {
            let expected: u64 = (0..n).map(|r| (r * 1000 + i) as u64).sum();
            assert_eq!(u64::from_le_bytes(chunk.try_into().unwrap()), expected, "allreduce sum");
        }
        let ints: Vec<u8> = (0..len / 4)
            .flat_map(|i| ((i as i32 * 7 + me as i32 * 3) % 11 - 5).to_le_bytes())
            .collect();
        let mut max = vec![0u8; ints.len()];
        comm.allreduce(&ints, &mut max, Datatype::I32, ReduceOp::Max).unwrap();
        for (i, chunk) in max.chunks_exact(4).enumerate() {
            let expected = (0..n).map(|r| (i as i32 * 7 + r as i32 * 3) % 11 - 5).max().unwrap();
            assert_eq!(i32::from_le_bytes(chunk.try_into().unwrap()), expected, "allreduce max");
        }
        checked += 2;
        for root in [0, n - 1] {
            let mut out = vec![0u8; mine.len()];
            comm.reduce(&mine, &mut out, Datatype::U64, ReduceOp::Sum, root).unwrap();
            if me == root {
                assert_eq!(out, sum, "reduce to {root}");
            }
            checked += 1;
        }
        // Blocks per rank.
        call += 1;
        let block = len.min(4096);
        let mine = contribution(call, me, block);
        let everyone: Vec<u8> = (0..n).flat_map(|r| contribution(call, r, block)).collect();
        let mut all = vec![0u8; block * n];
        comm.allgather(&mine, &mut all).unwrap();
        assert_eq!(all, everyone, "allgather");
        if len > 100_000 {
            // Among ranks sharing CPUs, blocks of several staging buffer-fulls each.
            let long = len / 2;
            let mine = contribution(call, me, long);
            let mut all = vec![0u8; long * n];
            comm.allgather(&mine, &mut all).unwrap();
            for (r, got) in all.chunks_exact(long).enumerate() {
                assert!(got == contribution(call, r, long), "allgather of {long} B from {r}");
            }
            checked += 1;
        }
        for root in [0, n - 1] {
            let mut gathered = vec![0u8; if me == root { block * n } else { 0 }];
            comm.gather(&mine, &mut gathered, root).unwrap();
            if me == root {
                assert_eq!(gathered, everyone, "gather to {root}");
            }
            let mut part = vec![0u8; block];
            let source = if me == root { everyone.clone() } else { Vec::new() };
            comm.scatter(&source, &mut part, root).unwrap();
            assert_eq!(part, contribution(call, me, block), "scatter from {root}");
            checked += 2;
        }
        call += 1;
        // Half the length: blocks of 35,000 bytes take the single-copy path.
        let block = len / 2;
        let send: Vec<u8> = (0..n).flat_map(|to| contribution(call, me * n + to, block)).collect();
        let mut got = vec![0u8; block * n];
        comm.alltoall(&send, &mut got).unwrap();
        let expected: Vec<u8> =
            (0..n).flat_map(|from| contribution(call, from * n + me, block)).collect();
        assert_eq!(got, expected, "alltoall");
        checked += 3;
    }
    checked += vector_collectives(comm, call);
    // Bad input is an error, and the communicator still works afterwards.
    let mut small = [0u8; 4];
    assert!(comm.bcast(&mut small, n).is_err());
    assert!(comm.allreduce(&[0u8; 8], &mut [0u8; 4], Datatype::U64, ReduceOp::Sum).is_err());
    assert!(comm.alltoall(&[0u8; 3], &mut [0u8; 3]).is_err() || n == 1 || n == 3);
    comm.barrier().unwrap();
    if me == 0 {
        let provider = comm.collective_provider(CollOp::Allreduce).unwrap_or("none");
        println!(
            "collectives: {checked} checked on {n} ranks over {} nodes; allreduce by {provider}",
            world.nodes()
        );
    }
}

/// Creates and frees communicators many times more than any rank owns collective areas,
/// some held at once, each checked with collectives whose results depend on every member
/// and on the call: an area handed to a new communicator before all members of its last
/// one left, or not reset, gives wrong sums or hangs. Prints which component served.
pub(crate) fn area_reuse(world: &Comm) {
    use commcore::coll::{CollOp, Datatype, ReduceOp};
    let (me, size) = (world.rank(), world.size());
    let mut held: Vec<Comm> = Vec::new();
    let mut providers = std::collections::BTreeSet::new();
    for round in 0..300u64 {
        let comm = match round % 3 {
            0 => world.dup().unwrap(),
            1 => world.split((me % 2) as i32, -(me as i32)).unwrap().unwrap(),
            _ => {
                let group: Vec<usize> = (0..size).filter(|r| r % 3 != 2).collect();
                match world.create(&group).unwrap() {
                    Some(comm) => comm,
                    None => {
                        assert!(!group.contains(&me));
                        continue;
                    }
                }
            }
        };
        if comm.size() > 1 {
            // One rank needs no area: its collectives are local copies.
            providers.insert(comm.collective_provider(CollOp::Allreduce).unwrap_or("none"));
        }
        let mut sum = [0u8; 8];
        let mine = (round * 1000 + comm.rank() as u64).to_le_bytes();
        comm.allreduce(&mine, &mut sum, Datatype::U64, ReduceOp::Sum).unwrap();
        let n = comm.size() as u64;
        assert_eq!(u64::from_le_bytes(sum), round * 1000 * n + n * (n - 1) / 2, "round {round}");
        let mut buf = if comm.rank() == 0 { round.to_le_bytes() } else { [0u8; 8] };
        comm.bcast(&mut buf, 0).unwrap();
        assert_eq!(u64::from_le_bytes(buf), round);
        comm.barrier().unwrap();
        // Hold a few for a while, so that areas of several owners are in use at once.
        held.push(comm);
        if held.len() > 5 {
            held.remove((round as usize * 7) % held.len()).free();
        }
    }
    held.clear();
    world.barrier().unwrap();
    if me == 0 {
        let providers: Vec<&str> = providers.into_iter().collect();
        println!("area reuse: 300 rounds; allreduce by {}", providers.join(","));
    }
}

/// A scatter whose root sends 8 bytes a rank while the others expect 80: every rank's call
/// returns (the ranks a tree serves through one that saw the mismatch still get their
/// messages), and at least one rank reports the mismatch. The allreduce after it shows
/// that no rank was left waiting.
pub(crate) fn mismatched_scatter(comm: &Comm) {
    use commcore::coll::{Datatype, ReduceOp};
    let (me, n) = (comm.rank(), comm.size());
    let expects = if me == 0 { 8 } else { 80 };
    let send = vec![7u8; 8 * n];
    let mut recv = vec![0u8; expects];
    let result = comm.scatter(if me == 0 { &send } else { &[] }, &mut recv, 0);
    if let Err(error) = &result {
        assert!(
            // A tree's inner rank receives its subtree's blocks at once.
            matches!(error, &CollectiveError::LengthMismatch { expected, got } if expected == 10 * got),
            "rank {me}: {error:?}"
        );
    }
    let mut errors = [0u8; 8];
    let mine = u64::from(result.is_err()).to_le_bytes();
    comm.allreduce(&mine, &mut errors, Datatype::U64, ReduceOp::Sum).unwrap();
    let errors = u64::from_le_bytes(errors);
    assert!(errors >= 1, "no rank of {n} saw the mismatch");
    if me == 0 {
        println!("mismatched scatter: {errors} of {n} ranks reported it; none waited");
    }
}

/// Affine maps `x -> a x + b` (mod 2^32), one per u64 element (`a` low, `b` high):
/// composing them is associative but not commutative.
pub(crate) fn compose(src: &[u8], dst: &mut [u8], _: commcore::coll::Datatype, src_left: bool) {
    for (s, d) in src.chunks_exact(8).zip(dst.chunks_exact_mut(8)) {
        let map = |b: &[u8]| {
            let w = u64::from_le_bytes(b.try_into().unwrap());
            (w as u32, (w >> 32) as u32)
        };
        // `first` applies before `then`; dst = src ∘ dst when src_left, else dst ∘ src.
        let (first, then) = if src_left { (map(s), map(d)) } else { (map(d), map(s)) };
        let a = then.0.wrapping_mul(first.0);
        let b = then.0.wrapping_mul(first.1).wrapping_add(then.1);
        d.copy_from_slice(&(u64::from(a) | u64::from(b) << 32).to_le_bytes());
    }
}

/// Allreduce and reduce with a non-commutative user operation, against the composition in
/// rank order; 8-byte and 40,000-byte messages.
pub(crate) fn noncommutative(comm: &Comm) {
    use commcore::coll::{CollArgs, CollOp, Datatype, Op, UserOp};
    let (me, n) = (comm.rank(), comm.size());
    let op = Op::User(UserOp { func: compose, commutative: false });
    let element = |rank: usize, i: usize| {
        let (a, b) = (2 * (rank + i) as u32 + 3, (rank * 7 + i) as u32 + 1);
        (u64::from(a) | u64::from(b) << 32).to_le_bytes()
    };
    for count in [1usize, 5000] {
        let mine: Vec<u8> = (0..count).flat_map(|i| element(me, i)).collect();
        let mut expected = (0..count).flat_map(|i| element(0, i)).collect::<Vec<u8>>();
        for rank in 1..n {
            let next: Vec<u8> = (0..count).flat_map(|i| element(rank, i)).collect();
            compose(&next, &mut expected, Datatype::U64, false);
        }
        let args = CollArgs::new(count, Datatype::U64).with_op(op);
        let mut out = vec![0u8; mine.len()];
        comm.collective(CollOp::Allreduce, &args, &mine, &mut out).unwrap();
        assert_eq!(out, expected, "allreduce of {count} maps in rank order");
        let root = n - 1;
        let args = args.with_root(commcore::coll::Root::Rank(root as u32));
        let mut out = vec![0u8; mine.len()];
        comm.collective(CollOp::Reduce, &args, &mine, &mut out).unwrap();
        if me == root {
            assert_eq!(out, expected, "reduce of {count} maps in rank order");
        }
    }
    comm.barrier().unwrap();
    if me == 0 {
        let provider = comm.collective_provider(CollOp::Allreduce).unwrap_or("none");
        println!("noncommutative: checked on {n} ranks; allreduce by {provider}");
    }
}

/// Rank 0 queues more small sends to the last rank than its ring holds, then every rank
/// runs a schedule broadcast with long sends (which returns once its sender's queue is in
/// the rings) and a barrier over the area before the last rank receives: that rank must
/// keep taking cells while it waits in the barrier, or rank 0 never leaves the broadcast.
/// Run with long collectives on the schedules.
pub(crate) fn isend_across_collectives(comm: &Comm) {
    const MESSAGES: usize = 40;
    let (me, last) = (comm.rank(), comm.size() - 1);
    let message = |i: usize| vec![(i % 251) as u8; 8000];
    let messages: Vec<Vec<u8>> = (0..MESSAGES).map(message).collect();
    let mut block = vec![7u8; 70_000];
    if me == 0 {
        let requests: Vec<_> = messages.iter().map(|m| comm.isend(m, last, 9).unwrap()).collect();
        comm.bcast(&mut block, 0).unwrap();
        comm.barrier().unwrap();
        for request in requests {
            request.wait().unwrap();
        }
    } else {
        comm.bcast(&mut block, 0).unwrap();
        comm.barrier().unwrap();
        if me == last {
            let mut got = vec![0u8; 8000];
            for expected in &messages {
                comm.recv(&mut got, 0, 9).unwrap();
                assert_eq!(&got, expected);
            }
            println!("isend across collectives: delivered");
        }
    }
    assert_eq!(block, vec![7u8; 70_000]);
}

/// MPI's progress rule: a receive posted before a rank blocks in something else (a
/// barrier, a send) lets a peer's synchronous or long send into it complete. Each even
/// rank sends its odd neighbour 8 B synchronously and 200 kB (announced for a single copy)
/// while the neighbour, its receives posted, waits in a barrier; then every rank sends
/// 200 kB to itself into a receive it posted first.
pub(crate) fn posted_receive_across_calls(comm: &Comm) {
    let me = comm.rank();
    let long: Vec<u8> = (0..200_000).map(|i| (i % 251) as u8 ^ me as u8).collect();
    let partner = me ^ 1;
    if partner < comm.size() {
        if me % 2 == 0 {
            comm.ssend(&[me as u8; 8], partner, 1).unwrap();
            comm.send(&long, partner, 2).unwrap();
            comm.barrier().unwrap();
        } else {
            let (mut short, mut got) = ([0u8; 8], vec![0u8; long.len()]);
            let first = comm.irecv(&mut short, partner, 1).unwrap();
            let second = comm.irecv(&mut got, partner, 2).unwrap();
            comm.barrier().unwrap();
            first.wait().unwrap();
            second.wait().unwrap();
            assert_eq!(short, [partner as u8; 8]);
            assert!(got.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8 ^ partner as u8));
        }
    } else {
        comm.barrier().unwrap();
    }
    let mut back = vec![0u8; long.len()];
    let request = comm.irecv(&mut back, me, 3).unwrap();
    comm.send(&long, me, 3).unwrap();
    request.wait().unwrap();
    assert_eq!(back, long);
    println!("posted receives across calls: delivered");
}
