//! A rank program for the runtime's multi-process tests: `runtime_rank SCENARIO`, started by
//! the launcher. Every check that fails panics, so the rank exits non-zero and the launcher
//! names it.

use commcore_linux::runtime::{
    Comm, CommError, P2pError, Request, World, ANY_SOURCE, ANY_TAG, UNDEFINED,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn main() {
    let scenario = std::env::args().nth(1).unwrap_or_default();
    if scenario == "mismatched-settings" {
        return mismatched_settings();
    }
    let world = if scenario == "threads" { World::init_thread_multiple() } else { World::init() };
    let world = world.unwrap_or_else(|error| {
        eprintln!("runtime_rank: {error}");
        std::process::exit(1)
    });
    let comm = world.comm();
    match scenario.as_str() {
        "ordering" => ordering(comm),
        "any-source" => any_source(comm),
        "unexpected" => unexpected(comm),
        "truncation" => truncation(comm),
        "bad-input" => bad_input(comm),
        "nonblocking" => nonblocking(comm),
        "exchange" => exchange(comm),
        "identity" => identity(&world),
        "hang" => hang(comm),
        "idle" => idle(comm),
        "communicators" => communicators(comm),
        "splits" => splits(comm),
        "threads" => threads(comm),
        "collectives" => collectives(&world),
        "area-reuse" => area_reuse(comm),
        "noncommutative" => noncommutative(comm),
        "isend-across-collectives" => isend_across_collectives(comm),
        "die-in-collective" => die_in_collective(comm),
        "die-signal" => die(comm, "signal"),
        "die-exit" => die(comm, "exit"),
        "leave-in-collective" | "leave-in-recv" => leave_early(comm, &scenario),
        "fd-not-inherited" => fd_not_inherited(),
        other => panic!("unknown scenario {other:?}"),
    }
}

/// A message whose bytes say who sent it and its sequence number, `len` bytes long.
fn message(source: usize, seq: u32, len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len.max(8)];
    bytes[..4].copy_from_slice(&(source as u32).to_le_bytes());
    bytes[4..8].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in bytes.iter_mut().enumerate().skip(8) {
        *b = (i as u32).wrapping_mul(31).wrapping_add(seq) as u8;
    }
    bytes.truncate(len.max(8));
    bytes
}

fn check_message(bytes: &[u8], source: usize, seq: u32) {
    assert_eq!(
        bytes,
        &message(source, seq, bytes.len())[..],
        "payload of message {seq} from {source}"
    );
}

/// Sizes that cover one cell, several cells and the single-copy path.
fn size_of(seq: u32) -> usize {
    [8, 100, 8128, 8129, 20_000, 70_000, 300_000][seq as usize % 7]
}

fn ordering(comm: &Comm) {
    const COUNT: u32 = 700;
    if comm.rank() == 0 {
        for seq in 0..COUNT {
            comm.send(&message(0, seq, size_of(seq)), 1, (seq % 5) as i32).unwrap();
        }
    } else if comm.rank() == 1 {
        let mut buf = vec![0u8; 300_000];
        for seq in 0..COUNT {
            let status = comm.recv(&mut buf, 0, ANY_TAG).unwrap();
            assert_eq!(
                (status.source, status.tag, status.len),
                (0, (seq % 5) as i32, size_of(seq))
            );
            check_message(&buf[..status.len], 0, seq);
        }
    }
}

fn any_source(comm: &Comm) {
    const PER_RANK: u32 = 200;
    if comm.rank() == 0 {
        let mut next = vec![0u32; comm.size()];
        let mut buf = vec![0u8; 300_000];
        for _ in 0..PER_RANK * (comm.size() as u32 - 1) {
            let status = comm.recv(&mut buf, ANY_SOURCE, ANY_TAG).unwrap();
            let seq = next[status.source];
            assert_eq!(status.tag, status.source as i32 * 1000 + (seq % 3) as i32);
            check_message(&buf[..status.len], status.source, seq);
            next[status.source] += 1;
        }
        assert!(next[1..].iter().all(|&n| n == PER_RANK), "{next:?}");
    } else {
        for seq in 0..PER_RANK {
            let tag = comm.rank() as i32 * 1000 + (seq % 3) as i32;
            comm.send(&message(comm.rank(), seq, size_of(seq)), 0, tag).unwrap();
        }
    }
}

