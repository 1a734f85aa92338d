//! The flat (intra-communicator) algorithms. Each is a small struct that computes the
//! `index`-th step of round `round` of one rank from O(1) state, so a schedule for any
//! number of ranks needs no storage beyond the caller's buffers.

pub mod allgather;
pub mod allreduce;
pub mod alltoall;
pub mod barrier;
pub mod bcast;
pub mod gather;
pub mod reduce;
pub mod reduce_scatter;
pub mod scan;

use super::args::Blocks;
use super::datatype::Datatype;
use super::error::CollError;
use super::op::Op;
use super::step::{Buf, Peer, Region, Step};

/// What an algorithm says for one `(round, index)`.
#[derive(Clone, Copy, Debug)]
pub enum Emit {
    /// This step.
    Step(Step),
    /// No step at this index; ask for the next index.
    Skip,
    /// The round has no more steps.
    End,
}

/// A rank and the size of its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ctx {
    /// This rank.
    pub rank: u32,
    /// Ranks in the group.
    pub size: u32,
}

impl Ctx {
    /// Rank `rank` of `size`; `Err` when `rank` is out of range or the group is empty.
    pub fn new(rank: u32, size: u32) -> Result<Self, CollError> {
        if rank < size {
            Ok(Self { rank, size })
        } else {
            Err(CollError::BadRoot)
        }
    }

    /// `rank - root` modulo the size.
    #[inline]
    pub(crate) fn relative(&self, root: u32) -> u32 {
        (self.rank + self.size - root) % self.size
    }

    /// The rank whose relative rank to `root` is `v`.
    #[inline]
    pub(crate) fn absolute(&self, v: u32, root: u32) -> u32 {
        ((v as u64 + root as u64) % self.size as u64) as u32
    }
}

/// `⌈log2 n⌉` (0 for n ≤ 1).
#[inline]
pub(crate) fn ceil_log2(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}

/// Start of part `i` of `count` elements split into `parts` nearly equal parts.
#[inline]
pub(crate) fn part_start(count: usize, parts: u32, i: u32) -> usize {
    let parts = parts.max(1) as usize;
    let (base, extra) = (count / parts, count % parts);
    let i = i as usize;
    i * base + i.min(extra)
}

/// The non-power-of-two fold of the recursive-doubling family: of the first `2 * rem`
/// ranks, each even one hands its data to the odd one above it and sits out; the
/// remaining `p2` ranks are renumbered in rank order, so contiguous groups of new ranks
/// cover contiguous ranges of old ranks (which keeps non-commutative reductions in order).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fold {
    pub p2: u32,
    pub rem: u32,
    pub log: u32,
}

impl Fold {
    pub(crate) fn new(size: u32) -> Self {
        let p2 = if size == 0 { 0 } else { 1u32 << (31 - size.leading_zeros()) };
        Self { p2, rem: size - p2, log: p2.max(1).trailing_zeros() }
    }

    /// The new rank of `rank`, or `None` when it sits out.
    #[inline]
    pub(crate) fn new_rank(&self, rank: u32) -> Option<u32> {
        if rank < 2 * self.rem {
            (rank % 2 == 1).then_some(rank / 2)
        } else {
            Some(rank - self.rem)
        }
    }

    /// The old rank of new rank `nr`.
    #[inline]
    pub(crate) fn old_rank(&self, nr: u32) -> u32 {
        if nr < self.rem {
            2 * nr + 1
        } else {
            nr + self.rem
        }
    }

    /// The first old rank whose data new rank `nr` holds (`size` for `nr == p2`).
    #[inline]
    pub(crate) fn first_old(&self, nr: u32) -> u32 {
        if nr < self.rem {
            2 * nr
        } else {
            nr + self.rem
        }
    }
}

/// Where per-rank blocks lie in a buffer: equal blocks back to back, or a `v` layout.
#[derive(Clone, Copy, Debug)]
pub enum BlockLayout<'a> {
    /// Block `i` is bytes `[i * bytes, (i + 1) * bytes)`.
    Regular {
        /// Bytes per block.
        bytes: usize,
    },
    /// Block `i` is ranks `[starts[i], starts[i + 1])` of `bytes` each, back to back (a
    /// node's bundle in node-sorted order).
    Grouped {
        /// Start of each group, one more entry than groups.
        starts: &'a [u32],
        /// Bytes per rank.
        bytes: usize,
    },
    /// Block `i` is `counts[i]` elements at element `displs[i]`.
    Varying {
        /// The counts and displacements.
        blocks: Blocks<'a>,
        /// Bytes per element.
        elem: usize,
    },
}

impl<'a> BlockLayout<'a> {
    /// A regular layout of `count` elements of `dtype` per block.
    pub(crate) fn regular(count: usize, dtype: Datatype) -> Result<Self, CollError> {
        Ok(Self::Regular { bytes: count.checked_mul(dtype.size()).ok_or(CollError::TooLarge)? })
    }

    /// A `v` layout for `size` ranks, checked so no region computation can overflow.
    pub(crate) fn varying(
        blocks: Option<Blocks<'a>>,
        size: u32,
        dtype: Datatype,
    ) -> Result<Self, CollError> {
        let blocks = blocks.ok_or(CollError::BadBlocks)?;
        if blocks.counts.len() != size as usize || blocks.displs.len() != size as usize {
            return Err(CollError::BadBlocks);
        }
        // O(1): offsets are computed saturating, so an absurd count or displacement yields a
        // region no executor can resolve (an error there), never an overflow here.
        Ok(Self::Varying { blocks, elem: dtype.size() })
    }

