//! Batch translation: many ranks through one map, with the model dispatched once per batch
//! and a tight loop per model (a schedule's or a message window's peers).

use core::sync::atomic::Ordering::Relaxed;

use super::map::{quotient, unpack, view_index, Model, Rank, RankMap};
use super::RankMapError;
use crate::av::{Lpid, Pgid};

/// What a batch translation writes for each rank.
pub trait BatchProcess: Copy {
    /// The result for process `lpid` of group `pgid`.
    fn from_process(pgid: Pgid, lpid: Lpid) -> Self;

    /// The result for process `first + delta` of group `pgid` (the sum is an lpid); a type
    /// that can add `first` ahead of the loop overrides it.
    #[inline(always)]
    fn from_lpid_sum(pgid: Pgid, first: i64, delta: i64) -> Self {
        Self::from_process(pgid, (first + delta) as Lpid)
    }

    /// The result for an mlut word (`pgid << shift | lpid`, `0 < shift < 32`); a type
    /// with a cheaper way than unpacking overrides it.
    #[inline(always)]
    fn from_mlut_word(word: u32, shift: u32) -> Self {
        let (pgid, lpid) = unpack(word, shift);
        Self::from_process(pgid, lpid)
    }
}

impl BatchProcess for (Pgid, Lpid) {
    #[inline(always)]
    fn from_process(pgid: Pgid, lpid: Lpid) -> Self {
        (pgid, lpid)
    }
}

/// The process word `pgid << 32 | lpid` (the C ABI's `commcore_process`).
impl BatchProcess for u64 {
    #[inline(always)]
    fn from_process(pgid: Pgid, lpid: Lpid) -> Self {
        (u64::from(pgid.0) << 32) | u64::from(lpid)
    }

    /// `(pgid << 32) + first` is the same for every rank: one add a rank, no or.
    #[inline(always)]
    fn from_lpid_sum(pgid: Pgid, first: i64, delta: i64) -> Self {
        ((i64::from(pgid.0) << 32) + first).wrapping_add(delta) as u64
    }

    /// One shift, multiply and add instead of unpacking both halves: adding
    /// `pgid × (2³² − 2^shift)` moves the pgid from bit `shift` to bit 32.
    #[inline(always)]
    fn from_mlut_word(word: u32, shift: u32) -> Self {
        let word = u64::from(word);
        word + (word >> shift) * ((1 << 32) - (1 << shift))
    }
}

impl RankMap<'_> {
    /// `out[i] = translate(ranks[i])` for every `i`, as `(Pgid, Lpid)` pairs or process
    /// words (see [`BatchProcess`]). Stops at the first rank out of range with
    /// [`RankMapError::RankOutOfRange`] (the entries before it are written);
    /// [`RankMapError::BatchLength`] when the slices differ in length.
    #[inline]
    pub fn translate_batch<T: BatchProcess>(
        &self,
        ranks: &[Rank],
        out: &mut [T],
    ) -> Result<(), RankMapError> {
        if ranks.len() != out.len() {
            return Err(RankMapError::BatchLength { ranks: ranks.len(), out: out.len() });
        }
        let (size, pgid) = (self.size, self.pgid);
        let make = T::from_process;
        // Each arm is the same formula as `translate`'s, its fields read once per batch.
        match self.model {
            Model::Direct { .. } => {
                each(ranks, out, size, |rank| (rank < size).then(|| make(pgid, rank)))
            }
            Model::Offset { first, .. } => each(ranks, out, size, |rank| {
                (rank < size).then(|| T::from_lpid_sum(pgid, first.into(), rank.into()))
            }),
            // `stride_lpid` and `block_stride_lpid`, with their constant terms summed first.
            Model::Stride { base, first, stride, .. } => {
                let first = i64::from(base) + first;
                each(ranks, out, size, |rank| {
                    (rank < size).then(|| T::from_lpid_sum(pgid, first, i64::from(rank) * stride))
                })
            }
            Model::BlockStride { first, gap, magic, .. } => each(ranks, out, size, |rank| {
                (rank < size).then(|| {
                    let delta = i64::from(rank) + quotient(magic, rank) as i64 * gap;
                    T::from_lpid_sum(pgid, first, delta)
                })
            }),
            Model::Lut { table, .. } => each(ranks, out, size, |rank| {
                Some(make(pgid, table.get(rank as usize)?.load(Relaxed)))
            }),
            Model::LutStride { table, start, stride, .. } => each(ranks, out, size, |rank| {
                if rank >= size {
                    return None;
                }
                Some(make(pgid, table.get(view_index(start, stride, rank))?.load(Relaxed)))
            }),
            Model::Mlut { table, shift, .. } => each(ranks, out, size, |rank| {
                Some(T::from_mlut_word(table.get(rank as usize)?.load(Relaxed), shift))
            }),
            Model::MlutStride { table, start, stride, shift, .. } => {
                each(ranks, out, size, |rank| {
                    if rank >= size {
                        return None;
                    }
                    let word = table.get(view_index(start, stride, rank))?.load(Relaxed);
                    Some(T::from_mlut_word(word, shift))
                })
            }
        }
    }
}

