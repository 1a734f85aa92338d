//! Nonblocking point-to-point calls and requests: start, wait, test, free, cancel.

use std::ffi::{c_int, c_void};

use std::sync::Arc;

use commcore_linux::runtime::{Comm, Request};

use crate::grequest::Generalized;
use crate::pack::{basic_bytes, basic_bytes_mut, Place};
use crate::persist::Persist;
use crate::progress::Completion;
use std::borrow::Cow;

use crate::call::{self, mpi_fn};
use crate::consts::*;
use crate::error::{fail, MpiError, MpiResult};
use crate::p2p::dest;
use crate::ptr::{bytes_mut, put};
use crate::request_table;
use crate::state::{self, State};
use crate::status;

/// Receives of this many bytes and more are [`Work::LongRecv`] (the line the runtime's own
/// `Request::wait_all` draws between the receives it tests and those it waits for).
const LONG_RECV: usize = 32 * 1024;

/// A request the program holds.
pub(crate) struct Pending {
    /// The communicator its errors go to.
    pub(crate) comm: c_int,
    pub(crate) work: Work,
    /// The packed copy a non-contiguous datatype travels in (declared after `work`, whose
    /// request reads or writes it, so dropped after it).
    pub(crate) packed: Option<Box<[u8]>>,
    /// Where a packed receive is unpacked to once complete.
    pub(crate) unpack: Option<Box<Place>>,
    /// What a persistent request starts each time (`MPI_Start`).
    pub(crate) persist: Option<Box<Persist>>,
}

