//! `MPI_Request_free`: the program lets a request go; the operation goes on. What is
//! still in flight is kept, with the packed copy it reads or writes, until `MPI_Finalize`.

use std::ffi::c_int;

use commcore_linux::runtime::Request;

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::fail;
use crate::ptr::{get, put};
use crate::request::{take_ending, Pending, Work};
use crate::state;

impl Pending {
    /// Keeps what is still in flight (with the packed copy it reads or writes) in
    /// `detached` until `MPI_Finalize`: the program freed the request.
    fn detach(self, detached: &mut Vec<(Request<'static>, Option<Box<[u8]>>)>) {
        match self.work {
            Work::Live { request, .. } | Work::LongRecv(request) => {
                detached.push((request, self.packed))
            }
            Work::Pair(pair) => {
                let [recv, send] = *pair;
                recv.detach(detached);
                send.detach(detached);
            }
            Work::Generalized(g) => g.detach(),
            Work::Done(_) | Work::Failed(_) | Work::Collective(_) => {}
        }
    }
}

mpi_fn! {
    /// Frees the handle; the operation itself goes on (kept until `MPI_Finalize`).
    fn MPI_Request_free / PMPI_Request_free(request: *mut c_int) {
        let handle = get(request)?;
        let Some(pending) = take_ending(handle, |_| true)? else {
            return fail(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL");
        };
        state::with(|s| {
            pending.detach(&mut s.detached);
            Ok(())
        })?;
        put(request, MPI_REQUEST_NULL)
    }
}
