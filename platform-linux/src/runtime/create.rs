//! Making communicators from communicators: `dup`, `split`, `create` (from a group) and
//! `free`, over the runtime's transport and core's rank maps.
//!
//! Context ids use the highest-CID algorithm of the CID allocation paper, written here over
//! the runtime's own messages: every process remembers the highest id it has used, the
//! members take the maximum of theirs and add one, so the result is free on every member in
//! one reduction. It is interim: once core's CID requests are merged, they replace
//! [`Comm::agree_context_id`] (and lowest-free, bitmask and the environment choice come
//! with them). Until then communicators must be created by one thread of a process at a
//! time.

use std::sync::atomic::Ordering::{AcqRel, Acquire};

use commcore::rankmap;

use super::comm::Comm;
use super::error::{CommError, P2pError};
use super::Source;

/// `split`'s color for a process that joins no new communicator (`MPI_UNDEFINED`).
pub const UNDEFINED: i32 = -1;

/// The largest context id: its collective context, `2 cid + 1`, must fit 32 bits.
const MAX_CID: u32 = (u32::MAX - 1) / 2;

/// Tag of the allgather on a communicator's collective context (the barrier uses tags from 0).
const ALLGATHER_TAG: i32 = 1 << 20;

impl Comm {
    /// Every rank's `N`-byte item, in rank order (Bruck's allgather on the communicator's
    /// collective context): ⌈log2 size⌉ exchanges; in the one at distance `d`, each rank
    /// passes the items it holds for ranks `r .. r + d` to rank `r - d`.
    pub(super) fn allgather_items<const N: usize>(
        &self,
        mine: [u8; N],
    ) -> Result<Vec<[u8; N]>, P2pError> {
        let (n, r) = (self.size, self.rank);
        let context = self.context + 1;
        // held[i] is the item of rank (r + i) % n.
        let mut held: Vec<u8> = Vec::with_capacity(n * N);
        held.extend_from_slice(&mine);
        let mut incoming = vec![0u8; n * N];
        let mut distance = 1;
        while distance < n {
            let count = distance.min(n - distance);
            let to = (r + n - distance) % n;
            let from = (r + distance) % n;
            self.send_on(context, &held[..count * N], to, ALLGATHER_TAG)?;
            let got = &mut incoming[..count * N];
            self.recv_on(context, got, Source::Rank(from), ALLGATHER_TAG)?;
            held.extend_from_slice(got);
            distance *= 2;
        }
        let mut all = vec![[0u8; N]; n];
        for (i, item) in held.chunks_exact(N).enumerate() {
            all[(r + i) % n].copy_from_slice(item);
        }
        Ok(all)
    }

    /// The context id for a new communicator: one more than the highest any member used.
    fn context_id_from(&self, highest: impl Iterator<Item = u32>) -> Result<u32, CommError> {
        let highest = highest.max().unwrap_or(0);
        let cid = highest
            .checked_add(1)
            .filter(|&c| c <= MAX_CID)
            .ok_or(CommError::ContextIdsExhausted)?;
        self.runtime.highest_cid.fetch_max(cid, AcqRel);
        Ok(cid)
    }

    /// Agrees with every member on a context id free on all of them (collective).
    pub fn agree_context_id(&self) -> Result<u32, CommError> {
        let mine = self.runtime.highest_cid.load(Acquire);
        let all = self.allgather_items(mine.to_le_bytes())?;
        self.context_id_from(all.iter().map(|b| u32::from_le_bytes(*b)))
    }

    /// A new communicator with the same members and ranks (`MPI_Comm_dup`; collective).
    pub fn dup(&self) -> Result<Comm, CommError> {
        let cid = self.agree_context_id()?;
        let map = {
            let mut arena =
                self.runtime.arena.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            self.rank_map().dup(&mut arena).map_err(CommError::RankMap)?
        };
        Ok(Comm::with(self.runtime.clone(), cid, self.rank, map))
    }

    /// Splits the communicator by `color` (`MPI_Comm_split`; collective): the ranks that
    /// give the same color form a new communicator, ordered by `key` and then by their rank
    /// here. A rank that gives [`UNDEFINED`] takes part but gets `None`.
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Comm>, CommError> {
        if color < 0 && color != UNDEFINED {
            return Err(CommError::InvalidColor(color));
        }
        let mut mine = [0u8; 12];
        mine[0..4].copy_from_slice(&color.to_le_bytes());
        mine[4..8].copy_from_slice(&key.to_le_bytes());
        mine[8..12].copy_from_slice(&self.runtime.highest_cid.load(Acquire).to_le_bytes());
        let all = self.allgather_items(mine)?;
        let field =
            |item: &[u8; 12], at: usize| [item[at], item[at + 1], item[at + 2], item[at + 3]];
        let cid =
            self.context_id_from(all.iter().map(|item| u32::from_le_bytes(field(item, 8))))?;
        if color == UNDEFINED {
            return Ok(None);
        }
        let mut chosen: Vec<(i32, usize)> = all
            .iter()
            .enumerate()
            .filter(|(_, item)| i32::from_le_bytes(field(item, 0)) == color)
            .map(|(rank, item)| (i32::from_le_bytes(field(item, 4)), rank))
            .collect();
        chosen.sort_unstable();
        let parents: Vec<usize> = chosen.iter().map(|&(_, rank)| rank).collect();
        self.child(cid, &parents).map(Some)
    }

    /// The communicator of the ranks in `group`, in that order (`MPI_Comm_create`;
    /// collective over this communicator, every rank passing the same group). Ranks outside
    /// the group get `None`.
    pub fn create(&self, group: &[usize]) -> Result<Option<Comm>, CommError> {
        let mut seen = vec![false; self.size];
        for &rank in group {
            match seen.get_mut(rank) {
                Some(seen) if !*seen => *seen = true,
                _ => return Err(CommError::BadGroup { rank }),
            }
        }
        let cid = self.agree_context_id()?;
        if !seen[self.rank] {
            return Ok(None);
        }
        self.child(cid, group).map(Some)
    }

    /// Frees the communicator (`MPI_Comm_free`); the same as dropping it.
    pub fn free(self) {}

    fn child(&self, cid: u32, parents: &[usize]) -> Result<Comm, CommError> {
        let rank = parents
            .iter()
            .position(|&r| r == self.rank)
            .ok_or(CommError::BadGroup { rank: self.rank })?;
        let indirect: Vec<u32> = parents.iter().map(|&r| r as u32).collect();
        let map = {
            let mut arena =
                self.runtime.arena.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            rankmap::create(self.rank_map(), &indirect, &self.runtime.groups, &mut arena)
                .map_err(CommError::RankMap)?
        };
        Ok(Comm::with(self.runtime.clone(), cid, rank, map))
    }
}