    /// Block `i` in `buf`.
    #[inline]
    pub(crate) fn block(&self, buf: Buf, i: u32) -> Region {
        match self {
            Self::Regular { bytes } => Region::new(buf, i as usize * bytes, *bytes),
            Self::Grouped { starts, bytes } => {
                let (a, b) = (starts[i as usize] as usize, starts[i as usize + 1] as usize);
                Region::new(buf, a * bytes, (b - a) * bytes)
            }
            Self::Varying { blocks, elem } => {
                let (displ, count) = (blocks.displs[i as usize], blocks.counts[i as usize]);
                Region::new(buf, displ.saturating_mul(*elem), count.saturating_mul(*elem))
            }
        }
    }

    /// Bytes of block `i`.
    #[inline]
    pub(crate) fn len(&self, i: u32) -> usize {
        match self {
            Self::Regular { bytes } => *bytes,
            Self::Grouped { .. } => self.block(Buf::Recv, i).len,
            Self::Varying { blocks, elem } => blocks.counts[i as usize].saturating_mul(*elem),
        }
    }

    /// The `index`-th region of blocks `[a, b)` of `buf`: one region for a regular layout
    /// (the range is contiguous), one per block otherwise; `None` past the end. An empty
    /// range has no regions.
    #[inline]
    pub(crate) fn range_region(&self, buf: Buf, a: u32, b: u32, index: u32) -> Option<Region> {
        if a >= b {
            return None;
        }
        match self {
            Self::Regular { bytes } => {
                (index == 0).then(|| Region::new(buf, a as usize * bytes, (b - a) as usize * bytes))
            }
            Self::Grouped { starts, bytes } => (index == 0).then(|| {
                let (x, y) = (starts[a as usize] as usize, starts[b as usize] as usize);
                Region::new(buf, x * bytes, (y - x) * bytes)
            }),
            Self::Varying { .. } => (index < b - a).then(|| self.block(buf, a + index)),
        }
    }

    /// Number of regions `range_region` yields for `[a, b)`.
    #[inline]
    pub(crate) fn range_regions(&self, a: u32, b: u32) -> u32 {
        if a >= b {
            0
        } else if !matches!(self, Self::Varying { .. }) {
            1
        } else {
            b - a
        }
    }

    /// One past the last byte of any block.
    pub(crate) fn extent(&self, size: u32) -> usize {
        match self {
            Self::Regular { bytes } => size as usize * bytes,
            Self::Grouped { starts, bytes } => starts[size as usize] as usize * bytes,
            Self::Varying { blocks, elem } => blocks
                .counts
                .iter()
                .zip(blocks.displs)
                .map(|(c, d)| c.saturating_add(*d).saturating_mul(*elem))
                .max()
                .unwrap_or(0),
        }
    }
}

#[inline]
pub(crate) fn send(to: u32, region: Region) -> Emit {
    Emit::Step(Step::Send { to: Peer::local(to), region })
}

#[inline]
pub(crate) fn recv(from: u32, region: Region) -> Emit {
    Emit::Step(Step::Recv { from: Peer::local(from), region })
}

#[inline]
pub(crate) fn copy(src: Region, dst: Region) -> Emit {
    Emit::Step(Step::Copy { src, dst })
}

#[inline]
pub(crate) fn reduce(op: Op, dtype: Datatype, src: Region, dst: Region, src_left: bool) -> Emit {
    Emit::Step(Step::Reduce { op, dtype, src, dst, src_left })
}

/// Picks the `index`-th of a short list of optional steps, skipping absent ones.
#[inline]
pub(crate) fn pick<const N: usize>(steps: [Option<Emit>; N], index: u32) -> Emit {
    match steps.get(index as usize) {
        None => Emit::End,
        Some(Some(e)) => *e,
        Some(None) => Emit::Skip,
    }
}

#[inline]
pub(crate) const fn reg(buf: Buf, offset: usize, len: usize) -> Region {
    Region::new(buf, offset, len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::{Algorithm, CollArgs, CollOp, Schedule};

    #[test]
    fn absurd_varying_blocks_saturate_instead_of_overflowing() {
        // A displacement or count times the element size past usize::MAX once panicked
        // (debug) or wrapped into a region inside the buffer (release).
        let counts = [1, usize::MAX / 4];
        let displs = [usize::MAX / 4, 0];
        let blocks = Blocks { counts: &counts, displs: &displs };
        let layout = BlockLayout::varying(Some(blocks), 2, Datatype::I64).unwrap();
        assert_eq!(layout.block(Buf::Recv, 0), Region::new(Buf::Recv, usize::MAX, 8));
        assert_eq!(layout.block(Buf::Recv, 1), Region::new(Buf::Recv, 0, usize::MAX));
        let args = CollArgs::new(1, Datatype::I64).with_send(blocks).with_recv(blocks);
        let ctx = Ctx::new(0, 2).unwrap();
        let schedule = Schedule::intra(CollOp::Alltoallv, Algorithm::Pairwise, ctx, &args).unwrap();
        let far = schedule
            .filter_map(|s| match s {
                Step::Send { region, .. } | Step::Recv { region, .. } => Some(region.end()),
                _ => None,
            })
            .max();
        assert_eq!(far, Some(usize::MAX));
    }
}
