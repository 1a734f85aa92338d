//! User error handlers (`MPI_Comm_create_errhandler`): the program's function, called with
//! the communicator and the error code before the call returns it.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::{Mutex, PoisonError};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::fail;
use crate::ptr::put;

/// `MPI_Comm_errhandler_function`: `(MPI_Comm *, int *, ...)`.
pub(crate) type HandlerFn = unsafe extern "C" fn(*mut c_int, *mut c_int, ...);

/// Kind bits of user error handler handles.
const HANDLER_KIND: u32 = 0x9400_0000;

struct Table {
    handlers: HashMap<c_int, HandlerFn>,
    next: u32,
}

static HANDLERS: Mutex<Option<Table>> = Mutex::new(None);

/// The function of user handler `handle`, if it is one.
pub(crate) fn user(handle: c_int) -> Option<HandlerFn> {
    HANDLERS.lock().unwrap_or_else(PoisonError::into_inner).as_ref()?.handlers.get(&handle).copied()
}

/// Whether `handle` names an error handler.
pub(crate) fn exists(handle: c_int) -> bool {
    matches!(handle, MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT)
        || user(handle).is_some()
}

/// Calls handler `function` for `code` raised on `comm`.
pub(crate) fn call(function: HandlerFn, comm: c_int, code: c_int) {
    let (mut comm, mut code) = (comm, code);
    // SAFETY: the program's handler, given the communicator and code as MPI defines.
    unsafe { function(&mut comm, &mut code) };
}

mpi_fn! {
    fn MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(function: Option<HandlerFn>, errhandler: *mut c_int) {
        let Some(function) = function else {
            return fail(MPI_ERR_ARG, "the handler function is NULL");
        };
        if errhandler.is_null() {
            return fail(MPI_ERR_ARG, "errhandler is NULL");
        }
        let handle = {
            let mut guard = HANDLERS.lock().unwrap_or_else(PoisonError::into_inner);
            let table = guard.get_or_insert_with(|| Table { handlers: HashMap::new(), next: 0 });
            table.next = (table.next + 1) & 0x03ff_ffff;
            let handle = (HANDLER_KIND | table.next) as c_int;
            table.handlers.insert(handle, function);
            handle
        };
        put(errhandler, handle)
    }
}
