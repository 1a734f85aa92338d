//! The rank map and its hot path: `(rank) → (pgid, lpid)` and `(rank) → &Ave`.

use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::av::{Ave, Lpid, NodeId, Pgid, ProcessGroups};

/// A communicator rank.
pub type Rank = u32;

/// Which model a rank map uses (what [`RankMap::kind`] reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelKind {
    /// `lpid = rank`: no storage.
    Direct,
    /// `lpid = offset + rank`.
    Offset,
    /// `lpid = offset + rank × stride`, stride possibly negative.
    Stride,
    /// Blocks of consecutive lpids, a fixed stride apart.
    BlockStride,
    /// A table of lpids, all in one group (possibly an offset view of a parent's table).
    Lut,
    /// A strided view of a parent's lut: `lpid = table[start + rank × stride]`.
    LutStrideView,
    /// A table of `(pgid, lpid)` packed into one word each (possibly an offset view of a
    /// parent's table).
    Mlut,
    /// A strided view of a parent's mlut.
    MlutStrideView,
}

impl ModelKind {
    /// A short lower-case name, as the benchmarks print it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Offset => "offset",
            Self::Stride => "stride",
            Self::BlockStride => "blockstride",
            Self::Lut => "lut",
            Self::LutStrideView => "lut_stride_view",
            Self::Mlut => "mlut",
            Self::MlutStrideView => "mlut_stride_view",
        }
    }

    /// Whether the model needs a table (lut or mlut, owned or viewed).
    pub const fn has_table(self) -> bool {
        matches!(self, Self::Lut | Self::LutStrideView | Self::Mlut | Self::MlutStrideView)
    }
}

