//! Building rank maps: from a parent and an indirect mapping (the paper's Table II and the
//! views beyond it), from explicit process lists, duplicates, and freeing.

use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

use super::detect::{detect, Shape};
use super::map::{lpid_mask, mlut_shift, pack, unpack, Model, Rank};
use super::{RankMap, RankMapError, TableArena};
use crate::av::{Lpid, Pgid, ProcessGroups};

/// The child communicator whose rank `i` is the parent's rank `indirect[i]`
/// (`MPI_Comm_split`, `MPI_Comm_create`, `MPI_Group_incl` all reduce to this).
///
/// One pass detects the pattern of `indirect` (offset, stride, block-stride or irregular,
/// checking every entry against the parent's size). The pattern is then composed with the
/// parent's model:
///
/// | parent \ indirect | offset | stride | block-stride | irregular |
/// |---|---|---|---|---|
/// | direct, offset | offset | stride | block-stride | lut |
/// | stride | stride | stride | lut* | lut* |
/// | block-stride | block-stride* | stride* | lut* | lut* |
/// | lut | lut view | lut stride view | lut* | lut* |
/// | mlut | mlut view | mlut stride view | mlut* | mlut* |
///
/// (* where the composition has no closed form, the child's processes are scanned once for
/// a regular pattern and only stored in a table when none is found; a table whose entries
/// share one group is a lut, never an mlut.) Views share the parent's table and add a user
/// to it. Every table comes from `arena`.
pub fn create<'a, const N: usize, const T: usize>(
    parent: &RankMap<'a>,
    indirect: &[Rank],
    groups: &ProcessGroups<'a, N>,
    arena: &mut TableArena<'a, T>,
) -> Result<RankMap<'a>, RankMapError> {
    let n = u32::try_from(indirect.len()).map_err(|_| RankMapError::TooLarge)?;
    let size = parent.size;
    let pattern =
        detect(indirect.len(), |i| (indirect[i] < size).then_some((Pgid(0), indirect[i] as i64)));
    let through_parent = |i: usize| {
        let rank = indirect[i];
        parent.translate(rank).ok_or(RankMapError::ParentRankOutOfRange {
            index: i as u32,
            rank,
            size,
        })
    };
    if let Some(child) = compose(parent, pattern, n, groups, arena)? {
        return Ok(child);
    }
    // An irregular mapping through an increasing affine parent stays irregular (a negative
    // stride could turn descending runs into block-stride): no second scan, one tight pass.
    let increasing = match parent.model {
        Model::Direct { .. } => Some((0, 1)),
        Model::Offset { first, .. } => Some((first as i64, 1)),
        Model::Stride { first, stride, base, .. } if stride > 0 => {
            Some((base as i64 + first, stride))
        }
        _ => None,
    };
    if let (Shape::Irregular, Some((start, step))) = (pattern, increasing) {
        return lut_through_affine(parent, indirect, start, step, groups, arena);
    }
    from_processes_seq(n, through_parent, parent.pgid(), groups, arena)
}

/// The lut of `lpid(i) = start + indirect[i] × step`, every entry checked against the
/// parent's size.
fn lut_through_affine<'a, const N: usize, const T: usize>(
    parent: &RankMap<'a>,
    indirect: &[Rank],
    start: i64,
    step: i64,
    groups: &ProcessGroups<'a, N>,
    arena: &mut TableArena<'a, T>,
) -> Result<RankMap<'a>, RankMapError> {
    let size = parent.size;
    let table = arena.allocate(indirect.len())?;
    for (i, (&rank, word)) in indirect.iter().zip(table).enumerate() {
        if rank >= size {
            arena.release(table)?;
            return Err(RankMapError::ParentRankOutOfRange { index: i as u32, rank, size });
        }
        word.store((start + rank as i64 * step) as Lpid, Relaxed);
    }
    let model = Model::Lut { av: groups.av(parent.pgid), table };
    Ok(RankMap { model, size: indirect.len() as u32, pgid: parent.pgid })
}

