//! Group-collective creation (`MPI_Comm_create_group`): only the members of the new group
//! take part, and concurrent creations on one parent are told apart by their tags.

use commcore::cid::CidRequest;

use super::context_id::{agree_cid, fold_words, to_bytes};
use crate::runtime::error::CommError;
use crate::runtime::Comm;

/// The largest `create_group` tag.
pub const MAX_GROUP_TAG: u32 = (1 << 22) - 1;

/// Tags of a group allgather in the parent's collective context start here: above the
/// barrier's, the creation allgather's (`1 << 20`) and the schedules' (`1 << 21`).
const GROUP_TAG_BASE: i32 = 1 << 22;

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
        self.child(cid, group)
    }
}
