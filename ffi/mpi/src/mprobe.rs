//! Matched probes: `MPI_Mprobe` finds a message and `MPI_Mrecv` receives that one. The
//! message is the oldest that matches the probe, so a receive of its source and tag takes
//! it (calls from one thread; others could take it between).

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, PoisonError};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::p2p::on_comm;
use crate::ptr::{get, put, put_status};
use crate::request::{begin_recv, returned, start};
use crate::status;

/// Kind bits of message handles.
const MESSAGE_KIND: u32 = 0xec00_0000;

/// A probed message: its communicator, source and tag.
struct Probed {
    comm: c_int,
    source: c_int,
    tag: c_int,
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
    let found = on_comm(comm, |c| match crate::p2p::source(source)? {
        None => Ok(Some(None)),
        Some(from) if block => Ok(Some(Some(c.probe(from, tag)?))),
        Some(from) => Ok(c.iprobe(from, tag)?.map(Some)),
    })?;
    Ok(match found {
        None => None,
        Some(None) => Some((status::empty(), MPI_MESSAGE_NO_PROC)),
        Some(Some(s)) => {
            let status = status::of_runtime(s);
            Some((status, add(Probed { comm, source: status.source, tag: status.tag })))
        }
    })
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
            Some(p) => crate::p2p::recv(buf, count, datatype, p.source, p.tag, p.comm, status),
        }
    }

    fn MPI_Imrecv / PMPI_Imrecv(buf: *mut c_void, count: c_int, datatype: c_int, message: *mut c_int, request: *mut c_int) {
        let probed = take(get(message)?)?;
        put(message, MPI_MESSAGE_NULL)?;
        let (comm, source, tag) = match probed {
            None => (MPI_COMM_SELF, MPI_PROC_NULL, 0),
            Some(p) => (p.comm, p.source, p.tag),
        };
        let pending = begin_recv(buf, count, datatype, source, tag, comm, returned)?;
        start(request, pending)
    }
}
