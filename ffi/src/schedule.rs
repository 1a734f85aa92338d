//! Schedules: one call's steps, which the host iterates one POD step at a time.

use std::sync::Arc;

use commcore_core::coll::{
    Blocks, CollArgs, CollOp, CollTable, Datatype, Op, Region, Root, Schedule, Step, UserOp,
};

use core::ffi::c_char;

use crate::coll::{coll_op, commcore_coll, static_name, CollValue};
use crate::handle::{self, handle, Shell};
use crate::in_place::{in_place, InPlace};
use crate::reduce::{
    commcore_datatype, commcore_reduce_op, commcore_user_op, datatype, reduce_op, COMMCORE_OP_USER,
};
use crate::result::*;

/// The root of a rooted operation on an inter-communicator, in the root's group: this
/// process is the root (MPI_ROOT).
pub const COMMCORE_ROOT_HERE: i32 = -1;
/// On an inter-communicator, in the root's group: another process is the root
/// (MPI_PROC_NULL).
pub const COMMCORE_ROOT_ELSEWHERE: i32 = -2;

/// The arguments of one collective call on one rank. Zero-initialise, then set what the
/// operation uses.
///
/// `count` is, per operation: bcast, reduce, allreduce, scan, exscan: the elements of the
/// message; gather, scatter, allgather, alltoall, reduce_scatter_block: the elements of
/// each rank's block; the `v` variants and reduce_scatter: this rank's own send count
/// where one is needed. Block lists (elements; copied during the call): `recv_*` for
/// gatherv (at the root), allgatherv, alltoallv and reduce_scatter; `send_*` for scatterv
/// (at the root) and alltoallv. A NULL displacement array means the blocks are contiguous
/// in rank order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct commcore_coll_args {
    /// A `COMMCORE_COLL_*` operation.
    pub coll_op: u32,
    /// A `COMMCORE_DT_*` element type.
    pub dtype: commcore_datatype,
    /// A `COMMCORE_OP_*` built-in reduction (reducing operations; ignored when `user_op` is
    /// set).
    pub reduce_op: commcore_reduce_op,
    /// Non-zero for MPI_IN_PLACE: the input is in the receive buffer (at this rank's block
    /// for gather and allgather). Intra-communicators only; at the root only for reduce,
    /// gather(v) and scatter(v); not for barrier and bcast.
    pub in_place: u32,
    /// A user reduction (or NULL); REDUCE steps then carry `COMMCORE_OP_USER`.
    pub user_op: *const commcore_user_op,
    /// Elements (see above).
    pub count: usize,
    /// The root's rank; on inter-communicators also `COMMCORE_ROOT_HERE` or
    /// `COMMCORE_ROOT_ELSEWHERE`.
    pub root: i32,
    /// Entries in `send_counts` and `send_displs`.
    pub nsend: u32,
    /// Elements per rank in the send buffer, or NULL.
    pub send_counts: *const i32,
    /// Offsets (elements) of those blocks, or NULL.
    pub send_displs: *const i32,
    /// Entries in `recv_counts` and `recv_displs`.
    pub nrecv: u32,
    /// Elements per rank in the receive buffer, or NULL.
    pub recv_counts: *const i32,
    /// Offsets (elements) of those blocks, or NULL.
    pub recv_displs: *const i32,
}

/// Which buffer a region lies in (`commcore_region.buf`).
pub type commcore_buf = u32;
/// The caller's send buffer (read-only to a schedule).
pub const COMMCORE_BUF_SEND: commcore_buf = 0;
/// The caller's receive buffer (for bcast: the one buffer).
pub const COMMCORE_BUF_RECV: commcore_buf = 1;
/// Scratch of `commcore_schedule_scratch_bytes` bytes, owned by the host for the
/// schedule's lifetime (not zeroed).
pub const COMMCORE_BUF_SCRATCH: commcore_buf = 2;

