//! The variables and helper functions that MPICH's `mpi.h` refers to by name, and the
//! calls that do not return an `int`.

use std::ffi::{c_int, c_long, c_void};

/// A pointer a C program reads as `int * const`.
#[repr(transparent)]
pub struct ConstPtr(*const c_int);

impl ConstPtr {
    /// The address, to compare a program's argument against.
    pub(crate) fn addr(&self) -> *const c_int {
        self.0
    }
}

// SAFETY: the pointers are never written through by this library; they are addresses the
// program compares against.
unsafe impl Sync for ConstPtr {}

static UNWEIGHTED_TARGET: c_int = 0;
static WEIGHTS_EMPTY_TARGET: c_int = 0;

/// `MPI_UNWEIGHTED`: an address distinct from any array.
#[no_mangle]
pub static MPI_UNWEIGHTED: ConstPtr = ConstPtr(&UNWEIGHTED_TARGET);

/// `MPI_WEIGHTS_EMPTY`: an address distinct from any array.
#[no_mangle]
pub static MPI_WEIGHTS_EMPTY: ConstPtr = ConstPtr(&WEIGHTS_EMPTY_TARGET);

/// Fortran's `MPI_F_STATUS_IGNORE` (NULL: the Fortran interface is not provided).
#[no_mangle]
pub static MPI_F_STATUS_IGNORE: ConstPtr = ConstPtr(std::ptr::null());

/// Fortran's `MPI_F_STATUSES_IGNORE` (NULL: the Fortran interface is not provided).
#[no_mangle]
pub static MPI_F_STATUSES_IGNORE: ConstPtr = ConstPtr(std::ptr::null());

/// `MPI_DUP_FN`: copies an attribute's value.
///
/// # Safety
/// `attr_out` and `flag` are valid for writes, or NULL.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _comm: c_int,
    _keyval: c_int,
    _extra: *mut c_void,
    attr_in: *mut c_void,
    attr_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    if !attr_out.is_null() {
        // SAFETY: MPI passes the address of a `void *` to set.
        unsafe { attr_out.cast::<*mut c_void>().write(attr_in) };
    }
    if !flag.is_null() {
        // SAFETY: not NULL; MPI passes the address of an `int`.
        unsafe { flag.write(1) };
    }
    0
}

/// `base + disp` on addresses.
#[no_mangle]
pub extern "C" fn PMPI_Aint_add(base: c_long, disp: c_long) -> c_long {
    base.wrapping_add(disp)
}

/// `base + disp` on addresses.
#[no_mangle]
pub extern "C" fn MPI_Aint_add(base: c_long, disp: c_long) -> c_long {
    PMPI_Aint_add(base, disp)
}

/// `a - b` on addresses.
#[no_mangle]
pub extern "C" fn PMPI_Aint_diff(a: c_long, b: c_long) -> c_long {
    a.wrapping_sub(b)
}

/// `a - b` on addresses.
#[no_mangle]
pub extern "C" fn MPI_Aint_diff(a: c_long, b: c_long) -> c_long {
    PMPI_Aint_diff(a, b)
}

/// Info handles are the same in C and Fortran.
#[no_mangle]
pub extern "C" fn PMPI_Info_c2f(info: c_int) -> c_int {
    info
}

/// Info handles are the same in C and Fortran.
#[no_mangle]
pub extern "C" fn MPI_Info_c2f(info: c_int) -> c_int {
    info
}

/// Info handles are the same in C and Fortran.
#[no_mangle]
pub extern "C" fn PMPI_Info_f2c(info: c_int) -> c_int {
    info
}

/// Info handles are the same in C and Fortran.
#[no_mangle]
pub extern "C" fn MPI_Info_f2c(info: c_int) -> c_int {
    info
}

/// Files are not provided: no file has a Fortran handle.
#[no_mangle]
pub extern "C" fn PMPI_File_c2f(_file: *mut c_void) -> c_int {
    0
}

/// Files are not provided: no file has a Fortran handle.
#[no_mangle]
pub extern "C" fn MPI_File_c2f(_file: *mut c_void) -> c_int {
    0
}

/// Files are not provided: every Fortran handle is `MPI_FILE_NULL`.
#[no_mangle]
pub extern "C" fn PMPI_File_f2c(_file: c_int) -> *mut c_void {
    std::ptr::null_mut()
}

/// Files are not provided: every Fortran handle is `MPI_FILE_NULL`.
#[no_mangle]
pub extern "C" fn MPI_File_f2c(_file: c_int) -> *mut c_void {
    std::ptr::null_mut()
}
