//! Alltoall and alltoallv: linear, pairwise exchange, and Bruck for small blocks.
//! Block `j` of `Send` goes to rank `j`; block `j` of `Recv` comes from rank `j`.

use super::{ceil_log2, copy, pick, recv, reg, send, BlockLayout, Ctx, Emit};
use crate::coll::step::Buf;

/// Every transfer in one round.
#[derive(Clone, Copy, Debug)]
pub struct Linear<'a> {
    ctx: Ctx,
    send: BlockLayout<'a>,
    recv: BlockLayout<'a>,
}

impl<'a> Linear<'a> {
    /// Alltoall over the two layouts.
    pub fn new(ctx: Ctx, send: BlockLayout<'a>, recv: BlockLayout<'a>) -> Self {
        Self { ctx, send, recv }
    }

    pub(crate) fn rounds(&self) -> u32 {
        1
    }

    pub(crate) fn step(&mut self, _round: u32, index: u32) -> Emit {
        let (r, p) = (self.ctx.rank, self.ctx.size);
        if index == 0 {
            return copy(self.send.block(Buf::Send, r), self.recv.block(Buf::Recv, r));
        }
        let (i, second) = ((index - 1) / 2 + 1, (index - 1) % 2 == 1);
        if i >= p {
            return Emit::End;
        }
        let peer = (r + i) % p;
        let from = (r + p - i) % p;
        if second {
            recv(from, self.recv.block(Buf::Recv, from))
        } else {
            send(peer, self.send.block(Buf::Send, peer))
        }
    }
}

/// Round `t` sends to `rank + t` and receives from `rank - t`.
#[derive(Clone, Copy, Debug)]
pub struct Pairwise<'a> {
    inner: Linear<'a>,
}

impl<'a> Pairwise<'a> {
    /// Alltoall over the two layouts.
    pub fn new(ctx: Ctx, send: BlockLayout<'a>, recv: BlockLayout<'a>) -> Self {
        Self { inner: Linear::new(ctx, send, recv) }
    }

    pub(crate) fn rounds(&self) -> u32 {
        self.inner.ctx.size
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let (r, p) = (self.inner.ctx.rank, self.inner.ctx.size);
        let l = &self.inner;
        if round == 0 {
            return pick(
                [Some(copy(l.send.block(Buf::Send, r), l.recv.block(Buf::Recv, r)))],
                index,
            );
        }
        let to = (r + round) % p;
        let from = (r + p - round) % p;
        pick(
            [
                Some(send(to, l.send.block(Buf::Send, to))),
                Some(recv(from, l.recv.block(Buf::Recv, from))),
            ],
            index,
        )
    }
}

/// Bruck: `⌈log2 size⌉` rounds; in round `k` every block whose rotated index has bit `k`
/// set is packed, sent `2^k` ranks on, and unpacked. Regular layouts only.
#[derive(Clone, Copy, Debug)]
pub struct Bruck {
    ctx: Ctx,
    bytes: usize,
}

impl Bruck {
    /// Alltoall of `bytes` per block.
    pub fn new(ctx: Ctx, bytes: usize) -> Self {
        Self { ctx, bytes }
    }

    fn half(&self) -> usize {
        (self.ctx.size as usize).div_ceil(2)
    }

    pub(crate) fn scratch(&self) -> usize {
        (self.ctx.size as usize + 2 * self.half()) * self.bytes
    }

    pub(crate) fn rounds(&self) -> u32 {
        ceil_log2(self.ctx.size) + 2
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let (r, p, b) = (self.ctx.rank, self.ctx.size, self.bytes);
        let rot = |i: u32| reg(Buf::Scratch, i as usize * b, b);
        let pack_at = p as usize * b;
        let unpack_at = pack_at + self.half() * b;
        let l = ceil_log2(p);
        if round == 0 {
            if index >= p {
                return Emit::End;
            }
            return copy(reg(Buf::Send, ((r + index) % p) as usize * b, b), rot(index));
        }
        if round > l {
            if index >= p {
                return Emit::End;
            }
            return copy(rot((r + p - index) % p), reg(Buf::Recv, index as usize * b, b));
        }
        let d = 1u32 << (round - 1);
        let m = (p / (2 * d)) * d + (p % (2 * d)).saturating_sub(d);
        let nth = |j: u32| (j / d) * 2 * d + d + j % d;
        let slot = |base: usize, j: u32| reg(Buf::Scratch, base + j as usize * b, b);
        if index < m {
            return copy(rot(nth(index)), slot(pack_at, index));
        }
        let len = m as usize * b;
        match index - m {
            0 => send((r + d) % p, reg(Buf::Scratch, pack_at, len)),
            1 => recv((r + p - d) % p, reg(Buf::Scratch, unpack_at, len)),
            j if j - 2 < m => copy(slot(unpack_at, j - 2), rot(nth(j - 2))),
            _ => Emit::End,
        }
    }
}