fn unexpected(comm: &Comm) {
    if comm.rank() == 0 {
        // Long messages wait for their receiver, so they go nonblocking before the barrier.
        let outgoing: Vec<Vec<u8>> = (0..10u32).map(|tag| message(0, tag, size_of(tag))).collect();
        let sends: Vec<_> = outgoing
            .iter()
            .enumerate()
            .map(|(tag, m)| comm.isend(m, 1, tag as i32).unwrap())
            .collect();
        comm.barrier().unwrap();
        Request::wait_all(sends).unwrap();
        // Posted receives are matched in posting order.
        comm.send(&message(0, 100, 8), 1, 50).unwrap();
        comm.send(&message(0, 101, 8), 1, 51).unwrap();
        // Waiting in the ring before the receives are posted: the oldest posted receive does
        // not accept the first, a later one does; the last is too long for its receive.
        comm.send(&message(0, 60, 8), 1, 60).unwrap();
        comm.send(&message(0, 61, 8), 1, 61).unwrap();
        comm.send(&message(0, 62, 16), 1, 62).unwrap();
        comm.barrier().unwrap();
    } else if comm.rank() == 1 {
        comm.barrier().unwrap();
        let mut buf = vec![0u8; 300_000];
        // Everything from rank 0 is unexpected by now; take it in reverse tag order.
        for tag in (0..10u32).rev() {
            let status = comm.recv(&mut buf, 0, tag as i32).unwrap();
            assert_eq!((status.tag, status.len), (tag as i32, size_of(tag)));
            check_message(&buf[..status.len], 0, tag);
        }
        let (mut first, mut second) = ([0u8; 8], [0u8; 8]);
        let a = comm.irecv(&mut first, 0, ANY_TAG).unwrap();
        let b = comm.irecv(&mut second, ANY_SOURCE, ANY_TAG).unwrap();
        let statuses = Request::wait_all([b, a]).unwrap();
        assert_eq!(statuses[1].tag, 50, "the first posted receive takes the first message");
        assert_eq!(statuses[0].tag, 51);
        check_message(&first, 0, 100);
        check_message(&second, 0, 101);
        comm.barrier().unwrap();
        let (mut first, mut second, mut short) = ([0u8; 8], [0u8; 8], [0u8; 4]);
        let a = comm.irecv(&mut first, 0, 61).unwrap();
        let b = comm.irecv(&mut second, 0, 60).unwrap();
        let c = comm.irecv(&mut short, 0, ANY_TAG).unwrap();
        assert_eq!(a.wait().unwrap().tag, 61, "the oldest posted receive waits for its tag");
        assert_eq!(b.wait().unwrap().tag, 60);
        let truncated = c.wait();
        assert!(
            matches!(truncated, Err(P2pError::Truncated { message_len: 16, buffer_len: 4 })),
            "{truncated:?}"
        );
        check_message(&first, 0, 61);
        check_message(&second, 0, 60);
    } else {
        comm.barrier().unwrap();
        comm.barrier().unwrap();
    }
}

fn truncation(comm: &Comm) {
    let sizes = [100usize, 9000, 50_000, 1 << 20];
    if comm.rank() == 0 {
        for (seq, &len) in sizes.iter().enumerate() {
            comm.send(&message(0, seq as u32, len), 1, 1).unwrap();
            comm.send(&message(0, 99, 8), 1, 2).unwrap();
        }
    } else if comm.rank() == 1 {
        for (seq, &len) in sizes.iter().enumerate() {
            let mut small = vec![0u8; 10];
            let error = comm.recv(&mut small, 0, 1).unwrap_err();
            assert_eq!(error, P2pError::Truncated { message_len: len, buffer_len: 10 });
            assert_eq!(small[..], message(0, seq as u32, len)[..10], "the buffer holds the head");
            // The truncated message was consumed: the next one is the marker.
            let mut marker = [0u8; 8];
            let status = comm.recv(&mut marker, 0, ANY_TAG).unwrap();
            assert_eq!(status.tag, 2);
            check_message(&marker, 0, 99);
        }
    }
    // A truncated single copy long enough to be split between the two sides, each way:
    // the buffer holds the message's head.
    let (long, buffer) = (1usize << 20, 300_000);
    for sender in [0, 1] {
        if comm.rank() == sender {
            comm.send(&message(sender, 7, long), 1 - sender, 3).unwrap();
        } else if comm.rank() == 1 - sender {
            let mut head = vec![0u8; buffer];
            let error = comm.recv(&mut head, sender, 3).unwrap_err();
            assert_eq!(error, P2pError::Truncated { message_len: long, buffer_len: buffer });
            check_message(&head, sender, 7);
        }
    }
}

