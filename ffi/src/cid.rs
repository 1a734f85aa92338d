//! Context ids: a CID space per process and agreement requests that the host drives with
//! its own allreduce (`poll` → allreduce → `handle_allreduce` → … → done).

use std::sync::Arc;

use commcore_core::cid::MAX_WIDTH;
use commcore_core::cid::{
    words_for, Algorithm, CidError, CidRequest, CidSpace, ReduceOp, SpaceConfig, Step,
};

use crate::handle::{self, handle, Shell};
use crate::result::*;

/// Words of the widest space: every space and request is sized for it.
pub(crate) const W: usize = words_for(MAX_WIDTH);

/// A process's CID space (opaque): which CIDs are free here, shared by every request of
/// the process. Created by `commcore_cid_space_create`, owned by the caller, freed by
/// `commcore_cid_space_free` (requests still running keep the space alive until they are
/// freed). Every function on a space but its free is thread-safe.
pub struct commcore_cid_space {
    shell: Shell<Arc<CidSpace<W>>>,
}
handle!(commcore_cid_space, Arc<CidSpace<W>>, 0xC0C0_0003);

/// One member's side of one CID agreement (opaque). Created by
/// `commcore_cid_request_create`, owned by the caller, freed by `commcore_cid_request_free`.
/// A request is used by one thread at a time; requests of one space may run on different
/// threads at once.
pub struct commcore_cid_request {
    shell: Shell<RequestValue>,
}
handle!(commcore_cid_request, RequestValue, 0xC0C0_0004);

pub(crate) struct RequestValue {
    request: Box<CidRequest<W>>,
    space: Arc<CidSpace<W>>,
}

/// Agreement algorithms (`commcore_cid_request_create`'s `algorithm`).
pub type commcore_cid_algorithm = u32;
/// Lowest free CID: a MAX allreduce proposes, an AND allreduce confirms; retried on
/// failure.
pub const COMMCORE_CID_LOWEST: commcore_cid_algorithm = 0;
/// One BAND allreduce of the free mask (an eager segment first).
pub const COMMCORE_CID_MASK: commcore_cid_algorithm = 1;
/// One MAX allreduce of the highest CID in use plus one (a confirmation round when the
/// space is threaded).
pub const COMMCORE_CID_HIGHEST: commcore_cid_algorithm = 2;

/// What a request asks for next (`commcore_cid_step.kind`).
pub type commcore_cid_step_kind = u32;
/// Allreduce `words[0..nwords]` with `op` over the request's members, then hand the result
/// to `commcore_cid_request_handle_allreduce`.
pub const COMMCORE_CID_ALLREDUCE: commcore_cid_step_kind = 1;
/// Another request of this process has priority: poll again later (yield first).
pub const COMMCORE_CID_WAIT: commcore_cid_step_kind = 2;
/// Agreed: `cid` is the new context id, claimed in this process's space.
pub const COMMCORE_CID_DONE: commcore_cid_step_kind = 3;
/// The request failed (the result code says why); it is finished.
pub const COMMCORE_CID_ERROR: commcore_cid_step_kind = 4;

/// The reduction of a CID allreduce, element-wise over unsigned 32-bit words.
pub type commcore_cid_op = u32;
/// Maximum.
pub const COMMCORE_CID_OP_MAX: commcore_cid_op = 0;
/// Minimum.
pub const COMMCORE_CID_OP_MIN: commcore_cid_op = 1;
/// Bitwise AND.
pub const COMMCORE_CID_OP_BAND: commcore_cid_op = 2;

/// The next step of a request, written by `commcore_cid_request_poll`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct commcore_cid_step {
    /// `COMMCORE_CID_ALLREDUCE`, `_WAIT`, `_DONE` or `_ERROR`.
    pub kind: commcore_cid_step_kind,
    /// For ALLREDUCE: the reduction.
    pub op: commcore_cid_op,
    /// For ALLREDUCE: this member's contribution, owned by the request and valid until the
    /// next call on it. Every member's contribution has the same length.
    pub words: *const u32,
    /// For ALLREDUCE: the number of words.
    pub nwords: usize,
    /// For DONE: the agreed CID (for an inter-communicator request, this group's); for
    /// EXCHANGE: this group's CID to send to the remote leader.
    pub cid: u32,
    /// For DONE of an inter-communicator request: the remote group's CID.
    pub remote_cid: u32,
}

impl commcore_cid_step {
    pub(crate) fn empty(kind: commcore_cid_step_kind) -> Self {
        Self { kind, op: 0, words: core::ptr::null(), nwords: 0, cid: 0, remote_cid: 0 }
    }
}

/// The C code of a CID reduction.
pub(crate) fn cid_op(op: ReduceOp) -> commcore_cid_op {
    match op {
        ReduceOp::Max => COMMCORE_CID_OP_MAX,
        ReduceOp::Min => COMMCORE_CID_OP_MIN,
        ReduceOp::BitAnd => COMMCORE_CID_OP_BAND,
    }
}

