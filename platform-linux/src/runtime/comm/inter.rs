//! Inter-communicators (`MPI_Intercomm_create`, `MPI_Intercomm_merge`): a local and a
//! remote group. Point-to-point addresses remote ranks; sends carry the remote group's
//! context id, receives match ours (core's CID pair), and collectives run core's
//! inter-communicator schedules.
//!
//! An inter-communicator is a [`Comm`] whose `members` are the remote group (so ranks given
//! to point-to-point and the statuses they return are remote ranks) and whose `inter` holds
//! the local group.

use std::sync::{Arc, PoisonError};

use commcore::av::Pgid;
use commcore::cid::{CidRequest, InterCidPair, InterCidRequest, InterStep};
use commcore::coll::{CollArgs, CollOp, Datatype, Root};
use commcore::rankmap::{self, InterMaps, RankMap, RankMapError};

use super::context_id::{agree_cid, fold_words, to_bytes, HeldCid};
use super::create::UNDEFINED;
use super::{Comm, Members, WORLD_CID};
use crate::runtime::error::{CollectiveError, CommError, P2pError};
use crate::runtime::{Arena, Runtime};

/// The local group of an inter-communicator.
pub(in crate::runtime) struct LocalGroup {
    /// Local ranks to processes; owns the local context id.
    pub(in crate::runtime) members: Members,
    /// The local group's size.
    pub(in crate::runtime) size: usize,
    /// Whether this group comes first where both groups must order themselves alike (a
    /// merge whose groups pass the same `high`): fixed when the groups met over a bridge
    /// (its first side first); `None` when both are of this job, whose rank 0 with the
    /// lower world rank comes first.
    pub(in crate::runtime) first: Option<bool>,
    /// The group's node communicator, for collectives over shared memory.
    pub(in crate::runtime) node: super::inter_node::NodeComm,
}

impl LocalGroup {
    /// Whether this group comes first, the remote group's members being `remote`.
    fn orders_first(&self, remote: &Members) -> bool {
        self.first.unwrap_or_else(|| self.members.to_world(0) < remote.to_world(0))
    }
}

/// The (color, key) each process of a group passed to a split, by rank.
type ColorKeys = Vec<(i32, i32)>;

/// Process group of the world, whose lpids are world ranks.
const WORLD_PGID: Pgid = Pgid(0);

impl Comm {
    /// Whether this is an inter-communicator.
    pub fn is_inter(&self) -> bool {
        self.inter.is_some()
    }

    /// The size of the remote group of an inter-communicator (`MPI_Comm_remote_size`).
    pub fn remote_size(&self) -> Option<usize> {
        self.inter.as_ref().map(|_| self.size)
    }

    /// The world rank of local rank `rank` (this communicator's ranks on an
    /// intra-communicator, its local group's on an inter-communicator).
    pub fn local_world_rank(&self, rank: usize) -> Option<usize> {
        match &self.inter {
            Some(local) => local.members.to_world(rank),
            None => self.world_rank(rank),
        }
    }

    /// Broadcasts with a root given as core does for both kinds of communicator: on an
    /// inter-communicator the root passes [`Root::Here`], the rest of its group
    /// [`Root::Elsewhere`], and the other group `Root::Rank(root's rank there)`.
    pub fn bcast_root(&self, buf: &mut [u8], root: Root) -> Result<(), CollectiveError> {
        let args = CollArgs::new(buf.len(), Datatype::U8).with_root(root);
        self.collective(CollOp::Bcast, &args, &[], buf)
    }

