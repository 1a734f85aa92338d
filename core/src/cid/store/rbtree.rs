//! A red-black tree over a caller node pool: dense memory, up to 2 log n loads a lookup.

use core::mem::size_of;

use super::{CidStore, StoreError};
use crate::cid::Cid;

/// Index 0 of the pool is the shared leaf (nil) of the textbook formulation.
const NIL: u32 = 0;

/// One tree node; the caller's pool is a slice of these.
#[derive(Clone, Copy, Debug)]
pub struct RbNode<H> {
    key: Cid,
    value: Option<H>,
    left: u32,
    right: u32,
    parent: u32,
    red: bool,
}

impl<H: Copy> RbNode<H> {
    /// An unused node, to fill a pool with.
    pub const EMPTY: Self =
        Self { key: 0, value: None, left: NIL, right: NIL, parent: NIL, red: false };
}

/// A red-black tree keyed by CID. Node 0 of the pool is the nil sentinel, so a pool of
/// `n` nodes holds `n - 1` communicators. Freed nodes are chained through `right`.
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
                1 + depth(nodes, n.left).max(depth(nodes, n.right))
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
            at = if cid < node.key { node.left } else { node.right };
        }
        NIL
    }

    fn alloc(&mut self) -> Option<u32> {
        if self.free != NIL {
            let at = self.free;
            self.free = self.nodes[at as usize].right;
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

    fn rotate_left(&mut self, x: u32) {
        let y = self.n(x).right;
        let y_left = self.n(y).left;
        self.n(x).right = y_left;
        if y_left != NIL {
            self.n(y_left).parent = x;
        }
        let xp = self.n(x).parent;
        self.n(y).parent = xp;
        if xp == NIL {
            self.root = y;
        } else if x == self.n(xp).left {
            self.n(xp).left = y;
        } else {
            self.n(xp).right = y;
        }
        self.n(y).left = x;
        self.n(x).parent = y;
    }

    fn rotate_right(&mut self, x: u32) {
        let y = self.n(x).left;
        let y_right = self.n(y).right;
        self.n(x).left = y_right;
        if y_right != NIL {
            self.n(y_right).parent = x;
        }
        let xp = self.n(x).parent;
        self.n(y).parent = xp;
        if xp == NIL {
            self.root = y;
        } else if x == self.n(xp).right {
            self.n(xp).right = y;
        } else {
            self.n(xp).left = y;
        }
        self.n(y).right = x;
        self.n(x).parent = y;
    }

    fn insert_fixup(&mut self, mut z: u32) {
        while self.n(self.up(z)).red {
            let p = self.n(z).parent;
            let g = self.n(p).parent;
            if p == self.n(g).left {
                let uncle = self.n(g).right;
                if self.n(uncle).red {
                    self.n(p).red = false;
                    self.n(uncle).red = false;
                    self.n(g).red = true;
                    z = g;
                } else {
                    if z == self.n(p).right {
                        z = p;
                        self.rotate_left(z);
                    }
                    let p = self.n(z).parent;
                    let g = self.n(p).parent;
                    self.n(p).red = false;
                    self.n(g).red = true;
                    self.rotate_right(g);
                }
            } else {
                let uncle = self.n(g).left;
                if self.n(uncle).red {
                    self.n(p).red = false;
                    self.n(uncle).red = false;
                    self.n(g).red = true;
                    z = g;
                } else {
                    if z == self.n(p).left {
                        z = p;
                        self.rotate_right(z);
                    }
                    let p = self.n(z).parent;
                    let g = self.n(p).parent;
                    self.n(p).red = false;
                    self.n(g).red = true;
                    self.rotate_left(g);
                }
            }
        }
        let root = self.root;
        self.n(root).red = false;
    }

    fn transplant(&mut self, u: u32, v: u32) {
        let up = self.n(u).parent;
        if up == NIL {
            self.root = v;
        } else if u == self.n(up).left {
            self.n(up).left = v;
        } else {
            self.n(up).right = v;
        }
        // The sentinel's parent is written on purpose: the fix-up walks up from it.
        self.n(v).parent = up;
    }

    fn minimum(&mut self, mut at: u32) -> u32 {
        while self.n(at).left != NIL {
            at = self.n(at).left;
        }
        at
    }

    fn delete(&mut self, z: u32) {
        let mut y = z;
        let mut y_was_red = self.n(y).red;
        let x;
        if self.n(z).left == NIL {
            x = self.n(z).right;
            self.transplant(z, x);
        } else if self.n(z).right == NIL {
            x = self.n(z).left;
            self.transplant(z, x);
        } else {
            y = self.minimum(self.nodes[z as usize].right);
            y_was_red = self.n(y).red;
            x = self.n(y).right;
            if self.n(y).parent == z {
                self.n(x).parent = y;
            } else {
                self.transplant(y, x);
                let zr = self.n(z).right;
                self.n(y).right = zr;
                self.n(zr).parent = y;
            }
            self.transplant(z, y);
            let zl = self.n(z).left;
            self.n(y).left = zl;
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
            if x == self.n(p).left {
                let mut w = self.n(p).right;
                if self.n(w).red {
                    self.n(w).red = false;
                    self.n(p).red = true;
                    self.rotate_left(p);
                    w = self.n(self.up(x)).right;
                }
                let (wl, wr) = (self.n(w).left, self.n(w).right);
                if !self.n(wl).red && !self.n(wr).red {
                    self.n(w).red = true;
                    x = self.n(x).parent;
                } else {
                    if !self.n(wr).red {
                        self.n(wl).red = false;
                        self.n(w).red = true;
                        self.rotate_right(w);
                        w = self.n(self.up(x)).right;
                    }
                    let p = self.n(x).parent;
                    self.n(w).red = self.n(p).red;
                    self.n(p).red = false;
                    let wr = self.n(w).right;
                    self.n(wr).red = false;
                    self.rotate_left(p);
                    x = self.root;
                }
            } else {
                let mut w = self.n(p).left;
                if self.n(w).red {
                    self.n(w).red = false;
                    self.n(p).red = true;
                    self.rotate_right(p);
                    w = self.n(self.up(x)).left;
                }
                let (wl, wr) = (self.n(w).left, self.n(w).right);
                if !self.n(wl).red && !self.n(wr).red {
                    self.n(w).red = true;
                    x = self.n(x).parent;
                } else {
                    if !self.n(wl).red {
                        self.n(wr).red = false;
                        self.n(w).red = true;
                        self.rotate_left(w);
                        w = self.n(self.up(x)).left;
                    }
                    let p = self.n(x).parent;
                    self.n(w).red = self.n(p).red;
                    self.n(p).red = false;
                    let wl = self.n(w).left;
                    self.n(wl).red = false;
                    self.rotate_right(p);
                    x = self.root;
                }
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
                assert!(!nodes[n.left as usize].red && !nodes[n.right as usize].red, "red-red");
            }
            for child in [n.left, n.right] {
                if child != NIL {
                    assert_eq!(nodes[child as usize].parent, at, "parent link");
                }
            }
            let l = walk(nodes, n.left, lo, Some(n.key));
            let r = walk(nodes, n.right, Some(n.key), hi);
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
            at = if cid < key { self.n(at).left } else { self.n(at).right };
        }
        let z = self.alloc().ok_or(StoreError::Full)?;
        *self.n(z) =
            RbNode { key: cid, value: Some(handle), left: NIL, right: NIL, parent, red: true };
        if parent == NIL {
            self.root = z;
        } else if cid < self.n(parent).key {
            self.n(parent).left = z;
        } else {
            self.n(parent).right = z;
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
        *self.n(z) = RbNode { right: free, ..RbNode::EMPTY };
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
