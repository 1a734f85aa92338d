//! Setting up a job: process groups, their address vectors and communicators' rank maps,
//! all in memory the kernel owns.

use core::fmt;
use core::sync::atomic::AtomicU32;

use commcore::av::{Ave, GroupsError, Lpid, Pgid, ProcessGroups};
use commcore::rankmap::{create, Rank, RankMap, RankMapError, TableArena};

/// Why a job step failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobError {
    /// The process-group registry refused.
    Groups(GroupsError),
    /// A rank map could not be built or freed.
    RankMap(RankMapError),
    /// The working list for a new communicator holds `given` ranks; it needs `needed`.
    ScratchTooSmall {
        /// Ranks the communicator has.
        needed: usize,
        /// Ranks the working list holds.
        given: usize,
    },
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Groups(e) => write!(f, "process groups: {e}"),
            Self::RankMap(e) => write!(f, "rank map: {e}"),
            Self::ScratchTooSmall { needed, given } => write!(
                f,
                "working list holds {given} ranks but the communicator has {needed}: \
                 give a larger one"
            ),
        }
    }
}

impl From<GroupsError> for JobError {
    fn from(e: GroupsError) -> Self {
        Self::Groups(e)
    }
}

impl From<RankMapError> for JobError {
    fn from(e: RankMapError) -> Self {
        Self::RankMap(e)
    }
}

/// A kernel's view of its job: up to `GROUPS` process groups (the job itself, spawned or
/// connected ones) and an arena of at most `TABLES` rank-map tables.
///
/// Every byte comes from the kernel: address vectors from [`AvStorage`]s, table words from
/// [`TableWords`], and the `Job` itself can live in a [`StaticCell`].
///
/// [`AvStorage`]: crate::AvStorage
/// [`TableWords`]: crate::TableWords
/// [`StaticCell`]: crate::StaticCell
#[derive(Debug)]
pub struct Job<'a, const GROUPS: usize, const TABLES: usize> {
    groups: ProcessGroups<'a, GROUPS>,
    arena: TableArena<'a, TABLES>,
    av_bytes: usize,
}

impl<'a, const GROUPS: usize, const TABLES: usize> Job<'a, GROUPS, TABLES> {
    /// A job with no groups; rank-map tables will come from `table_words`.
    pub fn new(table_words: &'a [AtomicU32]) -> Self {
        Self { groups: ProcessGroups::new(), arena: TableArena::new(table_words), av_bytes: 0 }
    }

    /// Registers a process group whose address vector is `storage`, filled with
    /// `entry(lpid)` for every process.
    pub fn register_group(
        &mut self,
        storage: &'a mut [Ave],
        entry: impl FnMut(Lpid) -> Ave,
    ) -> Result<Pgid, JobError> {
        let bytes = core::mem::size_of_val(storage);
        let pgid = self.groups.register_filled(storage, entry)?;
        self.av_bytes += bytes;
        Ok(pgid)
    }

    /// The world communicator of group `pgid`: rank `r` is process `r`.
    pub fn world(&self, pgid: Pgid) -> Result<RankMap<'a>, JobError> {
        if !self.groups.contains(pgid) {
            return Err(JobError::Groups(GroupsError::Unknown(pgid)));
        }
        Ok(RankMap::direct(pgid, self.groups.av(pgid)))
    }

    /// The communicator of `size` ranks whose rank `i` is `parent`'s rank `parent_rank(i)`
    /// (a split, a reorder, a subset), built in the kernel's working list `scratch`.
    pub fn create(
        &mut self,
        parent: &RankMap<'a>,
        size: usize,
        mut parent_rank: impl FnMut(Rank) -> Rank,
        scratch: &mut [Rank],
    ) -> Result<RankMap<'a>, JobError> {
        let given = scratch.len();
        let list =
            scratch.get_mut(..size).ok_or(JobError::ScratchTooSmall { needed: size, given })?;
        for (i, slot) in list.iter_mut().enumerate() {
            *slot = parent_rank(i as Rank);
        }
        self.create_from(parent, list)
    }

    /// The communicator whose rank `i` is `parent`'s rank `indirect[i]`, from a list the
    /// kernel already holds (e.g. a permutation it generated).
    pub fn create_from(
        &mut self,
        parent: &RankMap<'a>,
        indirect: &[Rank],
    ) -> Result<RankMap<'a>, JobError> {
        Ok(create(parent, indirect, &self.groups, &mut self.arena)?)
    }

    /// Gives a communicator's rank map back (its table, when the last user goes).
    pub fn free(&mut self, map: RankMap<'a>) -> Result<(), JobError> {
        Ok(map.free(&mut self.arena)?)
    }

    /// The process groups, for [`RankMap::entry`] and [`RankMap::node`].
    pub fn groups(&self) -> &ProcessGroups<'a, GROUPS> {
        &self.groups
    }

    /// Bytes of every registered address vector.
    pub fn av_bytes(&self) -> usize {
        self.av_bytes
    }

    /// Bytes of live rank-map tables.
    pub fn table_bytes(&self) -> usize {
        self.arena.used_bytes()
    }

    /// Bytes the table arena holds in all.
    pub fn table_capacity_bytes(&self) -> usize {
        self.arena.capacity_bytes()
    }
}