/// Ranks a loop iteration translates: the loop's own compare and branch are paid once
/// for all of them.
const UNROLL: usize = 8;

/// The loop of one model: `one` translates a rank, `None` past the end.
#[inline(always)]
fn each<T>(
    ranks: &[Rank],
    out: &mut [T],
    size: u32,
    one: impl Fn(Rank) -> Option<T>,
) -> Result<(), RankMapError> {
    // By value, not `&mut`: a zip of two chunk iterators then runs on one counter.
    let whole = ranks.chunks_exact(UNROLL).zip(out.chunks_exact_mut(UNROLL));
    for (chunk, (ranks, out)) in whole.enumerate() {
        // Fixed-length chunks: no bounds checks, and the inner loop unrolls.
        for (i, (&rank, slot)) in ranks.iter().zip(out).enumerate() {
            match one(rank) {
                Some(process) => *slot = process,
                None => return Err(out_of_range(chunk * UNROLL + i, rank, size)),
            }
        }
    }
    let done = ranks.len() / UNROLL * UNROLL;
    let tail = ranks.iter().zip(out.iter_mut()).skip(done);
    for (i, (&rank, slot)) in tail.enumerate() {
        match one(rank) {
            Some(process) => *slot = process,
            None => return Err(out_of_range(done + i, rank, size)),
        }
    }
    Ok(())
}

/// Kept out of the loops: only the first bad rank of a batch gets here.
#[cold]
#[inline(never)]
fn out_of_range(index: usize, rank: Rank, size: u32) -> RankMapError {
    RankMapError::RankOutOfRange { index, rank, size }
}

#[cfg(test)]
mod tests {
    use core::sync::atomic::AtomicU32;

    use super::*;
    use crate::av::{Address, Ave, NodeId, ProcessGroups, TransportId};
    use crate::rankmap::{create, from_processes, ModelKind, TableArena};