/// A communicator of processes `lpids` of group `pgid` (e.g. a remote group learnt when
/// connecting): regular when the lpids are, a lut otherwise.
pub fn from_group<'a, const N: usize, const T: usize>(
    pgid: Pgid,
    lpids: &[Lpid],
    groups: &ProcessGroups<'a, N>,
    arena: &mut TableArena<'a, T>,
) -> Result<RankMap<'a>, RankMapError> {
    let n = u32::try_from(lpids.len()).map_err(|_| RankMapError::TooLarge)?;
    if !groups.contains(pgid) {
        return Err(RankMapError::UnknownGroup(pgid));
    }
    let len = groups.av(pgid).len() as u32;
    let at = |i: usize| {
        let lpid = lpids[i];
        if lpid < len {
            Ok((pgid, lpid))
        } else {
            Err(RankMapError::LpidOutOfRange { index: i as u32, lpid, len })
        }
    };
    from_processes_seq(n, at, Some(pgid), groups, arena)
}

/// A communicator of processes `members`, possibly from several groups: an mlut unless the
/// members share one group (then a lut, or a regular model when their lpids are regular).
pub fn from_processes<'a, const N: usize, const T: usize>(
    members: &[(Pgid, Lpid)],
    groups: &ProcessGroups<'a, N>,
    arena: &mut TableArena<'a, T>,
) -> Result<RankMap<'a>, RankMapError> {
    let n = u32::try_from(members.len()).map_err(|_| RankMapError::TooLarge)?;
    let at = |i: usize| {
        let (pgid, lpid) = members[i];
        if !groups.contains(pgid) {
            return Err(RankMapError::UnknownGroup(pgid));
        }
        let len = groups.av(pgid).len() as u32;
        if lpid < len {
            Ok((pgid, lpid))
        } else {
            Err(RankMapError::LpidOutOfRange { index: i as u32, lpid, len })
        }
    };
    from_processes_seq(n, at, None, groups, arena)
}

impl<'a> RankMap<'a> {
    /// A duplicate (`MPI_Comm_dup`): the same model, sharing the table if there is one.
    pub fn dup<const T: usize>(&self, arena: &mut TableArena<'a, T>) -> Result<Self, RankMapError> {
        if let Some(table) = self.table() {
            arena.retain(table)?;
        }
        let model = match self.model {
            Model::Direct { av } => Model::Direct { av },
            Model::Offset { av, first } => Model::Offset { av, first },
            Model::Stride { av, first, stride, base } => Model::Stride { av, first, stride, base },
            Model::BlockStride { av, first, gap, magic, block } => {
                Model::BlockStride { av, first, gap, magic, block }
            }
            Model::Lut { av, table } => Model::Lut { av, table },
            Model::LutStride { av, table, start, stride } => {
                Model::LutStride { av, table, start, stride }
            }
            Model::Mlut { table, shift, mask } => Model::Mlut { table, shift, mask },
            Model::MlutStride { table, start, stride, shift, mask } => {
                Model::MlutStride { table, start, stride, shift, mask }
            }
        };
        Ok(Self { model, size: self.size, pgid: self.pgid })
    }

    /// Gives the map back: its table loses a user and returns to `arena` with the last one.
    pub fn free<const T: usize>(self, arena: &mut TableArena<'a, T>) -> Result<(), RankMapError> {
        if let Some(table) = self.table() {
            arena.release(table)?;
        }
        Ok(())
    }
}

