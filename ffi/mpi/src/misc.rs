//! Small calls: memory for MPI, request status without completing, status fields set by
//! the program.

use std::ffi::{c_int, c_long, c_void};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::fail;
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
        let bytes = crate::ptr::count(count)? * layout(datatype)?.0.packed;
        let mut s = get(status)?;
        let fresh = status::of_message(s.source, s.tag, bytes);
        s.count_lo = fresh.count_lo;
        s.count_hi_and_cancelled = fresh.count_hi_and_cancelled | (s.count_hi_and_cancelled & 1);
        put(status, s)
    }

    fn MPI_Status_set_cancelled / PMPI_Status_set_cancelled(status: *mut MpiStatus, flag: c_int) {
        let mut s = get(status)?;
        s.count_hi_and_cancelled = (s.count_hi_and_cancelled & !1) | (flag != 0) as c_int;
        put(status, s)
    }
}
