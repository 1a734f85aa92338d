//! Inter-communicator collectives between groups of unequal sizes (including 1), every
//! root in either group, against references computed directly; scan and exscan refused.

// Global rank indices address several parallel per-rank vectors at once.
#![allow(clippy::needless_range_loop)]

mod coll_support;

use coll_support::*;
use commcore::coll::component::BUILTIN;
use commcore::coll::{
    Blocks, CollArgs, CollError, CollOp, CollTable, CommInfo, Control, Ctx, Datatype, Op, ReduceOp,
    Root, Schedule,
};
use commcore_sim::coll_exec::{run, RankBufs, Topology};

const PAIRS: [(u32, u32); 8] = [(1, 1), (1, 5), (5, 1), (2, 3), (3, 4), (4, 3), (7, 9), (16, 3)];

/// Which group and local rank global rank `g` is, and the group sizes (local, remote).
fn who(g: usize, a: u32, b: u32) -> (bool, u32, u32, u32) {
    if g < a as usize {
        (true, g as u32, a, b)
    } else {
        (false, (g - a as usize) as u32, b, a)
    }
}

struct Case {
    sends: Vec<Vec<u8>>,
    recv_len: Vec<usize>,
    expected: Vec<Option<Vec<u8>>>,
}

/// Runs inter-communicator `op` between groups of `a` and `b` ranks; a rooted operation
/// has its root at rank `root` of group A (`root_in_a`) or B.
#[allow(clippy::too_many_arguments)]
fn check_inter(
    op: CollOp,
    a: u32,
    b: u32,
    root_in_a: bool,
    root: u32,
    count: usize,
    rop: Op,
    dt: Datatype,
) -> Result<(), String> {
    let n = (a + b) as usize;
    let e = dt.size();
    let d = |g: usize, len: usize| data(dt, &rop, g, len, op as u64 * 977 + count as u64);
    let global = |in_a: bool, r: u32| if in_a { r as usize } else { a as usize + r as usize };
    let group = |in_a: bool| -> Vec<usize> {
        if in_a {
            (0..a as usize).collect()
        } else {
            (a as usize..n).collect()
        }
    };
    let fold_of = |gs: &[usize], len: usize| {
        let v: Vec<Vec<u8>> = gs.iter().map(|&g| d(g, len)).collect();
        let r: Vec<&[u8]> = v.iter().map(|x| x.as_slice()).collect();
        fold(&rop, dt, &r)
    };
    // A member's reduce_scatter_block count: the other group's size times `count`.
    let block_count = |in_a: bool| count * if in_a { b as usize } else { a as usize };
    // Varying counts per global rank, and each group's receive layout for the other's.
    let vcount = |g: usize| (g * 5 + count) % (count + 2);
    let layout_of = |gs: &[usize]| -> (Vec<usize>, Vec<usize>) {
        let counts: Vec<usize> = gs.iter().map(|&g| vcount(g)).collect();
        let mut at = 0;
        let displs = counts
            .iter()
            .map(|c| {
                let x = at;
                at += c + 1;
                x
            })
            .collect();
        (counts, displs)
    };
    let (ga, gb) = (group(true), group(false));
    let (lay_a, lay_b) = (layout_of(&ga), layout_of(&gb));
    let ext =
        |l: &(Vec<usize>, Vec<usize>)| l.0.iter().zip(&l.1).map(|(c, d)| c + d).max().unwrap_or(0);
    let mut c = Case { sends: vec![Vec::new(); n], recv_len: vec![0; n], expected: vec![None; n] };
    let root_g = global(root_in_a, root);
    for g in 0..n {
        let (in_a, _r, _l, _rs) = who(g, a, b);
        let (mine, theirs) = if in_a { (&ga, &gb) } else { (&gb, &ga) };
        let their_layout = if in_a { &lay_b } else { &lay_a };
        let my_layout = if in_a { &lay_a } else { &lay_b };
        let r = _r as usize;
        match op {
            CollOp::Barrier | CollOp::Scan | CollOp::Exscan => {}
            CollOp::Bcast => {
                c.recv_len[g] = count * e;
                if g == root_g {
                    c.sends[g] = d(g, count);
                } else if in_a != root_in_a {
                    c.expected[g] = Some(d(root_g, count));
                }
            }
            CollOp::Reduce => {
                c.sends[g] = d(g, count);
                c.recv_len[g] = count * e;
                if g == root_g {
                    c.expected[g] = Some(fold_of(theirs, count));
                }
            }
            CollOp::Allreduce => {
                c.sends[g] = d(g, count);
                c.recv_len[g] = count * e;
                c.expected[g] = Some(fold_of(theirs, count));
            }
            CollOp::Allgather => {
                c.sends[g] = d(g, count);
                c.recv_len[g] = theirs.len() * count * e;
                c.expected[g] =
                    Some(theirs.iter().map(|&t| d(t, count)).collect::<Vec<_>>().concat());
            }
            CollOp::Allgatherv => {
                c.sends[g] = d(g, vcount(g));
                let mut w = vec![SENTINEL; ext(their_layout) * e];
                for (j, &t) in theirs.iter().enumerate() {
                    let blk = d(t, vcount(t));
                    w[their_layout.1[j] * e..][..blk.len()].copy_from_slice(&blk);
                }
                c.recv_len[g] = w.len();
                c.expected[g] = Some(w);
            }
            CollOp::Alltoall => {
                c.sends[g] =
                    theirs.iter().map(|&t| d(g * n + t, count)).collect::<Vec<_>>().concat();
                c.recv_len[g] = theirs.len() * count * e;
                c.expected[g] =
                    Some(theirs.iter().map(|&t| d(t * n + g, count)).collect::<Vec<_>>().concat());
            }
            CollOp::Gather | CollOp::Gatherv => {
                let v = op == CollOp::Gatherv;
                let len = |t: usize| if v { vcount(t) } else { count };
                c.sends[g] = d(g, len(g));
                if g == root_g {
                    let mut w = vec![
                        SENTINEL;
                        if v { ext(their_layout) } else { theirs.len() * count } * e
                    ];
                    for (j, &t) in theirs.iter().enumerate() {
                        let at = if v { their_layout.1[j] } else { j * count };
                        let blk = d(t, len(t));
                        w[at * e..][..blk.len()].copy_from_slice(&blk);
                    }
                    c.recv_len[g] = w.len();
                    c.expected[g] = Some(w);
                }
            }
            CollOp::Scatter | CollOp::Scatterv => {
                let v = op == CollOp::Scatterv;
                let len = |t: usize| if v { vcount(t) } else { count };
                if g == root_g {
                    let mut s = vec![
                        SENTINEL;
                        if v { ext(their_layout) } else { theirs.len() * count } * e
                    ];
                    for (j, &t) in theirs.iter().enumerate() {
                        let at = if v { their_layout.1[j] } else { j * count };
                        let blk = d(t, len(t));
                        s[at * e..][..blk.len()].copy_from_slice(&blk);
                    }
                    c.sends[g] = s;
                } else if in_a != root_in_a {
                    c.recv_len[g] = len(g) * e;
                    c.expected[g] = Some(d(g, len(g)));
                }
            }
            CollOp::ReduceScatterBlock | CollOp::ReduceScatter => {
                // This group's vector is scattered over the other group; it receives its
                // block of the other group's reduced vector.
                // Blocks: a member of each group passes its own count, chosen so that both
                // groups' vectors are `a * b * count` long, as MPI requires.
                let block = op == CollOp::ReduceScatterBlock;
                let blk = block_count(in_a);
                let out_len = if block { mine.len() * blk } else { ext(their_layout) };
                c.sends[g] = d(g, out_len);
                let in_len = if block { mine.len() * blk } else { ext(my_layout) };
                let f = fold_of(theirs, in_len);
                let (at, len) =
                    if block { (r * blk, blk) } else { (my_layout.1[r], my_layout.0[r]) };
                c.recv_len[g] = len * e;
                c.expected[g] = Some(f[at * e..(at + len) * e].to_vec());
            }
            CollOp::Alltoallv => unreachable!("covered by alltoallv_between_groups"),
        }
    }
    let mut bufs: Vec<RankBufs> = (0..n)
        .map(|g| {
            // A broadcast's root holds the message in its one buffer.
            let recv = if op == CollOp::Bcast && g == root_g {
                c.sends[g].clone()
            } else {
                vec![SENTINEL; c.recv_len[g]]
            };
            RankBufs { send: c.sends[g].clone(), recv, scratch: Vec::new() }
        })
        .collect();
    let mut schedules = Vec::new();
    for g in 0..n {
        let (in_a, r, l, rs) = who(g, a, b);
        let their_layout = if in_a { &lay_b } else { &lay_a };
        let my_layout = if in_a { &lay_a } else { &lay_b };
        let rooting = match (in_a == root_in_a, g == root_g) {
            (true, true) => Root::Here,
            (true, false) => Root::Elsewhere,
            (false, _) => Root::Rank(root),
        };
        let my_count = match op {
            CollOp::ReduceScatter => ext(their_layout),
            CollOp::ReduceScatterBlock => block_count(in_a),
            CollOp::Allgatherv | CollOp::Gatherv | CollOp::Scatterv => vcount(g),
            _ => count,
        };
        let mut args = CollArgs::new(my_count, dt).with_op(rop).with_root(rooting);
        let theirs_blocks = Blocks { counts: &their_layout.0, displs: &their_layout.1 };
        match op {
            CollOp::Allgatherv | CollOp::Gatherv => args = args.with_recv(theirs_blocks),
            CollOp::Scatterv => args = args.with_send(theirs_blocks),
            CollOp::ReduceScatter => {
                args = args.with_recv(Blocks { counts: &my_layout.0, displs: &my_layout.1 })
            }
            _ => {}
        }
        let s = Schedule::inter(op, Ctx::new(r, l).unwrap(), rs, &args)
            .map_err(|e| format!("schedule: {e}"))?;
        schedules.push(s);
    }
    let stats = run(Topology::Inter { a: a as usize, b: b as usize }, schedules, &mut bufs, None)
        .map_err(|e| format!("run: {e}"))?;
    let waits_for_all = matches!(
        op,
        CollOp::Barrier
            | CollOp::Allreduce
            | CollOp::Allgather
            | CollOp::ReduceScatter
            | CollOp::ReduceScatterBlock
    );
    check_outcome(&stats, waits_for_all, &bufs, &c.expected)
}

