#![no_main]
//! Arbitrary collective calls through the schedule generators (`Schedule::intra`, `hier`,
//! `inter`).
//!
//! One rank with arbitrary arguments (any operation, algorithm, datatype, reduction, root,
//! block lists with absurd counts): generation never panics, and a schedule that is
//! generated ends within a step budget, names only existing peers, never writes the send
//! buffer, and keeps every region inside the buffer lengths its arguments imply and the
//! scratch it declared.
//!
//! A whole communicator with consistent arguments (SUM over i64, flat or hierarchical):
//! every rank's schedule runs in the simulated executor and every result equals a directly
//! computed reference.

use arbitrary::{Arbitrary, Unstructured};
use commcore::coll::{
    Algorithm, Blocks, Buf, CollArgs, CollOp, Ctx, Datatype, Group, NodeLayout, Op, ReduceOp,
    Region, Root, Schedule, Step,
};
use commcore_sim::coll_exec::{run, RankBufs, Topology};
use libfuzzer_sys::fuzz_target;

/// Steps one rank's schedule may take before it counts as endless: far above what any
/// algorithm needs at 64 + 64 ranks (linear ones take O(P) steps per round, ring ones
/// O(P) rounds).
const STEP_BUDGET: usize = 1 << 16;

#[derive(Arbitrary, Debug)]
enum Mode {
    Intra,
    /// Node id of each rank (missing ones are node 0).
    Hier(Vec<u8>),
    /// Remote group size, whether this rank's group holds the root, whether it is the root.
    Inter(u8, bool, bool),
}

#[derive(Arbitrary, Debug)]
struct Call {
    op: u8,
    alg: u8,
    mode: Mode,
    size: u8,
    rank: u8,
    root: u8,
    count: u8,
    dtype: u8,
    rop: u8,
    /// Send and receive block lists; unless `ragged`, cut or padded to one entry per rank.
    send: Option<(Vec<u64>, Vec<u64>)>,
    recv: Option<(Vec<u64>, Vec<u64>)>,
    ragged: bool,
    /// Per-rank counts for a run of the whole communicator.
    counts: Vec<u8>,
}

/// Bytes of the furthest block of `blocks`, saturating.
fn extent(blocks: Option<Blocks<'_>>, elem: usize) -> usize {
    blocks.map_or(0, |b| {
        b.counts
            .iter()
            .zip(b.displs)
            .map(|(c, d)| c.saturating_add(*d))
            .max()
            .unwrap_or(0)
            .saturating_mul(elem)
    })
}

/// Bytes of block `i` of `blocks`, if it has one.
fn block(blocks: Option<Blocks<'_>>, i: u32, elem: usize) -> usize {
    blocks.and_then(|b| b.counts.get(i as usize)).map_or(0, |c| c.saturating_mul(elem))
}

/// The (send, receive) buffer lengths the arguments of rank `rank` imply, on an
/// intra-communicator of `size` ranks or, with `remote`, on an inter-communicator.
fn implied(
    op: CollOp,
    args: &CollArgs<'_>,
    rank: u32,
    size: u32,
    remote: Option<u32>,
) -> (usize, usize) {
    use CollOp as C;
    let e = args.dtype.size();
    let n = args.count.saturating_mul(e);
    let peers = remote.unwrap_or(size) as usize;
    let all = n.saturating_mul(peers);
    let is_root = match args.root {
        Root::Rank(r) => remote.is_none() && r == rank,
        Root::Here => true,
        Root::Elsewhere => false,
    };
    let own = |b: Option<Blocks<'_>>| n.max(block(b, rank, e));
    match op {
        C::Barrier => (0, 0),
        C::Bcast => (n, n),
        C::Reduce | C::Allreduce | C::Scan | C::Exscan => (n, n),
        C::Allgather => (n, all),
        C::Gather => (n, if is_root { all } else { 0 }),
        C::Scatter => (if is_root { all } else { 0 }, n),
        C::Alltoall => (all, all),
        // Both vectors are as long as this group's blocks, also on an inter-communicator.
        C::ReduceScatterBlock => (n.saturating_mul(size as usize), n),
        C::Allgatherv => (own(args.recv), extent(args.recv, e)),
        C::Gatherv => (own(args.recv), if is_root { extent(args.recv, e) } else { 0 }),
        C::Scatterv => (if is_root { extent(args.send, e) } else { 0 }, own(args.send)),
        C::Alltoallv => (extent(args.send, e), extent(args.recv, e)),
        C::ReduceScatter => (n.max(extent(args.recv, e)), block(args.recv, rank, e)),
    }
}

