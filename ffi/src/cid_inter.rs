//! Inter-communicator context ids: each group agrees on a CID of its own, the two leaders
//! swap theirs, and each leader spreads the other group's CID to its group.

use std::sync::Arc;

use commcore_core::cid::{CidSpace, InterCidRequest, InterStep};

use crate::cid::{algorithm, cid_fail, cid_op, commcore_cid_space, commcore_cid_step, W};
use crate::cid::{
    COMMCORE_CID_ALLREDUCE, COMMCORE_CID_DONE, COMMCORE_CID_ERROR, COMMCORE_CID_WAIT,
};
use crate::handle::{self, handle, Shell};
use crate::result::*;

/// Leader only: send `cid` (this group's CID) to the remote group's leader, receive its
/// CID, and hand it to `commcore_cid_inter_request_handle_exchange`.
pub const COMMCORE_CID_EXCHANGE: crate::cid::commcore_cid_step_kind = 5;

/// One member's side of an inter-communicator CID agreement (opaque), for
/// `MPI_Intercomm_create`. Created by `commcore_cid_inter_request_create`, owned by the
/// caller, freed by `commcore_cid_inter_request_free`. One thread at a time.
pub struct commcore_cid_inter_request {
    shell: Shell<InterValue>,
}
handle!(commcore_cid_inter_request, InterValue, 0xC0C0_0009);

pub(crate) struct InterValue {
    request: Box<InterCidRequest<W>>,
    space: Arc<CidSpace<W>>,
}

/// A request on this side's group, under the local group's communicator CID `parent` with
/// `tag`; exactly one member per side passes `leader` non-zero. Steps: ALLREDUCE over the
/// local group (as for `commcore_cid_request_poll`), EXCHANGE at the leader, one more
/// ALLREDUCE (MAX of one word) that carries the remote CID to the group, then DONE with
/// `cid` (this group's CID: messages arrive with it) and `remote_cid` (the other group's:
/// messages to it carry it).
#[no_mangle]
pub extern "C" fn commcore_cid_inter_request_create(
    space: *const commcore_cid_space,
    algorithm_code: u32,
    parent: u32,
    tag: u32,
    leader: i32,
    out: *mut *mut commcore_cid_inter_request,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let space = unsafe { handle::get::<commcore_cid_space>(space, "space")? };
        if out.is_null() {
            return Err(Fail::null("out"));
        }
        let request =
            Box::new(InterCidRequest::new(algorithm(algorithm_code)?, parent, tag, leader != 0));
        let value = InterValue { request, space: Arc::clone(space) };
        // SAFETY: checked above.
        unsafe { handle::put(out, handle::create::<commcore_cid_inter_request>(value), "out") }
    })
}

/// Writes the request's next step to `*step` (see `commcore_cid_inter_request_create`). On
/// an error the request is finished and `step->kind` is `COMMCORE_CID_ERROR`.
#[no_mangle]
pub extern "C" fn commcore_cid_inter_request_poll(
    request: *mut commcore_cid_inter_request,
    step: *mut commcore_cid_step,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get_mut::<commcore_cid_inter_request>(request, "request")? };
        if step.is_null() {
            return Err(Fail::null("step"));
        }
        let mut out = commcore_cid_step::empty(COMMCORE_CID_ERROR);
        let polled = value.request.poll(&value.space);
        match &polled {
            Ok(InterStep::Allreduce { op, words }) => {
                out.kind = COMMCORE_CID_ALLREDUCE;
                out.op = cid_op(*op);
                out.words = words.as_ptr();
                out.nwords = words.len();
            }
            Ok(InterStep::Wait) => out.kind = COMMCORE_CID_WAIT,
            Ok(InterStep::Exchange { local }) => {
                out.kind = COMMCORE_CID_EXCHANGE;
                out.cid = *local;
            }
            Ok(InterStep::Done(pair)) => {
                out.kind = COMMCORE_CID_DONE;
                out.cid = pair.local;
                out.remote_cid = pair.remote;
            }
            Err(_) => {}
        }
        // SAFETY: checked above; valid by the caller's contract.
        unsafe { step.write(out) };
        polled.map(drop).map_err(cid_fail)
    })
}

/// Leader: hands in the remote leader's CID after an EXCHANGE step.
#[no_mangle]
pub extern "C" fn commcore_cid_inter_request_handle_exchange(
    request: *mut commcore_cid_inter_request,
    remote_cid: u32,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get_mut::<commcore_cid_inter_request>(request, "request")? };
        value.request.handle_exchange(remote_cid).map_err(cid_fail)
    })
}

/// Hands in the reduced words of the outstanding allreduce (over this side's group).
#[no_mangle]
pub extern "C" fn commcore_cid_inter_request_handle_allreduce(
    request: *mut commcore_cid_inter_request,
    reduced: *const u32,
    nwords: usize,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get_mut::<commcore_cid_inter_request>(request, "request")? };
        // Copied first: `reduced` may point at the request's own words.
        // SAFETY: as documented.
        let reduced = unsafe { handle::slice(reduced, nwords, "reduced")? }.to_vec();
        value.request.handle_allreduce(&value.space, &reduced).map_err(cid_fail)
    })
}

/// Frees a request, aborting it first (the local CID, once agreed, stays claimed: release
/// it with `commcore_cid_space_release`). NULL is a no-op.
#[no_mangle]
pub extern "C" fn commcore_cid_inter_request_free(
    request: *mut commcore_cid_inter_request,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let taken = unsafe { handle::take::<commcore_cid_inter_request>(request, "request")? };
        if let Some(mut value) = taken {
            value.request.abort(&value.space);
        }
        Ok(())
    })
}
