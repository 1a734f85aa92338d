//! Checks of collective arguments that MPI makes erroneous and that one process can see
//! alone: a send buffer that is the receive buffer, and a predefined operation on a
//! datatype outside its classes. Each fails before anything is sent, so a rank whose call
//! failed leaves no peer waiting on a message it began.

use std::ffi::{c_int, c_void};
use std::ops::Range;

use crate::consts::ops::*;
use crate::consts::types::*;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::ptr::in_place;
use crate::state;

/// Fails when `sendbuf` is `recvbuf` (but for `MPI_IN_PLACE`) and `counted` (some data
/// moves): MPI gives `MPI_IN_PLACE` for sharing one buffer.
pub(crate) fn distinct(sendbuf: *const c_void, recvbuf: *const c_void, counted: bool) -> MpiResult {
    if counted && same(sendbuf, recvbuf) {
        return fail(
            MPI_ERR_BUFFER,
            "the send and receive buffers are the same (MPI_IN_PLACE shares one)",
        );
    }
    Ok(())
}

/// Whether `sendbuf` is `recvbuf` and not `MPI_IN_PLACE`: a pointer comparison, so that a
/// call looks its communicator up only when the buffers are one.
fn same(sendbuf: *const c_void, recvbuf: *const c_void) -> bool {
    !sendbuf.is_null() && sendbuf == recvbuf && !in_place(sendbuf)
}

/// Whether this process is the root of a rooted collective on intra-communicator `comm`
/// (false on an inter-communicator, whose roots have one buffer each).
pub(crate) fn root_here(comm: c_int, root: c_int) -> MpiResult<bool> {
    state::with(|s| {
        let c = s.comm(comm)?;
        Ok(!c.is_inter() && usize::try_from(root).is_ok_and(|r| r == c.rank()))
    })
}

/// [`distinct`] at the root of a rooted collective.
pub(crate) fn distinct_at_root(
    comm: c_int,
    root: c_int,
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    counted: bool,
) -> MpiResult {
    if counted && same(sendbuf, recvbuf) && root_here(comm, root)? {
        return distinct(sendbuf, recvbuf, true);
    }
    Ok(())
}

#[derive(PartialEq)]
enum Class {
    /// C and Fortran integers (with MPICH's extras: `char`, `CHARACTER`, `INTEGERn`).
    Integer,
    Float,
    Logical,
    Complex,
    Byte,
    /// The value-and-index pairs of `MPI_MINLOC` and `MPI_MAXLOC`.
    Pair,
}

fn class(datatype: c_int) -> Option<Class> {
    Some(match datatype {
        MPI_CHAR
        | MPI_SIGNED_CHAR
        | MPI_UNSIGNED_CHAR
        | MPI_SHORT
        | MPI_UNSIGNED_SHORT
        | MPI_INT
        | MPI_UNSIGNED
        | MPI_LONG
        | MPI_UNSIGNED_LONG
        | MPI_LONG_LONG_INT
        | MPI_UNSIGNED_LONG_LONG
        | MPI_INT8_T
        | MPI_INT16_T
        | MPI_INT32_T
        | MPI_INT64_T
        | MPI_UINT8_T
        | MPI_UINT16_T
        | MPI_UINT32_T
        | MPI_UINT64_T
        | MPI_INTEGER
        | MPI_AINT
        | MPI_OFFSET
        | MPI_COUNT
        | MPI_CHARACTER
        | MPI_INTEGER1
        | MPI_INTEGER2
        | MPI_INTEGER4
        | MPI_INTEGER8 => Class::Integer,
        MPI_FLOAT | MPI_DOUBLE | MPI_LONG_DOUBLE | MPI_REAL | MPI_DOUBLE_PRECISION | MPI_REAL4
        | MPI_REAL8 => Class::Float,
        MPI_C_BOOL | MPI_LOGICAL => Class::Logical,
        MPI_C_FLOAT_COMPLEX
        | MPI_C_DOUBLE_COMPLEX
        | MPI_C_LONG_DOUBLE_COMPLEX
        | MPI_COMPLEX
        | MPI_DOUBLE_COMPLEX
        | MPI_COMPLEX8
        | MPI_COMPLEX16
        | MPI_CXX_FLOAT_COMPLEX
        | MPI_CXX_DOUBLE_COMPLEX
        | MPI_CXX_LONG_DOUBLE_COMPLEX => Class::Complex,
        MPI_BYTE => Class::Byte,
        MPI_FLOAT_INT | MPI_DOUBLE_INT | MPI_LONG_INT | MPI_SHORT_INT | MPI_2INT
        | MPI_LONG_DOUBLE_INT | MPI_2INTEGER => Class::Pair,
        _ => return None,
    })
}