/// Checks one rank's schedule: bounded, inside its buffers, peers that exist.
fn check_steps(
    schedule: Schedule<'_>,
    (send, recv): (usize, usize),
    size: u32,
    remote: Option<u32>,
    elem: usize,
    what: &dyn Fn() -> String,
) {
    let scratch = schedule.scratch_bytes();
    let rounds = schedule.rounds();
    let inside = |r: Region| {
        let len = match r.buf {
            Buf::Send => send,
            Buf::Recv => recv,
            Buf::Scratch => scratch,
        };
        assert!(r.end() <= len, "{}: {r:?} outside {len} bytes", what());
    };
    let writable = |r: Region| {
        inside(r);
        assert!(r.buf != Buf::Send, "{}: writes the send buffer: {r:?}", what());
    };
    let peer_ok = |group: Group, rank: u32| match group {
        Group::Local => assert!(rank < size, "{}: local peer {rank} of {size}", what()),
        Group::Remote => {
            let r = remote.unwrap_or_else(|| panic!("{}: remote peer on intra", what()));
            assert!(rank < r, "{}: remote peer {rank} of {r}", what());
        }
    };
    let mut waits = 0u32;
    let mut taken = 0usize;
    for step in schedule.take(STEP_BUDGET + 1) {
        taken += 1;
        match step {
            Step::Send { to, region } => {
                peer_ok(to.group, to.rank);
                inside(region);
            }
            Step::Recv { from, region } => {
                peer_ok(from.group, from.rank);
                writable(region);
            }
            Step::Reduce { src, dst, .. } => {
                inside(src);
                writable(dst);
                assert_eq!(src.len, dst.len, "{}", what());
                assert_eq!(dst.len % elem, 0, "{}", what());
            }
            Step::Copy { src, dst } => {
                inside(src);
                writable(dst);
                assert_eq!(src.len, dst.len, "{}", what());
            }
            Step::Wait => waits += 1,
        }
    }
    assert!(taken <= STEP_BUDGET, "{}: endless schedule", what());
    assert!(waits < rounds.max(1), "{}: {waits} waits in {rounds} rounds", what());
}

fn blocks_of(v: &Option<(Vec<usize>, Vec<usize>)>) -> Option<Blocks<'_>> {
    v.as_ref().map(|(c, d)| Blocks { counts: c, displs: d })
}

fn lists(
    v: &Option<(Vec<u64>, Vec<u64>)>,
    ranks: u32,
    ragged: bool,
) -> Option<(Vec<usize>, Vec<usize>)> {
    // Small values mostly, some absurd ones.
    let conv = |x: &u64| if x >> 62 == 0 { (*x % 80) as usize } else { *x as usize };
    let len = |l: &[u64]| if ragged { l.len().min(130) } else { ranks as usize };
    let list =
        |l: &[u64]| -> Vec<usize> { (0..len(l)).map(|i| l.get(i).map_or(1, conv)).collect() };
    v.as_ref().map(|(c, d)| (list(c), list(d)))
}

