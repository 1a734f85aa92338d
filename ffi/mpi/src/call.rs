//! How every exported function runs: panics are caught (none crosses the C ABI), and an
//! error goes to the error handler of the communicator the call used.

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::consts::*;
use crate::error::{MpiError, MpiResult};
use crate::state;

extern "C" {
    fn commcore_mpi_set_call_comm(comm: c_int);
    fn commcore_mpi_call_comm() -> c_int;
}

/// Notes that the current call works on `comm` (its errors go to that handler).
#[inline]
pub(crate) fn on_comm(comm: c_int) {
    // 0 stands for the world (see call_comm.c); no handle is 0.
    let stored = if comm == MPI_COMM_WORLD { 0 } else { comm };
    // SAFETY: writes this thread's own variable; no pointer is involved.
    unsafe { commcore_mpi_set_call_comm(stored) }
}

/// The communicator the current call works on.
#[inline]
pub(crate) fn call_comm() -> c_int {
    // SAFETY: reads this thread's own variable; no pointer is involved.
    match unsafe { commcore_mpi_call_comm() } {
        0 => MPI_COMM_WORLD,
        comm => comm,
    }
}

/// Runs the body of MPI function `name` and returns its error code. Inlined: one frame
/// less per call (each is some 15 instructions of saved registers).
#[inline(always)]
pub(crate) fn run(name: &str, body: impl FnOnce() -> MpiResult) -> c_int {
    on_comm(MPI_COMM_WORLD);
    match outcome(body) {
        Ok(()) => MPI_SUCCESS,
        Err(error) => report(name, error),
    }
}

/// Runs `body` as [`run`] does, its errors going to `handler` (a call that makes a
/// communicator from groups alone names the handler the communicator gets, and MPI sends
/// the call's own errors there).
pub(crate) fn run_handled(name: &str, handler: c_int, body: impl FnOnce() -> MpiResult) -> c_int {
    match outcome(body) {
        Ok(()) => MPI_SUCCESS,
        Err(error) => report_to(name, error, MPI_COMM_NULL, handler),
    }
}

/// `body`'s result, a panic caught as an internal error.
#[inline(always)]
fn outcome(body: impl FnOnce() -> MpiResult) -> MpiResult {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| {
        Err(MpiError::new(MPI_ERR_INTERN, "internal error (a panic was caught)"))
    })
}

/// Hands `error` of call `name` to the current communicator's error handler: fatal ones
/// print it and abort the job; otherwise its class is returned.
pub(crate) fn report(name: &str, error: MpiError) -> c_int {
    let comm = call_comm();
    let handler = state::errhandler(comm).unwrap_or(MPI_ERRORS_ARE_FATAL);
    report_to(name, error, comm, handler)
}

/// Hands `error` of call `name` on `comm` to `handler`.
fn report_to(name: &str, error: MpiError, comm: c_int, handler: c_int) -> c_int {
    if handler == MPI_ERRORS_RETURN {
        return error.class;
    }
    if let Some(function) = crate::errhandler::user(handler) {
        crate::errhandler::call(function, comm, error.class);
        return error.class;
    }
    let message = format!("{name}: {}", error.message);
    eprintln!("{message}");
    state::abort(error.class.max(1), &message)
}

/// Declares MPI functions: each `MPI_X` calls `PMPI_X` (the profiling interface), whose
/// body returns `MpiResult` and runs under [`run`].
macro_rules! mpi_fn {
    ($( $(#[$doc:meta])* fn $name:ident / $pname:ident ( $($arg:ident : $ty:ty),* $(,)? ) $body:block )*) => { $(
        $(#[$doc])*
        ///
        /// # Safety
        /// Pointer arguments must be valid as the MPI standard requires for this call.
        #[no_mangle]
        #[allow(unused_unsafe, clippy::missing_safety_doc)]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> std::ffi::c_int {
            $crate::call::run(stringify!($name), || {
                // SAFETY: the caller passes pointers valid as MPI requires for this call;
                // the helpers of `ptr` check NULL and MPI's sentinel addresses.
                unsafe { $body }
            })
        }

        $(#[$doc])*
        ///
        /// # Safety
        /// As for the profiling entry point it calls.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::ffi::c_int {
            // SAFETY: the same arguments under the same contract.
            unsafe { $pname($($arg),*) }
        }
    )* };
}
pub(crate) use mpi_fn;

/// Defines calls that are not provided yet: each fails with
/// `MPI_ERR_UNSUPPORTED_OPERATION` naming itself. Their arguments are not read (returning
/// an `int` is all the C ABI needs of them).
macro_rules! unsupported {
    ($($name:ident $pname:ident)*) => { $(
        /// Not provided yet: fails with `MPI_ERR_UNSUPPORTED_OPERATION`.
        #[no_mangle]
        pub extern "C" fn $pname() -> std::ffi::c_int {
            $crate::call::not_provided(stringify!($name))
        }

        /// Not provided yet: fails with `MPI_ERR_UNSUPPORTED_OPERATION`.
        #[no_mangle]
        pub extern "C" fn $name() -> std::ffi::c_int {
            $pname()
        }
    )* };
}
pub(crate) use unsupported;

/// The error of a call whose body panicked outside `run`.
pub(crate) fn not_whole(name: &str) -> c_int {
    run(name, || Err(MpiError::new(MPI_ERR_INTERN, "internal error (a panic was caught)")))
}

/// The error of a call this library does not provide yet.
pub(crate) fn not_provided(name: &str) -> c_int {
    run(name, || {
        Err(MpiError::new(
            MPI_ERR_UNSUPPORTED_OPERATION,
            "this call is not provided by commcore's MPI library yet",
        ))
    })
}

/// Declares MPI-1 names that are other calls under another name: `MPI_X` calls `PMPI_X`,
/// which calls the current call's profiling entry point with the same arguments.
macro_rules! alias {
    ($( fn $name:ident / $pname:ident => $target:ident ( $($arg:ident : $ty:ty),* ) )*) => { $(
        /// The older name of a current call.
        ///
        /// # Safety
        /// As for the call it stands for.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> std::ffi::c_int {
            // SAFETY: the same arguments under the same contract.
            unsafe { $target($($arg),*) }
        }

        /// The older name of a current call.
        ///
        /// # Safety
        /// As for the call it stands for.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::ffi::c_int {
            // SAFETY: the same arguments under the same contract.
            unsafe { $pname($($arg),*) }
        }
    )* };
}
pub(crate) use alias;