/// Bytes one rank map takes where a kernel keeps it (its table is counted by the arena).
pub const RANK_MAP_BYTES: usize = core::mem::size_of::<RankMap<'static>>();

#[cfg(test)]
mod tests {
    use std::string::ToString;

    use super::*;
    use crate::TableWords;
    use commcore::av::{Address, NodeId, TransportId};
    use commcore::rankmap::ModelKind;

    fn entry(lpid: Lpid) -> Ave {
        Ave::new(Address::Inline(0x100 + lpid as u64), TransportId(0), NodeId(lpid / 4)).unwrap()
    }

    #[test]
    fn splits_are_regular_and_an_irregular_order_takes_a_table_back_on_free() {
        let words = TableWords::<64>::new();
        let mut av = [Ave::EMPTY; 16];
        let mut job: Job<'_, 2, 4> = Job::new(words.words());
        let pgid = job.register_group(&mut av, entry).unwrap();
        assert_eq!(job.av_bytes(), 16 * 12);
        let world = job.world(pgid).unwrap();
        let mut scratch = [0; 16];
        let odd = job.create(&world, 8, |r| 2 * r + 1, &mut scratch).unwrap();
        assert_eq!(odd.kind(), ModelKind::Stride);
        for r in 0..8 {
            assert_eq!(odd.translate(r), Some((pgid, 2 * r + 1)));
            assert_eq!(odd.entry(job.groups(), r).unwrap().address_word(), 0x101 + 2 * r as u64);
        }
        let reversed = job.create(&world, 16, |r| 15 - r, &mut scratch).unwrap();
        assert_eq!((reversed.kind(), job.table_bytes()), (ModelKind::Stride, 0));
        let shuffled = job.create(&world, 4, |r| [9, 2, 14, 5][r as usize], &mut scratch).unwrap();
        assert_eq!((shuffled.kind(), job.table_bytes()), (ModelKind::Lut, 16));
        assert_eq!(shuffled.translate(2), Some((pgid, 14)));
        job.free(shuffled).unwrap();
        assert_eq!(job.table_bytes(), 0);
        assert_eq!(job.table_capacity_bytes(), 256);
    }

    #[test]
    fn bad_input_is_an_error_naming_it() {
        let words = TableWords::<4>::new();
        let mut av = [Ave::EMPTY; 8];
        let mut job: Job<'_, 1, 2> = Job::new(words.words());
        assert!(matches!(job.world(Pgid(0)), Err(JobError::Groups(GroupsError::Unknown(_)))));
        let pgid = job.register_group(&mut av, entry).unwrap();
        let mut other = [Ave::EMPTY; 2];
        assert_eq!(job.register_group(&mut other, entry), Err(JobError::Groups(GroupsError::Full)));
        let world = job.world(pgid).unwrap();
        let mut small = [0; 2];
        let e = job.create(&world, 3, |r| r, &mut small).unwrap_err();
        assert_eq!(e, JobError::ScratchTooSmall { needed: 3, given: 2 });
        let e = job.create(&world, 2, |r| r + 7, &mut small).unwrap_err();
        assert!(matches!(e, JobError::RankMap(RankMapError::ParentRankOutOfRange { .. })));
        let e = job.create(&world, 5, |r| [3, 1, 4, 0, 6][r as usize], &mut [0; 8]).unwrap_err();
        assert!(matches!(e, JobError::RankMap(RankMapError::ArenaFull { .. })), "{e}");
        assert!(e.to_string().contains("rank map"));
    }
}
