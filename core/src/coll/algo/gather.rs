//! Gather(v) and scatter(v): linear, and binomial trees for the regular forms. The
//! gathered side is laid out by a [`BlockLayout`]; the other side is `[0..own block]`.

use super::bcast::tree_step;
use super::{ceil_log2, copy, pick, recv, reg, send, BlockLayout, Ctx, Emit};
use crate::coll::step::Buf;

/// Gather (`scatter == false`) or scatter straight between the root and every rank.
#[derive(Clone, Copy, Debug)]
pub struct Linear<'a> {
    ctx: Ctx,
    root: u32,
    layout: BlockLayout<'a>,
    scatter: bool,
    own: usize,
}

impl<'a> Linear<'a> {
    /// Gather or scatter of `layout` at `root`.
    pub fn new(ctx: Ctx, root: u32, layout: BlockLayout<'a>, scatter: bool) -> Self {
        Self { ctx, root, layout, scatter, own: layout.len(ctx.rank) }
    }

    /// A non-root rank's part of a `v` gather or scatter: only its own `bytes` (MPI does
    /// not require the counts of every rank away from the root).
    pub fn leaf(ctx: Ctx, root: u32, bytes: usize, scatter: bool) -> Self {
        Self { ctx, root, layout: BlockLayout::Regular { bytes }, scatter, own: bytes }
    }

    pub(crate) fn rounds(&self) -> u32 {
        1
    }

    pub(crate) fn step(&mut self, _round: u32, index: u32) -> Emit {
        let (r, p, root) = (self.ctx.rank, self.ctx.size, self.root);
        let (flat, packed) =
            if self.scatter { (Buf::Recv, Buf::Send) } else { (Buf::Send, Buf::Recv) };
        let own = reg(flat, 0, self.own);
        if r != root {
            return pick(
                [Some(if self.scatter { recv(root, own) } else { send(root, own) })],
                index,
            );
        }
        if index == 0 {
            let mine = self.layout.block(packed, r);
            return if self.scatter { copy(mine, own) } else { copy(own, mine) };
        }
        let peer = if index - 1 < root { index - 1 } else { index };
        if peer >= p {
            return Emit::End;
        }
        let block = self.layout.block(packed, peer);
        if self.scatter {
            send(peer, block)
        } else {
            recv(peer, block)
        }
    }
}

/// Relative rank `v`'s subtree in blocks: `min(lowest set bit, size - v)`, all for the root.
fn subtree(v: u32, p: u32) -> u32 {
    if v == 0 {
        p
    } else {
        (1u32 << v.trailing_zeros()).min(p - v)
    }
}

/// Binomial gather or scatter of `bytes` per rank. Gather: subtrees (ascending distance)
/// collect their blocks in scratch in relative-rank order and the root rotates them into
/// place. Scatter: the root rotates the blocks into relative order in scratch, and each
/// subtree (descending distance) receives its contiguous range.
#[derive(Clone, Copy, Debug)]
pub struct Binomial {
    ctx: Ctx,
    root: u32,
    bytes: usize,
    scatter: bool,
}

impl Binomial {
    /// Gather of `bytes` per rank at `root`.
    pub fn gather(ctx: Ctx, root: u32, bytes: usize) -> Self {
        Self { ctx, root, bytes, scatter: false }
    }

    /// Scatter of `bytes` per rank from `root`.
    pub fn scatter(ctx: Ctx, root: u32, bytes: usize) -> Self {
        Self { ctx, root, bytes, scatter: true }
    }

    pub(crate) fn scratch(&self) -> usize {
        subtree(self.ctx.relative(self.root), self.ctx.size) as usize * self.bytes
    }

    pub(crate) fn rounds(&self) -> u32 {
        ceil_log2(self.ctx.size) + 2
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        if self.scatter {
            self.scatter_step(round, index)
        } else {
            self.gather_step(round, index)
        }
    }

    fn gather_step(&self, round: u32, index: u32) -> Emit {
        let (p, b, root) = (self.ctx.size, self.bytes, self.root);
        let v = self.ctx.relative(root);
        let l = ceil_log2(p);
        let blocks = |first: u32, n: u32| reg(Buf::Scratch, first as usize * b, n as usize * b);
        if round == 0 {
            return pick([Some(copy(reg(Buf::Send, 0, b), blocks(0, 1)))], index);
        }
        if round <= l {
            let mask = 1u32 << (round - 1);
            return if v % (2 * mask) == mask {
                pick(
                    [Some(send(self.ctx.absolute(v - mask, root), blocks(0, subtree(v, p))))],
                    index,
                )
            } else if v % (2 * mask) == 0 && v + mask < p {
                let child = v + mask;
                pick(
                    [Some(recv(self.ctx.absolute(child, root), blocks(mask, subtree(child, p))))],
                    index,
                )
            } else {
                Emit::End
            };
        }
        if v != 0 {
            return Emit::End;
        }
        let head = p - root;
        pick(
            [
                Some(copy(blocks(0, head), reg(Buf::Recv, root as usize * b, head as usize * b))),
                (root > 0).then(|| copy(blocks(head, root), reg(Buf::Recv, 0, root as usize * b))),
            ],
            index,
        )
    }

    fn scatter_step(&self, round: u32, index: u32) -> Emit {
        let (p, b, root) = (self.ctx.size, self.bytes, self.root);
        let v = self.ctx.relative(root);
        let l = ceil_log2(p);
        if round == 0 {
            if v != 0 {
                return Emit::End;
            }
            let head = p - root;
            let rb = root as usize * b;
            return pick(
                [
                    Some(copy(
                        reg(Buf::Send, rb, head as usize * b),
                        reg(Buf::Scratch, 0, head as usize * b),
                    )),
                    (root > 0).then(|| {
                        copy(reg(Buf::Send, 0, rb), reg(Buf::Scratch, head as usize * b, rb))
                    }),
                ],
                index,
            );
        }
        if round <= l {
            return tree_step(self.ctx, root, round - 1, index, |first, end| {
                reg(Buf::Scratch, (first - v) as usize * b, (end - first) as usize * b)
            });
        }
        pick([Some(copy(reg(Buf::Scratch, 0, b), reg(Buf::Recv, 0, b)))], index)
    }
}
