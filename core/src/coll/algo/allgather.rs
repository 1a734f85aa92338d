//! Allgather and allgatherv: ring, recursive doubling, Bruck. Input `Send[0..own block]`,
//! output every rank's block in `Recv` at the positions the [`BlockLayout`] gives.

use super::{ceil_log2, copy, pick, recv, reg, send, BlockLayout, Ctx, Emit, Fold};
use crate::coll::step::{Buf, Region};

fn own(layout: &BlockLayout<'_>, r: u32) -> Region {
    reg(Buf::Send, 0, layout.len(r))
}

/// Ring: `size - 1` rounds, each passing one block to the right.
#[derive(Clone, Copy, Debug)]
pub struct Ring<'a> {
    ctx: Ctx,
    layout: BlockLayout<'a>,
}

impl<'a> Ring<'a> {
    /// Allgather over `layout`.
    pub fn new(ctx: Ctx, layout: BlockLayout<'a>) -> Self {
        Self { ctx, layout }
    }

    pub(crate) fn rounds(&self) -> u32 {
        self.ctx.size
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let (r, p) = (self.ctx.rank, self.ctx.size);
        if round == 0 {
            return pick(
                [Some(copy(own(&self.layout, r), self.layout.block(Buf::Recv, r)))],
                index,
            );
        }
        let t = round - 1;
        let out = (r + p - t) % p;
        let inn = (r + 2 * p - t - 1) % p;
        pick(
            [
                Some(send((r + 1) % p, self.layout.block(Buf::Recv, out))),
                Some(recv((r + p - 1) % p, self.layout.block(Buf::Recv, inn))),
            ],
            index,
        )
    }
}

/// Recursive doubling over groups of ranks whose blocks are contiguous (the fold keeps
/// them so), with a fold for non-powers of two.
#[derive(Clone, Copy, Debug)]
pub struct RecursiveDoubling<'a> {
    ctx: Ctx,
    fold: Fold,
    layout: BlockLayout<'a>,
}

impl<'a> RecursiveDoubling<'a> {
    /// Allgather over `layout`.
    pub fn new(ctx: Ctx, layout: BlockLayout<'a>) -> Self {
        Self { ctx, fold: Fold::new(ctx.size), layout }
    }

    pub(crate) fn rounds(&self) -> u32 {
        self.fold.log + 2
    }

    /// Send the `a..b` range's regions, then receive the `c..d` range's.
    fn exchange(
        &self,
        peer_out: u32,
        (a, b): (u32, u32),
        peer_in: u32,
        (c, d): (u32, u32),
        index: u32,
    ) -> Emit {
        let n_out = self.layout.range_regions(a, b);
        if index < n_out {
            return match self.layout.range_region(Buf::Recv, a, b, index) {
                Some(region) => send(peer_out, region),
                None => Emit::Skip,
            };
        }
        match self.layout.range_region(Buf::Recv, c, d, index - n_out) {
            Some(region) => recv(peer_in, region),
            None => Emit::End,
        }
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let (r, p, f) = (self.ctx.rank, self.ctx.size, self.fold);
        let folded = r < 2 * f.rem;
        let mine = self.layout.block(Buf::Recv, r);
        if round == 0 {
            let first = Some(copy(own(&self.layout, r), mine));
            return match (folded, r % 2) {
                (true, 0) => pick([first, Some(send(r + 1, mine))], index),
                (true, _) => {
                    pick([first, Some(recv(r - 1, self.layout.block(Buf::Recv, r - 1)))], index)
                }
                _ => pick([first], index),
            };
        }
        if round == f.log + 1 {
            return match (folded, r % 2) {
                (true, 0) => self.exchange(r, (0, 0), r + 1, (0, p), index),
                (true, _) => self.exchange(r - 1, (0, p), r, (0, 0), index),
                _ => Emit::End,
            };
        }
        let Some(nr) = f.new_rank(r) else { return Emit::End };
        let m = 1u32 << (round - 1);
        let g = nr & !(m - 1);
        let pg = g ^ m;
        let partner = f.old_rank(nr ^ m);
        let mine = (f.first_old(g), f.first_old(g + m));
        let theirs = (f.first_old(pg), f.first_old(pg + m));
        self.exchange(partner, mine, partner, theirs, index)
    }
}

/// Bruck: blocks kept in scratch rotated so this rank's is first; in round `k` the first
/// `min(2^k, size - 2^k)` go to `rank - 2^k`; a final rotation puts them in place.
#[derive(Clone, Copy, Debug)]
pub struct Bruck<'a> {
    ctx: Ctx,
    layout: BlockLayout<'a>,
    /// The next rotation copy and its scratch offset, so the copy phase is O(1) a step.
    cursor: (u32, usize),
}

impl<'a> Bruck<'a> {
    /// Allgather over `layout`.
    pub fn new(ctx: Ctx, layout: BlockLayout<'a>) -> Self {
        Self { ctx, layout, cursor: (0, 0) }
    }

    /// Scratch offset of rotated position `i`.
    fn at(&self, i: u32) -> usize {
        match self.layout {
            BlockLayout::Regular { bytes } => i as usize * bytes,
            _ => (0..i).fold(0usize, |at, j| {
                at.saturating_add(self.layout.len((self.ctx.rank + j) % self.ctx.size))
            }),
        }
    }

    pub(crate) fn scratch(&self) -> usize {
        self.at(self.ctx.size)
    }

    pub(crate) fn rounds(&self) -> u32 {
        ceil_log2(self.ctx.size) + 2
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let (r, p) = (self.ctx.rank, self.ctx.size);
        let l = ceil_log2(p);
        if round == 0 {
            let mine = own(&self.layout, r);
            return pick([Some(copy(mine, reg(Buf::Scratch, 0, mine.len)))], index);
        }
        if round <= l {
            let d = 1u32 << (round - 1);
            let m = d.min(p - d);
            let (a, b) = (self.at(d), self.at(d + m));
            let to = (r + p - d) % p;
            let from = (r + d) % p;
            return pick(
                [
                    Some(send(to, reg(Buf::Scratch, 0, self.at(m)))),
                    Some(recv(from, reg(Buf::Scratch, a, b - a))),
                ],
                index,
            );
        }
        if index >= p {
            return Emit::End;
        }
        let offset = if self.cursor.0 == index { self.cursor.1 } else { self.at(index) };
        let block = (r + index) % p;
        let len = self.layout.len(block);
        self.cursor = (index + 1, offset.saturating_add(len));
        copy(reg(Buf::Scratch, offset, len), self.layout.block(Buf::Recv, block))
    }
}