/// Fails when predefined `op` is not defined on predefined `datatype` (MPI's table of
/// operations by datatype class). Derived datatypes, user operations and predefined types
/// outside the table are left to the reduction, which refuses what it cannot do.
pub(crate) fn op_defined(op: c_int, datatype: c_int) -> MpiResult {
    let Some(class) = class(datatype) else { return Ok(()) };
    let defined = match op {
        MPI_MAX | MPI_MIN => matches!(class, Class::Integer | Class::Float),
        MPI_SUM | MPI_PROD => matches!(class, Class::Integer | Class::Float | Class::Complex),
        MPI_LAND | MPI_LOR | MPI_LXOR => matches!(class, Class::Integer | Class::Logical),
        MPI_BAND | MPI_BOR | MPI_BXOR => matches!(class, Class::Integer | Class::Byte),
        MPI_MAXLOC | MPI_MINLOC => class == Class::Pair,
        _ => true,
    };
    if !defined {
        return fail(
            MPI_ERR_OP,
            format!("predefined operation {op:#x} is not defined on datatype {datatype:#x}"),
        );
    }
    Ok(())
}

/// [`distinct`] on an intra-communicator (an inter-communicator's two buffers meet
/// different groups).
pub(crate) fn distinct_intra(
    comm: c_int,
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    counted: bool,
) -> MpiResult {
    if counted && same(sendbuf, recvbuf) && !state::with(|s| Ok(s.comm(comm)?.is_inter()))? {
        return distinct(sendbuf, recvbuf, true);
    }
    Ok(())
}

/// The bytes `count` elements of `datatype` touch, as offsets from their buffer: from the
/// lowest true lower bound to the highest true upper bound (before the buffer where the
/// datatype reaches back: negative displacements, lower bounds or extents).
pub(crate) fn span(count: usize, datatype: c_int) -> MpiResult<Range<i128>> {
    let info = crate::typemap::layout(datatype)?.0;
    if count == 0 || info.size == 0 {
        return Ok(0..0);
    }
    let step = (count as i128 - 1) * info.extent as i128;
    let first = info.true_lb as i128;
    Ok(first + step.min(0)..first + info.true_extent as i128 + step.max(0))
}

/// Fails when the `send` bytes at `sendbuf` overlap the `recv` bytes at `recvbuf` (a send
/// block inside the receive area, as `&buf[rank]` of `buf`).
pub(crate) fn apart(
    sendbuf: *const c_void,
    send: Range<i128>,
    recvbuf: *const c_void,
    recv: Range<i128>,
) -> MpiResult {
    if send.is_empty() || recv.is_empty() || sendbuf.is_null() || in_place(sendbuf) {
        return Ok(());
    }
    let (s, r) = (sendbuf as usize as i128, recvbuf as usize as i128);
    if s + send.start < r + recv.end && r + recv.start < s + send.end {
        return fail(
            MPI_ERR_BUFFER,
            "the send buffer overlaps the receive buffer (MPI_IN_PLACE shares one)",
        );
    }
    Ok(())
}