pub(crate) enum Work {
    /// In flight. Its buffer is the program's, which MPI forbids it to touch until the
    /// request completes: hence `'static`.
    Live { request: Request<'static>, recv: bool },
    /// A receive of [`LONG_RECV`] bytes or more in flight, as `Live`. It never ends in its
    /// table slot ([`Pending::ends_in_place`]): a wait blocks on it at once, never testing
    /// it first, since only a blocking wait lets the runtime split a long single copy with
    /// the sender (a test reads the whole message itself).
    LongRecv(Request<'static>),
    /// Finished when started (`MPI_PROC_NULL`) or cancelled.
    Done(MpiStatus),
    /// Finished with an error, kept until the request ends (a test that saw it leaves it
    /// for the wait or test that ends the request).
    Failed(MpiError),
    /// A nonblocking collective running on its communicator's worker.
    Collective(Arc<Completion>),
    /// `MPI_Isendrecv`: a receive and a send, complete when both are, with the receive's
    /// status.
    Pair(Box<[Pending; 2]>),
    /// An operation the program runs itself (`MPI_Grequest_start`).
    Generalized(Box<Generalized>),
}

impl Pending {
    /// The communicator of the request.
    pub(crate) fn comm(&self) -> c_int {
        self.comm
    }

    /// An inactive persistent request.
    pub(crate) fn inactive(comm: c_int, persist: Persist) -> Self {
        Pending {
            persist: Some(Box::new(persist)),
            ..Pending::new(comm, Work::Done(status::inactive()))
        }
    }

    /// Starts the operation `other` (just begun) in this persistent request.
    pub(crate) fn restart(&mut self, other: Pending) {
        self.work = other.work;
        self.packed = other.packed;
        self.unpack = other.unpack;
    }

    /// A request complete from the start, with `status`.
    pub(crate) fn finished(comm: c_int, status: MpiStatus) -> Self {
        Pending::new(comm, Work::Done(status))
    }

    /// `MPI_Isendrecv`'s request: `recv` and `send` begun, the send reading `copy` if
    /// given (kept until both end).
    pub(crate) fn pair(comm: c_int, recv: Pending, send: Pending, copy: Option<Box<[u8]>>) -> Self {
        Pending { packed: copy, ..Pending::new(comm, Work::Pair(Box::new([recv, send]))) }
    }

    /// A generalized request (its errors go to `MPI_COMM_WORLD`'s handler).
    pub(crate) fn generalized(g: Box<Generalized>) -> Self {
        Pending::new(MPI_COMM_WORLD, Work::Generalized(g))
    }

    pub(crate) fn new(comm: c_int, work: Work) -> Self {
        Pending { comm, work, packed: None, unpack: None, persist: None }
    }

    /// The runtime's request of a receive in flight straight into the program's buffer,
    /// which ends in its table slot (as [`Pending::ends_in_place`]).
    #[inline]
    pub(crate) fn window_receive(&mut self) -> Option<&mut Request<'static>> {
        match &mut self.work {
            Work::Live { request, recv: true }
                if self.persist.is_none() && self.unpack.is_none() =>
            {
                Some(request)
            }
            _ => None,
        }
    }

    /// Whether the request may end in its table slot, tested under the state's lock: a
    /// send or receive (no program function runs under the lock) that is not persistent
    /// (no handle to keep).
    pub(crate) fn ends_in_place(&self) -> bool {
        self.persist.is_none() && matches!(self.work, Work::Live { .. } | Work::Done(_))
    }

    /// As [`Pending::test`], for a request dropped once it has finished
    /// ([`Pending::ends_in_place`]): with nothing to unpack, its work is not settled first.
    pub(crate) fn test_to_end(&mut self) -> MpiResult<Option<MpiStatus>> {
        match &mut self.work {
            Work::Live { request, .. } if self.unpack.is_none() => {
                // Completed already (a wait's window run took its message): no poll.
                match request.completed().map_or_else(|| request.test(), |r| r.map(Some)) {
                    Ok(found) => Ok(found.map(status::of_runtime)),
                    Err(error) => Err(error.into()),
                }
            }
            Work::Done(status) if self.unpack.is_none() => Ok(Some(*status)),
            _ => self.test(),
        }
    }

    /// The status if the request has completed, without blocking.
    pub(crate) fn test(&mut self) -> Result<Option<MpiStatus>, MpiError> {
        let found = match &mut self.work {
            Work::Done(status) => Ok(Some(*status)),
            Work::Failed(error) => Err(error.clone()),
            Work::Live { request, .. } | Work::LongRecv(request) => {
                request.test().map(|s| s.map(status::of_runtime)).map_err(MpiError::from)
            }
            Work::Collective(completion) => completion.test().map(collective_status).transpose(),
            Work::Generalized(g) => g.test(),
            Work::Pair(pair) => {
                let [recv, send] = &mut **pair;
                match (recv.test()?, send.test()?) {
                    (Some(status), Some(_)) => Ok(Some(status)),
                    _ => Ok(None),
                }
            }
        };
        self.settle(found)
    }

    /// Blocks until the request completes.
    pub(crate) fn wait(mut self) -> MpiResult<MpiStatus> {
        let work = std::mem::replace(&mut self.work, Work::Done(status::empty()));
        let found = match work {
            Work::Done(status) => Ok(Some(status)),
            Work::Failed(error) => Err(error),
            Work::Live { request, .. } | Work::LongRecv(request) => {
                request.wait().map(|s| Some(status::of_runtime(s))).map_err(MpiError::from)
            }
            Work::Collective(completion) => collective_status(completion.wait()).map(Some),
            Work::Pair(pair) => {
                let [recv, send] = *pair;
                send.wait()?;
                recv.wait().map(Some)
            }
            Work::Generalized(g) => g.wait().map(Some),
        };
        self.settle(found)?
            .ok_or_else(|| MpiError::new(MPI_ERR_INTERN, "a waited request did not finish"))
    }

    /// Once complete: the runtime's request is dropped, then a packed receive unpacked.
    fn settle(&mut self, found: MpiResult<Option<MpiStatus>>) -> MpiResult<Option<MpiStatus>> {
        let received = match &found {
            Ok(Some(status)) => status::bytes(status) as usize,
            Ok(None) => return Ok(None),
            // A truncated message still fills the buffer.
            Err(_) => usize::MAX,
        };
        self.work = match &found {
            Ok(status) => Work::Done(status.unwrap_or_else(status::empty)),
            Err(error) => Work::Failed(error.clone()),
        };
        if let (Some(place), Some(packed)) = (self.unpack.take(), &self.packed) {
            // SAFETY: the receive's buffer, which MPI keeps the request's until now.
            unsafe { place.unpack(&packed[..received.min(packed.len())]) }?;
            if let Ok(Some(status)) = found {
                let whole = crate::contents::whole_elements(
                    place.datatype(),
                    place.element_packed(),
                    status,
                );
                if let Err(error) = &whole {
                    self.work = Work::Failed(error.clone());
                }
                return whole.map(Some);
            }
        }
        found
    }
}

/// The status of a finished collective, or its error (reported when it happened).
fn collective_status(code: c_int) -> MpiResult<MpiStatus> {
    if code == MPI_SUCCESS {
        return Ok(status::empty());
    }
    fail(code, "the nonblocking collective failed")
}

/// Stores the request of a nonblocking collective on `comm`.
///
/// # Safety
/// `out` is NULL or valid for a write.
pub(crate) unsafe fn start_collective(
    out: *mut c_int,
    comm: c_int,
    completion: Arc<Completion>,
) -> MpiResult {
    // SAFETY: the caller's contract.
    unsafe { start(out, Pending::new(comm, Work::Collective(completion))) }
}

/// Stores `pending` and writes its handle.
///
/// # Safety
/// `out` is NULL or valid for a write.
pub(crate) unsafe fn start(out: *mut c_int, pending: Pending) -> MpiResult {
    if out.is_null() {
        return fail(MPI_ERR_ARG, "the request argument is NULL");
    }
    let handle = state::with(|s| s.requests.add(pending))?;
    // SAFETY: not NULL; the caller's contract.
    unsafe { put(out, handle) }
}

/// What a start does with its new request: returns it ([`returned`]), stores it for its
/// handle ([`store`]), or, for a send, hands out a handle of no slot if it completed when it
/// started ([`store_send`]).
pub(crate) type Keep<T> = fn(Pending) -> MpiResult<T>;

pub(crate) fn returned(pending: Pending) -> MpiResult<Pending> {
    Ok(pending)
}

pub(crate) fn stored(state: &mut State, pending: Pending) -> MpiResult<c_int> {
    state.requests.add(pending)
}

fn store(pending: Pending) -> MpiResult<c_int> {
    state::with(|s| s.requests.add(pending))
}

/// `MPI_Isend` and its modes: the handle of the send begun. A send of a basic datatype
/// that completed when it started (a small message, copied out) gets a handle of its own
/// but no slot ([`request_table::sent_handle`]): no state lock, no request built or stored,
/// nothing to test at its wait.
///
/// # Safety
/// As [`begin_send`].
#[inline(always)]
unsafe fn isend(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    to: c_int,
    tag: c_int,
    comm: c_int,
    sync: bool,
) -> MpiResult<c_int> {
    // SAFETY: the caller's contract; MPI keeps the buffer the request's until it completes.
    let Some(data) = (unsafe { basic_bytes(buf, count, datatype) }) else {
        // SAFETY: the caller's contract.
        return unsafe { begin_send(buf, count, datatype, to, tag, comm, sync, store) };
    };
    let data = data?;
    let started = crate::comms::with(comm, |c| match dest(to)? {
        None => Ok(None),
        Some(to) if sync => Ok(Some(c.issend(data, to, tag)?)),
        Some(to) => Ok(Some(c.isend(data, to, tag)?)),
    })?;
    let work = match started {
        Some(request) if matches!(request.completed(), Some(Ok(_))) => {
            drop(request);
            return Ok(request_table::sent_handle());
        }
        Some(request) => Work::Live { request, recv: false },
        None => Work::Done(status::empty()),
    };
    store(Pending::new(comm, work))
}

/// Writes the handle of the request `begin` starts and stores.
///
/// # Safety
/// `out` is NULL or valid for a write.
#[inline(always)]
pub(crate) unsafe fn hand_out(
    out: *mut c_int,
    begin: impl FnOnce() -> MpiResult<c_int>,
) -> MpiResult {
    if out.is_null() {
        return fail(MPI_ERR_ARG, "the request argument is NULL");
    }
    let handle = begin()?;
    // SAFETY: not NULL; the caller's contract.
    unsafe { put(out, handle) }
}

/// Starts a send, synchronous if `sync` (see `MPI_Ssend`); its request, as `keep` keeps
/// it (the state's lock is taken by `keep` alone, if it stores the request).
///
/// # Safety
/// `buf` holds `count` elements of `datatype` until the request completes.
// MPI_Issend's six arguments, its mode and what keeps its request.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn begin_send<T>(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    to: c_int,
    tag: c_int,
    comm: c_int,
    sync: bool,
    keep: Keep<T>,
) -> MpiResult<T> {
    // SAFETY: the caller's contract; MPI keeps the buffer the request's until it completes.
    let outgoing = match unsafe { basic_bytes(buf, count, datatype) } {
        Some(data) => Cow::Borrowed(data?),
        // SAFETY: as above.
        None => unsafe { Place::new(buf, count, datatype)?.outgoing() }?,
    };
    let (data, packed) = match outgoing {
        Cow::Borrowed(data) => (data, None),
        Cow::Owned(copy) => {
            let copy = copy.into_boxed_slice();
            // SAFETY: the box's heap bytes do not move and outlive the request (`Pending`
            // drops `work` first).
            (unsafe { std::slice::from_raw_parts(copy.as_ptr(), copy.len()) }, Some(copy))
        }
    };
    // The communicator borrowed under the table's lock (a start does not block): no `Arc`
    // taken. The state's lock is `keep`'s to take, if it stores the request.
    let work = crate::comms::with(comm, |c| {
        Ok(match dest(to)? {
            None => Work::Done(status::empty()),
            Some(to) if sync => Work::Live { request: c.issend(data, to, tag)?, recv: false },
            Some(to) => Work::Live { request: c.isend(data, to, tag)?, recv: false },
        })
    })?;
    keep(Pending { packed, ..Pending::new(comm, work) })
}