    /// A seeded xorshift: the same maps and ranks on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn shuffle<T>(&mut self, items: &mut [T]) {
            for i in (1..items.len()).rev() {
                items.swap(i, self.below(i as u64 + 1) as usize);
            }
        }
    }

    const WORLD: usize = 96;
    /// Rounds of random maps, and batches per map: fewer under miri, which runs them
    /// thousands of times slower.
    const ROUNDS: usize = if cfg!(miri) { 2 } else { 40 };
    const BATCHES: usize = if cfg!(miri) { 3 } else { 50 };

    fn address_vector(pgid: u64) -> [Ave; WORLD] {
        core::array::from_fn(|lpid| {
            let address = Address::Inline(pgid << 32 | lpid as u64);
            Ave::new(address, TransportId(0), NodeId(lpid as u32 / 8)).unwrap()
        })
    }

    /// A random child of `world` of each model: the indirect mapping that makes it.
    fn indirect_of(kind: ModelKind, rng: &mut Rng) -> std::vec::Vec<Rank> {
        let n = 2 + rng.below(40) as u32;
        let first = rng.below(8) as u32;
        match kind {
            ModelKind::Direct => (0..WORLD as u32).collect(),
            ModelKind::Offset => (first + 1..first + 1 + n).collect(),
            ModelKind::Stride => {
                let stride = 2 + rng.below(3) as u32;
                let mut ranks: std::vec::Vec<_> =
                    (0..n.min(20)).map(|r| first + r * stride).collect();
                if rng.below(2) == 1 {
                    ranks.reverse();
                }
                ranks
            }
            ModelKind::BlockStride => {
                let block = 2 + rng.below(3) as u32;
                let step = block + 1 + rng.below(3) as u32;
                let blocks = 2 + rng.below(4) as u32;
                (0..blocks * block).map(|r| first + (r / block) * step + r % block).collect()
            }
            _ => {
                let mut ranks: std::vec::Vec<Rank> = (0..WORLD as u32).collect();
                rng.shuffle(&mut ranks);
                ranks.truncate(n as usize);
                ranks
            }
        }
    }

    /// Batches of in-range and out-of-range ranks: the batch writes what one-at-a-time
    /// translation returns, and fails at the first rank it refuses, with that rank's index.
    fn check_batches(map: &RankMap<'_>, rng: &mut Rng) {
        for _ in 0..BATCHES {
            let len = rng.below(70) as usize;
            let ranks: std::vec::Vec<Rank> = (0..len)
                .map(|_| match rng.below(20) {
                    0 => map.size() + rng.below(3) as u32,
                    1 => u32::MAX - rng.below(2) as u32,
                    _ => rng.below(u64::from(map.size().max(1))) as u32,
                })
                .collect();
            let mut out = std::vec![(Pgid(u16::MAX), u32::MAX); len];
            let result = map.translate_batch(&ranks, &mut out);
            // Process words: the same processes, the same error.
            let mut words = std::vec![u64::MAX; len];
            assert_eq!(map.translate_batch(&ranks, &mut words), result);
            let refused = ranks.iter().position(|&r| map.translate(r).is_none());
            match refused {
                None => assert_eq!(result, Ok(()), "{:?}", map.kind()),
                Some(index) => assert_eq!(
                    result,
                    Err(RankMapError::RankOutOfRange {
                        index,
                        rank: ranks[index],
                        size: map.size()
                    }),
                    "{:?}",
                    map.kind()
                ),
            }
            let written = refused.unwrap_or(len);
            for (i, &rank) in ranks[..written].iter().enumerate() {
                assert_eq!(Some(out[i]), map.translate(rank), "{:?} rank {rank}", map.kind());
                let (pgid, lpid) = out[i];
                assert_eq!(words[i], u64::from(pgid.0) << 32 | u64::from(lpid));
            }
        }
    }

    #[test]
    fn batches_match_one_at_a_time_for_every_model_on_random_maps() {
        let avs = [address_vector(0), address_vector(1)];
        let mut groups = ProcessGroups::<'_, 4>::new();
        let (home, guest) = (groups.register(&avs[0]).unwrap(), groups.register(&avs[1]).unwrap());
        let words: std::vec::Vec<AtomicU32> = (0..4096).map(|_| AtomicU32::new(0)).collect();
        let mut arena = TableArena::<'_, 64>::new(&words);
        let world = RankMap::direct(home, groups.av(home));
        let mut rng = Rng(0x5eed_1234_abcd_0001);
        let mut seen = std::vec::Vec::new();
        for round in 0..ROUNDS {
            for kind in [
                ModelKind::Direct,
                ModelKind::Offset,
                ModelKind::Stride,
                ModelKind::BlockStride,
                ModelKind::Lut,
            ] {
                let map =
                    create(&world, &indirect_of(kind, &mut rng), &groups, &mut arena).unwrap();
                // A short random lut can come out regular by chance: it is checked all the same.
                assert!(map.kind() == kind || kind == ModelKind::Lut, "round {round}: {kind:?}");
                check_batches(&map, &mut rng);
                // A strided or offset view of a lut: every second rank of it.
                if map.kind() == ModelKind::Lut {
                    let half: std::vec::Vec<Rank> = (0..map.size()).step_by(2).collect();
                    let view = create(&map, &half, &groups, &mut arena).unwrap();
                    seen.push(view.kind());
                    check_batches(&view, &mut rng);
                    view.free(&mut arena).unwrap();
                }
                seen.push(map.kind());
                map.free(&mut arena).unwrap();
            }
            // Two groups in a random order: an mlut, and a strided view of it.
            let mut members: std::vec::Vec<(Pgid, Lpid)> = (0..WORLD as u32 / 2)
                .map(|l| (home, l * 2))
                .chain((0..1 + rng.below(30) as u32).map(|l| (guest, l)))
                .collect();
            rng.shuffle(&mut members);
            let mlut = from_processes(&members, &groups, &mut arena).unwrap();
            assert_eq!(mlut.kind(), ModelKind::Mlut);
            check_batches(&mlut, &mut rng);
            let every_third: std::vec::Vec<Rank> = (1..mlut.size()).step_by(3).collect();
            let view = create(&mlut, &every_third, &groups, &mut arena).unwrap();
            check_batches(&view, &mut rng);
            seen.extend([mlut.kind(), view.kind()]);
            view.free(&mut arena).unwrap();
            mlut.free(&mut arena).unwrap();
        }
        for kind in [ModelKind::Lut, ModelKind::LutStrideView, ModelKind::MlutStrideView] {
            assert!(seen.contains(&kind), "no {kind:?} was built");
        }
        assert_eq!(arena.used_bytes(), 0);
    }

    #[test]
    fn batches_of_different_lengths_are_refused() {
        let av = address_vector(0);
        let mut groups = ProcessGroups::<'_, 4>::new();
        let pgid = groups.register(&av).unwrap();
        let world = RankMap::direct(pgid, groups.av(pgid));
        let mut out = [(Pgid(0), 0u32); 2];
        assert_eq!(
            world.translate_batch(&[0, 1, 2], &mut out),
            Err(RankMapError::BatchLength { ranks: 3, out: 2 })
        );
        assert_eq!(world.translate_batch::<u64>(&[], &mut []), Ok(()));
    }
}
