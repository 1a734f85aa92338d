//! The correctness matrix: every collective × flat algorithm × communicator size 1–17 and
//! 64 × every root × counts 0, 1, 7 and 10,000 × every valid op and datatype, against a
//! reference computed directly. At count 10,000 the reducing collectives use a
//! representative op set per datatype and the rooted ones roots 0, size/2 and size-1
//! (the full product there would take hours on two cores).

mod coll_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use coll_support::*;
use commcore::coll::{CollArgs, CollError, CollOp, Ctx, Datatype, Op, ReduceOp, Schedule};

const SIZES: [u32; 18] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 64];

type Case = (CollOp, commcore::coll::Algorithm, u32, u32, usize, Op, Datatype);

fn cases(large: bool) -> Vec<Case> {
    let mut out = Vec::new();
    let counts: &[usize] = if large { &[10_000] } else { &[0, 1, 7] };
    for op in CollOp::ALL {
        for alg in algorithms(op) {
            for &p in &SIZES {
                let roots = if large && op.rooted() {
                    let mut r = vec![0, p / 2, p - 1];
                    r.dedup();
                    r
                } else {
                    roots(op, p)
                };
                let ops = if !op.reduces() {
                    vec![(Op::Builtin(ReduceOp::Sum), Datatype::I32)]
                } else if large {
                    op_types_large()
                } else {
                    op_types()
                };
                for &root in &roots {
                    for &count in counts {
                        for &(rop, dt) in &ops {
                            out.push((op, alg, p, root, count, rop, dt));
                        }
                    }
                }
            }
        }
    }
    out
}

fn run_cases(cases: Vec<Case>) {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let checked = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(4);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(op, alg, p, root, count, rop, dt)) = cases.get(i) else { break };
                let result = check_intra(op, alg, p, root, count, rop, dt);
                let refused = matches!(&result, Err(e) if e.contains("needs a commutative"));
                if refused && alg.reorders() && !rop.is_commutative() {
                    continue;
                }
                checked.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = result {
                    let mut f = failures.lock().unwrap();
                    if f.len() < 30 {
                        f.push(format!(
                            "{op} {} p={p} root={root} count={count} {} {dt}: {e}",
                            alg.name(),
                            rop.name()
                        ));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{} failures, first:\n{}", failures.len(), failures.join("\n"));
    let checked = checked.load(Ordering::Relaxed);
    eprintln!("{checked} of {} cases checked (the rest: reordering algorithms refusing a non-commutative op)", cases.len());
    assert!(checked > 0);
}

#[test]
fn matrix_small_counts() {
    run_cases(cases(false));
}

#[test]
fn matrix_count_10000() {
    run_cases(cases(true));
}

#[test]
fn reordering_algorithms_refuse_non_commutative_ops() {
    let args = CollArgs::new(4, Datatype::U64).with_op(AFFINE);
    let ctx = Ctx::new(0, 5).unwrap();
    let err = Schedule::intra(CollOp::Allreduce, commcore::coll::Algorithm::Ring, ctx, &args)
        .unwrap_err();
    assert_eq!(err, CollError::NotCommutative(commcore::coll::Algorithm::Ring));
}

#[test]
fn bad_arguments_are_errors() {
    let ctx = Ctx::new(1, 4).unwrap();
    let args = CollArgs::new(4, Datatype::F32).with_op(Op::Builtin(ReduceOp::Band));
    assert!(matches!(
        Schedule::intra(
            CollOp::Allreduce,
            commcore::coll::Algorithm::RecursiveDoubling,
            ctx,
            &args
        ),
        Err(CollError::OpDatatype("band", Datatype::F32))
    ));
    let args = CollArgs::new(4, Datatype::I32).with_root(commcore::coll::Root::Rank(4));
    assert_eq!(
        Schedule::intra(CollOp::Bcast, commcore::coll::Algorithm::Binomial, ctx, &args)
            .unwrap_err(),
        CollError::BadRoot
    );
    // The root of a gatherv needs everyone's counts.
    let args = CollArgs::new(4, Datatype::I32).with_root(commcore::coll::Root::Rank(1));
    assert_eq!(
        Schedule::intra(CollOp::Gatherv, commcore::coll::Algorithm::Linear, ctx, &args)
            .unwrap_err(),
        CollError::BadBlocks
    );
    let args = CollArgs::new(usize::MAX / 2, Datatype::I64);
    assert_eq!(
        Schedule::intra(CollOp::Bcast, commcore::coll::Algorithm::Binomial, ctx, &args)
            .unwrap_err(),
        CollError::TooLarge
    );
    assert!(Ctx::new(4, 4).is_err());
}

#[test]
fn gatherv_and_scatterv_need_counts_only_at_the_root() {
    use commcore::coll::{Algorithm, Blocks, Root};
    use commcore_sim::coll_exec::{run, RankBufs, Topology};
    let p = 7u32;
    let counts: Vec<usize> = (0..p as usize).map(|r| r % 3).collect();
    let displs: Vec<usize> =
        counts.iter().scan(0, |at, c| Some(std::mem::replace(at, *at + c))).collect();
    let total: usize = counts.iter().sum();
    for root in 0..p {
        for scatter in [false, true] {
            let op = if scatter { CollOp::Scatterv } else { CollOp::Gatherv };
            let mut bufs: Vec<RankBufs> = (0..p as usize)
                .map(|r| {
                    let mine: Vec<u8> = (0..counts[r] as u8).map(|i| 10 * r as u8 + i).collect();
                    let full: Vec<u8> = (0..p as usize)
                        .flat_map(|j| (0..counts[j] as u8).map(move |i| 10 * j as u8 + i))
                        .collect();
                    match (scatter, r as u32 == root) {
                        (false, true) => {
                            RankBufs { send: mine, recv: vec![0; total], scratch: vec![] }
                        }
                        (false, false) => RankBufs { send: mine, recv: vec![], scratch: vec![] },
                        (true, true) => {
                            RankBufs { send: full, recv: vec![0; counts[r]], scratch: vec![] }
                        }
                        (true, false) => {
                            RankBufs { send: vec![], recv: vec![0; counts[r]], scratch: vec![] }
                        }
                    }
                })
                .collect();
            let blocks = Blocks { counts: &counts, displs: &displs };
            let schedules = (0..p)
                .map(|r| {
                    let mut args =
                        CollArgs::new(counts[r as usize], Datatype::U8).with_root(Root::Rank(root));
                    if r == root {
                        args =
                            if scatter { args.with_send(blocks) } else { args.with_recv(blocks) };
                    }
                    Schedule::intra(op, Algorithm::Linear, Ctx::new(r, p).unwrap(), &args).unwrap()
                })
                .collect();
            run(Topology::Intra { size: p as usize }, schedules, &mut bufs, None).unwrap();
            for r in 0..p as usize {
                let mine: Vec<u8> = (0..counts[r] as u8).map(|i| 10 * r as u8 + i).collect();
                if scatter {
                    assert_eq!(bufs[r].recv, mine, "root {root} rank {r}");
                } else if r as u32 == root {
                    let full: Vec<u8> = (0..p as usize)
                        .flat_map(|j| (0..counts[j] as u8).map(move |i| 10 * j as u8 + i))
                        .collect();
                    assert_eq!(bufs[r].recv, full, "root {root}");
                }
            }
        }
    }
}