/// The closed-form cells of Table II, and views of a parent's table: `None` when the child
/// needs a scan of its processes.
fn compose<'a, const N: usize, const T: usize>(
    parent: &RankMap<'a>,
    pattern: Shape,
    n: u32,
    groups: &ProcessGroups<'a, N>,
    arena: &mut TableArena<'a, T>,
) -> Result<Option<RankMap<'a>>, RankMapError> {
    let pgid = parent.pgid;
    // The indirect mapping as `offset + i × stride`, when it is one.
    let (offset, stride) = match pattern {
        Shape::Empty => {
            return Ok(Some(RankMap { model: Model::Direct { av: &[] }, size: 0, pgid }))
        }
        Shape::Contiguous { first, .. } => (first, 1),
        Shape::Stride { first, stride, .. } => (first, stride),
        Shape::BlockStride { first, block, step, .. } => {
            return Ok(match parent.model {
                // lpid = f + o + (i / b) × S + i mod b.
                Model::Direct { .. } => block_stride(pgid, groups, first, block, step, n),
                Model::Offset { first: f, .. } => {
                    block_stride(pgid, groups, f as i64 + first, block, step, n)
                }
                _ => None,
            });
        }
        Shape::Irregular => return Ok(None),
    };
    let regular = |first: i64, stride: i64| affine(pgid, groups, first, stride, n);
    Ok(match parent.model {
        Model::Direct { .. } => regular(offset, stride),
        Model::Offset { first: f, .. } => regular(f as i64 + offset, stride),
        Model::Stride { first: f, stride: t, base, .. } => {
            regular(base as i64 + f + t * offset, t * stride)
        }
        Model::BlockStride { first: f, gap, block, .. } => {
            let b = block as i64;
            let step = gap + b;
            if offset % b == 0 && stride == 1 {
                block_stride(pgid, groups, f + offset / b * step, block as u64, step, n)
            } else if stride % b == 0 {
                // Every child rank falls at the same position of its block.
                let first = f + offset.div_euclid(b) * step + offset.rem_euclid(b);
                regular(first, stride / b * step)
            } else {
                None
            }
        }
        Model::Lut { table, .. } | Model::Mlut { table, .. } => {
            view(parent, table, offset, stride, n, groups, arena)?
        }
        Model::LutStride { table, start, stride: t, .. }
        | Model::MlutStride { table, start, stride: t, .. } => {
            let t = t as i64;
            view(parent, table, start as i64 + t * offset, t * stride, n, groups, arena)?
        }
    })
}

/// Ranks `i` of the child read entry `start + i × stride` of the parent's table (packed words of an
/// mlut). Scanned first: a view that turns out regular needs no table at all.
fn view<'a, const N: usize, const T: usize>(
    parent: &RankMap<'a>,
    table: &'a [AtomicU32],
    start: i64,
    stride: i64,
    n: u32,
    groups: &ProcessGroups<'a, N>,
    arena: &mut TableArena<'a, T>,
) -> Result<Option<RankMap<'a>>, RankMapError> {
    let mlut_shift = match parent.model {
        Model::Mlut { shift, .. } | Model::MlutStride { shift, .. } => Some(shift),
        _ => None,
    };
    let entry = |i: usize| {
        let k = (start + i as i64 * stride) as usize;
        let word = table.get(k)?.load(Relaxed);
        let (pgid, lpid) = match mlut_shift {
            Some(shift) => unpack(word, shift),
            None => (parent.pgid, word),
        };
        Some((pgid, lpid as i64))
    };
    if let Some(map) = regular_map(detect(n as usize, entry), n, groups) {
        return Ok(Some(map));
    }
    let (Ok(start_word), Ok(stride_word)) = (u32::try_from(start), i32::try_from(stride)) else {
        return Ok(None);
    };
    let (s, len) = (start_word as usize, n as usize);
    let model = match (&parent.model, stride) {
        (Model::Lut { av, .. } | Model::LutStride { av, .. }, 1) => {
            table.get(s..s + len).map(|table| Model::Lut { av, table })
        }
        (Model::Lut { av, .. } | Model::LutStride { av, .. }, _) => {
            Some(Model::LutStride { av, table, start: start_word, stride: stride_word })
        }
        (Model::Mlut { shift, .. } | Model::MlutStride { shift, .. }, 1) => table
            .get(s..s + len)
            .map(|table| Model::Mlut { table, shift: *shift, mask: lpid_mask(*shift) }),
        (Model::Mlut { shift, .. } | Model::MlutStride { shift, .. }, _) => {
            let (shift, mask) = (*shift, lpid_mask(*shift));
            Some(Model::MlutStride { table, start: start_word, stride: stride_word, shift, mask })
        }
        (
            Model::Direct { .. }
            | Model::Offset { .. }
            | Model::Stride { .. }
            | Model::BlockStride { .. },
            _,
        ) => None,
    };
    let Some(model) = model else { return Ok(None) };
    arena.retain(table)?;
    Ok(Some(RankMap { model, size: n, pgid: parent.pgid }))
}