fn bad_input(comm: &Comm) {
    let size = comm.size();
    let mut buf = [0u8; 4];
    assert_eq!(comm.send(&buf, size, 0), Err(P2pError::RankOutOfRange { rank: size, size }));
    assert_eq!(comm.send(&buf, 0, -3), Err(P2pError::InvalidTag(-3)));
    assert_eq!(
        comm.recv(&mut buf, size + 5, 0).unwrap_err(),
        P2pError::RankOutOfRange { rank: size + 5, size }
    );
    assert_eq!(comm.recv(&mut buf, 0, -7).unwrap_err(), P2pError::InvalidTag(-7));
    assert!(comm.isend(&buf, usize::MAX, 0).is_err());
    assert!(comm.irecv(&mut buf, ANY_SOURCE, i32::MIN).is_err());
    // A count beyond the limit: the pages of this buffer are never touched.
    let huge = vec![0u8; commcore_linux::runtime::MAX_MESSAGE_BYTES + 1];
    assert!(matches!(comm.send(&huge, 0, 0), Err(P2pError::CountOutOfRange { .. })));
    drop(huge);
    // After the errors, the communicator still works.
    comm.barrier().unwrap();
    let me = comm.rank();
    let next = (me + 1) % size;
    let prev = (me + size - 1) % size;
    let status = comm.sendrecv(&(me as u32).to_le_bytes(), next, 0, &mut buf, prev, 0).unwrap();
    assert_eq!(status.source, prev);
    assert_eq!(u32::from_le_bytes(buf), prev as u32);
}

fn nonblocking(comm: &Comm) {
    const COUNT: u32 = 64;
    let (me, size) = (comm.rank(), comm.size());
    let peer = me ^ 1;
    if peer >= size {
        return;
    }
    let outgoing: Vec<Vec<u8>> = (0..COUNT).map(|seq| message(me, seq, size_of(seq))).collect();
    let mut incoming: Vec<Vec<u8>> = (0..COUNT).map(|seq| vec![0u8; size_of(seq)]).collect();
    let mut receives: Vec<_> = incoming
        .iter_mut()
        .enumerate()
        .map(|(seq, b)| comm.irecv(b, peer, seq as i32).unwrap())
        .collect();
    let sends: Vec<_> = outgoing
        .iter()
        .enumerate()
        .map(|(seq, b)| comm.isend(b, peer, seq as i32).unwrap())
        .collect();
    // Complete the receives by polling with test, newest first.
    let mut done = vec![false; receives.len()];
    let mut spins = 0u64;
    while done.iter().any(|d| !d) {
        for (i, request) in receives.iter_mut().enumerate().rev() {
            if !done[i] {
                if let Some(status) = request.test().unwrap() {
                    assert_eq!(
                        (status.source, status.tag, status.len),
                        (peer, i as i32, size_of(i as u32))
                    );
                    done[i] = true;
                }
            }
        }
        spins += 1;
        if spins % 1000 == 0 {
            std::thread::yield_now();
        }
    }
    drop(receives);
    Request::wait_all(sends).unwrap();
    for (seq, bytes) in incoming.iter().enumerate() {
        check_message(bytes, peer, seq as u32);
    }
    // A receive that is dropped unmatched is cancelled and takes nothing.
    let mut spare = [0u8; 8];
    drop(comm.irecv(&mut spare, peer, 999).unwrap());
    comm.barrier().unwrap();
}

