//! Making communicators from communicators: `dup`, `split`, `create` (from a group) and
//! `free`, over the runtime's transport, core's CID requests and core's rank maps.
//!
//! A context id comes from a [`CidRequest`] of the job's algorithm (`COMMCORE_CID_ALGORITHM`:
//! lowest, mask or highest, default highest) run against this process's [`CidSpace`]; each
//! allreduce it asks for is an allgather of the words over the parent's collective context
//! folded with the operation.

use commcore::cid::CidRequest;
use commcore::coll::{CollArgs, CollOp, Datatype};
use commcore::rankmap;

use super::context_id::{agree_cid, fold_words, to_bytes, HeldCid};
use crate::runtime::error::{CommError, P2pError};
use crate::runtime::shm_coll::{AreaGrant, ShmColl};
use crate::runtime::Comm;
use crate::runtime::Source;
use crate::shm::coll_area::members_max;

/// `split`'s color for a process that joins no new communicator (`MPI_UNDEFINED`).
pub const UNDEFINED: i32 = -1;

/// Tag of the allgather on a communicator's collective context (the barrier uses tags from 0).
const ALLGATHER_TAG: i32 = 1 << 20;

/// A rank's part of a creation's exchange: color, key and offered area (little-endian).
const ITEM_BYTES: usize = 12;
/// No area offered.
const NO_OFFER: u32 = u32::MAX;

/// What a creation agreed for a rank that joins: the context id, the members' ranks in the
/// parent in their new order, and the communicator's collective area.
type Created<'r> = (HeldCid<'r>, Vec<usize>, Option<AreaGrant>);

impl Comm {
    /// Every rank's `mine` (all of one length), concatenated in rank order, on the
    /// communicator's collective context.
    pub(in crate::runtime) fn allgather_bytes(&self, mine: &[u8]) -> Result<Vec<u8>, P2pError> {
        let everyone: Vec<usize> = (0..self.size).collect();
        self.allgather_among(&everyone, self.rank, ALLGATHER_TAG, mine)
    }