/// One rank, arbitrary arguments.
fn single_rank(call: &Call) {
    let op = CollOp::ALL[call.op as usize % CollOp::COUNT];
    let alg = Algorithm::ALL[call.alg as usize % Algorithm::ALL.len()];
    let size = call.size as u32 % 65;
    let rank = call.rank as u32 % (size + 1);
    let dtype = Datatype::ALL[call.dtype as usize % Datatype::ALL.len()];
    let rop = ReduceOp::ALL[call.rop as usize % ReduceOp::ALL.len()];
    // Inter-communicator block lists have one entry per remote rank.
    let ranks = match call.mode {
        Mode::Inter(remote, ..) => remote as u32 % 65,
        _ => size,
    };
    let (send, recv) =
        (lists(&call.send, ranks, call.ragged), lists(&call.recv, ranks, call.ragged));
    let mut args = CollArgs::new(call.count as usize % 65, dtype)
        .with_op(Op::Builtin(rop))
        .with_root(Root::Rank(call.root as u32 % (size + 2)));
    if let Some(b) = blocks_of(&send) {
        args = args.with_send(b);
    }
    if let Some(b) = blocks_of(&recv) {
        args = args.with_recv(b);
    }
    let what = || format!("{op} {} {call:?}", alg.name());
    match &call.mode {
        Mode::Intra => {
            let Ok(ctx) = Ctx::new(rank, size) else { return };
            if let Ok(s) = Schedule::intra(op, alg, ctx, &args) {
                let lens = implied(op, &args, rank, size, None);
                check_steps(s, lens, size, None, dtype.size(), &what);
            }
        }
        Mode::Hier(ids) => {
            let ids: Vec<u32> =
                (0..size as usize).map(|i| ids.get(i).map_or(0, |&n| n as u32 % 9)).collect();
            let mut storage = vec![0u32; 4 * ids.len() + 1];
            let Ok(layout) = NodeLayout::build(&ids, &mut storage) else { return };
            if let Ok(s) = Schedule::hier(op, rank, layout, &args) {
                assert!(rank < size, "{}: hier schedule for a rank outside the layout", what());
                let lens = implied(op, &args, rank, size, None);
                check_steps(s, lens, size, None, dtype.size(), &what);
            }
        }
        Mode::Inter(remote, root_here, is_root) => {
            let remote = *remote as u32 % 65;
            let Ok(ctx) = Ctx::new(rank, size) else { return };
            let root = match (root_here, is_root) {
                (true, true) => Root::Here,
                (true, false) => Root::Elsewhere,
                (false, _) => Root::Rank(call.root as u32 % (remote + 2)),
            };
            let args = args.with_root(root);
            if let Ok(s) = Schedule::inter(op, ctx, remote, &args) {
                let lens = implied(op, &args, rank, size, Some(remote));
                check_steps(s, lens, size, Some(remote), dtype.size(), &what);
            }
        }
    }
}

fn value(rank: usize, i: usize) -> i64 {
    (rank as i64 + 1) * 1_000 + i as i64
}

fn bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// Displacements with a gap of one element after each block.
fn gapped(counts: &[usize]) -> Vec<usize> {
    let mut at = 0;
    counts
        .iter()
        .map(|c| {
            let x = at;
            at += c + 1;
            x
        })
        .collect()
}

const SENTINEL: i64 = -7;

