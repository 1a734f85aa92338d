//! A four-level radix array on the CID's bytes, with chunks released when they empty.

use core::mem::size_of;

use super::{CidStore, StoreError};
use crate::cid::Cid;

const FANOUT: usize = 256;
const NONE: u16 = 0;

/// An interior chunk: 256 links (pool index + 1, 0 for none) and a count of live links.
#[derive(Clone, Debug)]
pub struct RadixInner {
    links: [u16; FANOUT],
    count: u16,
}

impl RadixInner {
    /// An unused chunk, to fill a pool with.
    pub const EMPTY: Self = Self { links: [NONE; FANOUT], count: 0 };
}

/// A leaf chunk: 256 handles and a count of live ones.
#[derive(Clone, Debug)]
pub struct RadixLeaf<H> {
    slots: [Option<H>; FANOUT],
    count: u16,
}

impl<H: Copy> RadixLeaf<H> {
    /// An unused chunk, to fill a pool with.
    pub const EMPTY: Self = Self { slots: [None; FANOUT], count: 0 };
}

/// The CID's bytes k3 k2 k1 k0 index a root chunk, two interior levels and a leaf. A
/// chunk is taken from its pool when a CID first falls in it and returned when its count
/// drops to zero. Pools hold at most 65,535 chunks each.
#[derive(Debug)]
pub struct Radix<'a, H> {
    root: RadixInner,
    inners: &'a mut [RadixInner],
    leaves: &'a mut [RadixLeaf<H>],
    /// Free chunks, as a stack of pool indices kept in each pool's unused `count` fields.
    free_inner: FreeList,
    free_leaf: FreeList,
    len: usize,
}

#[derive(Debug)]
struct FreeList {
    /// Chunks never handed out start at `fresh`; returned ones are stacked in `stack_top`
    /// and linked through their `count` field.
    fresh: usize,
    stack_top: u16,
    available: usize,
}

impl FreeList {
    fn new(capacity: usize) -> Self {
        Self { fresh: 0, stack_top: NONE, available: capacity }
    }
}

#[inline]
fn key_bytes(cid: Cid) -> [usize; 4] {
    let b = cid.to_be_bytes();
    [b[0] as usize, b[1] as usize, b[2] as usize, b[3] as usize]
}

impl<'a, H: Copy> Radix<'a, H> {
    /// A store over the caller's chunk pools; at most 65,535 chunks of each are used.
    pub fn new(inners: &'a mut [RadixInner], leaves: &'a mut [RadixLeaf<H>]) -> Self {
        let inner_cap = inners.len().min(u16::MAX as usize);
        let leaf_cap = leaves.len().min(u16::MAX as usize);
        Self {
            root: RadixInner::EMPTY,
            inners,
            leaves,
            free_inner: FreeList::new(inner_cap),
            free_leaf: FreeList::new(leaf_cap),
            len: 0,
        }
    }

    /// Chunks in use: (interior chunks besides the root, leaves).
    pub fn chunks(&self) -> (usize, usize) {
        (
            self.inners.len().min(u16::MAX as usize) - self.free_inner.available,
            self.leaves.len().min(u16::MAX as usize) - self.free_leaf.available,
        )
    }

    fn take_inner(&mut self) -> u16 {
        let list = &mut self.free_inner;
        list.available -= 1;
        if list.stack_top != NONE {
            let link = list.stack_top;
            list.stack_top = self.inners[link as usize - 1].count;
            self.inners[link as usize - 1] = RadixInner::EMPTY;
            link
        } else {
            list.fresh += 1;
            self.inners[list.fresh - 1] = RadixInner::EMPTY;
            list.fresh as u16
        }
    }

    fn take_leaf(&mut self) -> u16 {
        let list = &mut self.free_leaf;
        list.available -= 1;
        if list.stack_top != NONE {
            let link = list.stack_top;
            list.stack_top = self.leaves[link as usize - 1].count;
            self.leaves[link as usize - 1] = RadixLeaf::EMPTY;
            link
        } else {
            list.fresh += 1;
            self.leaves[list.fresh - 1] = RadixLeaf::EMPTY;
            list.fresh as u16
        }
    }