/// Starts a receive; its request, as `keep` keeps it.
///
/// # Safety
/// `buf` has room for `count` elements of `datatype`, untouched until the request
/// completes.
pub(crate) unsafe fn begin_recv<T>(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    from: c_int,
    tag: c_int,
    comm: c_int,
    keep: Keep<T>,
) -> MpiResult<T> {
    // SAFETY: the caller's contract: MPI keeps the buffer the request's until it completes.
    if let Some(data) = unsafe { basic_bytes_mut(buf, count, datatype) } {
        return start_recv(data?, None, None, from, tag, comm, keep);
    }
    let place = Place::new(buf, count, datatype)?;
    let (data, packed, unpack): (&'static mut [u8], _, Option<Box<Place>>) = if place.contiguous() {
        // SAFETY: the caller's contract: MPI keeps the buffer the request's until it
        // completes.
        (unsafe { bytes_mut(buf, place.packed_len()) }?, None, None)
    } else {
        let mut copy = vec![0u8; place.packed_len()].into_boxed_slice();
        // SAFETY: the box's heap bytes do not move and outlive the request (`Pending` drops
        // `work` first); nothing else touches them until it completes.
        let data = unsafe { std::slice::from_raw_parts_mut(copy.as_mut_ptr(), copy.len()) };
        (data, Some(copy), Some(Box::new(place)))
    };
    start_recv(data, packed, unpack, from, tag, comm, keep)
}