/// The algorithm numbered `code`.
pub(crate) fn algorithm(code: commcore_cid_algorithm) -> Outcome<Algorithm> {
    match code {
        COMMCORE_CID_LOWEST => Ok(Algorithm::Lowest),
        COMMCORE_CID_MASK => Ok(Algorithm::Mask),
        COMMCORE_CID_HIGHEST => Ok(Algorithm::Highest),
        other => Err(Fail::arg(format!("unknown CID algorithm {other}"))),
    }
}

pub(crate) fn cid_fail(e: CidError) -> Fail {
    let code = match e {
        CidError::Exhausted => COMMCORE_ERR_CID_EXHAUSTED,
        CidError::WrongLength { .. } => COMMCORE_ERR_LENGTH,
        CidError::NotPosted | CidError::Finished => COMMCORE_ERR_STATE,
        CidError::TooManyRequests
        | CidError::DuplicatePriority
        | CidError::InconsistentResult
        | CidError::Conflict => COMMCORE_ERR_CID,
    };
    Fail::new(code, e.to_string())
}

/// Creates a CID space of CIDs `0..width` (a multiple of 32, at most 65536), with the
/// mask algorithm's eager segment `0..eager` (a multiple of 32 below `width`; 0 for none).
/// `threaded` non-zero: several threads of the process may allocate at once.
#[no_mangle]
pub extern "C" fn commcore_cid_space_create(
    width: u32,
    eager: u32,
    threaded: i32,
    out: *mut *mut commcore_cid_space,
) -> commcore_result {
    commcore_cid_space_create_lanes(width, eager, 1, threaded, out)
}

/// As `commcore_cid_space_create`, with the eager segment cut into `eager_lanes` equal
/// lanes (1 to 64, each a multiple of 32 CIDs): a mask agreement's first round takes the
/// lane its ⟨parent, tag⟩ hashes to and holds that lane only, so concurrent agreements of
/// different threads on different parents each finish in one round.
#[no_mangle]
pub extern "C" fn commcore_cid_space_create_lanes(
    width: u32,
    eager: u32,
    eager_lanes: u32,
    threaded: i32,
    out: *mut *mut commcore_cid_space,
) -> commcore_result {
    guard(|| {
        if out.is_null() {
            return Err(Fail::null("out"));
        }
        let config = SpaceConfig { width, eager, threaded: threaded != 0 };
        let space = CidSpace::<W>::with_eager_lanes(config, eager_lanes)
            .map_err(|e| Fail::arg(e.to_string()))?;
        let value = Arc::new(space);
        // SAFETY: checked above; valid by the caller's contract.
        unsafe { handle::put(out, handle::create::<commcore_cid_space>(value), "out") }
    })
}

/// Frees a space handle. NULL is a no-op.
#[no_mangle]
pub extern "C" fn commcore_cid_space_free(space: *mut commcore_cid_space) -> commcore_result {
    // SAFETY: as documented.
    guard(|| unsafe { handle::take::<commcore_cid_space>(space, "space").map(drop) })
}

/// Marks `cid` used without agreement (predefined communicators, or a CID another
/// protocol agreed on). `COMMCORE_ERR_STATE` when it is in use already.
#[no_mangle]
pub extern "C" fn commcore_cid_space_claim(
    space: *const commcore_cid_space,
    cid: u32,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let space = unsafe { handle::get::<commcore_cid_space>(space, "space")? };
        space.claim(cid).map_err(|e| space_fail(e, cid))
    })
}

/// Frees `cid` here (its communicator was freed). `COMMCORE_ERR_STATE` when it is free.
#[no_mangle]
pub extern "C" fn commcore_cid_space_release(
    space: *const commcore_cid_space,
    cid: u32,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let space = unsafe { handle::get::<commcore_cid_space>(space, "space")? };
        space.release(cid).map_err(|e| space_fail(e, cid))
    })
}

fn space_fail(e: commcore_core::cid::SpaceError, cid: u32) -> Fail {
    let code = match e {
        commcore_core::cid::SpaceError::OutOfRange => COMMCORE_ERR_RANGE,
        commcore_core::cid::SpaceError::WrongState => COMMCORE_ERR_STATE,
        _ => COMMCORE_ERR_ARG,
    };
    Fail::new(code, format!("cid {cid}: {e}"))
}

/// Writes 1 to `*is_free` when `cid` is free in this process, else 0.
#[no_mangle]
pub extern "C" fn commcore_cid_space_is_free(
    space: *const commcore_cid_space,
    cid: u32,
    is_free: *mut i32,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let space = unsafe { handle::get::<commcore_cid_space>(space, "space")? };
        // SAFETY: as documented.
        unsafe { handle::put(is_free, i32::from(space.is_free(cid)), "is_free") }
    })
}

