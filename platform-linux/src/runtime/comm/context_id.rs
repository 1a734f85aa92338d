//! Context-id agreement, in one place: core's CID request run to its end over an allreduce
//! the caller supplies, and the agreed id held by a guard until a communicator owns it, so
//! that every error path between agreement and communicator gives the id back.

use commcore::cid::{CidRequest, ReduceOp, Step};

use crate::runtime::error::CommError;
use crate::runtime::Runtime;

/// A context id this process agreed on for a communicator it is building. Dropping the
/// guard gives the id back; [`HeldCid::hand_over`] passes it to the communicator, whose
/// rank-map handle gives it back when the communicator is freed.
#[must_use = "dropping a held context id releases it"]
pub(in crate::runtime) struct HeldCid<'r> {
    runtime: &'r Runtime,
    cid: u32,
    held: bool,
}

impl<'r> HeldCid<'r> {
    /// Holds `cid`, which this process's CID space has marked taken.
    pub(in crate::runtime) fn new(runtime: &'r Runtime, cid: u32) -> HeldCid<'r> {
        HeldCid { runtime, cid, held: true }
    }

    /// The id, for a communicator built from it at once: from here on the communicator's
    /// handle releases it (also when building it fails after the handle exists).
    pub(in crate::runtime) fn hand_over(mut self) -> u32 {
        self.held = false;
        self.cid
    }
}

impl Drop for HeldCid<'_> {
    fn drop(&mut self) {
        if self.held {
            // Only fails for an id that is not held, which a guard's always is.
            let _ = self.runtime.cids.release(self.cid);
        }
    }
}

/// Runs a CID request to its end, reducing what it asks with `allreduce`; returns the id,
/// held. A failed allreduce aborts the request, so no id stays taken.
pub(in crate::runtime) fn agree_cid<'r>(
    runtime: &'r Runtime,
    request: &mut CidRequest<{ crate::runtime::CID_WORDS }>,
    mut allreduce: impl FnMut(ReduceOp, &[u32]) -> Result<Vec<u32>, CommError>,
) -> Result<HeldCid<'r>, CommError> {
    loop {
        let (op, mine) = match request.poll(&runtime.cids).map_err(CommError::Cid)? {
            Step::Done(cid) => {
                runtime.cid_allreduces.fetch_add(
                    u64::from(request.allreduces()),
                    std::sync::atomic::Ordering::Relaxed,
                );
                return Ok(HeldCid::new(runtime, cid));
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
pub(in crate::runtime) fn fold_words(op: ReduceOp, acc: &mut [u32], all: &[u8]) {
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

/// Words as little-endian bytes.
pub(in crate::runtime) fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
