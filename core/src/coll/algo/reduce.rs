//! Reduce to a root: linear, binomial, and reduce-scatter + gather for large messages.
//! Input `Send[0..bytes]` on every rank, result `Recv[0..bytes]` at the root.

use super::allreduce::Halving;
use super::{ceil_log2, copy, pick, recv, reduce, reg, send, Ctx, Emit, Fold};
use crate::coll::datatype::Datatype;
use crate::coll::op::Op;
use crate::coll::step::Buf;

/// The root receives every contribution and combines them in rank order.
#[derive(Clone, Copy, Debug)]
pub struct Linear {
    ctx: Ctx,
    root: u32,
    bytes: usize,
    op: Op,
    dtype: Datatype,
}

impl Linear {
    /// Reduce of `count` elements to `root`.
    pub fn new(ctx: Ctx, root: u32, count: usize, dtype: Datatype, op: Op) -> Self {
        Self { ctx, root, bytes: count * dtype.size(), op, dtype }
    }

    pub(crate) fn scratch(&self) -> usize {
        if self.ctx.rank == self.root {
            self.bytes
        } else {
            0
        }
    }

    pub(crate) fn rounds(&self) -> u32 {
        1
    }

    pub(crate) fn step(&mut self, _round: u32, index: u32) -> Emit {
        let n = self.bytes;
        let (mine, result, tmp) =
            (reg(Buf::Send, 0, n), reg(Buf::Recv, 0, n), reg(Buf::Scratch, 0, n));
        if self.ctx.rank != self.root {
            return pick([Some(send(self.root, mine))], index);
        }
        let (i, second) = (index / 2, index % 2 == 1);
        if i >= self.ctx.size {
            return Emit::End;
        }
        match (i, i == self.root, second) {
            (0, true, false) => copy(mine, result),
            (0, false, false) => recv(0, result),
            (0, _, true) | (_, true, true) => Emit::Skip,
            (_, true, false) => reduce(self.op, self.dtype, mine, result, false),
            (_, false, false) => recv(i, tmp),
            (_, false, true) => reduce(self.op, self.dtype, tmp, result, false),
        }
    }
}

/// Binomial tree. A commutative operation uses the tree rooted at the root; otherwise the
/// tree is rooted at rank 0, where every subtree is a contiguous range of ranks combined in
/// order, and rank 0 forwards the result to the root.
#[derive(Clone, Copy, Debug)]
pub struct Binomial {
    ctx: Ctx,
    root: u32,
    tree_root: u32,
    bytes: usize,
    op: Op,
    dtype: Datatype,
    acc_in_scratch: bool,
}

impl Binomial {
    /// Reduce of `count` elements to `root`.
    pub fn new(ctx: Ctx, root: u32, count: usize, dtype: Datatype, op: Op) -> Self {
        let tree_root = if op.is_commutative() { root } else { 0 };
        let bytes = count * dtype.size();
        Self { ctx, root, tree_root, bytes, op, dtype, acc_in_scratch: false }
    }

    /// Reduce in rank order to rank 0, leaving the result in `Scratch[0..bytes]` there.
    pub fn ordered_into_scratch(ctx: Ctx, count: usize, dtype: Datatype, op: Op) -> Self {
        let bytes = count * dtype.size();
        Self { ctx, root: 0, tree_root: 0, bytes, op, dtype, acc_in_scratch: true }
    }

    pub(crate) fn scratch(&self) -> usize {
        2 * self.bytes
    }

    fn forwards(&self) -> bool {
        self.tree_root != self.root
    }

    pub(crate) fn rounds(&self) -> u32 {
        1 + ceil_log2(self.ctx.size) + self.forwards() as u32
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let (n, r, p) = (self.bytes, self.ctx.rank, self.ctx.size);
        let acc = if r == self.root && !self.forwards() && !self.acc_in_scratch {
            reg(Buf::Recv, 0, n)
        } else {
            reg(Buf::Scratch, 0, n)
        };
        let tmp = reg(Buf::Scratch, n, n);
        let l = ceil_log2(p);
        if round == 0 {
            return pick([Some(copy(reg(Buf::Send, 0, n), acc))], index);
        }
        if round > l {
            return if r == self.tree_root {
                pick([Some(send(self.root, acc))], index)
            } else if r == self.root {
                pick([Some(recv(self.tree_root, reg(Buf::Recv, 0, n)))], index)
            } else {
                Emit::End
            };
        }
        let mask = 1u32 << (round - 1);
        let v = self.ctx.relative(self.tree_root);
        if v % (2 * mask) == mask {
            pick([Some(send(self.ctx.absolute(v - mask, self.tree_root), acc))], index)
        } else if v % (2 * mask) == 0 && v + mask < p {
            let child = self.ctx.absolute(v + mask, self.tree_root);
            pick(
                [Some(recv(child, tmp)), Some(reduce(self.op, self.dtype, tmp, acc, false))],
                index,
            )
        } else {
            Emit::End
        }
    }
}

/// Reduce-scatter by recursive halving, then every block's owner sends it to the root.
/// Keeps rank order.
#[derive(Clone, Copy, Debug)]
pub struct ReduceScatterGather {
    h: Halving,
    root: u32,
}

impl ReduceScatterGather {
    /// Reduce of `count` elements to `root`.
    pub fn new(ctx: Ctx, root: u32, count: usize, dtype: Datatype, op: Op) -> Self {
        let n = count * dtype.size();
        let at_root = ctx.rank == root;
        let h = Halving {
            ctx,
            fold: Fold::new(ctx.size),
            count,
            elem: dtype.size(),
            op,
            dtype,
            acc: if at_root { Buf::Recv } else { Buf::Scratch },
            acc_at: 0,
            tmp_at: if at_root { 0 } else { n },
        };
        Self { h, root }
    }

    pub(crate) fn scratch(&self) -> usize {
        2 * self.h.bytes()
    }

    pub(crate) fn rounds(&self) -> u32 {
        self.h.fold.log + 2
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let (log, r) = (self.h.fold.log, self.h.ctx.rank);
        if round == 0 {
            return self.h.fold_in(index);
        }
        if round <= log {
            return self.h.halving(round - 1, index);
        }
        let f = self.h.fold;
        if r == self.root {
            if index >= f.p2 {
                return Emit::End;
            }
            let owner = f.old_rank(index);
            if owner == r {
                return Emit::Skip;
            }
            let (o, l) = self.h.span(self.h.final_block(index), self.h.final_block(index) + 1);
            return recv(owner, reg(Buf::Recv, o, l));
        }
        match f.new_rank(r) {
            Some(nr) => {
                let b = self.h.final_block(nr);
                let (o, l) = self.h.span(b, b + 1);
                pick([Some(send(self.root, reg(self.h.acc, o, l)))], index)
            }
            None => Emit::End,
        }
    }
}