/// `len` bytes at byte `offset` of buffer `buf`. Hosts bounds-check every region against
/// their buffers (absurd `v` layouts yield regions that fit no buffer).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct commcore_region {
    /// A `COMMCORE_BUF_*`.
    pub buf: commcore_buf,
    /// First byte.
    pub offset: usize,
    /// Bytes (may be zero: a zero-byte message still synchronises).
    pub len: usize,
}

/// What a step does (`commcore_step.kind`).
pub type commcore_step_kind = u32;
/// The schedule is finished (after the last transfer completes).
pub const COMMCORE_STEP_END: commcore_step_kind = 0;
/// Start sending region `src` to peer (`group`, `rank`); do not wait.
pub const COMMCORE_STEP_SEND: commcore_step_kind = 1;
/// Start receiving into region `dst` from peer (`group`, `rank`); do not wait.
pub const COMMCORE_STEP_RECV: commcore_step_kind = 2;
/// Wait for every started transfer, then `dst = src ∘ dst` (`src_left` non-zero) or
/// `dst = dst ∘ src` with `op` over `dtype` (`commcore_reduce`/`commcore_reduce_user`).
pub const COMMCORE_STEP_REDUCE: commcore_step_kind = 3;
/// Wait for every started transfer, then copy `src` to `dst` (same length).
pub const COMMCORE_STEP_COPY: commcore_step_kind = 4;
/// End of a round: wait for every started transfer.
pub const COMMCORE_STEP_WAIT: commcore_step_kind = 5;

/// The group a peer rank is numbered in.
pub type commcore_group = u32;
/// The caller's own group (the whole communicator for an intra-communicator).
pub const COMMCORE_GROUP_LOCAL: commcore_group = 0;
/// The remote group of an inter-communicator.
pub const COMMCORE_GROUP_REMOTE: commcore_group = 1;

/// One step, written by `commcore_schedule_next` (no allocation). Fields a kind does not
/// use are unspecified.
///
/// Execution model: SEND and RECV start transfers; messages between one ordered pair of
/// ranks match in the order they were started, and a receive's length equals the
/// matching send's. REDUCE, COPY and WAIT first wait for every transfer this rank has
/// started; a send region is not modified before then. END waits for every transfer too.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct commcore_step {
    /// A `COMMCORE_STEP_*`.
    pub kind: commcore_step_kind,
    /// SEND, RECV: the peer's group (`COMMCORE_GROUP_*`).
    pub group: commcore_group,
    /// SEND, RECV: the peer's rank in that group.
    pub rank: u32,
    /// REDUCE: a `COMMCORE_OP_*` (`COMMCORE_OP_USER` for the call's user reduction).
    pub op: commcore_reduce_op,
    /// REDUCE: the element type.
    pub dtype: commcore_datatype,
    /// REDUCE: non-zero when `src` is the left (lower-rank) operand.
    pub src_left: u32,
    /// SEND: the bytes sent; REDUCE, COPY: the source.
    pub src: commcore_region,
    /// RECV: where the bytes land; REDUCE, COPY: the destination.
    pub dst: commcore_region,
}

/// One call's schedule (opaque), reusable for call after call. Created by
/// `commcore_schedule_create`, built by `commcore_coll_schedule`, stepped by
/// `commcore_schedule_next`, freed by `commcore_schedule_free`. One thread at a time.
pub struct commcore_schedule {
    shell: Shell<ScheduleValue>,
}
handle!(commcore_schedule, ScheduleValue, 0xC0C0_0008);

