//! A red-black tree over a caller node pool: dense memory, up to 2 log n loads a lookup.

use core::mem::size_of;

use super::{CidStore, StoreError};
use crate::cid::Cid;

/// Index 0 of the pool is the shared leaf (nil) of the textbook formulation.
const NIL: u32 = 0;
/// Child sides: the fix-ups are written once for a side and run mirrored for the other.
const LEFT: usize = 0;
const RIGHT: usize = 1;

/// One tree node; the caller's pool is a slice of these.
#[derive(Clone, Copy, Debug)]
pub struct RbNode<H> {
    key: Cid,
    value: Option<H>,
    /// Left and right children, indexed by [`LEFT`] and [`RIGHT`].
    child: [u32; 2],
    parent: u32,
    red: bool,
}

impl<H: Copy> RbNode<H> {
    /// An unused node, to fill a pool with.
    pub const EMPTY: Self = Self { key: 0, value: None, child: [NIL; 2], parent: NIL, red: false };
}

/// A red-black tree keyed by CID. Node 0 of the pool is the nil sentinel, so a pool of
/// `n` nodes holds `n - 1` communicators. Freed nodes are chained through their right child.
#[derive(Debug)]
pub struct RbTree<'a, H> {
    nodes: &'a mut [RbNode<H>],
    root: u32,
    free: u32,
    fresh: u32,
    len: usize,
}

impl<'a, H: Copy> RbTree<'a, H> {
    /// A tree over `nodes` (at most `u32::MAX` are used).
    pub fn new(nodes: &'a mut [RbNode<H>]) -> Self {
        if let Some(nil) = nodes.first_mut() {
            *nil = RbNode::EMPTY;
        }
        Self { nodes, root: NIL, free: NIL, fresh: 1, len: 0 }
    }

    /// The depth of the deepest node (0 when empty): what a worst lookup walks.
    pub fn height(&self) -> usize {
        fn depth<H>(nodes: &[RbNode<H>], at: u32) -> usize {
            if at == NIL {
                0
            } else {
                let n = &nodes[at as usize];
                1 + depth(nodes, n.child[LEFT]).max(depth(nodes, n.child[RIGHT]))
            }
        }
        depth(self.nodes, self.root)
    }

    fn find(&self, cid: Cid) -> u32 {
        let mut at = self.root;
        while at != NIL {
            let node = &self.nodes[at as usize];
            if cid == node.key {
                return at;
            }
            at = if cid < node.key { node.child[LEFT] } else { node.child[RIGHT] };
        }
        NIL
    }

    fn alloc(&mut self) -> Option<u32> {
        if self.free != NIL {
            let at = self.free;
            self.free = self.nodes[at as usize].child[RIGHT];
            Some(at)
        } else if (self.fresh as usize) < self.nodes.len() && self.fresh < u32::MAX {
            self.fresh += 1;
            Some(self.fresh - 1)
        } else {
            None
        }
    }

    fn up(&self, at: u32) -> u32 {
        self.nodes[at as usize].parent
    }

    fn n(&mut self, at: u32) -> &mut RbNode<H> {
        &mut self.nodes[at as usize]
    }

    /// Rotates at `x` towards `side`: its child on the other side takes its place and
    /// `x` becomes that child's `side` child.
    fn rotate(&mut self, x: u32, side: usize) {
        let other = 1 - side;
        let y = self.n(x).child[other];
        let inner = self.n(y).child[side];
        self.n(x).child[other] = inner;
        if inner != NIL {
            self.n(inner).parent = x;
        }
        let xp = self.n(x).parent;
        self.n(y).parent = xp;
        if xp == NIL {
            self.root = y;
        } else {
            let at = self.side_of(x, xp);
            self.n(xp).child[at] = y;
        }
        self.n(y).child[side] = x;
        self.n(x).parent = y;
    }

    /// Which child of `parent` the node `at` is.
    fn side_of(&self, at: u32, parent: u32) -> usize {
        if at == self.nodes[parent as usize].child[LEFT] {
            LEFT
        } else {
            RIGHT
        }
    }

    fn insert_fixup(&mut self, mut z: u32) {
        while self.n(self.up(z)).red {
            let p = self.n(z).parent;
            let g = self.n(p).parent;
            let side = self.side_of(p, g);
            let other = 1 - side;
            let uncle = self.n(g).child[other];
            if self.n(uncle).red {
                self.n(p).red = false;
                self.n(uncle).red = false;
                self.n(g).red = true;
                z = g;
            } else {
                if z == self.n(p).child[other] {
                    z = p;
                    self.rotate(z, side);
                }
                let p = self.n(z).parent;
                let g = self.n(p).parent;
                self.n(p).red = false;
                self.n(g).red = true;
                self.rotate(g, other);
            }
        }
        let root = self.root;
        self.n(root).red = false;
    }

    fn transplant(&mut self, u: u32, v: u32) {
        let up = self.n(u).parent;
        if up == NIL {
            self.root = v;
        } else if u == self.n(up).child[LEFT] {
            self.n(up).child[LEFT] = v;
        } else {
            self.n(up).child[RIGHT] = v;
        }
        // The sentinel's parent is written on purpose: the fix-up walks up from it.
        self.n(v).parent = up;
    }

    fn minimum(&mut self, mut at: u32) -> u32 {
        while self.n(at).child[LEFT] != NIL {
            at = self.n(at).child[LEFT];
        }
        at
    }

