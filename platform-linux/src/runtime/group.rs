//! Group-collective creation (`MPI_Comm_create_group`): only the members of the new group
//! take part, and concurrent creations on one parent are told apart by their tags.

use commcore::cid::{CidRequest, ReduceOp, Step};

use super::comm::Comm;
use super::error::CommError;
use super::Runtime;

/// The largest `create_group` tag.
pub const MAX_GROUP_TAG: u32 = (1 << 22) - 1;

/// Tags of a group allgather in the parent's collective context start here: above the
/// barrier's, the creation allgather's (`1 << 20`) and the schedules' (`1 << 21`).
const GROUP_TAG_BASE: i32 = 1 << 22;

/// Runs a CID request to its end, reducing what it asks with `allreduce`; returns the id.
pub(super) fn agree_cid(
    runtime: &Runtime,
    request: &mut CidRequest<{ super::CID_WORDS }>,
    mut allreduce: impl FnMut(ReduceOp, &[u32]) -> Result<Vec<u32>, CommError>,
) -> Result<u32, CommError> {
    loop {
        let (op, mine) = match request.poll(&runtime.cids).map_err(CommError::Cid)? {
            Step::Done(cid) => {
                runtime.cid_allreduces.fetch_add(
                    u64::from(request.allreduces()),
                    std::sync::atomic::Ordering::Relaxed,
                );
                return Ok(cid);
            }
            Step::Wait => {
                std::thread::yield_now();
                continue;
            }
            Step::Allreduce { op, words } => (op, words.to_vec()),
        };
        let reduced = match allreduce(op, &mine) {
            Ok(reduced) => reduced,
            Err(error) => {
                request.abort(&runtime.cids);
                return Err(error);
            }
        };
        request.handle_allreduce(&runtime.cids, &reduced).map_err(CommError::Cid)?;
    }
}

/// Folds equal-length little-endian word vectors `all` (one after another) into `acc`.
pub(super) fn fold_words(op: ReduceOp, acc: &mut [u32], all: &[u8]) {
    let len = acc.len() * 4;
    if len == 0 {
        return;
    }
    let mut other = vec![0u32; acc.len()];
    for contribution in all.chunks_exact(len) {
        for (word, chunk) in other.iter_mut().zip(contribution.chunks_exact(4)) {
            *word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        op.fold(acc, &other);
    }
}

pub(super) fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

impl Comm {
    /// The communicator of the ranks in `group`, in that order (`MPI_Comm_create_group`):
    /// collective over the members of `group` only, which all pass the same group and
    /// `tag`; other ranks do not call it. Creations that run at once on this communicator
    /// (from other threads, or by other groups) need different tags; tag 0 is also the one
    /// `dup`, `split` and `create` agree their ids under, so it must not overlap those.
    pub fn create_group(&self, group: &[usize], tag: u32) -> Result<Comm, CommError> {
        if self.inter.is_some() {
            return Err(CommError::NotIntra);
        }
        if tag > MAX_GROUP_TAG {
            return Err(CommError::InvalidGroupTag(tag));
        }
        let mut seen = vec![false; self.size];
        for &rank in group {
            match seen.get_mut(rank) {
                Some(seen) if !*seen => *seen = true,
                _ => return Err(CommError::BadGroup { rank }),
            }
        }
        let me = group.iter().position(|&r| r == self.rank).ok_or(CommError::NotInGroup)?;
        let wire_tag = GROUP_TAG_BASE + tag as i32;
        let mut request = CidRequest::new(self.runtime.cid_algorithm, self.cid, tag);
        let cid = agree_cid(&self.runtime, &mut request, |op, mine| {
            let bytes = to_bytes(mine);
            let all = self.allgather_among(group, me, wire_tag, &bytes)?;
            let mut reduced = mine.to_vec();
            fold_words(op, &mut reduced, &all);
            Ok(reduced)
        })?;
        self.child(cid, group).inspect_err(|_| self.release_context_id(cid))
    }
}