/// The schedule first: it borrows the block lists and the framework instance.
pub(crate) struct ScheduleValue {
    schedule: Schedule<'static>,
    in_place: Option<Box<InPlace>>,
    /// The built schedule as it starts (and its in-place prologue), for a rewind.
    start: (Schedule<'static>, Option<InPlace>),
    scratch: usize,
    /// The component and algorithm of the built schedule (static names; NULL unbuilt).
    provider: Option<(*const c_char, *const c_char)>,
    _coll: Option<Arc<CollValue>>,
    blocks: Box<CallBlocks>,
}

/// The block lists of one call, in core's element units.
#[derive(Default)]
pub(crate) struct CallBlocks {
    send: Option<(Vec<usize>, Vec<usize>)>,
    recv: Option<(Vec<usize>, Vec<usize>)>,
}

impl CallBlocks {
    fn send(&self) -> Option<Blocks<'_>> {
        self.send.as_ref().map(|(counts, displs)| Blocks { counts, displs })
    }
    pub(crate) fn recv(&self) -> Option<Blocks<'_>> {
        self.recv.as_ref().map(|(counts, displs)| Blocks { counts, displs })
    }
}

/// Copies one C block list (`displs` NULL: contiguous).
///
/// # Safety
/// `counts` and `displs` are NULL or valid for `n` reads.
unsafe fn block_list(
    counts: *const i32,
    displs: *const i32,
    n: u32,
    what: &str,
) -> Outcome<Option<(Vec<usize>, Vec<usize>)>> {
    if counts.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded.
    let counts = unsafe { handle::slice(counts, n as usize, what)? };
    let element = |i: usize, v: i32, name: &str| {
        usize::try_from(v).map_err(|_| Fail::arg(format!("{what} {name}[{i}] = {v} is negative")))
    };
    let counts: Vec<usize> =
        counts.iter().enumerate().map(|(i, &c)| element(i, c, "counts")).collect::<Outcome<_>>()?;
    let displs = if displs.is_null() {
        let mut at = 0usize;
        counts.iter().map(|&c| (at, at = at.saturating_add(c)).0).collect()
    } else {
        // SAFETY: forwarded.
        let displs = unsafe { handle::slice(displs, n as usize, what)? };
        displs.iter().enumerate().map(|(i, &d)| element(i, d, "displs")).collect::<Outcome<_>>()?
    };
    Ok(Some((counts, displs)))
}

/// Copies the block lists of one call into `blocks`.
pub(crate) fn fill_blocks(args: &commcore_coll_args, blocks: &mut CallBlocks) -> Outcome<()> {
    // SAFETY: block lists as documented on `commcore_coll_args`.
    unsafe {
        blocks.send = block_list(args.send_counts, args.send_displs, args.nsend, "send")?;
        blocks.recv = block_list(args.recv_counts, args.recv_displs, args.nrecv, "recv")?;
    }
    if args.coll_op == crate::coll::COMMCORE_COLL_ALLTOALLV && args.in_place != 0 {
        blocks.send = blocks.recv.clone();
    }
    Ok(())
}

/// Core's arguments of one call over the block lists `blocks` (see `fill_blocks`).
fn call_args<'b>(
    args: &commcore_coll_args,
    blocks: &'b CallBlocks,
) -> Outcome<(CollOp, CollArgs<'b>)> {
    let op = coll_op(args.coll_op)?;
    let dtype = datatype(args.dtype)?;
    let mut core_args = CollArgs::new(args.count, dtype);
    if op.reduces() {
        let reduction = if args.user_op.is_null() {
            Op::Builtin(reduce_op(args.reduce_op)?)
        } else {
            // SAFETY: a user-op handle by the documented contract.
            let user = unsafe { handle::get::<commcore_user_op>(args.user_op, "args->user_op")? };
            Op::User(UserOp { func: host_applies, commutative: user.commutative })
        };
        core_args = core_args.with_op(reduction);
    }
    if op.rooted() {
        core_args = core_args.with_root(match args.root {
            COMMCORE_ROOT_HERE => Root::Here,
            COMMCORE_ROOT_ELSEWHERE => Root::Elsewhere,
            r if r >= 0 => Root::Rank(r as u32),
            r => return Err(Fail::arg(format!("root {r} is neither a rank nor COMMCORE_ROOT_*"))),
        });
    }
    if let Some(send) = blocks.send() {
        core_args = core_args.with_send(send);
    }
    if let Some(recv) = blocks.recv() {
        core_args = core_args.with_recv(recv);
    }
    Ok((op, core_args))
}