/// A request for a new CID under the parent communicator's CID `parent` with `tag` (0 for
/// the collective constructors; the user's tag for `MPI_Comm_create_group`, driven over
/// the group only). Every request of one space must use the same algorithm.
///
/// ```c
/// #include <commcore.h>
/// // One member alone: its allreduce is the identity.
/// int example_cid(commcore_cid_space *space) {
///     commcore_cid_request *request = NULL;
///     commcore_cid_step step;
///     if (commcore_cid_request_create(space, COMMCORE_CID_MASK, 0, 0, &request)) return 1;
///     for (;;) {
///         if (commcore_cid_request_poll(request, &step) != COMMCORE_OK) break;
///         if (step.kind == COMMCORE_CID_DONE) break;
///         if (step.kind == COMMCORE_CID_WAIT) continue;
///         if (commcore_cid_request_handle_allreduce(request, step.words, step.nwords)) break;
///     }
///     commcore_cid_request_free(request);
///     return step.kind == COMMCORE_CID_DONE ? 0 : 1;
/// }
/// ```
#[no_mangle]
pub extern "C" fn commcore_cid_request_create(
    space: *const commcore_cid_space,
    algorithm: commcore_cid_algorithm,
    parent: u32,
    tag: u32,
    out: *mut *mut commcore_cid_request,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let space = unsafe { handle::get::<commcore_cid_space>(space, "space")? };
        if out.is_null() {
            return Err(Fail::null("out"));
        }
        let request = Box::new(CidRequest::new(self::algorithm(algorithm)?, parent, tag));
        let value = RequestValue { request, space: Arc::clone(space) };
        // SAFETY: checked above.
        unsafe { handle::put(out, handle::create::<commcore_cid_request>(value), "out") }
    })
}

/// Writes the request's next step to `*step`. Polling again before handing in the result
/// returns the same allreduce. On an error the request is finished and `step->kind` is
/// `COMMCORE_CID_ERROR`.
#[no_mangle]
pub extern "C" fn commcore_cid_request_poll(
    request: *mut commcore_cid_request,
    step: *mut commcore_cid_step,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get_mut::<commcore_cid_request>(request, "request")? };
        if step.is_null() {
            return Err(Fail::null("step"));
        }
        let mut out = commcore_cid_step::empty(COMMCORE_CID_ERROR);
        let polled = value.request.poll(&value.space);
        match &polled {
            Ok(Step::Allreduce { op, words }) => {
                out.kind = COMMCORE_CID_ALLREDUCE;
                out.op = cid_op(*op);
                out.words = words.as_ptr();
                out.nwords = words.len();
            }
            Ok(Step::Wait) => out.kind = COMMCORE_CID_WAIT,
            Ok(Step::Done(cid)) => {
                out.kind = COMMCORE_CID_DONE;
                out.cid = *cid;
            }
            Err(_) => {}
        }
        // SAFETY: checked above; valid by the caller's contract.
        unsafe { step.write(out) };
        polled.map(drop).map_err(cid_fail)
    })
}

/// Hands in the reduced words of the outstanding allreduce (`nwords` must equal the
/// step's). On an error the request is finished.
#[no_mangle]
pub extern "C" fn commcore_cid_request_handle_allreduce(
    request: *mut commcore_cid_request,
    reduced: *const u32,
    nwords: usize,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get_mut::<commcore_cid_request>(request, "request")? };
        // Copied first: `reduced` may point at the request's own words (a one-member
        // allreduce), which the request overwrites.
        // SAFETY: as documented.
        let reduced = unsafe { handle::slice(reduced, nwords, "reduced")? }.to_vec();
        value.request.handle_allreduce(&value.space, &reduced).map_err(cid_fail)
    })
}

/// Gives up: releases every hold and reservation in the space. The request is finished;
/// a done request keeps its CID (release it with `commcore_cid_space_release`).
#[no_mangle]
pub extern "C" fn commcore_cid_request_abort(
    request: *mut commcore_cid_request,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get_mut::<commcore_cid_request>(request, "request")? };
        value.request.abort(&value.space);
        Ok(())
    })
}

/// Frees a request, aborting it first when it has not finished. NULL is a no-op.
#[no_mangle]
pub extern "C" fn commcore_cid_request_free(request: *mut commcore_cid_request) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let taken = unsafe { handle::take::<commcore_cid_request>(request, "request")? };
        if let Some(mut value) = taken {
            value.request.abort(&value.space);
        }
        Ok(())
    })
}

/// Writes to `*allreduces` the number of allreduces the request has asked for so far.
#[no_mangle]
pub extern "C" fn commcore_cid_request_allreduces(
    request: *const commcore_cid_request,
    allreduces: *mut u32,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_cid_request>(request, "request")? };
        // SAFETY: as documented.
        unsafe { handle::put(allreduces, value.request.allreduces(), "allreduces") }
    })
}
