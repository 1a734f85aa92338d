//! Making communicators from communicators: `dup`, `split`, `create` (from a group) and
//! `free`, over the runtime's transport, core's CID requests and core's rank maps.
//!
//! A context id comes from a [`CidRequest`] of the job's algorithm (`COMMCORE_CID_ALGORITHM`:
//! lowest, mask or highest, default highest) run against this process's [`CidSpace`]; each
//! allreduce it asks for is an allgather of the words over the parent's collective context
//! folded with the operation.

use commcore::cid::{CidRequest, Step};
use commcore::rankmap;

use super::comm::Comm;
use super::error::{CommError, P2pError};
use super::Source;

/// `split`'s color for a process that joins no new communicator (`MPI_UNDEFINED`).
pub const UNDEFINED: i32 = -1;

/// Tag of the allgather on a communicator's collective context (the barrier uses tags from 0).
const ALLGATHER_TAG: i32 = 1 << 20;

impl Comm {
    /// Every rank's `mine` (all of one length), concatenated in rank order, on the
    /// communicator's collective context.
    pub(super) fn allgather_bytes(&self, mine: &[u8]) -> Result<Vec<u8>, P2pError> {
        let everyone: Vec<usize> = (0..self.size).collect();
        self.allgather_among(&everyone, self.rank, ALLGATHER_TAG, mine)
    }

    /// Every member of `group`'s `mine` (all of one length), concatenated in group order;
    /// `me` is this rank's position in `group`. Bruck's allgather on the collective context,
    /// with `tag` keeping concurrent groups apart: ⌈log2 n⌉ exchanges; in the one at distance
    /// `d`, each member passes the items it holds for members `me .. me + d` to `me - d`.
    pub(super) fn allgather_among(
        &self,
        group: &[usize],
        me: usize,
        tag: i32,
        mine: &[u8],
    ) -> Result<Vec<u8>, P2pError> {
        let (n, len) = (group.len(), mine.len());
        let context = self.context + 1;
        // Item i of `held` is that of group member (me + i) % n.
        let mut held: Vec<u8> = Vec::with_capacity(n * len);
        held.extend_from_slice(mine);
        let mut incoming = vec![0u8; n * len];
        let mut distance = 1;
        while distance < n {
            let count = distance.min(n - distance);
            let to = group[(me + n - distance) % n];
            let from = group[(me + distance) % n];
            self.send_on(context, &held[..count * len], to, tag)?;
            let got = &mut incoming[..count * len];
            self.recv_on(context, got, Source::Rank(from), tag)?;
            held.extend_from_slice(got);
            distance *= 2;
        }
        let mut all = vec![0u8; n * len];
        for i in 0..n {
            let at = (me + i) % n * len;
            all[at..at + len].copy_from_slice(&held[i * len..(i + 1) * len]);
        }
        Ok(all)
    }

    /// Agrees with every member on a context id free on all of them (collective): runs a
    /// CID request to its end, reducing what it asks over this communicator. Returns the id
    /// and the number of allreduces it took.
    pub fn agree_context_id(&self, tag: u32) -> Result<(u32, u32), CommError> {
        if self.inter.is_some() {
            return Err(CommError::NotIntra);
        }
        let runtime = &self.runtime;
        let mut request: CidRequest<{ super::CID_WORDS }> =
            CidRequest::new(runtime.cid_algorithm, self.cid, tag);
        loop {
            let (op, mine) = match request.poll(&runtime.cids).map_err(CommError::Cid)? {
                Step::Done(cid) => {
                    let allreduces = request.allreduces();
                    runtime
                        .cid_allreduces
                        .fetch_add(u64::from(allreduces), std::sync::atomic::Ordering::Relaxed);
                    return Ok((cid, allreduces));
                }
                Step::Wait => {
                    std::thread::yield_now();
                    continue;
                }
                Step::Allreduce { op, words } => (op, words.to_vec()),
            };
            let reduced = match self.allreduce_words(op, &mine) {
                Ok(reduced) => reduced,
                Err(error) => {
                    request.abort(&runtime.cids);
                    return Err(error.into());
                }
            };
            request.handle_allreduce(&runtime.cids, &reduced).map_err(CommError::Cid)?;
        }
    }

