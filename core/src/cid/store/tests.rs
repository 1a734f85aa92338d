//! Every store against a `BTreeMap` on the same operations.

use std::collections::BTreeMap;
use std::vec;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;

#[derive(Clone, Copy, Debug)]
enum Op {
    Insert(Cid, u32),
    Remove(Cid),
    Get(Cid),
}

/// Runs `ops` on `store` and a reference map; every answer and the length must agree.
fn check_against_map(store: &mut dyn CidStore<u32>, ops: &[Op]) {
    let mut model = BTreeMap::new();
    for &op in ops {
        match op {
            Op::Insert(cid, handle) => {
                let got = store.insert(cid, handle);
                match got {
                    Ok(()) => assert!(model.insert(cid, handle).is_none(), "{op:?}"),
                    Err(StoreError::Occupied) => assert!(model.contains_key(&cid), "{op:?}"),
                    Err(StoreError::Full | StoreError::OutOfRange) => {
                        assert!(!model.contains_key(&cid), "{op:?}")
                    }
                }
            }
            Op::Remove(cid) => assert_eq!(store.remove(cid), model.remove(&cid), "{op:?}"),
            Op::Get(cid) => assert_eq!(store.get(cid), model.get(&cid).copied(), "{op:?}"),
        }
        assert_eq!(store.len(), model.len());
        assert!(store.cells() >= store.len());
    }
    for (cid, handle) in &model {
        assert_eq!(store.get(*cid), Some(*handle));
    }
}

fn run_all(ops: &[Op]) {
    let mut flat_slots = vec![None; 4096];
    check_against_map(&mut Flat::new(&mut flat_slots), ops);
    let mut inners = vec![RadixInner::EMPTY; 64];
    let mut leaves = vec![RadixLeaf::EMPTY; 64];
    check_against_map(&mut Radix::new(&mut inners, &mut leaves), ops);
    let mut nodes = vec![RbNode::EMPTY; 600];
    let mut tree = RbTree::new(&mut nodes);
    check_against_map(&mut tree, ops);
    tree.check();
    let mut arena = vec![FoldedSlot::empty(); 1024];
    check_against_map(&mut Folded::new(&mut arena), ops);
}

fn ops_from(seed: u64, count: usize, key_bits: u32) -> Vec<Op> {
    // A small xorshift keeps this test free of dependencies and fast under miri.
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..count)
        .map(|_| {
            let r = next();
            let cid = (r >> 8) as Cid & ((1 << key_bits) - 1);
            match r % 5 {
                0 | 1 => Op::Insert(cid, r as u32),
                2 => Op::Remove(cid),
                _ => Op::Get(cid),
            }
        })
        .collect()
}

/// Fewer operations under miri, which runs them a thousand times slower.
const SCALE: usize = if cfg!(miri) { 10 } else { 1 };
/// Fewer still where nearly every insert rebuilds the folded store.
const REBUILD_SCALE: usize = if cfg!(miri) { 60 } else { 1 };

#[test]
fn stores_agree_with_a_map_on_dense_keys() {
    run_all(&ops_from(7, 3000 / SCALE, 9));
}

#[test]
fn stores_agree_with_a_map_on_spread_keys() {
    run_all(&ops_from(11, 2000 / SCALE, 16));
    run_all(&[
        Op::Insert(Cid::MAX, 1),
        Op::Get(Cid::MAX),
        Op::Insert(0x0102_0304, 2),
        Op::Get(0x0102_0304),
    ]);
    // A removed slot at the home of a marker key must not answer for it (found by the
    // fuzz target).
    let tombstone_home = (Cid::MAX - 1) & 7;
    run_all(&[
        Op::Insert(tombstone_home, 1),
        Op::Remove(tombstone_home),
        Op::Get(Cid::MAX - 1),
        Op::Get(Cid::MAX),
        Op::Remove(Cid::MAX - 1),
    ]);
}

#[test]
fn full_storage_is_an_error_not_a_panic() {
    let mut none: [Option<u32>; 0] = [];
    assert_eq!(Flat::new(&mut none).insert(0, 1), Err(StoreError::OutOfRange));
    let mut inners = [RadixInner::EMPTY; 2];
    let mut leaves = [RadixLeaf::EMPTY; 1];
    let mut radix = Radix::new(&mut inners, &mut leaves);
    radix.insert(1, 1).unwrap();
    assert_eq!(radix.insert(300, 1), Err(StoreError::Full));
    assert_eq!(radix.remove(1), Some(1));
    assert_eq!(radix.chunks(), (0, 0));
    radix.insert(300, 1).unwrap();
    let mut nodes = [RbNode::EMPTY; 3];
    let mut tree = RbTree::new(&mut nodes);
    tree.insert(5, 1).unwrap();
    tree.insert(6, 1).unwrap();
    assert_eq!(tree.insert(7, 1), Err(StoreError::Full));
    let mut empty_nodes: [RbNode<u32>; 0] = [];
    assert_eq!(RbTree::new(&mut empty_nodes).insert(1, 1), Err(StoreError::Full));
    let mut arena = [FoldedSlot::empty(); 32];
    let mut folded = Folded::new(&mut arena);
    let stored = (0..32).take_while(|&cid| folded.insert(cid * 7, cid).is_ok()).count() as u32;
    assert!((8..32).contains(&stored), "{stored}");
    assert_eq!(folded.insert(stored * 7, 0), Err(StoreError::Full));
    assert!((0..stored).all(|cid| folded.get(cid * 7) == Some(cid)));
    let mut tiny = [FoldedSlot::<u32>::empty(); 3];
    assert_eq!(Folded::new(&mut tiny).insert(1, 1), Err(StoreError::Full));
    assert_eq!(Folded::new(&mut tiny).get(1), None);
}