/// The function core's user operation carries. Schedules never apply operations, they
/// name them in REDUCE steps; the host applies the call's user reduction itself, with
/// `commcore_reduce_user`. So this is never called.
fn host_applies(_: &[u8], _: &mut [u8], _: Datatype, _: bool) {}

/// The schedule of one call on `coll`, borrowing `blocks` (filled by `fill_blocks`).
pub(crate) fn build_schedule<'a>(
    coll: &'a CollValue,
    args: &commcore_coll_args,
    blocks: &'a CallBlocks,
) -> Outcome<Schedule<'a>> {
    let (op, core_args) = call_args(args, blocks)?;
    let table: &CollTable<'a> = &coll.table;
    table.schedule(op, &core_args).map_err(|e| Fail::new(COMMCORE_ERR_COLL, e.to_string()))
}

/// A schedule that yields nothing: what a schedule holds before it is built.
fn empty() -> Schedule<'static> {
    let ctx = commcore_core::coll::Ctx::new(0, 1).ok();
    let args = CollArgs::new(0, Datatype::U8);
    ctx.and_then(|c| {
        Schedule::intra(CollOp::Barrier, commcore_core::coll::Algorithm::Dissemination, c, &args)
            .ok()
    })
    .unwrap_or_else(|| unreachable!("a one-rank barrier always schedules"))
}

/// Creates an unbuilt schedule (stepping it yields END).
#[no_mangle]
pub extern "C" fn commcore_schedule_create(out: *mut *mut commcore_schedule) -> commcore_result {
    guard(|| {
        if out.is_null() {
            return Err(Fail::null("out"));
        }
        let value = ScheduleValue {
            schedule: empty(),
            in_place: None,
            start: (empty(), None),
            scratch: 0,
            provider: None,
            _coll: None,
            blocks: Box::default(),
        };
        // SAFETY: checked above.
        unsafe { handle::put(out, handle::create::<commcore_schedule>(value), "out") }
    })
}

/// Frees a schedule. NULL is a no-op.
#[no_mangle]
pub extern "C" fn commcore_schedule_free(schedule: *mut commcore_schedule) -> commcore_result {
    // SAFETY: as documented.
    guard(|| unsafe { handle::take::<commcore_schedule>(schedule, "schedule").map(drop) })
}

