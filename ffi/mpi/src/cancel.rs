//! `MPI_Cancel`. A receive no message has matched is withdrawn. A send is not cancelled:
//! one that completes is reported as not cancelled, which MPI allows. A send that no
//! receive matches could never complete, yet MPI requires a wait on a cancelled request
//! to return; withdrawing a send from its receiver is not provided yet, so that case is
//! an error and the request stays active.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::ptr::get;
use crate::request::{take, Pending, Work};
use crate::state;
use crate::status;

/// How long a send being cancelled is given to complete (a matched one is being read).
const SEND_GRACE: Duration = Duration::from_millis(200);

impl Pending {
    /// Cancels this request if it can; an error for a send that does not complete.
    fn cancel(&mut self) -> MpiResult {
        let recv = match self.work {
            Work::Live { recv, .. } => recv,
            Work::LongRecv(_) => true,
            Work::Pair(_) => {
                let why =
                    "cancelling an MPI_Isendrecv is not provided yet (the request stays active)";
                return fail(MPI_ERR_UNSUPPORTED_OPERATION, why);
            }
            Work::Generalized(ref g) => return g.cancel(),
            Work::Done(_) | Work::Failed(_) | Work::Collective(_) => return Ok(()),
        };
        if recv {
            if self.test()?.is_none() {
                // Dropping an unmatched receive withdraws it.
                self.work = Work::Done(status::cancelled());
            }
            return Ok(());
        }
        let until = Instant::now() + SEND_GRACE;
        while self.test()?.is_none() {
            if Instant::now() >= until {
                return fail(
                    MPI_ERR_UNSUPPORTED_OPERATION,
                    "no receive matched the send, and withdrawing a send is not provided yet (the request stays active)",
                );
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok(())
    }
}

mpi_fn! {
    fn MPI_Cancel / PMPI_Cancel(request: *mut c_int) {
        let handle = get(request)?;
        let Some(mut pending) = take(handle)? else {
            return fail(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL");
        };
        let outcome = pending.cancel();
        state::with(|s| {
            s.requests.insert(handle, pending);
            Ok(())
        })?;
        outcome
    }
}