/// Every rank sends to every other rank at once, long messages included, then receives.
fn exchange(comm: &Comm) {
    let (me, size) = (comm.rank(), comm.size());
    for round in 0..3u32 {
        let outgoing: Vec<Vec<u8>> = (0..size)
            .map(|to| message(me, round * 100 + to as u32, size_of(round + to as u32)))
            .collect();
        let sends: Vec<_> =
            (0..size).map(|to| comm.isend(&outgoing[to], to, round as i32).unwrap()).collect();
        let mut buf = vec![0u8; 300_000];
        for from in (0..size).rev() {
            let status = comm.recv(&mut buf, from, round as i32).unwrap();
            assert_eq!(status.len, size_of(round + me as u32));
            check_message(&buf[..status.len], from, round * 100 + me as u32);
        }
        Request::wait_all(sends).unwrap();
    }
    comm.barrier().unwrap();
}

fn identity(world: &World) {
    let comm = world.comm();
    let expected = [
        std::env::var("COMMCORE_RANK").map_or(0, |r| r.parse().unwrap()),
        std::env::var("COMMCORE_SIZE").map_or(1, |s| s.parse().unwrap()),
    ];
    assert_eq!([comm.rank(), comm.size()], expected);
    assert_eq!(world.self_comm().size(), 1);
    // The world's address vector and rank maps come from core.
    let me = comm.rank();
    let av = world.address_vector();
    assert_eq!(av.len(), comm.size());
    assert_eq!(av[me].node().0 as usize, world.node());
    assert_eq!(av[me].address_word() >> 32, u64::from(std::process::id()));
    assert_eq!(comm.rank_map().kind(), commcore::rankmap::ModelKind::Direct);
    let (_, lpid) = world.self_comm().rank_map().translate(0).expect("self has rank 0");
    assert_eq!(lpid as usize, me);
    assert_eq!(world.self_comm().rank_map().translate(1), None);
    // Everyone reports its node and the CPU it is bound to (or "-" when it may run on
    // several) to rank 0, which prints both maps.
    let cpus = commcore_tests::cpus::allowed_cpus();
    let cpu = match cpus[..] {
        [cpu] => cpu as u32,
        _ => u32::MAX,
    };
    let mine = [world.node() as u32, cpu];
    if comm.rank() == 0 {
        let mut all = vec![mine];
        for from in 1..comm.size() {
            let mut buf = [0u8; 8];
            comm.recv(&mut buf, from, 0).unwrap();
            let word = |i: usize| u32::from_le_bytes(buf[4 * i..4 * i + 4].try_into().unwrap());
            all.push([word(0), word(1)]);
        }
        let nodes: Vec<String> = all.iter().map(|[node, _]| node.to_string()).collect();
        let bound: Vec<String> = all
            .iter()
            .map(|&[_, cpu]| if cpu == u32::MAX { "-".into() } else { cpu.to_string() })
            .collect();
        println!(
            "nodes {} of {}; cpus {}; {}",
            nodes.join(" "),
            world.nodes(),
            bound.join(" "),
            world.single_copy()
        );
    } else {
        let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_le_bytes()).collect();
        comm.send(&bytes, 0, 0).unwrap();
    }
}

/// Rank 1 dies (killed by a signal, or exiting with code 3) while the others wait for it in
/// a receive; the launcher must end them.
fn die(comm: &Comm, how: &str) {
    if comm.rank() == 1 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if how == "exit" {
            std::process::exit(3);
        }
        // SAFETY: raise only sends a signal to this process.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let mut buf = [0u8; 8];
    let _ = comm.recv(&mut buf, 1, 0);
}

/// Rank 0 waits for a message nobody sends; the launcher's timeout must end the job.
fn hang(comm: &Comm) {
    if comm.rank() == 0 {
        let mut buf = [0u8; 8];
        let _ = comm.recv(&mut buf, ANY_SOURCE, ANY_TAG);
    }
}

/// Rank 0 sleeps a second before it sends; the others wait in a receive meanwhile and must
/// sleep rather than spin: each may use at most a fifth of a core while it waits.
fn idle(comm: &Comm) {
    const WAIT: std::time::Duration = std::time::Duration::from_secs(1);
    if comm.rank() == 0 {
        std::thread::sleep(WAIT);
        for to in 1..comm.size() {
            comm.send(b"wake", to, 0).unwrap();
        }
        return;
    }
    let before = cpu_seconds();
    let mut buf = [0u8; 4];
    comm.recv(&mut buf, 0, 0).unwrap();
    let used = cpu_seconds() - before;
    assert!(
        used < 0.2 * WAIT.as_secs_f64(),
        "rank {} burnt {used:.3} s of CPU waiting",
        comm.rank()
    );
}

