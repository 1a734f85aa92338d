//! `MPI_Isendrecv` and `MPI_Isendrecv_replace`: a receive and a send begun at once (the
//! receive first, so that a message to oneself finds it), one request for both.

use std::ffi::{c_int, c_void};

use crate::call::mpi_fn;
use crate::consts::types::MPI_BYTE;
use crate::pack::copy;
use crate::request::{begin_recv, begin_send, hand_out, returned, stored, Pending};
use crate::state;

mpi_fn! {
    fn MPI_Isendrecv / PMPI_Isendrecv(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, source: c_int, recvtag: c_int, comm: c_int, request: *mut c_int) {
        hand_out(request, || {
            let recv = begin_recv(recvbuf, recvcount, recvtype, source, recvtag, comm, returned)?;
            let send = begin_send(sendbuf, sendcount, sendtype, dest, sendtag, comm, false, returned)?;
            state::with(|s| stored(s, Pending::pair(comm, recv, send, None)))
        })
    }

    /// The data sent is a packed copy taken first; the receive then writes the buffer.
    fn MPI_Isendrecv_replace / PMPI_Isendrecv_replace(buf: *mut c_void, count: c_int, datatype: c_int, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: c_int, request: *mut c_int) {
        let data = copy(buf, count, datatype)?.into_boxed_slice();
        let Ok(len) = c_int::try_from(data.len()) else {
            return crate::error::fail(crate::consts::MPI_ERR_COUNT, "the data is more than an int counts");
        };
        hand_out(request, || {
            let recv = begin_recv(buf, count, datatype, source, recvtag, comm, returned)?;
            // The copy's heap bytes stay where they are when the box moves into the request.
            let send = begin_send(data.as_ptr().cast(), len, MPI_BYTE, dest, sendtag, comm, false, returned)?;
            state::with(|s| stored(s, Pending::pair(comm, recv, send, Some(data))))
        })
    }
}