#[test]
fn radix_releases_empty_chunks_and_folded_follows_live_count() {
    let mut inners = vec![RadixInner::EMPTY; 8];
    let mut leaves = vec![RadixLeaf::EMPTY; 8];
    let mut radix = Radix::new(&mut inners, &mut leaves);
    for cid in [3, 700, 70_000, 0x0300_0000] {
        radix.insert(cid, cid).unwrap();
    }
    assert_eq!(radix.chunks(), (5, 4));
    for cid in [700, 70_000, 0x0300_0000] {
        radix.remove(cid).unwrap();
    }
    assert_eq!(radix.chunks(), (2, 1));

    let count = 1000 / REBUILD_SCALE as u32;
    let mut arena = vec![FoldedSlot::empty(); 1 << 12];
    let mut folded = Folded::new(&mut arena);
    for cid in 0..count {
        folded.insert(cid * 50, cid).unwrap();
    }
    // Spread CIDs (a stride sharing a factor of two with the home range) still fit in at
    // most four cells a CID.
    assert!(folded.cells() <= 4 * folded.len(), "{} cells", folded.cells());
    for cid in 0..count - 10 {
        folded.remove(cid * 50).unwrap();
    }
    assert!(folded.cells() <= 4 * folded.len().max(8), "{}", folded.cells());
    assert_eq!(folded.get((count - 5) * 50), Some(count - 5));
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let cid = prop_oneof![0..600u32, 0..70_000u32, any::<u32>()];
    prop_oneof![
        (cid.clone(), any::<u32>()).prop_map(|(c, h)| Op::Insert(c, h)),
        cid.clone().prop_map(Op::Remove),
        cid.prop_map(Op::Get),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    #[cfg_attr(miri, ignore)]
    fn stores_agree_with_a_map_on_any_sequence(ops in proptest::collection::vec(op_strategy(), 0..400)) {
        run_all(&ops);
    }
}

#[test]
// Rebuild-heavy: minutes under miri; core has no unsafe code for it to check here, and
// these run natively and in the fuzz target.
#[cfg_attr(miri, ignore)]
fn folded_in_a_tight_arena_agrees_with_a_map() {
    // Near capacity every insert may rebuild or be refused; nothing may be lost.
    for (seed, bits) in [(3, 5), (5, 7), (9, 12)] {
        for arena_len in [16, 24, 40, 64] {
            let mut arena = std::vec![FoldedSlot::empty(); arena_len];
            check_against_map(
                &mut Folded::new(&mut arena),
                &ops_from(seed, 1500 / REBUILD_SCALE, bits),
            );
        }
    }
}

#[test]
// Rebuild-heavy: minutes under miri; core has no unsafe code for it to check here, and
// these run natively and in the fuzz target.
#[cfg_attr(miri, ignore)]
fn folded_stashes_few_spread_cids_and_stays_near_two_cells_a_cid() {
    // Spread CIDs as the highest-CID algorithm leaves them after many frees.
    let mut arena = vec![FoldedSlot::empty(); 1 << 15];
    let mut folded = Folded::new(&mut arena);
    let cids: Vec<Cid> = ops_from(13, 4000 / SCALE, 13)
        .into_iter()
        .filter_map(|op| match op {
            Op::Insert(cid, _) => Some(cid),
            _ => None,
        })
        .collect();
    let mut live = BTreeMap::new();
    for &cid in &cids {
        if folded.insert(cid, cid ^ 0x5A5A).is_ok() {
            live.insert(cid, cid ^ 0x5A5A);
        }
    }
    assert!(live.len() > 400 / SCALE, "{}", live.len());
    assert!(folded.displaced() <= live.len() / 32 + 1, "{} stashed", folded.displaced());
    assert!(folded.cells() <= 3 * live.len(), "{} cells", folded.cells());
    assert!(live.iter().all(|(cid, handle)| folded.get(*cid) == Some(*handle)));
    let stashed = live.keys().filter(|&&cid| folded.is_displaced(cid)).count();
    assert_eq!(stashed, folded.displaced());
    assert!(!folded.is_displaced((0..).find(|cid| !live.contains_key(cid)).unwrap_or(0)));
}

#[test]
fn folded_keeps_low_cids_whose_low_bits_collide_in_a_range_up_to_the_highest() {
    let mut arena = vec![FoldedSlot::empty(); 256];
    let mut folded = Folded::new(&mut arena);
    // Seven CIDs: 0 and 8, 1 and 9 share their three low bits, so eight home cells do not
    // serve; the ten cells up to CID 9 do, one load each like a flat array.
    let cids = [0, 1, 2, 3, 4, 8, 9];
    for cid in cids {
        folded.insert(cid, cid + 100).unwrap();
    }
    assert_eq!(folded.cells(), 10);
    assert_eq!(folded.displaced(), 0);
    assert!(cids.iter().all(|&cid| folded.get(cid) == Some(cid + 100)));
    assert!([5, 6, 7, 10, 16, 17].iter().all(|&cid| folded.get(cid).is_none()));
    // A CID past the range grows it.
    folded.insert(12, 112).unwrap();
    assert_eq!(folded.cells(), 13);
    assert_eq!(folded.remove(8), Some(108));
    assert!(folded.get(8).is_none() && folded.get(12) == Some(112));
}
