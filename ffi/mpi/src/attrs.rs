//! Communicator attributes the standard predefines, names, and the profiling control.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use crate::call::{self, mpi_fn};
use crate::consts::*;
use crate::error::{class_text, MpiError, MpiResult};
use crate::ptr::{c_str, put, put_text};
use crate::state;

/// The values the predefined attributes point to (they must outlive every call).
static TAG_UB: AtomicI32 = AtomicI32::new(i32::MAX);
static HOST: AtomicI32 = AtomicI32::new(MPI_PROC_NULL);
static IO: AtomicI32 = AtomicI32::new(MPI_ANY_SOURCE);
static WTIME_IS_GLOBAL: AtomicI32 = AtomicI32::new(0);
static UNIVERSE_SIZE: AtomicI32 = AtomicI32::new(1);
/// The last error code or class used: the last predefined one until the program adds one.
static LASTUSEDCODE: AtomicI32 = AtomicI32::new(MPI_ERR_LASTCODE);
static APPNUM: AtomicI32 = AtomicI32::new(0);

/// Records the last error code or class a program added.
pub(crate) fn set_last_used_code(code: c_int) {
    LASTUSEDCODE.store(code, Ordering::Relaxed);
}

/// # Safety
/// `value` is valid for a write of a pointer and `flag` of an `int`.
unsafe fn get_attr(comm: c_int, keyval: c_int, value: *mut c_void, flag: *mut c_int) -> MpiResult {
    let size = state::with(|s| Ok(s.comm(comm)?.size()))?;
    let cell = match keyval {
        MPI_TAG_UB => &TAG_UB,
        MPI_HOST => &HOST,
        MPI_IO => &IO,
        MPI_WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL,
        MPI_UNIVERSE_SIZE => {
            let world = state::with(|s| Ok(s.world.size()))?;
            UNIVERSE_SIZE.store(world.max(size) as i32, Ordering::Relaxed);
            &UNIVERSE_SIZE
        }
        MPI_LASTUSEDCODE => &LASTUSEDCODE,
        MPI_APPNUM => &APPNUM,
        other => {
            // SAFETY: the caller's contract: the value (a pointer) goes through `value`.
            return unsafe {
                match crate::keyval::value(comm, other)? {
                    Some(v) => {
                        put(value.cast::<*mut c_void>(), v as *mut c_void)?;
                        put(flag, 1)
                    }
                    None => put(flag, 0),
                }
            };
        }
    };
    // SAFETY: the caller's contract: MPI writes the attribute (a pointer) through `value`.
    unsafe {
        put(value.cast::<*const AtomicI32>(), cell as *const AtomicI32)?;
        put(flag, 1)
    }
}

mpi_fn! {
    /// The predefined attributes (`MPI_TAG_UB`, `MPI_HOST`, `MPI_IO`, `MPI_WTIME_IS_GLOBAL`,
    /// `MPI_UNIVERSE_SIZE`, `MPI_LASTUSEDCODE`, `MPI_APPNUM`).
    fn MPI_Comm_get_attr / PMPI_Comm_get_attr(comm: c_int, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) {
        get_attr(comm, keyval, attribute_val, flag)
    }

    fn MPI_Attr_get / PMPI_Attr_get(comm: c_int, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) {
        get_attr(comm, keyval, attribute_val, flag)
    }

    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: c_int, comm_name: *const c_char) {
        let name = c_str(comm_name)?;
        let name = name.chars().take(MPI_MAX_OBJECT_NAME - 1).collect();
        state::with(|s| {
            s.comm(comm)?;
            s.names.insert(comm, name);
            Ok(())
        })
    }

    fn MPI_Comm_get_name / PMPI_Comm_get_name(comm: c_int, comm_name: *mut c_char, resultlen: *mut c_int) {
        let name = state::with(|s| {
            s.comm(comm)?;
            Ok(match (s.names.get(&comm), comm) {
                (Some(name), _) => name.clone(),
                (None, MPI_COMM_WORLD) => "MPI_COMM_WORLD".to_string(),
                (None, MPI_COMM_SELF) => "MPI_COMM_SELF".to_string(),
                (None, _) => String::new(),
            })
        })?;
        put_text(comm_name, MPI_MAX_OBJECT_NAME, resultlen, &name)
    }

    /// Raises `errorcode` on `comm`: its error handler decides.
    fn MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler(comm: c_int, errorcode: c_int) {
        state::with(|s| s.comm(comm).map(drop))?;
        match state::errhandler(comm) {
            // The handler runs and the call returns.
            Some(MPI_ERRORS_RETURN) => return Ok(()),
            Some(handler) => {
                if let Some(function) = crate::errhandler::user(handler) {
                    crate::errhandler::call(function, comm, errorcode);
                    return Ok(());
                }
            }
            None => {}
        }
        call::on_comm(comm);
        let text = class_text(errorcode).unwrap_or("error raised by the program");
        Err(MpiError::new(errorcode, text))
    }
}

/// Profiling control: nothing to do without a profiler.
#[no_mangle]
pub extern "C" fn PMPI_Pcontrol(_level: c_int) -> c_int {
    MPI_SUCCESS
}

/// Profiling control: nothing to do without a profiler.
#[no_mangle]
pub extern "C" fn MPI_Pcontrol(level: c_int) -> c_int {
    PMPI_Pcontrol(level)
}
