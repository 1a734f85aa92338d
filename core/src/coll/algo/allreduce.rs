//! Allreduce: recursive doubling, ring, and Rabenseifner's reduce-scatter + allgather.
//! Input `Send[0..bytes]`, result `Recv[0..bytes]` on every rank.

use super::{part_start, pick, recv, reduce, reg, send, Ctx, Emit, Fold};
use crate::coll::algo::copy;
use crate::coll::datatype::Datatype;
use crate::coll::op::Op;
use crate::coll::step::{Buf, Region};

/// A byte range of the vector: (offset, length).
type Span = (usize, usize);

/// The recursive-doubling family's shared machinery: the fold for non-powers of two, and
/// recursive halving / doubling over `p2` blocks of the vector, in ascending distance so
/// that every partial result covers a contiguous range of ranks (rank order is kept).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Halving {
    pub ctx: Ctx,
    pub fold: Fold,
    pub count: usize,
    pub elem: usize,
    pub op: Op,
    pub dtype: Datatype,
    /// Where the running result lives.
    pub acc: Buf,
    /// Byte offset of the running result in `acc`.
    pub acc_at: usize,
    /// Byte offset in scratch of space for one incoming vector.
    pub tmp_at: usize,
}

impl Halving {
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        self.count * self.elem
    }

    #[inline]
    fn acc(&self, offset: usize, len: usize) -> Region {
        reg(self.acc, self.acc_at + offset, len)
    }

    #[inline]
    fn tmp(&self, len: usize) -> Region {
        reg(Buf::Scratch, self.tmp_at, len)
    }

    /// Byte offset and length of blocks `[a, b)`.
    #[inline]
    pub(crate) fn span(&self, a: u32, b: u32) -> Span {
        let x = part_start(self.count, self.fold.p2, a) * self.elem;
        let y = part_start(self.count, self.fold.p2, b) * self.elem;
        (x, y - x)
    }

    /// The block window `(lo, size)` of new rank `nr` before halving step `k`.
    #[inline]
    pub(crate) fn window(&self, nr: u32, k: u32) -> (u32, u32) {
        let p2 = self.fold.p2;
        let mut lo = 0;
        for j in 0..k {
            if nr & (1 << j) != 0 {
                lo += p2 >> (j + 1);
            }
        }
        (lo, p2 >> k)
    }

    /// The half of the step-`k` window that new rank `nr` keeps.
    #[inline]
    pub(crate) fn kept(&self, nr: u32, k: u32) -> (u32, u32) {
        let (lo, size) = self.window(nr, k);
        let h = size / 2;
        if nr & (1 << k) == 0 {
            (lo, lo + h)
        } else {
            (lo + h, lo + size)
        }
    }

    /// Round 0: copy the input into the result, fold the extra ranks in.
    pub(crate) fn fold_in(&self, index: u32) -> Emit {
        let r = self.ctx.rank;
        let n = self.bytes();
        let first = copy(reg(Buf::Send, 0, n), self.acc(0, n));
        if r >= 2 * self.fold.rem {
            return pick([Some(first)], index);
        }
        if r % 2 == 0 {
            pick([Some(first), Some(send(r + 1, self.acc(0, n)))], index)
        } else {
            pick(
                [
                    Some(first),
                    Some(recv(r - 1, self.tmp(n))),
                    Some(reduce(self.op, self.dtype, self.tmp(n), self.acc(0, n), true)),
                ],
                index,
            )
        }
    }

    /// The last round: hand the result back to the ranks that sat out.
    pub(crate) fn unfold(&self, index: u32) -> Emit {
        let r = self.ctx.rank;
        let all = self.acc(0, self.bytes());
        if r >= 2 * self.fold.rem {
            Emit::End
        } else if r % 2 == 0 {
            pick([Some(recv(r + 1, all))], index)
        } else {
            pick([Some(send(r - 1, all))], index)
        }
    }

    /// Recursive doubling step `k` on the whole vector.
    pub(crate) fn doubling_whole(&self, k: u32, index: u32) -> Emit {
        let Some(nr) = self.fold.new_rank(self.ctx.rank) else { return Emit::End };
        let partner = self.fold.old_rank(nr ^ (1 << k));
        let n = self.bytes();
        self.exchange_reduce(partner, self.acc(0, n), 0, n, index)
    }

    /// Sends `out` to `partner` and reduces what comes back into `acc[offset..][..len]`,
    /// in rank order.
    fn exchange_reduce(
        &self,
        partner: u32,
        out: Region,
        offset: usize,
        len: usize,
        index: u32,
    ) -> Emit {
        pick(
            [
                Some(send(partner, out)),
                Some(recv(partner, self.tmp(len))),
                Some(reduce(
                    self.op,
                    self.dtype,
                    self.tmp(len),
                    self.acc(offset, len),
                    partner < self.ctx.rank,
                )),
            ],
            index,
        )
    }

    /// Recursive halving step `k`: send the half the partner keeps, reduce the kept half.
    pub(crate) fn halving(&self, k: u32, index: u32) -> Emit {
        let Some((partner, (ko, kl), (go, gl))) = self.halves(k) else { return Emit::End };
        self.exchange_reduce(partner, self.acc(go, gl), ko, kl, index)
    }

    /// Recursive doubling step `k` (run from high `k` to low) of the allgather that undoes
    /// the halving.
    pub(crate) fn doubling_halves(&self, k: u32, index: u32) -> Emit {
        let Some((partner, (ko, kl), (go, gl))) = self.halves(k) else { return Emit::End };
        pick([Some(send(partner, self.acc(ko, kl))), Some(recv(partner, self.acc(go, gl)))], index)
    }

    /// At step `k` of halving or doubling: the partner, and the byte spans (offset, length)
    /// this rank keeps and the partner keeps; `None` for a rank folded out of the power of two.
    fn halves(&self, k: u32) -> Option<(u32, Span, Span)> {
        let nr = self.fold.new_rank(self.ctx.rank)?;
        let partner = self.fold.old_rank(nr ^ (1 << k));
        let (ka, kb) = self.kept(nr, k);
        let (ga, gb) = self.kept(nr ^ (1 << k), k);
        Some((partner, self.span(ka, kb), self.span(ga, gb)))
    }

    /// The single block new rank `nr` holds after all halving steps.
    pub(crate) fn final_block(&self, nr: u32) -> u32 {
        self.window(nr, self.fold.log).0
    }
}