/// Builds into `schedule` this rank's steps of one call on `coll` (replacing what it held).
/// The algorithm is the one selected for the operation and message size. On an error the
/// schedule is left unbuilt.
///
/// ```c
/// #include <commcore.h>
/// int example_schedule(const commcore_coll *coll) {
///     commcore_coll_args args = {0};
///     args.coll_op = COMMCORE_COLL_ALLREDUCE;
///     args.dtype = COMMCORE_DT_F64;
///     args.reduce_op = COMMCORE_OP_SUM;
///     args.count = 16;
///     commcore_schedule *schedule = NULL;
///     commcore_step step;
///     size_t scratch = 0;
///     if (commcore_schedule_create(&schedule)) return 1;
///     if (commcore_coll_schedule(coll, &args, schedule)) return 1;
///     if (commcore_schedule_scratch_bytes(schedule, &scratch)) return 1;
///     do {
///         if (commcore_schedule_next(schedule, &step)) return 1;
///         // SEND/RECV: start a transfer; REDUCE/COPY/WAIT: complete them first.
///     } while (step.kind != COMMCORE_STEP_END);
///     return commcore_schedule_free(schedule);
/// }
/// ```
#[no_mangle]
pub extern "C" fn commcore_coll_schedule(
    coll: *const commcore_coll,
    args: *const commcore_coll_args,
    schedule: *mut commcore_schedule,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let (coll, value) = unsafe {
            (
                handle::get::<commcore_coll>(coll, "coll")?,
                handle::get_mut::<commcore_schedule>(schedule, "schedule")?,
            )
        };
        if args.is_null() {
            return Err(Fail::null("args"));
        }
        // SAFETY: not NULL; valid by the caller's contract.
        let args = unsafe { &*args };
        // Drop the old schedule's borrows before the storage they point to changes.
        value.schedule = empty();
        value.in_place = None;
        value.start = (empty(), None);
        value.scratch = 0;
        value.provider = None;
        value._coll = None;
        let coll = Arc::clone(coll);
        // SAFETY: the block lists live in `value.blocks` (a box that does not move) and
        // the instance in `coll`, which `value` keeps (`_coll`) for as long as the schedule
        // borrows them: both are replaced only after `value.schedule` is reset above.
        let (coll_ref, blocks) =
            unsafe { (&*Arc::as_ptr(&coll), &mut *(value.blocks.as_mut() as *mut CallBlocks)) };
        fill_blocks(args, blocks)?;
        let blocks: &'static CallBlocks = blocks;
        let built = build_schedule(coll_ref, args, blocks)?;
        let scratch = built.scratch_bytes();
        let module = coll_ref.table.provider(coll_op(args.coll_op)?).unwrap_or("none");
        let provider = (static_name(module), static_name(built.algorithm().name()));
        let in_place = if args.in_place != 0 {
            Some(Box::new(in_place(coll_ref, args, blocks, built)?))
        } else {
            None
        };
        value.scratch = in_place.as_ref().map_or(scratch, |p| p.end);
        if in_place.is_none() {
            value.schedule = built;
        }
        value.start = (value.schedule, in_place.as_deref().copied());
        value.in_place = in_place;
        value.provider = Some(provider);
        value._coll = Some(coll);
        Ok(())
    })
}

/// Writes the provider of the built schedule, as `commcore_coll_provider` names it, without
/// building anything: the component to `*module` and the algorithm to `*algorithm` (static
/// strings). `COMMCORE_ERR_STATE` for a schedule not built (or whose build failed).
#[no_mangle]
pub extern "C" fn commcore_schedule_provider(
    schedule: *const commcore_schedule,
    module: *mut *const c_char,
    algorithm: *mut *const c_char,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_schedule>(schedule, "schedule")? };
        let (m, a) = value.provider.ok_or_else(|| {
            Fail::new(COMMCORE_ERR_STATE, "the schedule is not built; call commcore_coll_schedule")
        })?;
        // SAFETY: as documented.
        unsafe {
            handle::put(module, m, "module")?;
            handle::put(algorithm, a, "algorithm")
        }
    })
}

/// Writes the scratch bytes the built schedule needs to `*bytes`.
#[no_mangle]
pub extern "C" fn commcore_schedule_scratch_bytes(
    schedule: *const commcore_schedule,
    bytes: *mut usize,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_schedule>(schedule, "schedule")? };
        // SAFETY: as documented.
        unsafe { handle::put(bytes, value.scratch, "bytes") }
    })
}

#[inline(always)]
fn region(r: Region) -> commcore_region {
    commcore_region { buf: r.buf as u32, offset: r.offset, len: r.len }
}

#[inline(always)]
fn write_step(out: &mut commcore_step, step: &Step) {
    match *step {
        Step::Send { to, region: r } => {
            out.kind = COMMCORE_STEP_SEND;
            out.group = to.group as u32;
            out.rank = to.rank;
            out.src = region(r);
        }
        Step::Recv { from, region: r } => {
            out.kind = COMMCORE_STEP_RECV;
            out.group = from.group as u32;
            out.rank = from.rank;
            out.dst = region(r);
        }
        Step::Reduce { op, dtype, src, dst, src_left } => {
            out.kind = COMMCORE_STEP_REDUCE;
            out.op = match op {
                Op::Builtin(b) => b as u32,
                Op::User(_) => COMMCORE_OP_USER,
            };
            out.dtype = dtype as u32;
            out.src_left = src_left as u32;
            out.src = region(src);
            out.dst = region(dst);
        }
        Step::Copy { src, dst } => {
            out.kind = COMMCORE_STEP_COPY;
            out.src = region(src);
            out.dst = region(dst);
        }
        Step::Wait => out.kind = COMMCORE_STEP_WAIT,
    }
}