    /// Reduces equal-length word vectors over every member with `op`.
    pub(super) fn allreduce_words(
        &self,
        op: commcore::cid::ReduceOp,
        mine: &[u32],
    ) -> Result<Vec<u32>, P2pError> {
        let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_le_bytes()).collect();
        let all = self.allgather_bytes(&bytes)?;
        let mut reduced = mine.to_vec();
        let mut other = vec![0u32; mine.len()];
        for (rank, contribution) in all.chunks_exact(bytes.len().max(1)).enumerate() {
            if rank == self.rank || bytes.is_empty() {
                continue;
            }
            for (word, chunk) in other.iter_mut().zip(contribution.chunks_exact(4)) {
                *word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            }
            op.fold(&mut reduced, &other);
        }
        Ok(reduced)
    }

    /// A new communicator whose id this process holds but which it does not join: give the
    /// id back.
    pub(super) fn release_context_id(&self, cid: u32) {
        let _ = self.runtime.cids.release(cid);
    }

    /// A new communicator with the same members and ranks (`MPI_Comm_dup`; collective).
    pub fn dup(&self) -> Result<Comm, CommError> {
        let (cid, _) = self.agree_context_id(0)?;
        let map = {
            let mut arena =
                self.runtime.arena.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            self.rank_map().dup(&mut arena).map_err(|e| {
                self.release_context_id(cid);
                CommError::RankMap(e)
            })?
        };
        Comm::with(self.runtime.clone(), cid, self.rank, map).map_err(CommError::Collective)
    }

    /// Splits the communicator by `color` (`MPI_Comm_split`; collective): the ranks that
    /// give the same color form a new communicator, ordered by `key` and then by their rank
    /// here. A rank that gives [`UNDEFINED`] takes part but gets `None`.
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Comm>, CommError> {
        if self.inter.is_some() {
            return Err(CommError::NotIntra);
        }
        if color < 0 && color != UNDEFINED {
            return Err(CommError::InvalidColor(color));
        }
        let mut mine = [0u8; 8];
        mine[0..4].copy_from_slice(&color.to_le_bytes());
        mine[4..8].copy_from_slice(&key.to_le_bytes());
        let all = self.allgather_bytes(&mine)?;
        let field = |item: &[u8], at: usize| {
            i32::from_le_bytes([item[at], item[at + 1], item[at + 2], item[at + 3]])
        };
        let (cid, _) = self.agree_context_id(0)?;
        if color == UNDEFINED {
            self.release_context_id(cid);
            return Ok(None);
        }
        let mut chosen: Vec<(i32, usize)> = all
            .chunks_exact(8)
            .enumerate()
            .filter(|(_, item)| field(item, 0) == color)
            .map(|(rank, item)| (field(item, 4), rank))
            .collect();
        chosen.sort_unstable();
        let parents: Vec<usize> = chosen.iter().map(|&(_, rank)| rank).collect();
        self.child(cid, &parents).inspect_err(|_| self.release_context_id(cid)).map(Some)
    }

    /// The communicator of the ranks in `group`, in that order (`MPI_Comm_create`;
    /// collective over this communicator, every rank passing the same group). Ranks outside
    /// the group get `None`.
    pub fn create(&self, group: &[usize]) -> Result<Option<Comm>, CommError> {
        if self.inter.is_some() {
            return Err(CommError::NotIntra);
        }
        let mut seen = vec![false; self.size];
        for &rank in group {
            match seen.get_mut(rank) {
                Some(seen) if !*seen => *seen = true,
                _ => return Err(CommError::BadGroup { rank }),
            }
        }
        let (cid, _) = self.agree_context_id(0)?;
        if !seen[self.rank] {
            self.release_context_id(cid);
            return Ok(None);
        }
        self.child(cid, group).inspect_err(|_| self.release_context_id(cid)).map(Some)
    }

    /// Allreduces this process's context-id agreements have run so far.
    pub fn context_id_allreduces(&self) -> u64 {
        self.runtime.cid_allreduces.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The CID algorithm of the job.
    pub fn context_id_algorithm(&self) -> commcore::cid::Algorithm {
        self.runtime.cid_algorithm
    }

    /// Frees the communicator (`MPI_Comm_free`); the same as dropping it.
    pub fn free(self) {}

    pub(super) fn child(&self, cid: u32, parents: &[usize]) -> Result<Comm, CommError> {
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
        Comm::with(self.runtime.clone(), cid, rank, map).map_err(CommError::Collective)
    }
}