/// `lpid = first + i × stride` in group `pgid`; `None` when the lpids leave the group's
/// address vector or the stride has no regular model (zero: duplicates; beyond `i32`).
fn affine<'a, const N: usize>(
    pgid: Pgid,
    groups: &ProcessGroups<'a, N>,
    first: i64,
    stride: i64,
    n: u32,
) -> Option<RankMap<'a>> {
    let av = groups.av(pgid);
    if n == 0 {
        return Some(RankMap { model: Model::Direct { av: &[] }, size: 0, pgid });
    }
    let stride = if n == 1 { 1 } else { stride };
    let last = first + (n as i64 - 1) * stride;
    let (low, high) = (first.min(last), first.max(last));
    if low < 0 || high >= av.len() as i64 || stride == 0 || stride.abs() > i32::MAX as i64 {
        return None;
    }
    let (low, high) = (low as usize, high as usize);
    let model = if stride == 1 {
        Model::contiguous(&av[low..=high], first as u32)
    } else {
        Model::Stride { av: &av[low..=high], first: first - low as i64, stride, base: low as u32 }
    };
    Some(RankMap { model, size: n, pgid })
}

/// `lpid = first + (i / block) × step + i mod block` in group `pgid`.
fn block_stride<'a, const N: usize>(
    pgid: Pgid,
    groups: &ProcessGroups<'a, N>,
    first: i64,
    block: u64,
    step: i64,
    n: u32,
) -> Option<RankMap<'a>> {
    let b = block as i64;
    if n as u64 <= block || step == b {
        return affine(pgid, groups, first, 1, n);
    }
    // Block ≥ 2 here; a block of 2³² or more is never split (n < 2³²), caught above.
    let magic = u64::MAX / block + 1;
    let model = Model::BlockStride {
        av: groups.av(pgid),
        first,
        gap: step - b,
        magic,
        block: block as u32,
    };
    Some(RankMap { model, size: n, pgid })
}

fn regular_map<'a, const N: usize>(
    shape: Shape,
    n: u32,
    groups: &ProcessGroups<'a, N>,
) -> Option<RankMap<'a>> {
    match shape {
        Shape::Empty => Some(RankMap { model: Model::Direct { av: &[] }, size: 0, pgid: Pgid(0) }),
        Shape::Contiguous { pgid, first } => affine(pgid, groups, first, 1, n),
        Shape::Stride { pgid, first, stride } => affine(pgid, groups, first, stride, n),
        Shape::BlockStride { pgid, first, block, step } => {
            block_stride(pgid, groups, first, block, step, n)
        }
        Shape::Irregular => None,
    }
}

/// The general path: scan the child's `n` processes once for a regular pattern; failing
/// that, store them in a lut (one group) or an mlut (several). `group` is the one group all
/// processes belong to, when the caller knows it.
pub(crate) fn from_processes_seq<'a, const N: usize, const T: usize>(
    n: u32,
    at: impl Fn(usize) -> Result<(Pgid, Lpid), RankMapError>,
    group: Option<Pgid>,
    groups: &ProcessGroups<'a, N>,
    arena: &mut TableArena<'a, T>,
) -> Result<RankMap<'a>, RankMapError> {
    let len = n as usize;
    let shape = detect(len, |i| at(i).ok().map(|(p, l)| (p, l as i64)));
    if let Some(map) = regular_map(shape, n, groups) {
        return Ok(map);
    }
    // One group (known, or found by a scan that also sizes an mlut's words): a lut.
    let (single, shift) = match group {
        Some(pgid) => (Some(pgid), 0),
        None => {
            let (first, mut max_lpid) = at(0)?;
            let (mut same, mut max_pgid) = (true, first);
            for i in 1..len {
                let (p, l) = at(i)?;
                same &= p == first;
                max_pgid = max_pgid.max(p);
                max_lpid = max_lpid.max(l);
            }
            let shift = if same {
                0
            } else {
                mlut_shift(max_pgid, max_lpid).ok_or(RankMapError::TooLarge)?
            };
            (same.then_some(first), shift)
        }
    };
    let table = arena.allocate(len)?;
    let filled = match single {
        Some(_) => fill(table, len, |i| at(i).map(|(_, l)| l)),
        None => fill(table, len, |i| at(i).map(|(p, l)| pack(p, l, shift))),
    };
    if let Err(e) = filled {
        arena.release(table)?;
        return Err(e);
    }
    let model = match single {
        Some(pgid) => Model::Lut { av: groups.av(pgid), table },
        None => Model::Mlut { table, shift, mask: lpid_mask(shift) },
    };
    Ok(RankMap { model, size: n, pgid: single.unwrap_or(Pgid(0)) })
}