/// Starts a built schedule over: its steps come again from the first, as for another call
/// with the same arguments (the block lists were copied when it was built). A host that
/// calls the same collective over and over keeps built schedules and rewinds them instead
/// of building each call. `COMMCORE_ERR_STATE` for a schedule not built (or whose build
/// failed). No allocation.
///
/// ```c
/// #include <commcore.h>
/// int example_rewind(commcore_schedule *built) {
///     commcore_step step;
///     if (commcore_schedule_rewind(built)) return 1;
///     do {
///         if (commcore_schedule_next(built, &step)) return 1;
///     } while (step.kind != COMMCORE_STEP_END);
///     return 0;
/// }
/// ```
#[no_mangle]
pub extern "C" fn commcore_schedule_rewind(schedule: *mut commcore_schedule) -> commcore_result {
    // The hot path of a repeated call, as `commcore_schedule_next` is: no guard frame; the
    // errors are made out of line.
    let body = || {
        // SAFETY: as documented.
        match unsafe { handle::live_mut::<commcore_schedule>(schedule) } {
            Some(value) if value.provider.is_some() => {
                value.schedule = value.start.0;
                if let (Some(p), Some(start)) = (value.in_place.as_mut(), value.start.1) {
                    **p = start;
                }
                COMMCORE_OK
            }
            _ => rewind_failed(schedule),
        }
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(code) => code,
        Err(payload) => panicked(payload),
    }
}

#[cold]
#[inline(never)]
extern "C" fn rewind_failed(schedule: *mut commcore_schedule) -> commcore_result {
    guard(|| {
        // SAFETY: as documented on `commcore_schedule_rewind`.
        unsafe { handle::get_mut::<commcore_schedule>(schedule, "schedule")? };
        Err(Fail::new(COMMCORE_ERR_STATE, "the schedule is not built"))
    })
}

/// Writes the schedule's next step to `*step` (END once finished, and again on every later
/// call). No allocation; the hot path of a collective.
#[no_mangle]
pub extern "C" fn commcore_schedule_next(
    schedule: *mut commcore_schedule,
    step: *mut commcore_step,
) -> commcore_result {
    let body = || {
        // SAFETY: as documented.
        match (unsafe { handle::live_mut::<commcore_schedule>(schedule) }, step.is_null()) {
            (Some(value), false) => {
                // SAFETY: not NULL; valid for writes by the caller's contract.
                let out = unsafe { &mut *step };
                let in_place = &mut value.in_place;
                value.schedule.next_with(|next| match next {
                    Some(next) => write_step(out, next),
                    None => match in_place.as_mut().and_then(|p| p.next()) {
                        Some(next) => write_step(out, &next),
                        None => out.kind = COMMCORE_STEP_END,
                    },
                });
                COMMCORE_OK
            }
            _ => next_failed(schedule, step),
        }
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(code) => code,
        Err(payload) => panicked(payload),
    }
}

/// The error of a step through a bad handle or a NULL step, out of the hot path (`extern
/// "C"` as `translate_failed` is, for the same reason).
#[cold]
#[inline(never)]
extern "C" fn next_failed(
    schedule: *mut commcore_schedule,
    _step: *mut commcore_step,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented on `commcore_schedule_next`.
        unsafe { handle::get_mut::<commcore_schedule>(schedule, "schedule")? };
        Err(Fail::null("step"))
    })
}