    /// An inter-communicator between the group of this (intra-)communicator and another
    /// group (`MPI_Intercomm_create`; collective over both groups). Each group names its
    /// leader; the two leaders know each other as ranks of `peer_comm`, over which they
    /// exchange their groups and context ids with `tag`. `peer_comm` and `remote_leader`
    /// matter only at the local leader.
    pub fn intercomm_create(
        &self,
        local_leader: usize,
        peer_comm: &Comm,
        remote_leader: usize,
        tag: i32,
    ) -> Result<Comm, CommError> {
        if self.inter.is_some() {
            return Err(CommError::NotIntra);
        }
        if local_leader >= self.size {
            return Err(CommError::BadLeader { rank: local_leader });
        }
        let leader = self.rank == local_leader;
        let local: Vec<usize> = (0..self.size).filter_map(|r| self.world_rank(r)).collect();
        // The leader learns the remote group; then tells its group whether that worked.
        let learned = if leader {
            exchange_groups(peer_comm, remote_leader, tag, &local)
        } else {
            Ok(Vec::new())
        };
        let mut header = [0u8; 8];
        if let Ok(remote) = &learned {
            header[0] = 1;
            header[4..8].copy_from_slice(&(remote.len() as u32).to_le_bytes());
        }
        self.bcast(&mut header, local_leader).map_err(CommError::Collective)?;
        if header[0] == 0 {
            return Err(learned.err().unwrap_or(CommError::LeaderFailed));
        }
        let count = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let mut list = match &learned {
            Ok(remote) if leader => to_bytes(remote),
            _ => vec![0u8; count * 4],
        };
        self.bcast(&mut list, local_leader).map_err(CommError::Collective)?;
        let remote: Vec<u32> =
            list.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        if remote.iter().any(|&w| local.contains(&(w as usize))) {
            return Err(CommError::GroupsOverlap);
        }
        let pair = self.agree_inter_cids(leader, tag as u32, |local| {
            let mut theirs = [0u8; 4];
            peer_comm.sendrecv(
                &local.to_le_bytes(),
                remote_leader,
                tag,
                &mut theirs,
                remote_leader,
                tag,
            )?;
            Ok(u32::from_le_bytes(theirs))
        })?;
        let held = HeldCid::new(&self.runtime, pair.local);
        let maps = {
            let mut arena = self.runtime.arena.lock().unwrap_or_else(PoisonError::into_inner);
            self.rank_map().dup(&mut arena).and_then(|local| {
                match rankmap::from_group(WORLD_PGID, &remote, self.members.groups(), &mut arena) {
                    Ok(remote) => Ok((local, remote)),
                    Err(error) => {
                        let _ = local.free(&mut arena);
                        Err(error)
                    }
                }
            })
        };
        let (local_map, remote_map) = maps.map_err(CommError::RankMap)?;
        let pair = InterCidPair { local: held.hand_over(), remote: pair.remote };
        Comm::inter(self.runtime.clone(), pair, self.rank, (local_map, remote_map), None)
    }

    /// Runs core's inter-communicator CID request: a local agreement over this
    /// communicator, the leaders' swap (`exchange` gives ours and returns theirs), and the
    /// spread to the group.
    pub(in crate::runtime) fn agree_inter_cids(
        &self,
        leader: bool,
        tag: u32,
        mut exchange: impl FnMut(u32) -> Result<u32, P2pError>,
    ) -> Result<InterCidPair, CommError> {
        let runtime = &self.runtime;
        let mut request: InterCidRequest<{ crate::runtime::CID_WORDS }> =
            InterCidRequest::new(runtime.cid_algorithm, self.cid, tag, leader);
        loop {
            let result = match request.poll(&runtime.cids).map_err(CommError::Cid)? {
                InterStep::Done(pair) => return Ok(pair),
                InterStep::Wait => {
                    std::thread::yield_now();
                    continue;
                }
                InterStep::Allreduce { op, words } => {
                    let mine = words.to_vec();
                    self.allreduce_words(op, &mine).map_err(CommError::P2p).and_then(|reduced| {
                        request.handle_allreduce(&runtime.cids, &reduced).map_err(CommError::Cid)
                    })
                }
                InterStep::Exchange { local } => exchange(local)
                    .map_err(CommError::P2p)
                    .and_then(|theirs| request.handle_exchange(theirs).map_err(CommError::Cid)),
            };
            if let Err(error) = result {
                request.abort(&runtime.cids);
                return Err(error);
            }
        }
    }