    fn delete(&mut self, z: u32) {
        let mut y = z;
        let mut y_was_red = self.n(y).red;
        let x;
        if self.n(z).child[LEFT] == NIL {
            x = self.n(z).child[RIGHT];
            self.transplant(z, x);
        } else if self.n(z).child[RIGHT] == NIL {
            x = self.n(z).child[LEFT];
            self.transplant(z, x);
        } else {
            y = self.minimum(self.nodes[z as usize].child[RIGHT]);
            y_was_red = self.n(y).red;
            x = self.n(y).child[RIGHT];
            if self.n(y).parent == z {
                self.n(x).parent = y;
            } else {
                self.transplant(y, x);
                let zr = self.n(z).child[RIGHT];
                self.n(y).child[RIGHT] = zr;
                self.n(zr).parent = y;
            }
            self.transplant(z, y);
            let zl = self.n(z).child[LEFT];
            self.n(y).child[LEFT] = zl;
            self.n(zl).parent = y;
            self.n(y).red = self.n(z).red;
        }
        if !y_was_red {
            self.delete_fixup(x);
        }
        let nil = self.n(NIL);
        nil.parent = NIL;
        nil.red = false;
    }

    fn delete_fixup(&mut self, mut x: u32) {
        while x != self.root && !self.n(x).red {
            let p = self.n(x).parent;
            let side = self.side_of(x, p);
            let other = 1 - side;
            let mut w = self.n(p).child[other];
            if self.n(w).red {
                self.n(w).red = false;
                self.n(p).red = true;
                self.rotate(p, side);
                w = self.n(self.up(x)).child[other];
            }
            let [near, far] = [self.n(w).child[side], self.n(w).child[other]];
            if !self.n(near).red && !self.n(far).red {
                self.n(w).red = true;
                x = self.n(x).parent;
            } else {
                if !self.n(far).red {
                    self.n(near).red = false;
                    self.n(w).red = true;
                    self.rotate(w, other);
                    w = self.n(self.up(x)).child[other];
                }
                let p = self.n(x).parent;
                self.n(w).red = self.n(p).red;
                self.n(p).red = false;
                let far = self.n(w).child[other];
                self.n(far).red = false;
                self.rotate(p, side);
                x = self.root;
            }
        }
        self.n(x).red = false;
    }

    /// Checks the red-black invariants; returns the black height. For tests.
    #[cfg(test)]
    pub(crate) fn check(&self) -> usize {
        fn walk<H>(nodes: &[RbNode<H>], at: u32, lo: Option<Cid>, hi: Option<Cid>) -> usize {
            if at == NIL {
                return 1;
            }
            let n = &nodes[at as usize];
            assert!(lo.map_or(true, |l| n.key > l) && hi.map_or(true, |h| n.key < h), "order");
            if n.red {
                assert!(
                    !nodes[n.child[LEFT] as usize].red && !nodes[n.child[RIGHT] as usize].red,
                    "red-red"
                );
            }
            for child in [n.child[LEFT], n.child[RIGHT]] {
                if child != NIL {
                    assert_eq!(nodes[child as usize].parent, at, "parent link");
                }
            }
            let l = walk(nodes, n.child[LEFT], lo, Some(n.key));
            let r = walk(nodes, n.child[RIGHT], Some(n.key), hi);
            assert_eq!(l, r, "black height");
            l + usize::from(!n.red)
        }
        assert!(self.root == NIL || !self.nodes[self.root as usize].red);
        walk(self.nodes, self.root, None, None)
    }
}

impl<H: Copy> CidStore<H> for RbTree<'_, H> {
    fn insert(&mut self, cid: Cid, handle: H) -> Result<(), StoreError> {
        if self.nodes.is_empty() {
            return Err(StoreError::Full);
        }
        let mut parent = NIL;
        let mut at = self.root;
        while at != NIL {
            parent = at;
            let key = self.n(at).key;
            if cid == key {
                return Err(StoreError::Occupied);
            }
            at = if cid < key { self.n(at).child[LEFT] } else { self.n(at).child[RIGHT] };
        }
        let z = self.alloc().ok_or(StoreError::Full)?;
        *self.n(z) = RbNode { key: cid, value: Some(handle), child: [NIL; 2], parent, red: true };
        if parent == NIL {
            self.root = z;
        } else if cid < self.n(parent).key {
            self.n(parent).child[LEFT] = z;
        } else {
            self.n(parent).child[RIGHT] = z;
        }
        self.insert_fixup(z);
        self.len += 1;
        Ok(())
    }

    fn remove(&mut self, cid: Cid) -> Option<H> {
        if self.nodes.is_empty() {
            return None;
        }
        let z = self.find(cid);
        if z == NIL {
            return None;
        }
        let handle = self.n(z).value.take();
        self.delete(z);
        let free = self.free;
        *self.n(z) = RbNode { child: [NIL, free], ..RbNode::EMPTY };
        self.free = z;
        self.len -= 1;
        handle
    }

    #[inline]
    fn get(&self, cid: Cid) -> Option<H> {
        if self.nodes.is_empty() {
            return None;
        }
        self.nodes[self.find(cid) as usize].value
    }

    fn len(&self) -> usize {
        self.len
    }

    fn cells(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> usize {
        self.len * size_of::<RbNode<H>>()
    }
}