/// The model and the data its lookup reads. Each single-group variant carries its group's
/// address vector so `entry` never consults the registry; `Mlut*` read the pgid from the
/// table and find the address vector in the registry.
///
/// The discriminants are explicit and sparse on purpose: no four of them are dense enough
/// for the compiler to dispatch through a jump table (its indirect jump costs five
/// instructions more than a compare). The lookup's compare tree is balanced by how likely
/// each arm is: direct and offset (adjacent tags, one arm, together as likely as the rest)
/// are tested first with one compare, stride second and lut third (plain arms), the
/// unlikely others last. The 32-bit fields come first so they fill the padding after the
/// one-byte tag.
#[derive(Debug)]
#[repr(u8)]
pub(crate) enum Model<'a> {
    /// `lpid = rank`; `av` is the group's address vector, `size` long, so the slice bound is
    /// the rank bound.
    Direct { av: &'a [Ave] } = 0,
    /// `lpid = first + rank`, `first > 0`; `av` is the group's address vector from `first`,
    /// `size` long, so the slice bound is the rank bound. Shares the direct lookup.
    Offset { first: u32, av: &'a [Ave] } = 1,
    /// `lpid = base + first + rank × stride`, with `0 < |stride| ≤ i32::MAX`. `av` is the
    /// group's address vector cut to exactly the lpids the ranks reach (`base` is the lpid of
    /// its first entry), so a rank past the end falls outside it and the slice bound is the
    /// only check.
    Stride { base: u32, av: &'a [Ave], first: i64, stride: i64 } = 16,
    /// `lpid = table[rank]`; `table` is exactly `size` words.
    Lut { av: &'a [Ave], table: &'a [AtomicU32] } = 17,
    /// `lpid = first + rank + (rank / block) × gap`, where `gap = step − block` and the
    /// quotient is `mulhi(magic, rank)` (no division on the lookup path).
    BlockStride { block: u32, av: &'a [Ave], first: i64, gap: i64, magic: u64 } = 64,
    /// `table[rank]` packs `pgid << shift | lpid` (see [`unpack`]); `table` is `size` words.
    Mlut { table: &'a [AtomicU32], shift: u32, mask: u32 } = 128,
    /// `lpid = table[start + rank × stride]` within the parent's table.
    LutStride { start: u32, stride: i32, av: &'a [Ave], table: &'a [AtomicU32] } = 192,
    /// `(pgid, lpid)` packed at word `start + rank × stride` of the parent's table.
    MlutStride { table: &'a [AtomicU32], start: u32, stride: i32, shift: u32, mask: u32 } = 255,
}

impl<'a> Model<'a> {
    /// Ranks `0..` are lpids `first..` of `av` cut from `first`: direct when `first` is 0.
    pub(crate) fn contiguous(av: &'a [Ave], first: Lpid) -> Self {
        if first == 0 {
            Self::Direct { av }
        } else {
            Self::Offset { first, av }
        }
    }
}

/// How one communicator's ranks map to processes `(pgid, lpid)` and their entries.
///
/// Built by [`RankMap::direct`], [`RankMap::contiguous`] or from a parent with
/// [`create`](super::create) (and the other constructors of [`super`]); duplicated with
/// [`dup`](Self::dup); given back with [`free`](Self::free), which returns a table to its
/// arena when its last user goes. Not `Clone`: copies go through `dup` so the table's user
/// count stays right.
///
/// Getters: [`size`](Self::size), [`kind`](Self::kind), [`pgid`](Self::pgid),
/// [`table`](Self::table). Hot path: [`translate`](Self::translate),
/// [`entry`](Self::entry), [`node`](Self::node).
#[derive(Debug)]
pub struct RankMap<'a> {
    pub(crate) model: Model<'a>,
    pub(crate) size: u32,
    /// The group of every rank; meaningless for `Mlut*`.
    pub(crate) pgid: Pgid,
}

static_assertions::const_assert!(core::mem::size_of::<RankMap<'static>>() <= 64);
// Threads of one process translate through the same communicator concurrently.
static_assertions::assert_impl_all!(RankMap<'static>: Send, Sync);

impl<'a> RankMap<'a> {
    /// The map of a group's own world: rank `r` is process `r` of `av` (which is `pgid`'s
    /// address vector, fewer than 2³² entries).
    pub fn direct(pgid: Pgid, av: &'a [Ave]) -> Self {
        let av = &av[..av.len().min(u32::MAX as usize)];
        Self { model: Model::Direct { av }, size: av.len() as u32, pgid }
    }

    /// Ranks `0..size` are processes `first..first + size` of `av` (`MPI_COMM_SELF` is
    /// `contiguous(pgid, av, my_lpid, 1)`).
    pub fn contiguous(
        pgid: Pgid,
        av: &'a [Ave],
        first: Lpid,
        size: u32,
    ) -> Result<Self, super::RankMapError> {
        let end = first as usize + size as usize;
        let av = av.get(first as usize..end).ok_or(super::RankMapError::LpidOutOfRange {
            index: size.saturating_sub(1),
            lpid: end.saturating_sub(1) as u32,
            len: av.len() as u32,
        })?;
        Ok(Self { model: Model::contiguous(av, first), size, pgid })
    }

    /// Number of ranks.
    #[inline]
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The model in use.
    pub fn kind(&self) -> ModelKind {
        match self.model {
            Model::Direct { .. } => ModelKind::Direct,
            Model::Offset { .. } => ModelKind::Offset,
            Model::Stride { .. } => ModelKind::Stride,
            Model::BlockStride { .. } => ModelKind::BlockStride,
            Model::Lut { .. } => ModelKind::Lut,
            Model::LutStride { .. } => ModelKind::LutStrideView,
            Model::Mlut { .. } => ModelKind::Mlut,
            Model::MlutStride { .. } => ModelKind::MlutStrideView,
        }
    }

    /// The group all ranks belong to; `None` for an mlut (ranks from several groups).
    pub fn pgid(&self) -> Option<Pgid> {
        match self.model {
            Model::Mlut { .. } | Model::MlutStride { .. } => None,
            _ => Some(self.pgid),
        }
    }

    /// The arena table this map reads (possibly shared with other maps), if any.
    pub fn table(&self) -> Option<&'a [AtomicU32]> {
        match self.model {
            Model::Lut { table, .. }
            | Model::LutStride { table, .. }
            | Model::Mlut { table, .. }
            | Model::MlutStride { table, .. } => Some(table),
            Model::Direct { .. }
            | Model::Offset { .. }
            | Model::Stride { .. }
            | Model::BlockStride { .. } => None,
        }
    }

    /// The process behind `rank`; `None` when `rank >= size`.
    #[inline(always)]
    pub fn translate(&self, rank: Rank) -> Option<(Pgid, Lpid)> {
        let r = rank as usize;
        match self.model {
            Model::Direct { .. } => (rank < self.size).then_some((self.pgid, rank)),
            Model::Offset { first, .. } => {
                (rank < self.size).then(|| (self.pgid, first.wrapping_add(rank)))
            }
            Model::Stride { first, stride, base, .. } => {
                (rank < self.size).then(|| (self.pgid, stride_lpid(base, first, stride, rank)))
            }
            Model::BlockStride { first, gap, magic, .. } => {
                (rank < self.size).then(|| (self.pgid, block_stride_lpid(first, gap, magic, rank)))
            }
            Model::Lut { table, .. } => Some((self.pgid, table.get(r)?.load(Relaxed))),
            Model::LutStride { table, start, stride, .. } => {
                if rank >= self.size {
                    return None;
                }
                Some((self.pgid, table.get(view_index(start, stride, rank))?.load(Relaxed)))
            }
            Model::Mlut { table, shift, .. } => Some(unpack(table.get(r)?.load(Relaxed), shift)),
            Model::MlutStride { table, start, stride, shift, .. } => {
                if rank >= self.size {
                    return None;
                }
                Some(unpack(table.get(view_index(start, stride, rank))?.load(Relaxed), shift))
            }
        }
    }

    /// The entry of the process behind `rank`; `None` when `rank >= size`. `groups` is read
    /// only by mlut maps, to find the address vector of each rank's group.
    ///
    /// One exhaustive `match` (shared with `address_word`), no default arm. The contiguous
    /// models (direct and offset: the duplicates and unreordered splits that dominate
    /// applications) are tested first with one compare, stride (odd/even splits, reversals)
    /// second, lut (irregular splits) third; the others are marked unlikely and come last
    /// (see [`Model`]). Each arm has one bounds check: the slice it indexes was cut at creation so
    /// that a rank past the end falls outside it (the lut's table, the stride's window of the
    /// address vector), plus the address-vector check where an index comes from a table.
    #[inline(always)]
    pub fn entry<const N: usize>(
        &self,
        groups: &ProcessGroups<'a, N>,
        rank: Rank,
    ) -> Option<&'a Ave> {
        self.read(groups, rank, |entry| entry)
    }

    /// The address word of the entry behind `rank` (what a transport sends to); `None` when
    /// `rank >= size`. The same lookup as [`entry`](Self::entry), with the load of the
    /// address inside each arm so it folds into the arm's addressing.
    #[inline(always)]
    pub fn address_word<const N: usize>(
        &self,
        groups: &ProcessGroups<'a, N>,
        rank: Rank,
    ) -> Option<u64> {
        self.read(groups, rank, Ave::address_word)
    }

    /// `read` applied to the entry behind `rank`: the one match of the hot path.
    #[inline(always)]
    fn read<const N: usize, T>(
        &self,
        groups: &ProcessGroups<'a, N>,
        rank: Rank,
        read: impl FnOnce(&'a Ave) -> T,
    ) -> Option<T> {
        let r = rank as usize;
        match self.model {
            Model::Direct { av } | Model::Offset { av, .. } => av.get(r).map(read),
            Model::Stride { av, first, stride, .. } => {
                av.get((first + rank as i64 * stride) as usize).map(read)
            }
            Model::BlockStride { av, first, gap, magic, .. } => {
                unlikely();
                if rank >= self.size {
                    return None;
                }
                av.get((first + rank as i64 + quotient(magic, rank) as i64 * gap) as usize)
                    .map(read)
            }
            Model::Lut { av, table } => av.get(table.get(r)?.load(Relaxed) as usize).map(read),
            Model::LutStride { av, table, start, stride } => {
                unlikely();
                if rank >= self.size {
                    return None;
                }
                let i = start as i64 + rank as i64 * stride as i64;
                av.get(table.get(i as usize)?.load(Relaxed) as usize).map(read)
            }
            Model::Mlut { table, shift, mask } => {
                unlikely();
                let word = table.get(r)?.load(Relaxed);
                groups.entry_at((word >> shift) as usize, word & mask).map(read)
            }
            Model::MlutStride { table, start, stride, shift, mask } => {
                unlikely();
                if rank >= self.size {
                    return None;
                }
                let i = (start as i64 + rank as i64 * stride as i64) as usize;
                let word = table.get(i)?.load(Relaxed);
                groups.entry_at((word >> shift) as usize, word & mask).map(read)
            }
        }
    }

    /// The node of the process behind `rank` (which ranks share memory).
    #[inline]
    pub fn node<const N: usize>(
        &self,
        groups: &ProcessGroups<'a, N>,
        rank: Rank,
    ) -> Option<NodeId> {
        self.entry(groups, rank).map(Ave::node)
    }
}

/// Marks an arm as unlikely, so the likely ones are tested first.
#[cold]
#[inline(always)]
fn unlikely() {}

impl<'a> RankMap<'a> {
    /// The node of every rank, in rank order, into `out` (hierarchical collectives group
    /// ranks by node with it). `out` must hold exactly [`size`](Self::size) entries.
    pub fn nodes_into<const N: usize>(
        &self,
        groups: &ProcessGroups<'a, N>,
        out: &mut [NodeId],
    ) -> Result<(), super::RankMapError> {
        if out.len() != self.size as usize {
            return Err(super::RankMapError::OutputLength { needed: self.size, given: out.len() });
        }
        for (rank, node) in out.iter_mut().enumerate() {
            let missing = super::RankMapError::UnknownGroup(self.pgid);
            *node = self.node(groups, rank as Rank).ok_or(missing)?;
        }
        Ok(())
    }
}

/// The lpid of `rank` in a stride map (`rank < size`).
#[inline(always)]
pub(crate) fn stride_lpid(base: u32, first: i64, stride: i64, rank: Rank) -> Lpid {
    base.wrapping_add((first + rank as i64 * stride) as Lpid)
}

/// The lpid of `rank` in a block-stride map (`rank < size`).
#[inline(always)]
pub(crate) fn block_stride_lpid(first: i64, gap: i64, magic: u64, rank: Rank) -> Lpid {
    (first + rank as i64 + quotient(magic, rank) as i64 * gap) as Lpid
}

/// The word of `rank` in a strided view of a parent's table (`rank < size`).
#[inline(always)]
pub(crate) fn view_index(start: u32, stride: i32, rank: Rank) -> usize {
    (start as i64 + rank as i64 * stride as i64) as usize
}

/// `rank / block` for any 32-bit rank, with `magic = u64::MAX / block + 1` (block ≥ 2): the
/// high half of a 64×64 product.
#[inline]
pub(crate) fn quotient(magic: u64, rank: Rank) -> u64 {
    ((magic as u128 * rank as u128) >> 64) as u64
}

/// An mlut word: the pgid above bit `shift` (`0 < shift < 32`), the lpid below it.
#[inline(always)]
pub(crate) fn unpack(word: u32, shift: u32) -> (Pgid, Lpid) {
    (Pgid((word >> shift) as u16), word & lpid_mask(shift))
}

/// The bits below `shift` (`0 < shift < 32`).
pub(crate) const fn lpid_mask(shift: u32) -> u32 {
    u32::MAX >> (32 - shift)
}

/// The mlut word of `(pgid, lpid)`.
pub(crate) fn pack(pgid: Pgid, lpid: Lpid, shift: u32) -> u32 {
    ((pgid.0 as u32) << shift) | lpid
}

/// The lpid width of an mlut whose largest lpid is `max_lpid`, if its largest pgid fits above it.
pub(crate) fn mlut_shift(max_pgid: Pgid, max_lpid: Lpid) -> Option<u32> {
    let shift = (u32::BITS - max_lpid.leading_zeros()).max(1);
    let pgid_bits = u32::BITS - (max_pgid.0 as u32).leading_zeros();
    (shift + pgid_bits <= 32 && shift < 32).then_some(shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlut_words_round_trip() {
        for (pgid, lpid) in [(0u16, 0u32), (1, 786_431), (3, 1), (255, (1 << 24) - 1)] {
            let shift = mlut_shift(Pgid(pgid), lpid).unwrap();
            assert_eq!(unpack(pack(Pgid(pgid), lpid, shift), shift), (Pgid(pgid), lpid));
        }
        assert_eq!(mlut_shift(Pgid(1), u32::MAX), None);
        assert_eq!(mlut_shift(Pgid(0x1ff), (1 << 24) - 1), None);
        assert_eq!(mlut_shift(Pgid(1), (1 << 31) - 1), Some(31));
    }

    #[test]
    fn block_quotient_is_exact_for_every_32_bit_rank_sampled() {
        for block in [2u32, 3, 4, 5, 7, 8, 1000, 65_537, u32::MAX] {
            let magic = u64::MAX / block as u64 + 1;
            let mut rank = 0u32;
            for step in [1u32, 7, 977, 65_521, 16_777_259] {
                for _ in 0..200 {
                    assert_eq!(quotient(magic, rank), (rank / block) as u64, "{rank}/{block}");
                    rank = rank.wrapping_add(step);
                }
            }
            for rank in [u32::MAX, u32::MAX - 1, block - 1, block, block.wrapping_mul(2)] {
                assert_eq!(quotient(magic, rank), (rank / block) as u64, "{rank}/{block}");
            }
        }
    }
}