    fn give_inner(&mut self, link: u16) {
        self.inners[link as usize - 1].count = self.free_inner.stack_top;
        self.free_inner.stack_top = link;
        self.free_inner.available += 1;
    }

    fn give_leaf(&mut self, link: u16) {
        self.leaves[link as usize - 1].count = self.free_leaf.stack_top;
        self.free_leaf.stack_top = link;
        self.free_leaf.available += 1;
    }

    /// The links to `cid`'s second-level, third-level and leaf chunks (NONE where absent).
    #[inline]
    fn path(&self, k: [usize; 4]) -> [u16; 3] {
        let l2 = self.root.links[k[0]];
        if l2 == NONE {
            return [NONE; 3];
        }
        let l1 = self.inners[l2 as usize - 1].links[k[1]];
        if l1 == NONE {
            return [l2, NONE, NONE];
        }
        [l2, l1, self.inners[l1 as usize - 1].links[k[2]]]
    }
}

impl<H: Copy> CidStore<H> for Radix<'_, H> {
    fn insert(&mut self, cid: Cid, handle: H) -> Result<(), StoreError> {
        let k = key_bytes(cid);
        let [mut l2, mut l1, mut leaf] = self.path(k);
        let inner_needed = usize::from(l2 == NONE) + usize::from(l1 == NONE);
        if self.free_inner.available < inner_needed
            || (leaf == NONE && self.free_leaf.available == 0)
        {
            return Err(StoreError::Full);
        }
        if leaf != NONE && self.leaves[leaf as usize - 1].slots[k[3]].is_some() {
            return Err(StoreError::Occupied);
        }
        if l2 == NONE {
            l2 = self.take_inner();
            self.root.links[k[0]] = l2;
            self.root.count += 1;
        }
        if l1 == NONE {
            l1 = self.take_inner();
            let parent = &mut self.inners[l2 as usize - 1];
            parent.links[k[1]] = l1;
            parent.count += 1;
        }
        if leaf == NONE {
            leaf = self.take_leaf();
            let parent = &mut self.inners[l1 as usize - 1];
            parent.links[k[2]] = leaf;
            parent.count += 1;
        }
        let chunk = &mut self.leaves[leaf as usize - 1];
        chunk.slots[k[3]] = Some(handle);
        chunk.count += 1;
        self.len += 1;
        Ok(())
    }

    fn remove(&mut self, cid: Cid) -> Option<H> {
        let k = key_bytes(cid);
        let [l2, l1, leaf] = self.path(k);
        if leaf == NONE {
            return None;
        }
        let chunk = &mut self.leaves[leaf as usize - 1];
        let handle = chunk.slots[k[3]].take()?;
        chunk.count -= 1;
        self.len -= 1;
        if chunk.count == 0 {
            self.give_leaf(leaf);
            let parent = &mut self.inners[l1 as usize - 1];
            parent.links[k[2]] = NONE;
            parent.count -= 1;
            if parent.count == 0 {
                self.give_inner(l1);
                let grand = &mut self.inners[l2 as usize - 1];
                grand.links[k[1]] = NONE;
                grand.count -= 1;
                if grand.count == 0 {
                    self.give_inner(l2);
                    self.root.links[k[0]] = NONE;
                    self.root.count -= 1;
                }
            }
        }
        Some(handle)
    }

    #[inline]
    fn get(&self, cid: Cid) -> Option<H> {
        let k = key_bytes(cid);
        let leaf = self.path(k)[2];
        if leaf == NONE {
            return None;
        }
        self.leaves[leaf as usize - 1].slots[k[3]]
    }

    fn len(&self) -> usize {
        self.len
    }

    fn cells(&self) -> usize {
        self.chunks().1 * FANOUT
    }

    fn bytes(&self) -> usize {
        let (inners, leaves) = self.chunks();
        (inners + 1) * size_of::<RadixInner>() + leaves * size_of::<RadixLeaf<H>>()
    }
}