/// Recursive doubling on the whole vector.
#[derive(Clone, Copy, Debug)]
pub struct RecursiveDoubling {
    h: Halving,
}

impl RecursiveDoubling {
    /// Allreduce of `count` elements.
    pub fn new(ctx: Ctx, count: usize, dtype: Datatype, op: Op) -> Self {
        let fold = Fold::new(ctx.size);
        let elem = dtype.size();
        Self {
            h: Halving { ctx, fold, count, elem, op, dtype, acc: Buf::Recv, acc_at: 0, tmp_at: 0 },
        }
    }

    pub(crate) fn scratch(&self) -> usize {
        self.h.bytes()
    }

    pub(crate) fn rounds(&self) -> u32 {
        if self.h.ctx.size == 1 {
            1
        } else {
            self.h.fold.log + 2
        }
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let log = self.h.fold.log;
        if round == 0 {
            self.h.fold_in(index)
        } else if round <= log {
            self.h.doubling_whole(round - 1, index)
        } else {
            self.h.unfold(index)
        }
    }
}

/// Rabenseifner: fold, recursive halving reduce-scatter, recursive doubling allgather,
/// unfold.
#[derive(Clone, Copy, Debug)]
pub struct Rabenseifner {
    h: Halving,
}

impl Rabenseifner {
    /// Allreduce of `count` elements.
    pub fn new(ctx: Ctx, count: usize, dtype: Datatype, op: Op) -> Self {
        let rd = RecursiveDoubling::new(ctx, count, dtype, op);
        Self { h: rd.h }
    }

    pub(crate) fn scratch(&self) -> usize {
        self.h.bytes()
    }

    pub(crate) fn rounds(&self) -> u32 {
        if self.h.ctx.size == 1 {
            1
        } else {
            2 * self.h.fold.log + 2
        }
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let log = self.h.fold.log;
        if round == 0 {
            self.h.fold_in(index)
        } else if round <= log {
            self.h.halving(round - 1, index)
        } else if round <= 2 * log {
            self.h.doubling_halves(2 * log - round, index)
        } else {
            self.h.unfold(index)
        }
    }
}

/// Ring: reduce-scatter around the ring, then allgather around it. Combines out of rank
/// order: commutative operations only.
#[derive(Clone, Copy, Debug)]
pub struct Ring {
    ctx: Ctx,
    count: usize,
    elem: usize,
    op: Op,
    dtype: Datatype,
}

impl Ring {
    /// Allreduce of `count` elements.
    pub fn new(ctx: Ctx, count: usize, dtype: Datatype, op: Op) -> Self {
        Self { ctx, count, elem: dtype.size(), op, dtype }
    }

    pub(crate) fn scratch(&self) -> usize {
        self.count.div_ceil(self.ctx.size as usize) * self.elem
    }

    pub(crate) fn rounds(&self) -> u32 {
        1 + 2 * (self.ctx.size - 1)
    }

    #[inline]
    fn chunk(&self, buf: Buf, i: u32) -> Region {
        let a = part_start(self.count, self.ctx.size, i) * self.elem;
        let b = part_start(self.count, self.ctx.size, i + 1) * self.elem;
        reg(buf, a, b - a)
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let (r, p) = (self.ctx.rank, self.ctx.size);
        if round == 0 {
            let n = self.count * self.elem;
            return pick([Some(copy(reg(Buf::Send, 0, n), reg(Buf::Recv, 0, n)))], index);
        }
        let right = (r + 1) % p;
        let left = (r + p - 1) % p;
        if round < p {
            let t = round - 1;
            let out = (r + p - t) % p;
            let inn = (r + 2 * p - t - 1) % p;
            let into = self.chunk(Buf::Recv, inn);
            let tmp = reg(Buf::Scratch, 0, into.len);
            pick(
                [
                    Some(send(right, self.chunk(Buf::Recv, out))),
                    Some(recv(left, tmp)),
                    Some(reduce(self.op, self.dtype, tmp, into, false)),
                ],
                index,
            )
        } else {
            let t = round - p;
            let out = (r + 1 + p - t) % p;
            let inn = (r + p - t) % p;
            pick(
                [
                    Some(send(right, self.chunk(Buf::Recv, out))),
                    Some(recv(left, self.chunk(Buf::Recv, inn))),
                ],
                index,
            )
        }
    }
}
