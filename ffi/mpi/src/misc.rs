//! Small calls: memory for MPI, request status without completing, status fields set by
//! the program.

use std::ffi::{c_int, c_long, c_void};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::ptr::{get, put};
use crate::status;
use crate::typemap::layout;

mpi_fn! {
    fn MPI_Alloc_mem / PMPI_Alloc_mem(size: c_long, _info: c_int, baseptr: *mut c_void) {
        let Ok(size) = usize::try_from(size) else {
            return fail(MPI_ERR_ARG, format!("size {size} is negative"));
        };
        // SAFETY: plain allocation; the program frees it with MPI_Free_mem.
        let memory = unsafe { libc::malloc(size.max(1)) };
        if memory.is_null() {
            return fail(34, format!("cannot allocate {size} bytes"));
        }
        put(baseptr.cast::<*mut c_void>(), memory)
    }

    fn MPI_Free_mem / PMPI_Free_mem(base: *mut c_void) {
        // SAFETY: memory from MPI_Alloc_mem (or NULL), as MPI requires.
        unsafe { libc::free(base) };
        Ok(())
    }

    fn MPI_Status_set_elements / PMPI_Status_set_elements(status: *mut MpiStatus, datatype: c_int, count: c_int) {
        set_elements(status, datatype, crate::ptr::count(count)? as u64)
    }

    fn MPI_Status_set_elements_x / PMPI_Status_set_elements_x(status: *mut MpiStatus, datatype: c_int, count: i64) {
        let Ok(count) = u64::try_from(count) else {
            return fail(MPI_ERR_COUNT, format!("count {count} is negative"));
        };
        set_elements(status, datatype, count)
    }

    /// `MPI_Get_elements` with an `MPI_Count`.
    fn MPI_Get_elements_x / PMPI_Get_elements_x(status: *const MpiStatus, datatype: c_int, count: *mut i64) {
        let n = crate::p2p::counted(status, datatype, true)?;
        put(count, n.and_then(|n| i64::try_from(n).ok()).unwrap_or(MPI_UNDEFINED as i64))
    }

    fn MPI_Status_set_cancelled / PMPI_Status_set_cancelled(status: *mut MpiStatus, flag: c_int) {
        let mut s = get(status)?;
        s.count_hi_and_cancelled = (s.count_hi_and_cancelled & !1) | (flag != 0) as c_int;
        put(status, s)
    }
}

/// Sets `status` to `count` basic elements of `datatype`: whole datatypes and, for one of
/// elements alike, any number of them.
///
/// # Safety
/// `status` is readable and writable.
unsafe fn set_elements(status: *mut MpiStatus, datatype: c_int, count: u64) -> MpiResult {
    let info = layout(datatype)?.0;
    let bytes = if info.basic > 0 {
        count * info.basic as u64
    } else if info.elements > 0 && count % info.elements as u64 == 0 {
        count / info.elements as u64 * info.packed as u64
    } else {
        let why = format!("{count} elements end inside a datatype of mixed elements");
        return fail(MPI_ERR_UNSUPPORTED_OPERATION, format!("MPI_Status_set_elements: {why}"));
    };
    // SAFETY: the caller's contract.
    let mut s = unsafe { get(status) }?;
    let fresh = status::of_message(s.source, s.tag, bytes as usize);
    s.count_lo = fresh.count_lo;
    s.count_hi_and_cancelled = fresh.count_hi_and_cancelled | (s.count_hi_and_cancelled & 1);
    // SAFETY: the caller's contract.
    unsafe { put(status, s) }
}
