//! Reduce_scatter and reduce_scatter_block: ring, and a rank-ordered reduce to rank 0
//! followed by a scatter. The input vector `Send` holds every rank's block at the
//! positions the [`BlockLayout`] gives; rank `r` gets its block in `Recv[0..len]`.

use super::reduce::Binomial;
use super::{copy, pick, recv, reduce, reg, send, BlockLayout, Ctx, Emit};
use crate::coll::datatype::Datatype;
use crate::coll::op::Op;
use crate::coll::step::Buf;

/// Ring: block `r - t - 1` travels right and picks up one contribution per round.
/// Combines out of rank order: commutative operations only.
#[derive(Clone, Copy, Debug)]
pub struct Ring<'a> {
    ctx: Ctx,
    layout: BlockLayout<'a>,
    op: Op,
    dtype: Datatype,
    total: usize,
}

impl<'a> Ring<'a> {
    /// Reduce-scatter of `layout`.
    pub fn new(ctx: Ctx, layout: BlockLayout<'a>, dtype: Datatype, op: Op) -> Self {
        Self { ctx, layout, op, dtype, total: layout.extent(ctx.size) }
    }

    pub(crate) fn scratch(&self) -> usize {
        let largest = (0..self.ctx.size).map(|i| self.layout.len(i)).max().unwrap_or(0);
        self.total.saturating_add(largest)
    }

    pub(crate) fn rounds(&self) -> u32 {
        self.ctx.size + 1
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let (r, p, n) = (self.ctx.rank, self.ctx.size, self.total);
        if round == 0 {
            return pick([Some(copy(reg(Buf::Send, 0, n), reg(Buf::Scratch, 0, n)))], index);
        }
        if round == p {
            let len = self.layout.len(r);
            return pick(
                [Some(copy(self.layout.block(Buf::Scratch, r), reg(Buf::Recv, 0, len)))],
                index,
            );
        }
        let out = (r + p - round % p) % p;
        let inn = (r + 2 * p - round - 1) % p;
        let acc = self.layout.block(Buf::Scratch, inn);
        let tmp = reg(Buf::Scratch, n, acc.len);
        pick(
            [
                Some(send((r + 1) % p, self.layout.block(Buf::Scratch, out))),
                Some(recv((r + p - 1) % p, tmp)),
                Some(reduce(self.op, self.dtype, tmp, acc, false)),
            ],
            index,
        )
    }
}

/// A binomial reduce of the whole vector to rank 0 in rank order, then rank 0 sends each
/// rank its block. Any operation.
#[derive(Clone, Copy, Debug)]
pub struct ReduceThenScatter<'a> {
    ctx: Ctx,
    layout: BlockLayout<'a>,
    reduce: Binomial,
}

impl<'a> ReduceThenScatter<'a> {
    /// Reduce-scatter of `layout`.
    pub fn new(ctx: Ctx, layout: BlockLayout<'a>, dtype: Datatype, op: Op) -> Self {
        let elems = layout.extent(ctx.size) / dtype.size();
        Self { ctx, layout, reduce: Binomial::ordered_into_scratch(ctx, elems, dtype, op) }
    }

    pub(crate) fn scratch(&self) -> usize {
        self.reduce.scratch()
    }

    pub(crate) fn rounds(&self) -> u32 {
        self.reduce.rounds() + 1
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        if round < self.reduce.rounds() {
            return self.reduce.step(round, index);
        }
        let r = self.ctx.rank;
        let mine = reg(Buf::Recv, 0, self.layout.len(r));
        if r != 0 {
            return pick([Some(recv(0, mine))], index);
        }
        if index >= self.ctx.size {
            return Emit::End;
        }
        let block = self.layout.block(Buf::Scratch, index);
        if index == 0 {
            copy(block, mine)
        } else {
            send(index, block)
        }
    }
}
