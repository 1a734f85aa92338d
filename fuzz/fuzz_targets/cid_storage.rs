//! Arbitrary insert/remove/lookup sequences on every CID store, against a `BTreeMap`.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use commcore::cid::store::{
    CidStore, Flat, Folded, FoldedSlot, Radix, RadixInner, RadixLeaf, RbNode, RbTree, StoreError,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Key {
    /// Dense, the way allocation hands CIDs out.
    Low(u16),
    /// Any 32-bit CID, including the folded store's reserved keys.
    Any(u32),
}

impl Key {
    fn cid(self) -> u32 {
        match self {
            Key::Low(k) => u32::from(k % 2048),
            Key::Any(k) => k,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    Insert(Key, u32),
    Remove(Key),
    Get(Key),
}

fn check(store: &mut dyn CidStore<u32>, ops: &[Op]) {
    let mut model = BTreeMap::new();
    for &op in ops {
        match op {
            Op::Insert(key, handle) => {
                let cid = key.cid();
                match store.insert(cid, handle) {
                    Ok(()) => assert!(model.insert(cid, handle).is_none(), "{op:?}"),
                    Err(StoreError::Occupied) => assert!(model.contains_key(&cid), "{op:?}"),
                    Err(StoreError::Full | StoreError::OutOfRange) => {
                        assert!(!model.contains_key(&cid), "{op:?}")
                    }
                }
            }
            Op::Remove(key) => assert_eq!(store.remove(key.cid()), model.remove(&key.cid())),
            Op::Get(key) => assert_eq!(store.get(key.cid()), model.get(&key.cid()).copied()),
        }
        assert_eq!(store.len(), model.len());
        assert!(store.cells() >= store.len());
    }
    for (cid, handle) in &model {
        assert_eq!(store.get(*cid), Some(*handle));
    }
}

fuzz_target!(|ops: Vec<Op>| {
    // Small storage, so that running out is exercised too.
    let mut flat = vec![None; 1024];
    check(&mut Flat::new(&mut flat), &ops);
    let mut inners = vec![RadixInner::EMPTY; 12];
    let mut leaves = vec![RadixLeaf::EMPTY; 6];
    check(&mut Radix::new(&mut inners, &mut leaves), &ops);
    let mut nodes = vec![RbNode::EMPTY; 300];
    check(&mut RbTree::new(&mut nodes), &ops);
    let mut arena = vec![FoldedSlot::empty(); 512];
    check(&mut Folded::new(&mut arena), &ops);
});