/// The whole communicator with consistent arguments, SUM over i64; flat or hierarchical.
fn whole_communicator(call: &Call) {
    let op = CollOp::ALL[call.op as usize % CollOp::COUNT];
    let p = call.size as usize % 24 + 1;
    let count = call.count as usize % 17;
    let root = call.root as usize % p;
    let layout_ids: Option<Vec<u32>> = match &call.mode {
        Mode::Intra => None,
        Mode::Hier(ids) => Some((0..p).map(|i| ids.get(i).map_or(0, |&n| n as u32 % 5)).collect()),
        Mode::Inter(..) => return,
    };
    let alg = if layout_ids.is_some() {
        Algorithm::Hierarchical
    } else {
        let algs: Vec<Algorithm> = Algorithm::ALL
            .into_iter()
            .filter(|a| a.implements(op) && *a != Algorithm::Hierarchical)
            .collect();
        algs[call.alg as usize % algs.len()]
    };
    if alg == Algorithm::Hierarchical && !alg.implements(op) {
        return;
    }
    let vc: Vec<usize> =
        (0..p).map(|i| call.counts.get(i).map_or(count, |&c| c as usize % 9)).collect();
    let vd = gapped(&vc);
    let ext = vc.iter().zip(&vd).map(|(c, d)| c + d).max().unwrap_or(0);
    // Alltoallv: rank r sends m[r][j] elements to rank j.
    let m = |r: usize, j: usize| call.counts.get(r * p + j).map_or(1, |&c| c as usize % 5);
    let a2a: Vec<[Vec<usize>; 4]> = (0..p)
        .map(|r| {
            let sc: Vec<usize> = (0..p).map(|j| m(r, j)).collect();
            let rc: Vec<usize> = (0..p).map(|j| m(j, r)).collect();
            let (sd, rd) = (gapped(&sc), gapped(&rc));
            [sc, sd, rc, rd]
        })
        .collect();
    let input = |r: usize, n: usize| (0..n).map(|i| value(r, i)).collect::<Vec<i64>>();
    let sum = |n: usize, ranks: std::ops::Range<usize>| {
        (0..n).map(|i| ranks.clone().map(|r| value(r, i)).sum()).collect::<Vec<i64>>()
    };
    let place = |buf: &mut Vec<i64>, at: usize, data: &[i64]| {
        buf[at..at + data.len()].copy_from_slice(data);
    };
    let mut sends: Vec<Vec<i64>> = vec![Vec::new(); p];
    let mut recvs: Vec<Vec<i64>> = vec![Vec::new(); p];
    let mut expected: Vec<Option<Vec<i64>>> = vec![None; p];
    for r in 0..p {
        use CollOp as C;
        let (send, want): (Vec<i64>, Option<Vec<i64>>) = match op {
            C::Barrier => (Vec::new(), Some(Vec::new())),
            C::Bcast => (Vec::new(), Some(input(root, count))),
            C::Reduce => (input(r, count), (r == root).then(|| sum(count, 0..p))),
            C::Allreduce => (input(r, count), Some(sum(count, 0..p))),
            C::Scan => (input(r, count), Some(sum(count, 0..r + 1))),
            C::Exscan => (input(r, count), (r > 0).then(|| sum(count, 0..r))),
            C::Allgather | C::Gather => {
                let all = (0..p).flat_map(|j| input(j, count)).collect();
                (input(r, count), (op == C::Allgather || r == root).then_some(all))
            }
            C::Allgatherv | C::Gatherv => {
                let mut all = vec![SENTINEL; ext];
                for j in 0..p {
                    place(&mut all, vd[j], &input(j, vc[j]));
                }
                (input(r, vc[r]), (op == C::Allgatherv || r == root).then_some(all))
            }
            C::Scatter => {
                let send = if r == root {
                    (0..p).flat_map(|j| input(j + p, count)).collect()
                } else {
                    Vec::new()
                };
                (send, Some(input(r + p, count)))
            }
            C::Scatterv => {
                let mut send = Vec::new();
                if r == root {
                    send = vec![SENTINEL; ext];
                    for j in 0..p {
                        place(&mut send, vd[j], &input(j + p, vc[j]));
                    }
                }
                (send, Some(input(r + p, vc[r])))
            }
            C::Alltoall => {
                let send = (0..p).flat_map(|j| input(r * p + j, count)).collect();
                (send, Some((0..p).flat_map(|j| input(j * p + r, count)).collect()))
            }
            C::Alltoallv => {
                let [sc, sd, rc, rd] = &a2a[r];
                let mut send =
                    vec![SENTINEL; sc.iter().zip(sd).map(|(c, d)| c + d).max().unwrap_or(0)];
                let mut want =
                    vec![SENTINEL; rc.iter().zip(rd).map(|(c, d)| c + d).max().unwrap_or(0)];
                for j in 0..p {
                    place(&mut send, sd[j], &input(r * p + j, sc[j]));
                    place(&mut want, rd[j], &input(j * p + r, rc[j]));
                }
                (send, Some(want))
            }
            C::ReduceScatterBlock => {
                (input(r, p * count), Some(sum(p * count, 0..p)[r * count..][..count].to_vec()))
            }
            C::ReduceScatter => (input(r, ext), Some(sum(ext, 0..p)[vd[r]..][..vc[r]].to_vec())),
        };
        recvs[r] = match (&want, op) {
            (_, C::Bcast) if r == root => want.clone().unwrap(),
            (Some(w), _) => vec![SENTINEL; w.len()],
            (None, C::Reduce | C::Exscan) => vec![SENTINEL; count],
            (None, _) => Vec::new(),
        };
        sends[r] = send;
        expected[r] = want;
    }
    let mut bufs: Vec<RankBufs> = (0..p)
        .map(|r| RankBufs { send: bytes(&sends[r]), recv: bytes(&recvs[r]), scratch: Vec::new() })
        .collect();
    let mut storage = vec![0u32; 4 * p + 1];
    let layout = match &layout_ids {
        Some(ids) => Some(NodeLayout::build(ids, &mut storage).expect("layout")),
        None => None,
    };
    let blocks = Blocks { counts: &vc, displs: &vd };
    let mut schedules = Vec::with_capacity(p);
    for r in 0..p {
        let mut args = CollArgs::new(count, Datatype::I64).with_root(Root::Rank(root as u32));
        args = match op {
            CollOp::Allgatherv | CollOp::Gatherv | CollOp::ReduceScatter => args.with_recv(blocks),
            CollOp::Scatterv => args.with_send(blocks),
            CollOp::Alltoallv => {
                let [sc, sd, rc, rd] = &a2a[r];
                args.with_send(Blocks { counts: sc, displs: sd })
                    .with_recv(Blocks { counts: rc, displs: rd })
            }
            _ => args,
        };
        if matches!(op, CollOp::Allgatherv | CollOp::Gatherv | CollOp::Scatterv) {
            args.count = vc[r];
        }
        let built = match layout {
            Some(l) => Schedule::hier(op, r as u32, l, &args),
            None => Schedule::intra(op, alg, Ctx::new(r as u32, p as u32).unwrap(), &args),
        };
        let s = built.unwrap_or_else(|e| panic!("{op} {} p={p} rank {r}: {e}", alg.name()));
        // The bounded-step check first, so that the executor never meets an endless one.
        let lens = implied(op, &args, r as u32, p as u32, None);
        let what = || format!("{op} {} p={p} rank {r}", alg.name());
        check_steps(s, lens, p as u32, None, 8, &what);
        schedules.push(s);
    }
    run(Topology::Intra { size: p }, schedules, &mut bufs, layout_ids.as_deref())
        .unwrap_or_else(|e| panic!("{op} {} p={p} count={count}: {e}", alg.name()));
    for r in 0..p {
        if let Some(want) = &expected[r] {
            assert_eq!(
                bufs[r].recv,
                bytes(want),
                "{op} {} p={p} count={count} root={root} rank {r}",
                alg.name()
            );
        }
    }
}