/// Starts a receive into `data`, and keeps its request as `keep` does.
fn start_recv<T>(
    data: &'static mut [u8],
    packed: Option<Box<[u8]>>,
    unpack: Option<Box<Place>>,
    from: c_int,
    tag: c_int,
    comm: c_int,
    keep: Keep<T>,
) -> MpiResult<T> {
    // As in `begin_send`.
    let work = crate::comms::with(comm, |c| recv_work(c, data, from, tag))?;
    keep(Pending { packed, unpack, ..Pending::new(comm, work) })
}

/// `MPI_Irecv`: the handle of the receive begun. A basic datatype's is begun and stored
/// under one taking of the state's lock (the communicator borrowed under the table's lock
/// inside it; a start does not block).
///
/// # Safety
/// As [`begin_recv`].
#[inline(always)]
unsafe fn irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    from: c_int,
    tag: c_int,
    comm: c_int,
) -> MpiResult<c_int> {
    // SAFETY: the caller's contract: MPI keeps the buffer the request's until it completes.
    let Some(data) = (unsafe { basic_bytes_mut(buf, count, datatype) }) else {
        // SAFETY: the caller's contract.
        return unsafe { begin_recv(buf, count, datatype, from, tag, comm, store) };
    };
    let data = data?;
    state::with(|s| {
        let work = crate::comms::with(comm, |c| recv_work(c, data, from, tag))?;
        s.requests.add(Pending::new(comm, work))
    })
}