fn fill(
    table: &[AtomicU32],
    len: usize,
    at: impl Fn(usize) -> Result<Lpid, RankMapError>,
) -> Result<(), RankMapError> {
    for (i, word) in table.iter().enumerate().take(len) {
        word.store(at(i)?, Relaxed);
    }
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::av::{Address, Ave, NodeId, TransportId};
    use crate::rankmap::ModelKind;

    /// Stride maps, up and down: every rank finds its process and entry, and no rank past
    /// the end finds anything (the lookup relies on the address-vector window for that).
    #[test]
    fn stride_maps_hold_exactly_the_ranks() {
        let mut avs = [Ave::new(Address::Inline(0), TransportId(0), NodeId(0)).unwrap(); 200];
        for (lpid, ave) in avs.iter_mut().enumerate() {
            *ave = Ave::new(Address::Inline(lpid as u64), TransportId(0), NodeId(0)).unwrap();
        }
        let mut groups = ProcessGroups::<'_, 4>::new();
        let pgid = groups.register(&avs).unwrap();
        for (first, stride, n) in [(5i64, 3i64, 20u32), (0, 2, 100), (199, -1, 200), (150, -7, 9)] {
            let map = affine(pgid, &groups, first, stride, n).unwrap();
            assert_eq!(map.kind(), ModelKind::Stride, "{first} {stride} {n}");
            for rank in 0..n {
                let lpid = (first + rank as i64 * stride) as Lpid;
                assert_eq!(map.translate(rank), Some((pgid, lpid)));
                assert_eq!(map.entry(&groups, rank).map(Ave::address_word), Some(lpid as u64));
            }
            for rank in [n, n + 1, n + 100, u32::MAX - 1, u32::MAX] {
                assert_eq!(map.translate(rank), None, "{first} {stride} {n}: {rank}");
                assert_eq!(map.entry(&groups, rank), None, "{first} {stride} {n}: {rank}");
            }
        }
    }

    /// Block-stride maps, ascending, descending and overlapping, with full and partial last
    /// blocks: every rank finds its process and entry, and no rank past the end finds
    /// anything.
    #[test]
    fn block_stride_maps_hold_exactly_the_ranks() {
        let mut avs = [Ave::new(Address::Inline(0), TransportId(0), NodeId(0)).unwrap(); 200];
        for (lpid, ave) in avs.iter_mut().enumerate() {
            *ave = Ave::new(Address::Inline(lpid as u64), TransportId(0), NodeId(0)).unwrap();
        }
        let mut groups = ProcessGroups::<'_, 4>::new();
        let pgid = groups.register(&avs).unwrap();
        let cases: [(i64, u64, i64, u32); 9] = [
            (3, 3, 10, 9),
            (3, 3, 10, 10),
            (0, 2, 7, 13),
            (150, 3, -10, 12),
            (150, 3, -10, 11),
            (150, 4, -5, 30),
            (0, 3, 1, 7),
            (10, 4, 2, 9),
            (20, 3, 0, 8),
        ];
        for (first, block, step, n) in cases {
            let map = block_stride(pgid, &groups, first, block, step, n).unwrap();
            assert_eq!(map.kind(), ModelKind::BlockStride, "{first} {block} {step} {n}");
            for rank in 0..n {
                let b = block as i64;
                let lpid = (first + (rank as i64 / b) * step + rank as i64 % b) as Lpid;
                assert_eq!(map.translate(rank), Some((pgid, lpid)));
                assert_eq!(map.entry(&groups, rank).map(Ave::address_word), Some(lpid as u64));
            }
            for rank in (n..n + 2 * block as u32).chain([u32::MAX - 1, u32::MAX]) {
                assert_eq!(map.translate(rank), None, "{first} {block} {step} {n}: {rank}");
                assert_eq!(map.entry(&groups, rank), None, "{first} {block} {step} {n}: {rank}");
            }
        }
    }
}
