//! User reductions (`MPI_Op_create`): the program's function runs where core combines two
//! operands, through one trampoline that finds it in a thread-local (calls are serialized,
//! and a collective combines in the calling thread).

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, PoisonError};

use commcore::coll::{Datatype, UserOp};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::datatype::TypeInfo;
use crate::error::{fail, MpiResult};
use crate::ptr::{get, put};

/// `MPI_User_function`: `inoutvec[i] = invec[i] op inoutvec[i]` for `*len` elements.
pub(crate) type UserFunction = unsafe extern "C" fn(
    invec: *mut c_void,
    inoutvec: *mut c_void,
    len: *mut c_int,
    datatype: *mut c_int,
);

/// Kind bits of user operation handles.
const OP_KIND: u32 = 0x9800_0000;

#[derive(Clone, Copy)]
struct Defined {
    function: UserFunction,
    commutative: bool,
}

struct Table {
    ops: HashMap<c_int, Defined>,
    next: u32,
}

static OPS: Mutex<Option<Table>> = Mutex::new(None);

/// The user function of the reduction running in this thread, its datatype and extent.
#[derive(Clone, Copy)]
struct Running {
    function: UserFunction,
    datatype: c_int,
    extent: usize,
}

thread_local! {
    static RUNNING: Cell<Option<Running>> = const { Cell::new(None) };
}

fn defined(op: c_int) -> Option<Defined> {
    OPS.lock().unwrap_or_else(PoisonError::into_inner).as_ref()?.ops.get(&op).copied()
}

/// Whether `op` is a user operation this library made.
pub(crate) fn is_user(op: c_int) -> bool {
    defined(op).is_some()
}

/// Whether core's schedules take user operations on a datatype of `info`: contiguous, of
/// an extent that is a core element.
pub(crate) fn core_takes(info: &TypeInfo) -> bool {
    info.contiguous && matches!(info.extent, 1 | 2 | 4 | 8 | 16)
}

/// Runs user operation `op`: `inoutvec = invec op inoutvec` over `len` elements.
///
/// # Safety
/// Both buffers hold `len` elements of `datatype`, laid out as it says.
pub(crate) unsafe fn call(
    op: c_int,
    invec: *mut c_void,
    inoutvec: *mut c_void,
    len: &mut c_int,
    datatype: &mut c_int,
) -> MpiResult {
    let Some(defined) = defined(op) else {
        return fail(MPI_ERR_OP, format!("{op:#x} is not an operation"));
    };
    // SAFETY: the program's MPI_User_function on buffers as the caller's contract says.
    unsafe { (defined.function)(invec, inoutvec, len, datatype) };
    Ok(())
}

/// A new handle for user operation `op` (`None` for any other handle).
pub(crate) fn copy(op: c_int) -> Option<c_int> {
    let copy = defined(op)?;
    Some(add(copy))
}

/// Forgets user operation handle `op`.
pub(crate) fn remove(op: c_int) {
    OPS.lock().unwrap_or_else(PoisonError::into_inner).as_mut().map(|t| t.ops.remove(&op));
}

/// A commutative operation of the library's own, run as a program's would be.
pub(crate) fn internal(function: UserFunction) -> c_int {
    add(Defined { function, commutative: true })
}

fn add(defined: Defined) -> c_int {
    let mut guard = OPS.lock().unwrap_or_else(PoisonError::into_inner);
    let table = guard.get_or_insert_with(|| Table { ops: HashMap::new(), next: 0 });
    table.next = (table.next + 1) & 0x03ff_ffff;
    let handle = (OP_KIND | table.next) as c_int;
    table.ops.insert(handle, defined);
    handle
}

/// The core reduction for user op `op` on `datatype` (of `info`), made ready to run in
/// this thread. Core's element is a type of the datatype's extent, so that no schedule
/// splits one of the program's elements.
pub(crate) fn prepare(
    op: c_int,
    datatype: c_int,
    info: &TypeInfo,
) -> MpiResult<(Datatype, UserOp)> {
    let Some(defined) = defined(op) else {
        return fail(MPI_ERR_OP, format!("{op:#x} is not an operation"));
    };
    if !info.contiguous {
        return fail(
            MPI_ERR_UNSUPPORTED_OPERATION,
            "user operations on non-contiguous datatypes are not provided yet",
        );
    }
    let dtype = match info.extent {
        1 => Datatype::U8,
        2 => Datatype::U16,
        4 => Datatype::U32,
        8 => Datatype::U64,
        16 => Datatype::PairF64I32,
        n => {
            return fail(
                MPI_ERR_UNSUPPORTED_OPERATION,
                format!("user operations on a datatype of {n} bytes are not provided yet"),
            )
        }
    };
    // Contiguous: the extent is the data's size, never negative.
    let extent = info.extent.unsigned_abs();
    RUNNING.with(|r| r.set(Some(Running { function: defined.function, datatype, extent })));
    Ok((dtype, UserOp { func: trampoline, commutative: defined.commutative }))
}

/// Core's combine step for a user operation: `dst = src ∘ dst` when `src_left`, else
/// `dst = dst ∘ src`.
fn trampoline(src: &[u8], dst: &mut [u8], _dtype: Datatype, src_left: bool) {
    let Some(running) = RUNNING.with(Cell::get) else { return };
    let mut len = (dst.len() / running.extent.max(1)) as c_int;
    let mut datatype = running.datatype;
    let mut left = if src_left { src.to_vec() } else { dst.to_vec() };
    if !src_left {
        dst.copy_from_slice(src);
    }
    // SAFETY: the program's MPI_User_function, given `len` whole elements of `datatype`
    // in both buffers, which are ours and distinct.
    unsafe {
        (running.function)(
            left.as_mut_ptr().cast(),
            dst.as_mut_ptr().cast(),
            &mut len,
            &mut datatype,
        )
    };
}

mpi_fn! {
    fn MPI_Op_create / PMPI_Op_create(user_fn: Option<UserFunction>, commute: c_int, op: *mut c_int) {
        let Some(function) = user_fn else {
            return fail(MPI_ERR_ARG, "the user function is NULL");
        };
        if op.is_null() {
            return fail(MPI_ERR_ARG, "op is NULL");
        }
        put(op, add(Defined { function, commutative: commute != 0 }))
    }

    fn MPI_Op_free / PMPI_Op_free(op: *mut c_int) {
        let handle = get(op)?;
        let removed = OPS.lock().unwrap_or_else(PoisonError::into_inner).as_mut().and_then(|t| t.ops.remove(&handle));
        if removed.is_none() {
            return fail(MPI_ERR_OP, format!("{handle:#x} is not a user operation (predefined ones cannot be freed)"));
        }
        put(op, MPI_OP_NULL)
    }

    fn MPI_Op_commutative / PMPI_Op_commutative(op: c_int, commute: *mut c_int) {
        let commutative = match defined(op) {
            Some(defined) => defined.commutative,
            None => crate::datatype::reduce_op(op).map(|_| true)?,
        };
        put(commute, commutative as c_int)
    }
}
