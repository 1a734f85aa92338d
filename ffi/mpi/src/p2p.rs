//! Blocking point-to-point calls on contiguous buffers of predefined datatypes.

use std::borrow::Cow;
use std::ffi::{c_int, c_void};

use commcore_linux::runtime::{Comm, Source, ANY_SOURCE};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::pack::{basic_bytes, basic_bytes_mut, Incoming, Place};
use crate::ptr::{get, put, put_status};
use crate::status;
use crate::typemap::layout;

/// A destination rank; `None` for `MPI_PROC_NULL`.
#[inline]
pub(crate) fn dest(rank: c_int) -> MpiResult<Option<usize>> {
    match rank {
        MPI_PROC_NULL => Ok(None),
        r if r >= 0 => Ok(Some(r as usize)),
        r => bad_rank(r, "destination"),
    }
}

/// A source rank; `None` for `MPI_PROC_NULL`.
#[inline]
pub(crate) fn source(rank: c_int) -> MpiResult<Option<Source>> {
    match rank {
        MPI_PROC_NULL => Ok(None),
        MPI_ANY_SOURCE => Ok(Some(ANY_SOURCE)),
        r if r >= 0 => Ok(Some(Source::Rank(r as usize))),
        r => bad_rank(r, "source"),
    }
}

/// The error of a rank that is no `what` (out of line: the message path only tests).
#[cold]
fn bad_rank<T>(rank: c_int, what: &str) -> MpiResult<T> {
    fail(MPI_ERR_RANK, format!("rank {rank} is not a {what}"))
}

/// Runs `f` on communicator `comm` outside every lock (a call that blocks holds none).
pub(crate) fn on_comm<T>(comm: c_int, f: impl FnOnce(&Comm) -> MpiResult<T>) -> MpiResult<T> {
    let comm = crate::comms::get(comm)?;
    f(&comm)
}

/// A standard send, or a synchronous one (`sync`: it returns once a receive took it).
///
/// # Safety
/// `buf` holds `count` elements of `datatype`.
unsafe fn send(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    to: c_int,
    tag: c_int,
    comm: c_int,
    sync: bool,
) -> MpiResult {
    // SAFETY: the caller's contract.
    let data = match unsafe { basic_bytes(buf, count, datatype) } {
        Some(data) => Cow::Borrowed(data?),
        // SAFETY: the caller's contract.
        None => unsafe { Place::new(buf, count, datatype)?.outgoing() }?,
    };
    on_comm(comm, |c| match dest(to)? {
        None => Ok(()),
        Some(to) if sync => Ok(c.ssend(&data, to, tag)?),
        Some(to) => Ok(c.send(&data, to, tag)?),
    })
}

/// # Safety
/// `buf` has room for `count` elements of `datatype`; `out` is a status or ignored.
pub(crate) unsafe fn recv(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    from: c_int,
    tag: c_int,
    comm: c_int,
    out: *mut MpiStatus,
) -> MpiResult {
    // SAFETY: the caller's contract.
    if let Some(data) = unsafe { basic_bytes_mut(buf, count, datatype) } {
        // Straight into the buffer: nothing to unpack.
        let data = data?;
        let found = on_comm(comm, |c| match source(from)? {
            None => Ok(status::empty()),
            Some(from) => Ok(status::of_runtime(c.recv(data, from, tag)?)),
        });
        // SAFETY: the caller's contract.
        unsafe { put_status(out, status::of_outcome(&found)) };
        return found.map(drop);
    }
    let place = Place::new(buf, count, datatype)?;
    let packed = place.element_packed();
    // SAFETY: the caller's contract.
    let mut data = unsafe { Incoming::new(place) }?;
    let result = on_comm(comm, |c| match source(from)? {
        None => Ok(status::empty()),
        Some(from) => Ok(status::of_runtime(c.recv(data.bytes(), from, tag)?)),
    })
    .and_then(|found| crate::contents::whole_elements(datatype, packed, found));
    // SAFETY: the caller's contract.
    unsafe {
        // A truncated message still fills the buffer.
        data.finish(result.as_ref().map_or(usize::MAX, |s| status::bytes(s) as usize))?;
        put_status(out, status::of_outcome(&result));
    }
    result.map(drop)
}

