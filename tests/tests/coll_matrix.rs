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
    assert!(checked.load(Ordering::Relaxed) > 0);
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
    let args = CollArgs::new(4, Datatype::I32);
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
