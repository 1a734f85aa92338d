//! Scan and exscan: a linear chain, and recursive doubling. Input `Send[0..bytes]`,
//! result `Recv[0..bytes]` (exscan leaves rank 0's `Recv` untouched).

use super::{ceil_log2, copy, pick, recv, reduce, reg, send, Ctx, Emit};
use crate::coll::datatype::Datatype;
use crate::coll::op::Op;
use crate::coll::step::Buf;

/// Each rank waits for its left neighbour's prefix, adds its own, and passes it on.
#[derive(Clone, Copy, Debug)]
pub struct Linear {
    ctx: Ctx,
    bytes: usize,
    op: Op,
    dtype: Datatype,
    exclusive: bool,
}

impl Linear {
    /// Scan (`exclusive == false`) or exscan of `count` elements.
    pub fn new(ctx: Ctx, count: usize, dtype: Datatype, op: Op, exclusive: bool) -> Self {
        Self { ctx, bytes: count * dtype.size(), op, dtype, exclusive }
    }

    pub(crate) fn scratch(&self) -> usize {
        self.bytes
    }

    pub(crate) fn rounds(&self) -> u32 {
        1
    }

    pub(crate) fn step(&mut self, _round: u32, index: u32) -> Emit {
        let (r, p, n) = (self.ctx.rank, self.ctx.size, self.bytes);
        let (mine, out, tmp) =
            (reg(Buf::Send, 0, n), reg(Buf::Recv, 0, n), reg(Buf::Scratch, 0, n));
        let next = (r + 1 < p).then_some(r + 1);
        let (op, dt) = (self.op, self.dtype);
        if !self.exclusive {
            if r == 0 {
                return pick([Some(copy(mine, out)), next.map(|n| send(n, out))], index);
            }
            return pick(
                [
                    Some(recv(r - 1, tmp)),
                    Some(copy(mine, out)),
                    Some(reduce(op, dt, tmp, out, true)),
                    next.map(|n| send(n, out)),
                ],
                index,
            );
        }
        if r == 0 {
            return pick([next.map(|n| send(n, mine))], index);
        }
        pick(
            [
                Some(recv(r - 1, out)),
                next.map(|_| copy(out, tmp)),
                next.map(|_| reduce(op, dt, mine, tmp, false)),
                next.map(|n| send(n, tmp)),
            ],
            index,
        )
    }
}

/// Recursive doubling: in round `k` exchange partial results with `rank ^ 2^k`; a partner
/// below contributes to the result, every partner to the partial.
#[derive(Clone, Copy, Debug)]
pub struct RecursiveDoubling {
    inner: Linear,
}

impl RecursiveDoubling {
    /// Scan (`exclusive == false`) or exscan of `count` elements.
    pub fn new(ctx: Ctx, count: usize, dtype: Datatype, op: Op, exclusive: bool) -> Self {
        Self { inner: Linear::new(ctx, count, dtype, op, exclusive) }
    }

    pub(crate) fn scratch(&self) -> usize {
        2 * self.inner.bytes
    }

    pub(crate) fn rounds(&self) -> u32 {
        1 + ceil_log2(self.inner.ctx.size)
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let s = &self.inner;
        let (r, p, n) = (s.ctx.rank, s.ctx.size, s.bytes);
        let (mine, out) = (reg(Buf::Send, 0, n), reg(Buf::Recv, 0, n));
        let (partial, tmp) = (reg(Buf::Scratch, 0, n), reg(Buf::Scratch, n, n));
        if round == 0 {
            return pick(
                [Some(copy(mine, partial)), (!s.exclusive).then(|| copy(mine, out))],
                index,
            );
        }
        let k = round - 1;
        let partner = r ^ (1 << k);
        if partner >= p {
            return Emit::End;
        }
        let (op, dt) = (s.op, s.dtype);
        let below = partner < r;
        let into_result = match (below, s.exclusive) {
            (false, _) => None,
            (true, false) => Some(reduce(op, dt, tmp, out, true)),
            (true, true) if r.trailing_zeros() == k => Some(copy(tmp, out)),
            (true, true) => Some(reduce(op, dt, tmp, out, true)),
        };
        pick(
            [
                Some(send(partner, partial)),
                Some(recv(partner, tmp)),
                into_result,
                Some(reduce(op, dt, tmp, partial, below)),
            ],
            index,
        )
    }
}