const OPS: [CollOp; 13] = [
    CollOp::Barrier,
    CollOp::Bcast,
    CollOp::Reduce,
    CollOp::Allreduce,
    CollOp::Allgather,
    CollOp::Allgatherv,
    CollOp::Alltoall,
    CollOp::Gather,
    CollOp::Gatherv,
    CollOp::Scatter,
    CollOp::Scatterv,
    CollOp::ReduceScatter,
    CollOp::ReduceScatterBlock,
];

#[test]
fn inter_matrix() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let reductions = [
        (Op::Builtin(ReduceOp::Sum), Datatype::I64),
        (Op::Builtin(ReduceOp::MaxLoc), Datatype::PairF32I32),
        (Op::Builtin(ReduceOp::Band), Datatype::U16),
        (AFFINE, Datatype::U64),
    ];
    for (a, b) in PAIRS {
        for op in OPS {
            for count in [0usize, 1, 7, 10_000] {
                let mut roots: Vec<(bool, u32)> = Vec::new();
                if op.rooted() {
                    roots.extend((0..a).map(|r| (true, r)));
                    roots.extend((0..b).map(|r| (false, r)));
                } else {
                    roots.push((true, 0));
                }
                let ops: &[(Op, Datatype)] =
                    if op.reduces() { &reductions } else { &reductions[..1] };
                for &(root_in_a, root) in &roots {
                    for &(rop, dt) in ops {
                        checked += 1;
                        if let Err(e) = check_inter(op, a, b, root_in_a, root, count, rop, dt) {
                            failures.push(format!(
                                "{op} {a}+{b} root={root_in_a}/{root} count={count} {}: {e}",
                                rop.name()
                            ));
                        }
                    }
                }
            }
        }
    }
    assert_cases(checked, 500, &failures);
}