    /// An inter-communicator over CID `pair`, this process being `rank` of `local`; `first`
    /// is [`LocalGroup::first`].
    pub(in crate::runtime) fn inter(
        runtime: Arc<Runtime>,
        pair: InterCidPair,
        rank: usize,
        (local, remote): (RankMap<'static>, RankMap<'static>),
        first: Option<bool>,
    ) -> Result<Comm, CommError> {
        let (size, remote_size) = (local.size() as usize, remote.size() as usize);
        let local = Members::new(runtime.clone(), pair.local, local);
        // The remote context id is the other group's, not ours to release: the handle of
        // the remote map carries the world's, which is never released.
        let members = Members::new(runtime.clone(), WORLD_CID, remote);
        let coll = crate::runtime::coll::select_inter(rank, size, remote_size)
            .map_err(CommError::Collective)?;
        Ok(Comm {
            runtime,
            cid: pair.local,
            context: 2 * pair.local,
            rank,
            size: remote_size,
            members,
            coll: Arc::new(coll),
            remote_context: 2 * pair.remote,
            inter: Some(Arc::new(LocalGroup {
                members: local,
                size,
                first,
                node: Default::default(),
            })),
        })
    }

    /// The intra-communicator of both groups of this inter-communicator
    /// (`MPI_Intercomm_merge`; collective over both): the group that passes `high = false`
    /// comes first; when both pass the same, the group whose rank 0 has the lower world
    /// rank does.
    pub fn intercomm_merge(&self, high: bool) -> Result<Comm, CommError> {
        let local = self.inter.as_ref().ok_or(CommError::NotInter)?;
        // The flags ride on the context-id agreement's two exchanges: the first hands each
        // side the other's flags, the second each side's verdict on them, so both groups
        // fail together when one disagrees, in no extra round.
        let (cid, flags) = self.agree_cid_across_groups(Some(u8::from(high)))?;
        let (remote_high, remote_agrees, verdicts_agree) = flags;
        if !remote_agrees || !verdicts_agree {
            return Err(CommError::InconsistentHigh);
        }
        let local_first =
            if high != remote_high { !high } else { local.orders_first(&self.members) };
        let rank = if local_first { self.rank } else { self.size + self.rank };
        let merged = {
            let mut arena = self.runtime.arena.lock().unwrap_or_else(PoisonError::into_inner);
            let maps = self.local_map().dup(&mut arena).and_then(|l| {
                match self.rank_map().dup(&mut arena) {
                    Ok(r) => Ok(InterMaps { local: l, remote: r }),
                    Err(error) => {
                        let _ = l.free(&mut arena);
                        Err(error)
                    }
                }
            });
            maps.and_then(|maps| {
                let groups = self.runtime.registry.snapshot();
                let merged = maps.merge(local_first, &groups, &mut arena);
                let _ = maps.free(&mut arena);
                merged
            })
        };
        let merged = merged.map_err(CommError::RankMap)?;
        Comm::with(self.runtime.clone(), cid.hand_over(), rank, merged)
            .map_err(CommError::Collective)
    }

    /// A copy of this inter-communicator with a context of its own (`MPI_Comm_dup`;
    /// collective over both groups): both groups take one context id that is free on
    /// every process of either, so each side sends with it and matches it.
    pub(in crate::runtime) fn dup_inter(&self) -> Result<Comm, CommError> {
        let (cid, _) = self.agree_cid_across_groups(None)?;
        let (local_map, remote_map) = self
            .map_pair(|arena| self.local_map().dup(arena), |arena| self.rank_map().dup(arena))
            .map_err(CommError::RankMap)?;
        let cid = cid.hand_over();
        let pair = InterCidPair { local: cid, remote: cid };
        let first = self.inter.as_ref().and_then(|local| local.first);
        Comm::inter(self.runtime.clone(), pair, self.rank, (local_map, remote_map), first)
    }