/// The work of a receive into `data` begun on `c`.
#[inline(always)]
fn recv_work(c: &Comm, data: &'static mut [u8], from: c_int, tag: c_int) -> MpiResult<Work> {
    Ok(match crate::p2p::source(from)? {
        None => Work::Done(status::empty()),
        Some(from) if data.len() >= LONG_RECV => Work::LongRecv(c.irecv(data, from, tag)?),
        Some(from) => {
            let request = c.irecv(data, from, tag)?;
            match request.completed() {
                // The message was here: the request is its status alone.
                Some(Ok(found)) => Work::Done(status::of_runtime(found)),
                _ => Work::Live { request, recv: true },
            }
        }
    })
}

/// Takes request `handle` out of the table, its handle kept for it to be put back;
/// `None` for `MPI_REQUEST_NULL`.
pub(crate) fn take(handle: c_int) -> MpiResult<Option<Pending>> {
    take_ending(handle, |_| false)
}

/// Takes request `handle` out of the table, ending its handle if `ends` says so of it.
pub(crate) fn take_ending(
    handle: c_int,
    ends: impl FnOnce(&Pending) -> bool,
) -> MpiResult<Option<Pending>> {
    if handle == MPI_REQUEST_NULL {
        return Ok(None);
    }
    state::with(|s| match s.requests.remove(&handle) {
        Some(pending) => {
            if ends(&pending) {
                s.requests.release(handle);
            }
            call::on_comm(pending.comm);
            Ok(Some(pending))
        }
        None => fail(MPI_ERR_REQUEST, format!("{handle:#x} is not an active request")),
    })
}

mpi_fn! {
    fn MPI_Isend / PMPI_Isend(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int) {
        hand_out(request, || isend(buf, count, datatype, dest, tag, comm, false))
    }

    /// Completes once a receive has taken the message (see `MPI_Ssend`).
    fn MPI_Issend / PMPI_Issend(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int) {
        hand_out(request, || isend(buf, count, datatype, dest, tag, comm, true))
    }

    fn MPI_Irsend / PMPI_Irsend(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int) {
        hand_out(request, || isend(buf, count, datatype, dest, tag, comm, false))
    }

    fn MPI_Irecv / PMPI_Irecv(buf: *mut c_void, count: c_int, datatype: c_int, source: c_int, tag: c_int, comm: c_int, request: *mut c_int) {
        hand_out(request, || irecv(buf, count, datatype, source, tag, comm))
    }
}