#[test]
fn alltoallv_between_groups() {
    for (a, b) in PAIRS {
        let n = (a + b) as usize;
        let f = |from: usize, to: usize| (from * 3 + to * 7) % 5;
        let mut layouts = Vec::new();
        for g in 0..n {
            let (in_a, _, _, _) = who(g, a, b);
            let theirs: Vec<usize> =
                if in_a { (a as usize..n).collect() } else { (0..a as usize).collect() };
            let sc: Vec<usize> = theirs.iter().map(|&t| f(g, t)).collect();
            let rc: Vec<usize> = theirs.iter().map(|&t| f(t, g)).collect();
            let sd: Vec<usize> = sc
                .iter()
                .scan(0, |at, c| {
                    let x = *at;
                    *at += c;
                    Some(x)
                })
                .collect();
            let rd: Vec<usize> = rc
                .iter()
                .scan(0, |at, c| {
                    let x = *at;
                    *at += c;
                    Some(x)
                })
                .collect();
            layouts.push((theirs, sc, sd, rc, rd));
        }
        let val =
            |from: usize, to: usize, i: usize| ((from * 1000 + to * 10 + i) as u32).to_ne_bytes();
        let mut bufs = Vec::new();
        let mut schedules = Vec::new();
        for g in 0..n {
            let (theirs, sc, _, rc, _) = &layouts[g];
            let send: Vec<u8> = theirs
                .iter()
                .zip(sc)
                .flat_map(|(&t, &c)| (0..c).flat_map(move |i| val(g, t, i)))
                .collect();
            let total: usize = rc.iter().sum();
            bufs.push(RankBufs { send, recv: vec![0; total * 4], scratch: Vec::new() });
        }
        for g in 0..n {
            let (in_a, r, l, rs) = who(g, a, b);
            let _ = in_a;
            let (_, sc, sd, rc, rd) = &layouts[g];
            let args = CollArgs::new(0, Datatype::U32)
                .with_send(Blocks { counts: sc, displs: sd })
                .with_recv(Blocks { counts: rc, displs: rd });
            schedules.push(
                Schedule::inter(CollOp::Alltoallv, Ctx::new(r, l).unwrap(), rs, &args).unwrap(),
            );
        }
        run(Topology::Inter { a: a as usize, b: b as usize }, schedules, &mut bufs, None).unwrap();
        for g in 0..n {
            let (theirs, _, _, rc, _) = &layouts[g];
            let want: Vec<u8> = theirs
                .iter()
                .zip(rc)
                .flat_map(|(&t, &c)| (0..c).flat_map(move |i| val(t, g, i)))
                .collect();
            assert_eq!(bufs[g].recv, want, "{a}+{b} rank {g}");
        }
    }
}

#[test]
fn scan_on_an_intercomm_is_a_clear_error() {
    let args = CollArgs::new(4, Datatype::I32);
    for op in [CollOp::Scan, CollOp::Exscan] {
        assert_eq!(
            Schedule::inter(op, Ctx::new(0, 3).unwrap(), 2, &args).unwrap_err(),
            CollError::NotOnInterComm(op)
        );
        let table =
            CollTable::select(&CommInfo::inter(0, 3, 2), &BUILTIN, &Control::none()).unwrap();
        assert_eq!(table.schedule(op, &args).unwrap_err(), CollError::NotOnInterComm(op));
        assert!(CollError::NotOnInterComm(op).to_string().contains(op.name()));
    }
    // An empty remote group is not a communicator: an error, not a crash.
    assert!(Schedule::inter(CollOp::Bcast, Ctx::new(0, 3).unwrap(), 0, &args).is_err());
}
