//! Predefined reductions on `long double`, the complex types and `MPI_LONG_DOUBLE_INT`,
//! which core cannot compute (Rust has no `long double`, and core no complex type). They
//! are C functions (`wide_ops.c`, built by `build.rs`) that the library runs as operations
//! of its own, each registered once, through the path a program's operation takes.

use std::ffi::c_int;
use std::sync::{Mutex, PoisonError};

use crate::consts::ops::*;
use crate::consts::types::*;
use crate::consts::MPI_ERR_OP;
use crate::error::{fail, MpiResult};
use crate::ops::UserFunction;

extern "C" {
    fn commcore_mpi_long_double_sum(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_long_double_prod(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_long_double_max(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_long_double_min(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_float_complex_sum(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_float_complex_prod(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_double_complex_sum(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_double_complex_prod(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_long_double_complex_sum(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_long_double_complex_prod(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_long_double_int_minloc(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
    fn commcore_mpi_long_double_int_maxloc(
        a: *mut std::ffi::c_void,
        b: *mut std::ffi::c_void,
        n: *mut c_int,
        t: *mut c_int,
    );
}

/// The complex types by their size: C's, C++'s and Fortran's of single and double
/// precision (Fortran's quadruple precision is not C's `long double`).
const FLOAT_COMPLEX: [c_int; 4] =
    [MPI_C_FLOAT_COMPLEX, MPI_CXX_FLOAT_COMPLEX, MPI_COMPLEX, MPI_COMPLEX8];
const DOUBLE_COMPLEX: [c_int; 4] =
    [MPI_C_DOUBLE_COMPLEX, MPI_CXX_DOUBLE_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_COMPLEX16];
const LONG_DOUBLE_COMPLEX: [c_int; 2] = [MPI_C_LONG_DOUBLE_COMPLEX, MPI_CXX_LONG_DOUBLE_COMPLEX];

/// The kinds of element these functions compute.
#[derive(Clone, Copy)]
enum Wide {
    LongDouble,
    FloatComplex,
    DoubleComplex,
    LongDoubleComplex,
    LongDoubleInt,
}

fn wide(datatype: c_int) -> Option<Wide> {
    Some(match datatype {
        MPI_LONG_DOUBLE => Wide::LongDouble,
        MPI_LONG_DOUBLE_INT => Wide::LongDoubleInt,
        t if FLOAT_COMPLEX.contains(&t) => Wide::FloatComplex,
        t if DOUBLE_COMPLEX.contains(&t) => Wide::DoubleComplex,
        t if LONG_DOUBLE_COMPLEX.contains(&t) => Wide::LongDoubleComplex,
        _ => return None,
    })
}

/// The C function of predefined `op` on `kind`, with its slot in [`MADE`].
fn function(kind: Wide, op: c_int) -> Option<(usize, UserFunction)> {
    use Wide::*;
    let f: (usize, UserFunction) = match (kind, op) {
        (LongDouble, MPI_SUM) => (0, commcore_mpi_long_double_sum),
        (LongDouble, MPI_PROD) => (1, commcore_mpi_long_double_prod),
        (LongDouble, MPI_MAX) => (2, commcore_mpi_long_double_max),
        (LongDouble, MPI_MIN) => (3, commcore_mpi_long_double_min),
        (FloatComplex, MPI_SUM) => (4, commcore_mpi_float_complex_sum),
        (FloatComplex, MPI_PROD) => (5, commcore_mpi_float_complex_prod),
        (DoubleComplex, MPI_SUM) => (6, commcore_mpi_double_complex_sum),
        (DoubleComplex, MPI_PROD) => (7, commcore_mpi_double_complex_prod),
        (LongDoubleComplex, MPI_SUM) => (8, commcore_mpi_long_double_complex_sum),
        (LongDoubleComplex, MPI_PROD) => (9, commcore_mpi_long_double_complex_prod),
        (LongDoubleInt, MPI_MINLOC) => (10, commcore_mpi_long_double_int_minloc),
        (LongDoubleInt, MPI_MAXLOC) => (11, commcore_mpi_long_double_int_maxloc),
        _ => return None,
    };
    Some(f)
}

/// The library's operations made so far, by slot.
static MADE: Mutex<[Option<c_int>; 12]> = Mutex::new([None; 12]);

/// The operation that computes `op` on `datatype`: `op` itself, unless it is predefined and
/// the datatype is one of these (then the library's own, or an error if MPI does not
/// define it there).
pub(crate) fn op_for(datatype: c_int, op: c_int) -> MpiResult<c_int> {
    crate::arguments::op_defined(op, datatype)?;
    let Some(kind) = wide(datatype) else { return Ok(op) };
    if crate::ops::is_user(op) {
        return Ok(op);
    }
    let Some((slot, f)) = function(kind, op) else {
        return fail(
            MPI_ERR_OP,
            format!("operation {op:#x} is not defined on datatype {datatype:#x}"),
        );
    };
    let mut made = MADE.lock().unwrap_or_else(PoisonError::into_inner);
    Ok(*made[slot].get_or_insert_with(|| crate::ops::internal(f)))
}
