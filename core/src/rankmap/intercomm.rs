//! Inter-communicators: a local and a remote rank map, and their merge.

use super::create::from_processes_seq;
use super::{RankMap, RankMapError, TableArena};
use crate::av::ProcessGroups;

/// The two maps of an inter-communicator: ranks of the local group and of the remote one.
/// Each is a single-group map when its group is (a lut at worst, never an mlut).
#[derive(Debug)]
pub struct InterMaps<'a> {
    /// The local group's ranks.
    pub local: RankMap<'a>,
    /// The remote group's ranks.
    pub remote: RankMap<'a>,
}

impl<'a> InterMaps<'a> {
    /// The intra-communicator `MPI_Intercomm_merge` makes: the local ranks first when
    /// `local_first`, the remote ones first otherwise. The result is an mlut when the two
    /// groups differ and the processes cannot be described more compactly; a lut or a regular
    /// model when they share a group (e.g. the two halves of a split world merge back to
    /// direct).
    pub fn merge<const N: usize, const T: usize>(
        &self,
        local_first: bool,
        groups: &ProcessGroups<'a, N>,
        arena: &mut TableArena<'a, T>,
    ) -> Result<RankMap<'a>, RankMapError> {
        let (a, b) =
            if local_first { (&self.local, &self.remote) } else { (&self.remote, &self.local) };
        let n =
            u32::try_from(a.size() as u64 + b.size() as u64).map_err(|_| RankMapError::TooLarge)?;
        let split = a.size();
        let group = match (a.pgid(), b.pgid()) {
            (Some(p), Some(q)) if p == q => Some(p),
            _ => None,
        };
        let at = |i: usize| {
            let i = i as u32;
            let found = if i < split { a.translate(i) } else { b.translate(i - split) };
            // Both maps translate every rank below their size.
            found.ok_or(RankMapError::TooLarge)
        };
        from_processes_seq(n, at, group, groups, arena)
    }

    /// Frees both maps.
    pub fn free<const T: usize>(self, arena: &mut TableArena<'a, T>) -> Result<(), RankMapError> {
        let local = self.local.free(arena);
        self.remote.free(arena)?;
        local
    }
}
