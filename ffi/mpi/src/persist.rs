//! Persistent requests: an operation set up once (`MPI_Send_init`, `MPI_Recv_init`, ...)
//! and started many times (`MPI_Start`, `MPI_Startall`); completing one leaves it inactive.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::ptr::{array, count, get, put};
use crate::request::{begin_recv, begin_send, returned, Pending};
use crate::state;

/// The operation a persistent request starts: its buffer as an address.
#[derive(Clone, Debug)]
pub(crate) struct Persist {
    recv: bool,
    sync: bool,
    /// Buffered (`MPI_Bsend_init`): each start is an `MPI_Bsend`, complete at once.
    buffered: bool,
    buf: usize,
    count: c_int,
    datatype: c_int,
    peer: c_int,
    tag: c_int,
    /// The request's own copy of a derived datatype (`datatype` names it).
    own_type: Option<Arc<OwnType>>,
}

/// A derived datatype copied for a persistent request: the program may free its own
/// handle while the request lives (MPI lets it); the copy goes with the request.
#[derive(Debug)]
struct OwnType(c_int);

impl Drop for OwnType {
    fn drop(&mut self) {
        crate::typemap::remove(self.0);
    }
}

/// # Safety
/// `request` is valid for a write, or NULL.
unsafe fn init(mut persist: Persist, comm: c_int, request: *mut c_int) -> MpiResult {
    if request.is_null() {
        return fail(MPI_ERR_ARG, "the request argument is NULL");
    }
    let (info, segments) = crate::typemap::layout(persist.datatype)?;
    if crate::typemap::is_derived(persist.datatype) {
        let own = crate::typemap::add(info, segments);
        persist.datatype = own;
        persist.own_type = Some(Arc::new(OwnType(own)));
    }
    count(persist.count)?;
    let handle = state::with(|s| {
        s.comm(comm)?;
        s.requests.add(Pending::inactive(comm, persist))
    })?;
    // SAFETY: the caller's contract.
    unsafe { put(request, handle) }
}

/// Starts persistent request `handle`.
fn start(handle: c_int) -> MpiResult {
    let taken = state::with(|s| match s.requests.remove(&handle) {
        Some(pending) if pending.persist.is_some() => Ok(pending),
        Some(pending) => {
            s.requests.insert(handle, pending);
            fail(MPI_ERR_REQUEST, format!("{handle:#x} is not a persistent request"))
        }
        None => fail(MPI_ERR_REQUEST, format!("{handle:#x} is not a request")),
    });
    let mut pending = taken?;
    let Some(p) = pending.persist.clone() else { return fail(MPI_ERR_REQUEST, "not persistent") };
    let comm = pending.comm();
    // SAFETY: the buffer the program gave at init, which MPI keeps valid while the
    // request is active.
    let begun = unsafe {
        if p.buffered {
            crate::bsend::bsend(p.buf as *const c_void, p.count, p.datatype, p.peer, p.tag, comm)
                .map(|()| Pending::finished(comm, crate::status::inactive()))
        } else if p.recv {
            begin_recv(p.buf as *mut c_void, p.count, p.datatype, p.peer, p.tag, comm, returned)
        } else {
            begin_send(
                p.buf as *const c_void,
                p.count,
                p.datatype,
                p.peer,
                p.tag,
                comm,
                p.sync,
                returned,
            )
        }
    };
    let result = begun.map(|op| pending.restart(op));
    state::with(|s| {
        s.requests.insert(handle, pending);
        Ok(())
    })?;
    result
}

mpi_fn! {
    fn MPI_Send_init / PMPI_Send_init(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int) {
        init(Persist { recv: false, sync: false, buffered: false, buf: buf as usize, count, datatype, peer: dest, tag, own_type: None }, comm, request)
    }

    /// Synchronous (see `MPI_Ssend`).
    fn MPI_Ssend_init / PMPI_Ssend_init(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int) {
        init(Persist { recv: false, sync: true, buffered: false, buf: buf as usize, count, datatype, peer: dest, tag, own_type: None }, comm, request)
    }

    fn MPI_Rsend_init / PMPI_Rsend_init(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int) {
        init(Persist { recv: false, sync: false, buffered: false, buf: buf as usize, count, datatype, peer: dest, tag, own_type: None }, comm, request)
    }

    fn MPI_Bsend_init / PMPI_Bsend_init(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int) {
        init(Persist { recv: false, sync: false, buffered: true, buf: buf as usize, count, datatype, peer: dest, tag, own_type: None }, comm, request)
    }

    fn MPI_Recv_init / PMPI_Recv_init(buf: *mut c_void, count: c_int, datatype: c_int, source: c_int, tag: c_int, comm: c_int, request: *mut c_int) {
        init(Persist { recv: true, sync: false, buffered: false, buf: buf as usize, count, datatype, peer: source, tag, own_type: None }, comm, request)
    }

    fn MPI_Start / PMPI_Start(request: *mut c_int) {
        start(get(request)?)
    }

    fn MPI_Startall / PMPI_Startall(n: c_int, requests: *mut c_int) {
        for &handle in array(requests, count(n)?)? {
            start(handle)?;
        }
        Ok(())
    }
}