/// An inter-communicator (groups A and B) with consistent arguments, SUM over i64. Global
/// rank `g` is `0..a` for A and `a..a + b` for B; each group reduces or gathers the other's
/// data.
fn inter_communicator(call: &Call) {
    use CollOp as C;
    let Mode::Inter(remote, root_in_a, _) = call.mode else { return };
    let op = CollOp::ALL[call.op as usize % CollOp::COUNT];
    if matches!(op, C::Scan | C::Exscan | C::Alltoallv) {
        return;
    }
    let (a, b) = (call.size as usize % 12 + 1, remote as usize % 12 + 1);
    let n = a + b;
    let count = call.count as usize % 9;
    let root = call.root as usize % if root_in_a { a } else { b };
    let root_g = if root_in_a { root } else { a + root };
    let group = |in_a: bool| if in_a { (0..a).collect::<Vec<_>>() } else { (a..n).collect() };
    let (ga, gb) = (group(true), group(false));
    let vcount = |g: usize| call.counts.get(g).map_or(count, |&c| c as usize % 7);
    let layout_of = |gs: &[usize]| {
        let counts: Vec<usize> = gs.iter().map(|&g| vcount(g)).collect();
        let displs = gapped(&counts);
        (counts, displs)
    };
    let (lay_a, lay_b) = (layout_of(&ga), layout_of(&gb));
    let ext =
        |l: &(Vec<usize>, Vec<usize>)| l.0.iter().zip(&l.1).map(|(c, d)| c + d).max().unwrap_or(0);
    let input = |g: usize, len: usize| (0..len).map(|i| value(g, i)).collect::<Vec<i64>>();
    let fold = |gs: &[usize], len: usize| {
        (0..len).map(|i| gs.iter().map(|&g| value(g, i)).sum()).collect::<Vec<i64>>()
    };
    let mut sends: Vec<Vec<i64>> = vec![Vec::new(); n];
    let mut recvs: Vec<Vec<i64>> = vec![Vec::new(); n];
    let mut expected: Vec<Option<Vec<i64>>> = vec![None; n];
    for g in 0..n {
        let in_a = g < a;
        let r = if in_a { g } else { g - a };
        let (mine, theirs) = if in_a { (&ga, &gb) } else { (&gb, &ga) };
        let (my_layout, their_layout) = if in_a { (&lay_a, &lay_b) } else { (&lay_b, &lay_a) };
        let place_theirs = |len: &dyn Fn(usize) -> usize, v: bool| {
            let mut w = vec![SENTINEL; if v { ext(their_layout) } else { theirs.len() * count }];
            for (j, &t) in theirs.iter().enumerate() {
                let at = if v { their_layout.1[j] } else { j * count };
                w[at..at + len(t)].copy_from_slice(&input(t, len(t)));
            }
            w
        };
        let (send, want, recv_len): (Vec<i64>, Option<Vec<i64>>, usize) = match op {
            C::Barrier => (Vec::new(), None, 0),
            C::Bcast if g == root_g => (input(g, count), None, count),
            C::Bcast => (Vec::new(), (in_a != root_in_a).then(|| input(root_g, count)), count),
            C::Reduce => (input(g, count), (g == root_g).then(|| fold(theirs, count)), count),
            C::Allreduce => (input(g, count), Some(fold(theirs, count)), count),
            C::Allgather => (input(g, count), Some(place_theirs(&|_| count, false)), 0),
            C::Allgatherv => (input(g, vcount(g)), Some(place_theirs(&vcount, true)), 0),
            C::Alltoall => {
                let send = theirs.iter().flat_map(|&t| input(g * n + t, count)).collect();
                (send, Some(theirs.iter().flat_map(|&t| input(t * n + g, count)).collect()), 0)
            }
            C::Gather | C::Gatherv => {
                let v = op == C::Gatherv;
                let len = |t: usize| if v { vcount(t) } else { count };
                (input(g, len(g)), (g == root_g).then(|| place_theirs(&len, v)), 0)
            }
            C::Scatter | C::Scatterv => {
                let v = op == C::Scatterv;
                let len = |t: usize| if v { vcount(t) } else { count };
                if g == root_g {
                    let mut s = place_theirs(&len, v);
                    // The root's send buffer holds fresh data, not the receivers' inputs.
                    s.iter_mut().filter(|x| **x != SENTINEL).for_each(|x| *x += 1);
                    (s, None, 0)
                } else if in_a != root_in_a {
                    (Vec::new(), Some(input(g, len(g)).iter().map(|x| x + 1).collect()), 0)
                } else {
                    (Vec::new(), None, 0)
                }
            }
            C::ReduceScatterBlock => {
                // Each group's vector is its own size times its count, so the two counts
                // must make vectors of one length: `count` times the other group's size.
                let block = count * theirs.len();
                let f = fold(theirs, mine.len() * block);
                (input(g, mine.len() * block), Some(f[r * block..][..block].to_vec()), 0)
            }
            C::ReduceScatter => {
                let f = fold(theirs, ext(my_layout));
                let (at, len) = (my_layout.1[r], my_layout.0[r]);
                (input(g, ext(their_layout)), Some(f[at..at + len].to_vec()), 0)
            }
            C::Scan | C::Exscan | C::Alltoallv => unreachable!(),
        };
        recvs[g] = match &want {
            _ if op == C::Bcast && g == root_g => send.clone(),
            Some(w) => vec![SENTINEL; w.len()],
            None => vec![SENTINEL; recv_len],
        };
        sends[g] = send;
        expected[g] = want;
    }
    let mut bufs: Vec<RankBufs> = (0..n)
        .map(|g| RankBufs { send: bytes(&sends[g]), recv: bytes(&recvs[g]), scratch: Vec::new() })
        .collect();
    let mut schedules = Vec::with_capacity(n);
    for g in 0..n {
        let in_a = g < a;
        let (r, size, remote) = if in_a { (g, a, b) } else { (g - a, b, a) };
        let (my_layout, their_layout) = if in_a { (&lay_a, &lay_b) } else { (&lay_b, &lay_a) };
        let rooting = match (in_a == root_in_a, g == root_g) {
            (true, true) => Root::Here,
            (true, false) => Root::Elsewhere,
            (false, _) => Root::Rank(root as u32),
        };
        let my_count = match op {
            C::ReduceScatter => ext(their_layout),
            C::ReduceScatterBlock => count * remote,
            C::Allgatherv | C::Gatherv | C::Scatterv => vcount(g),
            _ => count,
        };
        let mut args = CollArgs::new(my_count, Datatype::I64).with_root(rooting);
        let theirs_blocks = Blocks { counts: &their_layout.0, displs: &their_layout.1 };
        args = match op {
            C::Allgatherv | C::Gatherv => args.with_recv(theirs_blocks),
            C::Scatterv => args.with_send(theirs_blocks),
            C::ReduceScatter => {
                args.with_recv(Blocks { counts: &my_layout.0, displs: &my_layout.1 })
            }
            _ => args,
        };
        let ctx = Ctx::new(r as u32, size as u32).unwrap();
        let what = || format!("inter {op} a={a} b={b} root={root}@{root_in_a} global rank {g}");
        let s = Schedule::inter(op, ctx, remote as u32, &args)
            .unwrap_or_else(|e| panic!("{}: {e}", what()));
        let lens = implied(op, &args, r as u32, size as u32, Some(remote as u32));
        check_steps(s, lens, size as u32, Some(remote as u32), 8, &what);
        schedules.push(s);
    }
    run(Topology::Inter { a, b }, schedules, &mut bufs, None).unwrap_or_else(|e| {
        panic!("inter {op} a={a} b={b} count={count} root={root}@{root_in_a}: {e}")
    });
    for g in 0..n {
        if let Some(want) = &expected[g] {
            assert_eq!(
                bufs[g].recv,
                bytes(want),
                "inter {op} a={a} b={b} count={count} root={root}@{root_in_a} global rank {g}"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(call) = Call::arbitrary(&mut u) else { return };
    single_rank(&call);
    whole_communicator(&call);
    inter_communicator(&call);
});
