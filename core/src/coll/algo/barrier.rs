//! Barriers: dissemination and recursive doubling. Messages are empty.

use super::{ceil_log2, pick, recv, reg, send, Ctx, Emit, Fold};
use crate::coll::step::{Buf, Region};

const EMPTY: Region = reg(Buf::Recv, 0, 0);

/// Dissemination: in round `k` send to `rank + 2^k`, receive from `rank - 2^k`.
#[derive(Clone, Copy, Debug)]
pub struct Dissemination {
    ctx: Ctx,
}

impl Dissemination {
    /// The barrier for `ctx`.
    pub fn new(ctx: Ctx) -> Self {
        Self { ctx }
    }

    pub(crate) fn rounds(&self) -> u32 {
        ceil_log2(self.ctx.size)
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let (r, p) = (self.ctx.rank as u64, self.ctx.size as u64);
        let d = 1u64 << round;
        let to = ((r + d) % p) as u32;
        let from = ((r + p - d % p) % p) as u32;
        pick([Some(send(to, EMPTY)), Some(recv(from, EMPTY))], index)
    }
}

/// Recursive doubling with a fold for non-powers of two.
#[derive(Clone, Copy, Debug)]
pub struct RecursiveDoubling {
    ctx: Ctx,
    fold: Fold,
}

impl RecursiveDoubling {
    /// The barrier for `ctx`.
    pub fn new(ctx: Ctx) -> Self {
        Self { ctx, fold: Fold::new(ctx.size) }
    }

    pub(crate) fn rounds(&self) -> u32 {
        if self.ctx.size == 1 {
            0
        } else {
            self.fold.log + 2
        }
    }

    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        let r = self.ctx.rank;
        let f = self.fold;
        let nr = f.new_rank(r);
        let folded = r < 2 * f.rem;
        if round == 0 {
            return match (folded, nr) {
                (true, None) => pick([Some(send(r + 1, EMPTY))], index),
                (true, Some(_)) => pick([Some(recv(r - 1, EMPTY))], index),
                _ => Emit::End,
            };
        }
        if round == f.log + 1 {
            return match (folded, nr) {
                (true, None) => pick([Some(recv(r + 1, EMPTY))], index),
                (true, Some(_)) => pick([Some(send(r - 1, EMPTY))], index),
                _ => Emit::End,
            };
        }
        let Some(nr) = nr else { return Emit::End };
        let partner = f.old_rank(nr ^ (1 << (round - 1)));
        pick([Some(send(partner, EMPTY)), Some(recv(partner, EMPTY))], index)
    }
}