mpi_fn! {
    fn MPI_Send / PMPI_Send(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        send(buf, count, datatype, dest, tag, comm, false)
    }

    /// Returns once a receive has taken the message (between processes of this job on one
    /// node with single-copy transfers; elsewhere as `MPI_Send`).
    fn MPI_Ssend / PMPI_Ssend(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        send(buf, count, datatype, dest, tag, comm, true)
    }

    fn MPI_Rsend / PMPI_Rsend(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        send(buf, count, datatype, dest, tag, comm, false)
    }

    fn MPI_Recv / PMPI_Recv(buf: *mut c_void, count: c_int, datatype: c_int, source: c_int, tag: c_int, comm: c_int, status: *mut MpiStatus) {
        recv(buf, count, datatype, source, tag, comm, status)
    }

    fn MPI_Sendrecv / PMPI_Sendrecv(
        sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, source: c_int, recvtag: c_int,
        comm: c_int, status: *mut MpiStatus,
    ) {
        let send = Place::new(sendbuf, sendcount, sendtype)?.outgoing()?;
        let place = Place::new(recvbuf, recvcount, recvtype)?;
        let packed = place.element_packed();
        let mut recv = Incoming::new(place)?;
        let result = sendrecv(comm, &send, dest, sendtag, recv.bytes(), source, recvtag)?;
        recv.finish(status::bytes(&result) as usize)?;
        let found = crate::contents::whole_elements(recvtype, packed, result);
        put_status(status, status::of_outcome(&found));
        found.map(drop)
    }

    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace(
        buf: *mut c_void, count: c_int, datatype: c_int, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: c_int, status: *mut MpiStatus,
    ) {
        let place = Place::new(buf, count, datatype)?;
        let copy = place.outgoing()?.into_owned();
        let packed = place.element_packed();
        let mut recv = Incoming::new(place)?;
        let result = sendrecv(comm, &copy, dest, sendtag, recv.bytes(), source, recvtag)?;
        recv.finish(status::bytes(&result) as usize)?;
        let found = crate::contents::whole_elements(datatype, packed, result);
        put_status(status, status::of_outcome(&found));
        found.map(drop)
    }

    /// Elements the status counts, or `MPI_UNDEFINED` if they are not whole.
    fn MPI_Get_count / PMPI_Get_count(status: *const MpiStatus, datatype: c_int, count: *mut c_int) {
        get_count(status, datatype, count, false)
    }

    /// The basic elements received (a predefined datatype is its own).
    fn MPI_Get_elements / PMPI_Get_elements(status: *const MpiStatus, datatype: c_int, count: *mut c_int) {
        get_count(status, datatype, count, true)
    }

    /// Blocks until a matching message has come; its status, the message left queued.
    fn MPI_Probe / PMPI_Probe(source: c_int, tag: c_int, comm: c_int, status: *mut MpiStatus) {
        let found = on_comm(comm, |c| match crate::p2p::source(source)? {
            None => Ok(status::empty()),
            Some(from) => Ok(status::of_runtime(c.probe(from, tag)?)),
        })?;
        put_status(status, found);
        Ok(())
    }

    /// Whether a matching message has come, and its status; the message left queued.
    fn MPI_Iprobe / PMPI_Iprobe(source: c_int, tag: c_int, comm: c_int, flag: *mut c_int, status: *mut MpiStatus) {
        if flag.is_null() {
            return fail(MPI_ERR_ARG, "flag is NULL");
        }
        let found = on_comm(comm, |c| match crate::p2p::source(source)? {
            None => Ok(Some(status::empty())),
            Some(from) => Ok(c.iprobe(from, tag)?.map(status::of_runtime)),
        })?;
        put(flag, found.is_some() as c_int)?;
        if let Some(found) = found {
            put_status(status, found);
        }
        Ok(())
    }

    fn MPI_Test_cancelled / PMPI_Test_cancelled(status: *const MpiStatus, flag: *mut c_int) {
        let status = get(status)?;
        put(flag, status::is_cancelled(&status) as c_int)
    }
}

fn sendrecv(
    comm: c_int,
    send: &[u8],
    to: c_int,
    send_tag: c_int,
    recv: &mut [u8],
    from: c_int,
    recv_tag: c_int,
) -> MpiResult<MpiStatus> {
    on_comm(comm, |c| {
        let incoming = source(from)?.map(|from| c.irecv(recv, from, recv_tag)).transpose()?;
        let outgoing = dest(to)?.map(|to| c.isend(send, to, send_tag)).transpose()?;
        let status = match incoming {
            Some(incoming) => status::of_runtime(incoming.wait()?),
            None => status::empty(),
        };
        if let Some(outgoing) = outgoing {
            outgoing.wait()?;
        }
        Ok(status)
    })
}

/// # Safety
/// `status` is readable and `count` writable, or NULL.
unsafe fn get_count(
    status: *const MpiStatus,
    datatype: c_int,
    count: *mut c_int,
    elements: bool,
) -> MpiResult {
    // SAFETY: the caller's contract.
    let n = unsafe { counted(status, datatype, elements) }?;
    let n = n.and_then(|n| c_int::try_from(n).ok()).unwrap_or(MPI_UNDEFINED);
    // SAFETY: the caller's contract.
    unsafe { put(count, n) }
}

/// The whole datatypes or basic elements `status` counts; `None` when they are not whole.
///
/// # Safety
/// `status` is readable, or NULL.
pub(crate) unsafe fn counted(
    status: *const MpiStatus,
    datatype: c_int,
    elements: bool,
) -> MpiResult<Option<u64>> {
    // SAFETY: the caller's contract.
    let status = unsafe { get(status) }?;
    let info = layout(datatype)?.0;
    let bytes = status::bytes(&status);
    let packed = info.packed.max(1) as u64;
    let whole = bytes / packed;
    let rest = bytes % packed;
    // Whole datatypes, or the basic elements they are made of (as they travel: packed).
    Ok(match (elements, bytes % packed == 0) {
        (false, true) => Some(whole),
        (true, true) => Some(whole * info.elements as u64),
        (true, false) if info.basic > 0 && bytes % info.basic as u64 == 0 => {
            Some(bytes / info.basic as u64)
        }
        (true, false) => crate::contents::elements_in(datatype, rest as usize)
            .map(|partial| whole * info.elements as u64 + partial as u64),
        _ => None,
    })
}
