//! Matched probes: `MPI_Mprobe` finds a message and takes it out of matching at once (a
//! receive of its source and tag, which takes the oldest of them: the one probed); the
//! message handle keeps its bytes until `MPI_Mrecv` unpacks them.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, PoisonError};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::p2p::on_comm;
use crate::pack::Place;
use crate::ptr::{get, put, put_status};
use crate::request::{start, Pending};
use crate::status;

/// Kind bits of message handles.
const MESSAGE_KIND: u32 = 0xec00_0000;

/// A probed message: its communicator, source, tag and data (packed).
struct Probed {
    comm: c_int,
    source: c_int,
    tag: c_int,
    data: Vec<u8>,
}

static MESSAGES: Mutex<Option<(HashMap<c_int, Probed>, u32)>> = Mutex::new(None);

fn add(probed: Probed) -> c_int {
    let mut guard = MESSAGES.lock().unwrap_or_else(PoisonError::into_inner);
    let (table, next) = guard.get_or_insert_with(|| (HashMap::new(), 0));
    *next = (*next + 1) & 0x03ff_ffff;
    let handle = (MESSAGE_KIND | *next) as c_int;
    table.insert(handle, probed);
    handle
}

/// Takes message `handle`: `None` for `MPI_MESSAGE_NO_PROC`.
fn take(handle: c_int) -> MpiResult<Option<Probed>> {
    if handle == MPI_MESSAGE_NO_PROC {
        return Ok(None);
    }
    let mut guard = MESSAGES.lock().unwrap_or_else(PoisonError::into_inner);
    match guard.as_mut().and_then(|(t, _)| t.remove(&handle)) {
        Some(probed) => Ok(Some(probed)),
        None => fail(MPI_ERR_REQUEST, format!("{handle:#x} is not a probed message")),
    }
}

/// Probes (`block`ing or not): the status and message handle of a match, if any.
fn probe(
    source: c_int,
    tag: c_int,
    comm: c_int,
    block: bool,
) -> MpiResult<Option<(MpiStatus, c_int)>> {
    let found = on_comm(comm, |c| {
        let probed = match crate::p2p::source(source)? {
            None => return Ok(Some(None)),
            Some(from) if block => c.probe(from, tag)?,
            Some(from) => match c.iprobe(from, tag)? {
                Some(found) => found,
                None => return Ok(None),
            },
        };
        let mut data = vec![0u8; probed.len];
        c.recv(&mut data, probed.source, probed.tag)?;
        Ok(Some(Some((probed, data))))
    })?;
    Ok(match found {
        None => None,
        Some(None) => Some((status::empty(), MPI_MESSAGE_NO_PROC)),
        Some(Some((s, data))) => {
            let status = status::of_runtime(s);
            Some((status, add(Probed { comm, source: status.source, tag: status.tag, data })))
        }
    })
}

/// Unpacks probed message `p` into `count` elements of `datatype` at `buf`: its status,
/// or `MPI_ERR_TRUNCATE` (after filling the buffer) when it is larger.
///
/// # Safety
/// `buf` has room for `count` elements of `datatype`.
unsafe fn deliver(
    p: &Probed,
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
) -> MpiResult<MpiStatus> {
    let place = Place::new(buf, count, datatype)?;
    // SAFETY: the caller's contract.
    unsafe { place.unpack(&p.data) }?;
    if p.data.len() > place.packed_len() {
        let message =
            format!("message of {} bytes truncated to {}", p.data.len(), place.packed_len());
        return fail(MPI_ERR_TRUNCATE, message);
    }
    Ok(status::of_message(p.source, p.tag, p.data.len()))
}

mpi_fn! {
    fn MPI_Mprobe / PMPI_Mprobe(source: c_int, tag: c_int, comm: c_int, message: *mut c_int, status: *mut MpiStatus) {
        if message.is_null() {
            return fail(MPI_ERR_ARG, "message is NULL");
        }
        if let Some((found, handle)) = probe(source, tag, comm, true)? {
            put(message, handle)?;
            put_status(status, found);
        }
        Ok(())
    }

    fn MPI_Improbe / PMPI_Improbe(source: c_int, tag: c_int, comm: c_int, flag: *mut c_int, message: *mut c_int, status: *mut MpiStatus) {
        if message.is_null() {
            return fail(MPI_ERR_ARG, "message is NULL");
        }
        match probe(source, tag, comm, false)? {
            Some((found, handle)) => {
                put(message, handle)?;
                put_status(status, found);
                put(flag, 1)
            }
            None => put(flag, 0),
        }
    }

    fn MPI_Mrecv / PMPI_Mrecv(buf: *mut c_void, count: c_int, datatype: c_int, message: *mut c_int, status: *mut MpiStatus) {
        let probed = take(get(message)?)?;
        put(message, MPI_MESSAGE_NULL)?;
        match probed {
            None => {
                put_status(status, status::empty());
                Ok(())
            }
            Some(p) => {
                crate::call::on_comm(p.comm);
                put_status(status, deliver(&p, buf, count, datatype)?);
                Ok(())
            }
        }
    }

    fn MPI_Imrecv / PMPI_Imrecv(buf: *mut c_void, count: c_int, datatype: c_int, message: *mut c_int, request: *mut c_int) {
        let probed = take(get(message)?)?;
        put(message, MPI_MESSAGE_NULL)?;
        // The data is here: the request is complete from the start.
        let (comm, found) = match probed {
            None => (MPI_COMM_SELF, status::empty()),
            Some(p) => {
                crate::call::on_comm(p.comm);
                (p.comm, deliver(&p, buf, count, datatype)?)
            }
        };
        start(request, Pending::finished(comm, found))
    }
}