    /// A local and a remote rank map made by `local` and then `remote` in the runtime's
    /// arena; the local one is freed again when the remote one cannot be made.
    fn map_pair(
        &self,
        local: impl FnOnce(&mut Arena) -> Result<RankMap<'static>, RankMapError>,
        remote: impl FnOnce(&mut Arena) -> Result<RankMap<'static>, RankMapError>,
    ) -> Result<(RankMap<'static>, RankMap<'static>), RankMapError> {
        let mut arena = self.runtime.arena.lock().unwrap_or_else(PoisonError::into_inner);
        let local = local(&mut arena)?;
        match remote(&mut arena) {
            Ok(remote) => Ok((local, remote)),
            Err(error) => {
                let _ = local.free(&mut arena);
                Err(error)
            }
        }
    }

    /// `MPI_Comm_split` on an inter-communicator (collective over both groups): in each
    /// group the processes that give the same color, ordered by key and then by their rank
    /// here, form the two groups of a new inter-communicator. A process that gives
    /// [`UNDEFINED`], or a color nobody in the other group gave, gets `None`. Every new
    /// inter-communicator takes the same context id: their processes are disjoint.
    pub(in crate::runtime) fn split_inter(
        &self,
        color: i32,
        key: i32,
    ) -> Result<Option<Comm>, CommError> {
        let local = self.inter.as_ref().ok_or(CommError::NotInter)?;
        let (local_items, remote_items) = self.exchange_color_keys(local, color, key)?;
        let (cid, _) = self.agree_cid_across_groups(None)?;
        // The ranks of a group's processes with our color, in their new order.
        let members = |items: &[(i32, i32)]| {
            let mut ranks: Vec<u32> = (0..items.len() as u32)
                .filter(|&r| color != UNDEFINED && items[r as usize].0 == color)
                .collect();
            ranks.sort_by_key(|&r| (items[r as usize].1, r));
            ranks
        };
        // On every return below without a communicator, dropping `cid` gives it back.
        let (local_ranks, remote_ranks) = (members(&local_items), members(&remote_items));
        let Some(rank) = local_ranks.iter().position(|&r| r as usize == self.rank) else {
            return Ok(None);
        };
        if remote_ranks.is_empty() {
            return Ok(None);
        }
        let (local_groups, remote_groups) = (local.members.groups(), self.members.groups());
        let (local_map, remote_map) = self
            .map_pair(
                |arena| rankmap::create(self.local_map(), &local_ranks, local_groups, arena),
                |arena| rankmap::create(self.rank_map(), &remote_ranks, remote_groups, arena),
            )
            .map_err(CommError::RankMap)?;
        let cid = cid.hand_over();
        let pair = InterCidPair { local: cid, remote: cid };
        let first = local.first;
        Comm::inter(self.runtime.clone(), pair, rank, (local_map, remote_map), first).map(Some)
    }

    /// Every process's (color, key), of the local group and of the remote one, by rank. An
    /// allgather hands each group the other's; then each group's rank 0 broadcasts what it
    /// received back to the group it came from, the group of the lower world rank first.
    fn exchange_color_keys(
        &self,
        local: &LocalGroup,
        color: i32,
        key: i32,
    ) -> Result<(ColorKeys, ColorKeys), CommError> {
        let mine = to_bytes(&[color as u32, key as u32]);
        let mut remote_bytes = vec![0u8; mine.len() * self.size];
        self.allgather(&mine, &mut remote_bytes).map_err(CommError::Collective)?;
        let mut local_bytes = vec![0u8; mine.len() * local.size];
        let local_first = local.orders_first(&self.members);
        for local_sends in [local_first, !local_first] {
            if local_sends {
                let root = if self.rank == 0 { Root::Here } else { Root::Elsewhere };
                let mut theirs = remote_bytes.clone();
                self.bcast_root(&mut theirs, root).map_err(CommError::Collective)?;
            } else {
                self.bcast_root(&mut local_bytes, Root::Rank(0)).map_err(CommError::Collective)?;
            }
        }
        let pairs = |bytes: &[u8]| -> ColorKeys {
            bytes
                .chunks_exact(8)
                .map(|c| {
                    let word =
                        |at: usize| i32::from_le_bytes([c[at], c[at + 1], c[at + 2], c[at + 3]]);
                    (word(0), word(4))
                })
                .collect()
        };
        Ok((pairs(&local_bytes), pairs(&remote_bytes)))
    }