fn cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: usage points to writable memory of the right type.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Checks a new communicator against the world ranks it should hold, in order: its size and
/// rank, that every member agreed on its context id, and that its point-to-point traffic
/// reaches the right processes (a ring of world ranks).
fn check_members(comm: &Comm, expected: &[usize], world_rank: usize) {
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

fn communicators(world: &Comm) {
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
fn splits(world: &Comm) {
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
fn threads(world: &Comm) {
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

/// Rank `rank`'s contribution of `len` bytes to collective call `call`.
fn contribution(call: u32, rank: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(7).wrapping_add(call * 13 + rank as u32 * 101) as u8)
        .collect()
}

/// Allgatherv and alltoallv with uneven blocks whose counts are built for this call (they
/// need live only as long as the call); returns how many collectives it checked.
fn vector_collectives(comm: &Comm, call: u32) -> usize {
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
fn collectives(world: &World) {
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
fn area_reuse(world: &Comm) {
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

/// Affine maps `x -> a x + b` (mod 2^32), one per u64 element (`a` low, `b` high):
/// composing them is associative but not commutative.
fn compose(src: &[u8], dst: &mut [u8], _: commcore::coll::Datatype, src_left: bool) {
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
fn noncommutative(comm: &Comm) {
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
fn isend_across_collectives(comm: &Comm) {
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

/// Every rank loops on allreduce; rank 1 is killed in the middle of one.
fn die_in_collective(comm: &Comm) {
    use commcore::coll::{Datatype, ReduceOp};
    let mut out = [0u8; 8];
    for round in 0u64.. {
        if comm.rank() == 1 && round == 50 {
            // SAFETY: raise only sends a signal to this process.
            unsafe { libc::raise(libc::SIGKILL) };
        }
        let _ = comm.allreduce(&round.to_le_bytes(), &mut out, Datatype::U64, ReduceOp::Sum);
    }
}

/// The last rank asks for a different area bound than the others: every rank's init must
/// refuse, naming the setting and both values, rather than run mismatched protocols.
fn mismatched_settings() {
    use commcore_linux::launch::env;
    use commcore_linux::runtime::{InitError, ENV_SHM_MAX};
    let rank: usize = std::env::var(env::RANK).unwrap().parse().unwrap();
    let size: usize = std::env::var(env::SIZE).unwrap().parse().unwrap();
    if rank == size - 1 {
        std::env::set_var(ENV_SHM_MAX, "0");
    }
    match World::init() {
        Err(InitError::SettingsDiffer(difference)) => {
            let other = difference.rank;
            assert_eq!((difference.name, other), (ENV_SHM_MAX, size - 1), "{difference}");
            let text = difference.to_string();
            assert!(text.contains("unset on rank 0") && text.contains("0 on rank"), "{text}");
            if rank == 0 {
                println!("init refused: rank {other}'s settings differ");
            }
        }
        Err(other) => panic!("init failed otherwise: {other}"),
        Ok(_) => panic!("init accepted mismatched settings"),
    }
}

/// Rank 0 exits (with the code given as the second argument) after joining and without
/// finalizing, while the others wait for it in a barrier or a receive: the launcher must end
/// the job naming rank 0.
fn leave_early(comm: &Comm, scenario: &str) {
    let code: i32 = std::env::args().nth(2).and_then(|c| c.parse().ok()).unwrap_or(0);
    if comm.rank() == 0 {
        std::process::exit(code);
    }
    if scenario == "leave-in-recv" {
        let mut buf = [0u8; 8];
        let _ = comm.recv(&mut buf, 0, 5);
    } else {
        let _ = comm.barrier();
    }
    panic!("rank {} got past rank 0, which left", comm.rank());
}

/// A program this rank starts must not inherit the job's region descriptor.
fn fd_not_inherited() {
    let fd = std::env::var(commcore_linux::launch::env::SHM_FD).expect("launched");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("test ! -e /proc/$$/fd/{fd}"))
        .status()
        .expect("sh runs");
    assert!(status.success(), "a child of the rank inherited descriptor {fd}");
    println!("fd-not-inherited: descriptor {fd} not inherited");
}