    /// Every member of `group`'s `mine` (all of one length), concatenated in group order;
    /// `me` is this rank's position in `group`. Bruck's allgather on the collective context,
    /// with `tag` keeping concurrent groups apart: ⌈log2 n⌉ exchanges; in the one at distance
    /// `d`, each member passes the items it holds for members `me .. me + d` to `me - d`.
    pub(in crate::runtime) fn allgather_among(
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

    /// Every rank's `mine` (all of one length), concatenated in rank order: over the
    /// communicator's shared-memory area when `shm` serves its allgather, else Bruck's
    /// allgather of messages.
    fn exchange(&self, mine: &[u8]) -> Result<Vec<u8>, CommError> {
        if let Some(shm) = self.coll.shm_for(CollOp::Allgather) {
            let mut all = vec![0u8; mine.len() * self.size];
            let args = CollArgs::new(mine.len(), Datatype::U8);
            if let Some(done) = shm.run(CollOp::Allgather, &args, mine, &mut all) {
                done.map_err(CommError::Collective)?;
                return Ok(all);
            }
        }
        Ok(self.allgather_bytes(mine)?)
    }

    /// Agrees with every member on a context id free on all of them (collective): runs a
    /// CID request to its end, reducing what it asks over this communicator. Returns the id
    /// and the number of allreduces it took.
    pub fn agree_context_id(&self, tag: u32) -> Result<(u32, u32), CommError> {
        let mut request = CidRequest::new(self.runtime.cid_algorithm, self.cid, tag);
        // The caller holds the id from here on.
        let (cid, _) = self.agree_with_items(&mut request, &[])?;
        Ok((cid.hand_over(), request.allreduces()))
    }

    /// Agrees on a context id (tag 0) and gathers every member's `mine` (all of one length)
    /// in rank order: `mine` rides in the first allreduce the request asks for, whose words
    /// travel as an allgather anyway, so a creation costs no exchange of its own.
    fn agree_with_items(
        &self,
        request: &mut CidRequest<{ crate::runtime::CID_WORDS }>,
        mine: &[u8],
    ) -> Result<(HeldCid<'_>, Vec<u8>), CommError> {
        if self.inter.is_some() {
            return Err(CommError::NotIntra);
        }
        let mut items: Option<Vec<u8>> = None;
        let cid = agree_cid(&self.runtime, request, |op, words| {
            let bytes = to_bytes(words);
            let carried = if items.is_none() { mine } else { &[] };
            let item: Vec<u8> = carried.iter().chain(&bytes).copied().collect();
            let all = self.exchange(&item)?;
            let mut words_of_all = Vec::with_capacity(bytes.len() * self.size);
            if item.is_empty() {
                // Nothing to gather: every contribution is empty.
            } else if items.is_none() {
                let mut gathered = Vec::with_capacity(carried.len() * self.size);
                for contribution in all.chunks_exact(item.len()) {
                    gathered.extend_from_slice(&contribution[..carried.len()]);
                    words_of_all.extend_from_slice(&contribution[carried.len()..]);
                }
                items = Some(gathered);
            } else {
                words_of_all = all;
            }
            let mut reduced = words.to_vec();
            fold_words(op, &mut reduced, &words_of_all);
            Ok(reduced)
        })?;
        let items = match items {
            Some(items) => items,
            None => self.exchange(mine)?,
        };
        Ok((cid, items))
    }

    /// Reduces equal-length word vectors over every member with `op`.
    pub(in crate::runtime) fn allreduce_words(
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

    /// A new communicator with the same members and ranks (`MPI_Comm_dup`; collective, over
    /// both groups of an inter-communicator).
    pub fn dup(&self) -> Result<Comm, CommError> {
        if self.inter.is_some() {
            return self.dup_inter();
        }
        let created = self.create_colored(0, self.rank as i32)?;
        // Every rank joins with its own rank as key: the new order is this one.
        let (cid, _, area) = created.ok_or(CommError::BadGroup { rank: self.rank })?;
        let map = {
            let mut arena =
                self.runtime.arena.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            self.rank_map().dup(&mut arena).map_err(CommError::RankMap)?
        };
        let world: Vec<usize> = (0..self.size).filter_map(|r| self.world_rank(r)).collect();
        let shm = self.attach(area, self.rank, &world);
        Comm::with_area(self.runtime.clone(), cid.hand_over(), self.rank, map, shm)
            .map_err(CommError::Collective)
    }

    /// Splits the communicator by `color` (`MPI_Comm_split`; collective): the ranks that
    /// give the same color form a new communicator, ordered by `key` and then by their rank
    /// here. A rank that gives [`UNDEFINED`] takes part but gets `None`. On an
    /// inter-communicator each group splits alike and the same colors pair up (see
    /// `split_inter`).
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Comm>, CommError> {
        if color < 0 && color != UNDEFINED {
            return Err(CommError::InvalidColor(color));
        }
        if self.inter.is_some() {
            return self.split_inter(color, key);
        }
        self.create_by_color(color, key)
    }

    /// The communicator of the ranks in `group`, in that order (`MPI_Comm_create`;
    /// collective over this communicator, every rank passing the same group). Ranks outside
    /// the group get `None`. On an inter-communicator `group` names local ranks, and the
    /// new inter-communicator's remote group is the one the other group passed.
    pub fn create(&self, group: &[usize]) -> Result<Option<Comm>, CommError> {
        // On an inter-communicator, `group` holds local ranks.
        let local_size = self.inter.as_ref().map_or(self.size, |local| local.size);
        let mut seen = vec![false; local_size];
        for &rank in group {
            match seen.get_mut(rank) {
                Some(seen) if !*seen => *seen = true,
                _ => return Err(CommError::BadGroup { rank }),
            }
        }
        // A split in disguise: the group's members share a color, their positions are keys.
        let position = group.iter().position(|&r| r == self.rank);
        let color = if position.is_some() { 0 } else { UNDEFINED };
        if self.inter.is_some() {
            return self.split_inter(color, position.unwrap_or(0) as i32);
        }
        self.create_by_color(color, position.unwrap_or(0) as i32)
    }

    fn create_by_color(&self, color: i32, key: i32) -> Result<Option<Comm>, CommError> {
        let Some((cid, parents, area)) = self.create_colored(color, key)? else {
            return Ok(None);
        };
        self.child_with_area(cid, &parents, area).map(Some)
    }

    /// The collective part of `dup`, `split` and `create`: one exchange of each rank's
    /// color, key and offered collective area, riding on the context-id agreement. Returns,
    /// for a rank that joins a communicator, its id, its members' ranks here in order, and
    /// its area: the first offered by one of its members, if it fits.
    fn create_colored(&self, color: i32, key: i32) -> Result<Option<Created<'_>>, CommError> {
        let runtime = &self.runtime;
        let fabric = &runtime.fabric;
        let joins = color != UNDEFINED;
        let offer = if joins && runtime.areas_enabled {
            runtime.areas.offer(&fabric.region, &fabric.layout)
        } else {
            None
        };
        let mut mine = [0u8; ITEM_BYTES];
        mine[0..4].copy_from_slice(&color.to_le_bytes());
        mine[4..8].copy_from_slice(&key.to_le_bytes());
        mine[8..12].copy_from_slice(&offer.unwrap_or(NO_OFFER).to_le_bytes());
        let mut request = CidRequest::new(runtime.cid_algorithm, self.cid, 0);
        let (cid, all) = match self.agree_with_items(&mut request, &mine) {
            Ok(agreed) => agreed,
            Err(error) => {
                if let Some(index) = offer {
                    runtime.areas.withdraw(index);
                }
                return Err(error);
            }
        };
        if !joins {
            // Dropping the guard gives the id back.
            return Ok(None);
        }
        let field = |item: &[u8], at: usize| {
            u32::from_le_bytes([item[at], item[at + 1], item[at + 2], item[at + 3]])
        };
        let mut chosen: Vec<(i32, usize, u32)> = all
            .chunks_exact(ITEM_BYTES)
            .enumerate()
            .filter(|(_, item)| field(item, 0) as i32 == color)
            .map(|(rank, item)| (field(item, 4) as i32, rank, field(item, 8)))
            .collect();
        chosen.sort_unstable();
        let parents: Vec<usize> = chosen.iter().map(|&(_, rank, _)| rank).collect();
        let world: Vec<usize> = parents.iter().filter_map(|&r| self.world_rank(r)).collect();
        // An area serves processes of this job's region only, on one node.
        let home = world.len() == parents.len();
        let one_node = world.iter().all(|&w| fabric.nodes[w] == fabric.nodes[world[0]]);
        let fits =
            home && one_node && world.len() > 1 && world.len() <= members_max(fabric.layout.size());
        let grant =
            chosen.iter().find(|&&(_, _, offered)| offered != NO_OFFER).filter(|_| fits).and_then(
                |&(_, rank, index)| {
                    Some(AreaGrant { owner: self.world_rank(rank)?, index: index as usize })
                },
            );
        if let Some(index) = offer {
            if grant == Some(AreaGrant { owner: fabric.rank, index: index as usize }) {
                runtime.areas.hand_out(index, world.len());
            } else {
                runtime.areas.withdraw(index);
            }
        }
        Ok(Some((cid, parents, grant)))
    }

    /// This member's use of area `area` (a communicator of world ranks `world`).
    fn attach(&self, area: Option<AreaGrant>, rank: usize, world: &[usize]) -> Option<ShmColl> {
        area.and_then(|grant| ShmColl::attach(self.runtime.clone(), grant, rank, world))
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

    pub(in crate::runtime) fn child(
        &self,
        cid: HeldCid<'_>,
        parents: &[usize],
    ) -> Result<Comm, CommError> {
        self.child_with_area(cid, parents, None)
    }

    fn child_with_area(
        &self,
        cid: HeldCid<'_>,
        parents: &[usize],
        area: Option<AreaGrant>,
    ) -> Result<Comm, CommError> {
        let rank = parents
            .iter()
            .position(|&r| r == self.rank)
            .ok_or(CommError::BadGroup { rank: self.rank })?;
        let world: Vec<usize> = parents.iter().filter_map(|&r| self.world_rank(r)).collect();
        // First, so that a failure below still counts this member out of the area.
        let shm = self.attach(area, rank, &world);
        let indirect: Vec<u32> = parents.iter().map(|&r| r as u32).collect();
        let map = {
            let mut arena =
                self.runtime.arena.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            rankmap::create(self.rank_map(), &indirect, self.members.groups(), &mut arena)
                .map_err(CommError::RankMap)?
        };
        Comm::with_area(self.runtime.clone(), cid.hand_over(), rank, map, shm)
            .map_err(CommError::Collective)
    }
}
