//! Seeded random cases beyond the fixed matrix: random node layouts for the hierarchical
//! collectives and random sizes, roots and counts for every flat algorithm.

mod coll_support;

use coll_support::*;
use commcore::coll::{CollOp, NodeLayout, Schedule};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[test]
fn random_node_layouts() {
    let mut rng = ChaCha8Rng::seed_from_u64(0xC011);
    let ops = op_types();
    for case in 0..1000 {
        let p: u32 = rng.gen_range(1..=40);
        let nodes: u32 = rng.gen_range(1..=p.min(9));
        let ids: Vec<u32> = (0..p).map(|_| rng.gen_range(0..nodes) * 1000 + 7).collect();
        let storage = Box::leak(vec![0u32; 4 * ids.len() + 1].into_boxed_slice());
        let layout = NodeLayout::build(&ids, storage).unwrap();
        let op =
            [CollOp::Barrier, CollOp::Bcast, CollOp::Reduce, CollOp::Allreduce, CollOp::Allgather]
                [rng.gen_range(0..5)];
        let (rop, dt) = loop {
            let c = ops[rng.gen_range(0..ops.len())];
            if c.0.is_commutative() {
                break c;
            }
        };
        let count = [0, 1, 3, 17, 1000][rng.gen_range(0..5)];
        let root = rng.gen_range(0..p);
        let make =
            maker(move |r, args| Schedule::hier(op, r, layout, args).map_err(|e| e.to_string()));
        check_with(op, p, root, count, rop, dt, Some(&ids), &make).unwrap_or_else(|e| {
            panic!("case {case}: {op} p={p} ids={ids:?} root={root} count={count}: {e}")
        });
    }
}

#[test]
fn random_flat_cases() {
    let mut rng = ChaCha8Rng::seed_from_u64(0xF1A7);
    let ops = op_types();
    let mut checked = 0;
    for case in 0..4000 {
        let op = CollOp::ALL[rng.gen_range(0..CollOp::COUNT)];
        let algs = algorithms(op);
        let alg = algs[rng.gen_range(0..algs.len())];
        let p: u32 = rng.gen_range(1..=48);
        let (rop, dt) = ops[rng.gen_range(0..ops.len())];
        if op.reduces() && alg.reorders() && !rop.is_commutative() {
            continue;
        }
        let count = rng.gen_range(0..=2000);
        let root = rng.gen_range(0..p);
        checked += 1;
        check_intra(op, alg, p, root, count, rop, dt).unwrap_or_else(|e| {
            panic!(
                "case {case}: {op} {} p={p} root={root} count={count} {} {dt}: {e}",
                alg.name(),
                rop.name()
            )
        });
    }
    assert!(checked > 3000);
}
