//! Hierarchical collectives (node-local + leaders + node-local) on uneven node layouts,
//! against the same references as the flat matrix; and the inter-node message counts.

mod coll_support;

use coll_support::*;
use commcore::coll::{
    tuned, Algorithm, CollArgs, CollError, CollOp, Ctx, Datatype, NodeLayout, Op, ReduceOp,
    Schedule,
};

const SIZES: [u32; 18] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 64];
const OPS: [CollOp; 5] =
    [CollOp::Barrier, CollOp::Bcast, CollOp::Reduce, CollOp::Allreduce, CollOp::Allgather];

/// Node ids: uneven blocks (sizes 3, 1, 2, 4, 3, 1, …), cyclic over 3 nodes, and a seeded
/// scatter over 4 nodes with ids out of order.
fn layouts(p: u32) -> Vec<(&'static str, Vec<u32>)> {
    let sizes = [3, 1, 2, 4];
    let mut uneven = Vec::new();
    let (mut node, mut left) = (0u32, sizes[0]);
    for _ in 0..p {
        if left == 0 {
            node += 1;
            left = sizes[node as usize % sizes.len()];
        }
        uneven.push(node);
        left -= 1;
    }
    let cyclic = (0..p).map(|r| r % 3).collect();
    let scattered = (0..p).map(|r| [40, 7, 19, 3][(r as usize * 7 + 3) % 5 % 4]).collect();
    vec![("uneven", uneven), ("cyclic3", cyclic), ("scattered", scattered)]
}

/// A layout with a `'static` lifetime, so schedule builders may hold it (test only).
fn leaked_layout(ids: &[u32]) -> Result<NodeLayout<'static>, String> {
    let storage = Box::leak(vec![0u32; 4 * ids.len() + 1].into_boxed_slice());
    NodeLayout::build(ids, storage).map_err(|e| e.to_string())
}

fn check_hier(
    op: CollOp,
    ids: &[u32],
    root: u32,
    count: usize,
    rop: Op,
    dt: Datatype,
) -> Result<(), String> {
    let p = ids.len() as u32;
    let layout = leaked_layout(ids)?;
    let make = maker(move |r, args| {
        Schedule::hier(op, r, layout, args).map_err(|e| format!("schedule: {e}"))
    });
    check_with(op, p, root, count, rop, dt, Some(ids), &make).map(|_| ())
}

#[test]
fn hierarchical_matrix() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let small: Vec<(Op, Datatype)> =
        op_types().into_iter().filter(|(o, _)| o.is_commutative()).collect();
    let large: Vec<(Op, Datatype)> =
        op_types_large().into_iter().filter(|(o, _)| o.is_commutative()).collect();
    for &p in &SIZES {
        for (name, ids) in layouts(p) {
            for op in OPS {
                for count in [0usize, 1, 7, 10_000] {
                    let roots: Vec<u32> = if !op.rooted() {
                        vec![0]
                    } else if count == 10_000 {
                        vec![0, p / 2, p - 1]
                    } else {
                        (0..p).collect()
                    };
                    let ops = match (op.reduces(), count) {
                        (false, _) => vec![(Op::Builtin(ReduceOp::Sum), Datatype::I32)],
                        (true, 10_000) => large.clone(),
                        (true, _) => small.clone(),
                    };
                    for &root in &roots {
                        for &(rop, dt) in &ops {
                            checked += 1;
                            if let Err(e) = check_hier(op, &ids, root, count, rop, dt) {
                                failures.push(format!(
                                    "{op} p={p} {name} root={root} count={count} {} {dt}: {e}",
                                    rop.name()
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    assert_cases(checked, 1000, &failures);
}

#[test]
fn hierarchical_reductions_refuse_non_commutative_ops() {
    let ids = [0, 1, 0, 1];
    let mut storage = [0u32; 17];
    let layout = NodeLayout::build(&ids, &mut storage).unwrap();
    let args = CollArgs::new(3, Datatype::U64).with_op(AFFINE);
    assert_eq!(
        Schedule::hier(CollOp::Allreduce, 0, layout, &args).unwrap_err(),
        CollError::NotCommutative(Algorithm::Hierarchical)
    );
}

/// Inter-node messages of `op` at 8 bytes: (hierarchical, flat as `tuned` picks it).
fn inter_node(op: CollOp, ids: &[u32]) -> (u64, u64) {
    let p = ids.len() as u32;
    let count = 1;
    let (rop, dt) = (Op::Builtin(ReduceOp::Sum), Datatype::F64);
    let layout = leaked_layout(ids).unwrap();
    let hier = maker(move |r, args| Schedule::hier(op, r, layout, args).map_err(|e| e.to_string()));
    let alg = tuned::decide(op, p, count * dt.size(), true);
    let flat = maker(move |r, args| {
        Schedule::intra(op, alg, Ctx::new(r, p).unwrap(), args).map_err(|e| e.to_string())
    });
    let h = check_with(op, p, 0, count, rop, dt, Some(ids), &hier).unwrap();
    let f = check_with(op, p, 0, count, rop, dt, Some(ids), &flat).unwrap();
    (h.inter_node_messages, f.inter_node_messages)
}

#[test]
fn hierarchy_cuts_inter_node_messages_on_64_ranks_over_8_nodes() {
    let block: Vec<u32> = (0..64).map(|r| r / 8).collect();
    let cyclic: Vec<u32> = (0..64).map(|r| r % 8).collect();
    for op in OPS {
        let (h, f) = inter_node(op, &block);
        assert!(h <= f, "{op} block: hier {h} > flat {f}");
        let (h, f) = inter_node(op, &cyclic);
        if matches!(op, CollOp::Bcast | CollOp::Reduce | CollOp::Allreduce) {
            assert!(4 * h <= f, "{op} cyclic: hier {h} vs flat {f}");
        }
    }
}