    /// Runs core's CID request over both groups of this inter-communicator: each
    /// allreduce is two allgathers, the first giving each side the other group's words,
    /// which it folds, the second handing each side the other's fold, which is of its own
    /// group's words. With `flag`, the first exchange also carries each process's flag and
    /// the second each side's verdict on the other's: returned as (the other group's flag,
    /// whether the other group's flags all agree, whether the other group found ours did).
    fn agree_cid_across_groups(
        &self,
        flag: Option<u8>,
    ) -> Result<(HeldCid<'_>, (bool, bool, bool)), CommError> {
        let parent = self.context.min(self.remote_context) / 2;
        let mut request = CidRequest::new(self.runtime.cid_algorithm, parent, 0);
        let mut flags = (false, true, true);
        let mut first = flag.is_some();
        let cid = agree_cid(&self.runtime, &mut request, |op, mine| {
            // Carried only by the first allreduce.
            let extra = usize::from(first);
            let mut bytes = to_bytes(mine);
            if first {
                bytes.insert(0, flag.unwrap_or(0));
            }
            let mut theirs = vec![0u8; bytes.len() * self.size];
            self.allgather(&bytes, &mut theirs).map_err(CommError::Collective)?;
            let item = bytes.len();
            let words_of = |chunk: &[u8]| chunk[extra..].to_vec();
            let theirs_words: Vec<u8> =
                theirs.chunks_exact(item.max(1)).flat_map(words_of).collect();
            let mut fold = vec![0u32; mine.len()];
            for (word, chunk) in fold.iter_mut().zip(theirs_words.chunks_exact(4)) {
                *word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            }
            fold_words(op, &mut fold, &theirs_words);
            let mut fold_bytes = to_bytes(&fold);
            if first {
                let remote: Vec<u8> = theirs.chunks_exact(item.max(1)).map(|c| c[0]).collect();
                flags.0 = remote.first().is_some_and(|&f| f != 0);
                flags.1 = remote.iter().all(|&f| f == remote[0]);
                fold_bytes.insert(0, u8::from(flags.1));
            }
            let mut back = vec![0u8; fold_bytes.len() * self.size];
            self.allgather(&fold_bytes, &mut back).map_err(CommError::Collective)?;
            if first {
                flags.2 = back.chunks_exact(fold_bytes.len().max(1)).all(|c| c[0] == 1);
            }
            if let Some(own_fold) = back.get(extra..extra + fold_bytes.len() - extra) {
                fold_words(op, &mut fold, own_fold);
            }
            first = false;
            Ok(fold)
        })?;
        Ok((cid, flags))
    }

    fn local_map(&self) -> &RankMap<'static> {
        match &self.inter {
            Some(local) => local.members.map(),
            None => self.rank_map(),
        }
    }
}

/// The local leader's side of the group exchange: sends our world ranks to the remote
/// leader over `peer_comm` and returns its group's.
fn exchange_groups(
    peer_comm: &Comm,
    remote_leader: usize,
    tag: i32,
    local: &[usize],
) -> Result<Vec<u32>, CommError> {
    if peer_comm.is_inter() {
        return Err(CommError::NotIntra);
    }
    let me = peer_comm.world_rank(peer_comm.rank());
    match peer_comm.world_rank(remote_leader) {
        Some(world) if Some(world) != me => {}
        _ => return Err(CommError::BadLeader { rank: remote_leader }),
    }
    let mine: Vec<u32> = local.iter().map(|&w| w as u32).collect();
    let mut count = [0u8; 4];
    let sent = (mine.len() as u32).to_le_bytes();
    peer_comm.sendrecv(&sent, remote_leader, tag, &mut count, remote_leader, tag)?;
    let mut theirs = vec![0u8; u32::from_le_bytes(count) as usize * 4];
    peer_comm.sendrecv(&to_bytes(&mine), remote_leader, tag, &mut theirs, remote_leader, tag)?;
    Ok(theirs.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}
