//! Buffered sends: the message is copied out at once, so the call never waits for a
//! receiver; the space the program attached bounds what may be in flight.

use std::ffi::{c_int, c_void};
use std::sync::{Mutex, PoisonError};

use commcore_linux::runtime::Request;

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::p2p::{dest, on_comm};
use crate::pack::Place;
use crate::ptr::put;

/// Bytes each buffered message costs beside its data.
const OVERHEAD: usize = MPI_BSEND_OVERHEAD;

/// A buffered message in flight: its copy outlives the request that reads it.
struct Buffered {
    /// Declared before `data`, so dropped (finished) first.
    request: Request<'static>,
    data: Box<[u8]>,
}

struct Attached {
    buf: usize,
    size: usize,
    in_flight: Vec<Buffered>,
}

static ATTACHED: Mutex<Attached> = Mutex::new(Attached { buf: 0, size: 0, in_flight: Vec::new() });

impl Attached {
    /// Drops the messages that have gone; the bytes still in flight.
    fn reclaim(&mut self) -> usize {
        self.in_flight.retain_mut(|b| !matches!(b.request.test(), Ok(Some(_)) | Err(_)));
        self.in_flight.iter().map(|b| b.data.len() + OVERHEAD).sum()
    }
}

/// # Safety
/// `buf` holds `count` elements of `datatype`.
pub(crate) unsafe fn bsend(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    to: c_int,
    tag: c_int,
    comm: c_int,
) -> MpiResult {
    let place = Place::new(buf, count, datatype)?;
    let len = place.packed_len();
    let Some(to) = dest(to)? else { return Ok(()) };
    let mut attached = ATTACHED.lock().unwrap_or_else(PoisonError::into_inner);
    if attached.reclaim() + len + OVERHEAD > attached.size {
        return fail(
            MPI_ERR_BUFFER,
            format!("the attached buffer ({} bytes) has no room for {len} more", attached.size),
        );
    }
    // SAFETY: the caller's contract.
    let data: Box<[u8]> = unsafe { place.outgoing() }?.into_owned().into_boxed_slice();
    // SAFETY: the box's heap bytes do not move and live in `Buffered` beside the request,
    // which is dropped first.
    let copy: &'static [u8] = unsafe { std::slice::from_raw_parts(data.as_ptr(), data.len()) };
    let request = on_comm(comm, |c| Ok(c.isend(copy, to, tag)?))?;
    attached.in_flight.push(Buffered { request, data });
    Ok(())
}

mpi_fn! {
    fn MPI_Buffer_attach / PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) {
        let size = crate::ptr::count(size)?;
        let mut attached = ATTACHED.lock().unwrap_or_else(PoisonError::into_inner);
        if attached.size != 0 {
            return fail(MPI_ERR_BUFFER, "a buffer is attached already");
        }
        attached.buf = buffer as usize;
        attached.size = size;
        Ok(())
    }

    /// Waits for the buffered messages to go, then returns the buffer and its size.
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) {
        let mut attached = ATTACHED.lock().unwrap_or_else(PoisonError::into_inner);
        for buffered in attached.in_flight.drain(..) {
            buffered.request.wait()?;
        }
        let (buf, bytes) = (attached.buf, attached.size);
        attached.buf = 0;
        attached.size = 0;
        put(buffer_addr.cast::<*mut c_void>(), buf as *mut c_void)?;
        put(size, bytes as c_int)
    }

    fn MPI_Bsend / PMPI_Bsend(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int) {
        bsend(buf, count, datatype, dest, tag, comm)
    }

    /// `MPI_Bsend`, which completes locally once the data is in the attached buffer: the
    /// request is complete from the start.
    fn MPI_Ibsend / PMPI_Ibsend(buf: *const c_void, count: c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int) {
        if request.is_null() {
            return fail(MPI_ERR_ARG, "the request argument is NULL");
        }
        bsend(buf, count, datatype, dest, tag, comm)?;
        crate::request::start(request, crate::request::Pending::finished(comm, crate::status::inactive()))
    }
}

/// Waits for every buffered message to go (at `MPI_Finalize`, before the runtime ends).
pub(crate) fn drain() {
    let mut attached = ATTACHED.lock().unwrap_or_else(PoisonError::into_inner);
    for buffered in attached.in_flight.drain(..) {
        let _ = buffered.request.wait();
    }
}
