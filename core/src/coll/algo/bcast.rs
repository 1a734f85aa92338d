//! Broadcasts: linear, binomial, and binomial scatter + ring allgather for large messages.
//! The message is `Recv[0..bytes]` on every rank (the root's data is already there).

use super::{ceil_log2, part_start, pick, recv, reg, send, Ctx, Emit};
use crate::coll::step::{Buf, Region};

/// The root sends the whole message to every other rank.
#[derive(Clone, Copy, Debug)]
pub struct Linear {
    ctx: Ctx,
    root: u32,
    bytes: usize,
}

impl Linear {
    /// Broadcast of `bytes` from `root`.
    pub fn new(ctx: Ctx, root: u32, bytes: usize) -> Self {
        Self { ctx, root, bytes }
    }

    pub(crate) fn rounds(&self) -> u32 {
        1
    }

    pub(crate) fn step(&mut self, _round: u32, index: u32) -> Emit {
        let all = reg(Buf::Recv, 0, self.bytes);
        if self.ctx.rank != self.root {
            return pick([Some(recv(self.root, all))], index);
        }
        let to = if index < self.root { index } else { index + 1 };
        if to >= self.ctx.size {
            Emit::End
        } else {
            send(to, all)
        }
    }
}

/// Binomial tree, largest distance first, so every subtree is a contiguous range of
/// relative ranks.
#[derive(Clone, Copy, Debug)]
pub struct Binomial {
    ctx: Ctx,
    root: u32,
    bytes: usize,
}

impl Binomial {
    /// Broadcast of `bytes` from `root`.
    pub fn new(ctx: Ctx, root: u32, bytes: usize) -> Self {
        Self { ctx, root, bytes }
    }

    pub(crate) fn rounds(&self) -> u32 {
        ceil_log2(self.ctx.size)
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let all = reg(Buf::Recv, 0, self.bytes);
        tree_step(self.ctx, self.root, round, index, |_, _| all)
    }
}

/// One step of the descending-mask binomial tree: `piece(first, end)` is the data for the
/// relative ranks `[first, end)` of a subtree.
#[inline]
pub(crate) fn tree_step(
    ctx: Ctx,
    root: u32,
    round: u32,
    index: u32,
    piece: impl Fn(u32, u32) -> Region,
) -> Emit {
    let l = ceil_log2(ctx.size);
    let mask = 1u32 << (l - 1 - round);
    let v = ctx.relative(root);
    let p = ctx.size;
    if v % (2 * mask) == 0 && v + mask < p {
        let child = v + mask;
        pick([Some(send(ctx.absolute(child, root), piece(child, (child + mask).min(p))))], index)
    } else if v % (2 * mask) == mask {
        pick([Some(recv(ctx.absolute(v - mask, root), piece(v, (v + mask).min(p))))], index)
    } else {
        Emit::End
    }
}

/// Binomial scatter of `size` pieces, then a ring allgather of the pieces.
#[derive(Clone, Copy, Debug)]
pub struct ScatterAllgather {
    ctx: Ctx,
    root: u32,
    count: usize,
    elem: usize,
}

impl ScatterAllgather {
    /// Broadcast of `count` elements of `elem` bytes from `root`.
    pub fn new(ctx: Ctx, root: u32, count: usize, elem: usize) -> Self {
        Self { ctx, root, count, elem }
    }

    pub(crate) fn rounds(&self) -> u32 {
        ceil_log2(self.ctx.size) + self.ctx.size - 1
    }

    #[inline]
    fn pieces(&self, first: u32, end: u32) -> Region {
        let p = self.ctx.size;
        let a = part_start(self.count, p, first) * self.elem;
        let b = part_start(self.count, p, end) * self.elem;
        reg(Buf::Recv, a, b - a)
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let l = ceil_log2(self.ctx.size);
        if round < l {
            let this = *self;
            return tree_step(self.ctx, self.root, round, index, |a, b| this.pieces(a, b));
        }
        let t = round - l;
        let p = self.ctx.size;
        let v = self.ctx.relative(self.root);
        let out = (v + p - t % p) % p;
        let inn = (v + 2 * p - t % p - 1) % p;
        let right = self.ctx.absolute((v + 1) % p, self.root);
        let left = self.ctx.absolute((v + p - 1) % p, self.root);
        pick(
            [
                Some(send(right, self.pieces(out, out + 1))),
                Some(recv(left, self.pieces(inn, inn + 1))),
            ],
            index,
        )
    }
}
