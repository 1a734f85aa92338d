//! Blocking point-to-point calls on contiguous buffers of predefined datatypes.

use std::ffi::{c_int, c_void};

use commcore_linux::runtime::{Comm, Source, ANY_SOURCE};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::datatype::{span, type_info};
use crate::error::{fail, MpiResult};
use crate::ptr::{bytes, bytes_mut, get, put, put_status};
use crate::state;
use crate::status;

/// A destination rank; `None` for `MPI_PROC_NULL`.
pub(crate) fn dest(rank: c_int) -> MpiResult<Option<usize>> {
    match rank {
        MPI_PROC_NULL => Ok(None),
        r if r >= 0 => Ok(Some(r as usize)),
        r => fail(MPI_ERR_RANK, format!("rank {r} is not a destination")),
    }
}

/// A source rank; `None` for `MPI_PROC_NULL`.
pub(crate) fn source(rank: c_int) -> MpiResult<Option<Source>> {
    match rank {
        MPI_PROC_NULL => Ok(None),
        MPI_ANY_SOURCE => Ok(Some(ANY_SOURCE)),
        r if r >= 0 => Ok(Some(Source::Rank(r as usize))),
        r => fail(MPI_ERR_RANK, format!("rank {r} is not a source")),
    }
}

/// Runs `f` on a clone of communicator `comm` (outside the state's lock, so that a call
/// that blocks does not hold it).
pub(crate) fn on_comm<T>(comm: c_int, f: impl FnOnce(&Comm) -> MpiResult<T>) -> MpiResult<T> {
    let comm = state::with(|s| s.comm(comm).cloned())?;
    f(&comm)
}

/// # Safety
/// `buf` holds `count` elements of `datatype`.
unsafe fn send(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    to: c_int,
    tag: c_int,
    comm: c_int,
) -> MpiResult {
    let len = span(count, datatype)?;
    // SAFETY: the caller's contract.
    let data = unsafe { bytes(buf, len) }?;
    on_comm(comm, |c| match dest(to)? {
        None => Ok(()),
        Some(to) => Ok(c.send(data, to, tag)?),
    })
}

/// # Safety
/// `buf` has room for `count` elements of `datatype`; `out` is a status or ignored.
unsafe fn recv(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    from: c_int,
    tag: c_int,
    comm: c_int,
    out: *mut MpiStatus,
) -> MpiResult {
    let len = span(count, datatype)?;
    // SAFETY: the caller's contract.
    let data = unsafe { bytes_mut(buf, len) }?;
    let result = on_comm(comm, |c| match source(from)? {
        None => Ok(status::empty()),
        Some(from) => Ok(status::of_runtime(c.recv(data, from, tag)?)),
    })?;
    // SAFETY: the caller's contract.
    unsafe { put_status(out, result) };
    Ok(())
}

mpi_fn! {
    fn MPI_Send / PMPI_Send(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        send(buf, count, datatype, dest, tag, comm)
    }

    /// As `MPI_Send`: the runtime's send does not wait for the matching receive, so this
    /// completes as early as a standard send may.
    fn MPI_Ssend / PMPI_Ssend(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        send(buf, count, datatype, dest, tag, comm)
    }

    fn MPI_Rsend / PMPI_Rsend(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        send(buf, count, datatype, dest, tag, comm)
    }

    fn MPI_Recv / PMPI_Recv(buf: *mut c_void, count: c_int, datatype: c_int, source: c_int, tag: c_int, comm: c_int, status: *mut MpiStatus) {
        recv(buf, count, datatype, source, tag, comm, status)
    }

    fn MPI_Sendrecv / PMPI_Sendrecv(
        sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, source: c_int, recvtag: c_int,
        comm: c_int, status: *mut MpiStatus,
    ) {
        let send = bytes(sendbuf, span(sendcount, sendtype)?)?;
        let recv = bytes_mut(recvbuf, span(recvcount, recvtype)?)?;
        let result = sendrecv(comm, send, dest, sendtag, recv, source, recvtag)?;
        put_status(status, result);
        Ok(())
    }

    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace(
        buf: *mut c_void, count: c_int, datatype: c_int, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: c_int, status: *mut MpiStatus,
    ) {
        let data = bytes_mut(buf, span(count, datatype)?)?;
        let copy = data.to_vec();
        let result = sendrecv(comm, &copy, dest, sendtag, data, source, recvtag)?;
        put_status(status, result);
        Ok(())
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
    let status = unsafe { get(status) }?;
    let info = type_info(datatype)?;
    // Whole datatypes, or the basic elements they are made of.
    let unit = if elements { info.extent * info.basic / info.size.max(1) } else { info.extent };
    let extent = unit.max(1) as u64;
    let bytes = status::bytes(&status);
    let n = if bytes % extent == 0 {
        c_int::try_from(bytes / extent).unwrap_or(MPI_UNDEFINED)
    } else {
        MPI_UNDEFINED
    };
    // SAFETY: the caller's contract.
    unsafe { put(count, n) }
}
