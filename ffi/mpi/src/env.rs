//! The environment: start and end, thread levels, clocks, names, versions, error texts and
//! error handlers.

use std::ffi::{c_char, c_double, c_int};
use std::sync::OnceLock;
use std::time::Instant;

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{class_text, fail, MpiResult};
use crate::ptr::{get, put, put_text};
use crate::state;

const LIBRARY_VERSION: &str = concat!(
    "commcore MPI ",
    env!("CARGO_PKG_VERSION"),
    " (MPICH binary interface, over the commcore runtime)"
);

mpi_fn! {
    /// Starts MPI (`argc` and `argv` are not needed).
    fn MPI_Init / PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) {
        crate::lifecycle::begin_world(MPI_THREAD_SINGLE).map(drop)
    }

    /// Starts MPI at the thread level asked for, or the highest one provided below it.
    fn MPI_Init_thread / PMPI_Init_thread(
        _argc: *mut c_int,
        _argv: *mut *mut *mut c_char,
        required: c_int,
        provided: *mut c_int,
    ) {
        if provided.is_null() {
            return fail(MPI_ERR_ARG, "provided is NULL");
        }
        let level = crate::lifecycle::begin_world(required)?;
        put(provided, level)
    }

    fn MPI_Query_thread / PMPI_Query_thread(provided: *mut c_int) {
        let level = state::with(|s| Ok(s.thread_level))?;
        put(provided, level)
    }

    fn MPI_Is_thread_main / PMPI_Is_thread_main(flag: *mut c_int) {
        let main = state::with(|s| Ok(s.main_thread == std::thread::current().id()))?;
        put(flag, main as c_int)
    }

    /// Ends MPI's world model: what is queued for peers is delivered first (the runtime
    /// stays up while a session uses it). Deletes the attributes of `MPI_COMM_SELF`, then
    /// of `MPI_COMM_WORLD`, first (the standard's exit hooks: their callbacks may still call
    /// MPI), then ends.
    fn MPI_Finalize / PMPI_Finalize() {
        state::with(|s| s.comm(MPI_COMM_WORLD).map(drop))?;
        crate::lifecycle::end_world(|| {
            crate::keyval::delete_all(MPI_COMM_SELF)
                .and_then(|()| crate::keyval::delete_all(MPI_COMM_WORLD))
        })
    }

    /// Whether `MPI_Init` was called (sessions do not count).
    fn MPI_Initialized / PMPI_Initialized(flag: *mut c_int) {
        put(flag, crate::lifecycle::world_initialized() as c_int)
    }

    fn MPI_Finalized / PMPI_Finalized(flag: *mut c_int) {
        put(flag, crate::lifecycle::world_finalized() as c_int)
    }

    /// Ends the whole job with `errorcode`, whatever `comm`.
    fn MPI_Abort / PMPI_Abort(_comm: c_int, errorcode: c_int) {
        state::abort(errorcode, "MPI_Abort was called")
    }

    fn MPI_Get_processor_name / PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) {
        let host = hostname();
        put_text(name, MPI_MAX_PROCESSOR_NAME, resultlen, &host)
    }

    fn MPI_Get_version / PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) {
        put(version, MPI_VERSION)?;
        put(subversion, MPI_SUBVERSION)
    }

    fn MPI_Get_library_version / PMPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) {
        put_text(version, MPI_MAX_LIBRARY_VERSION_STRING, resultlen, LIBRARY_VERSION)
    }

    fn MPI_Error_string / PMPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) {
        let text = match class_text(errorcode) {
            Some(text) => text.to_string(),
            None => match crate::added_errors::string_of(errorcode) {
                Some(text) => text,
                None => return fail(MPI_ERR_ARG, format!("{errorcode} is not an error code")),
            },
        };
        put_text(string, MPI_MAX_ERROR_STRING, resultlen, &text)
    }

    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) {
        if class_text(errorcode).is_some() {
            return put(errorclass, errorcode);
        }
        match crate::added_errors::class_of(errorcode) {
            Some(class) => put(errorclass, class),
            None => fail(MPI_ERR_ARG, format!("{errorcode} is not an error code")),
        }
    }

    /// Sets `comm`'s error handler: `MPI_ERRORS_ARE_FATAL`, `MPI_ERRORS_ABORT`,
    /// `MPI_ERRORS_RETURN` or the program's.
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(comm: c_int, errhandler: c_int) {
        set_errhandler(comm, errhandler)
    }

    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(comm: c_int, errhandler: *mut c_int) {
        let handler = state::with(|s| {
            s.comm(comm)?;
            Ok(s.errhandlers.get(&comm).copied().unwrap_or(MPI_ERRORS_ARE_FATAL))
        })?;
        put(errhandler, handler)
    }

    /// The predefined handlers are never freed; the handle becomes NULL.
    fn MPI_Errhandler_free / PMPI_Errhandler_free(errhandler: *mut c_int) {
        let handler = get(errhandler)?;
        // Communicators that use a freed user handler keep it.
        if !predefined_handler(handler) && crate::errhandler::user(handler).is_none() {
            return fail(MPI_ERR_ARG, format!("{handler:#x} is not an error handler"));
        }
        put(errhandler, MPI_ERRHANDLER_NULL)
    }
}

fn predefined_handler(handler: c_int) -> bool {
    matches!(handler, MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT)
}

pub(crate) fn set_errhandler(comm: c_int, handler: c_int) -> MpiResult {
    state::with(|s| {
        s.comm(comm)?;
        if !crate::errhandler::exists(handler) {
            return fail(MPI_ERR_ARG, format!("{handler:#x} is not an error handler"));
        }
        s.errhandlers.insert(comm, handler);
        Ok(())
    })
}

pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string())
}

pub(crate) fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Seconds since an arbitrary moment of this process (monotonic).
#[no_mangle]
pub extern "C" fn PMPI_Wtime() -> c_double {
    epoch().elapsed().as_secs_f64()
}

/// Seconds since an arbitrary moment of this process (monotonic).
#[no_mangle]
pub extern "C" fn MPI_Wtime() -> c_double {
    PMPI_Wtime()
}

/// The resolution of [`MPI_Wtime`].
#[no_mangle]
pub extern "C" fn PMPI_Wtick() -> c_double {
    1e-9
}

/// The resolution of [`MPI_Wtime`].
#[no_mangle]
pub extern "C" fn MPI_Wtick() -> c_double {
    PMPI_Wtick()
}
