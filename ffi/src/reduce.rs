//! Reductions: the built-in operations over the built-in datatypes, and user operations
//! through a host callback.

use core::ffi::c_void;

use commcore_core::coll::{reduce as core_reduce, Datatype, Op, OpError, ReduceOp};

use crate::handle::{self, handle, Shell};
use crate::result::*;

/// A built-in datatype (the `dtype` of arguments and steps).
pub type commcore_datatype = u32;
/// `int8_t`.
pub const COMMCORE_DT_I8: commcore_datatype = 0;
/// `int16_t`.
pub const COMMCORE_DT_I16: commcore_datatype = 1;
/// `int32_t`.
pub const COMMCORE_DT_I32: commcore_datatype = 2;
/// `int64_t`.
pub const COMMCORE_DT_I64: commcore_datatype = 3;
/// `uint8_t`.
pub const COMMCORE_DT_U8: commcore_datatype = 4;
/// `uint16_t`.
pub const COMMCORE_DT_U16: commcore_datatype = 5;
/// `uint32_t`.
pub const COMMCORE_DT_U32: commcore_datatype = 6;
/// `uint64_t`.
pub const COMMCORE_DT_U64: commcore_datatype = 7;
/// `float`.
pub const COMMCORE_DT_F32: commcore_datatype = 8;
/// `double`.
pub const COMMCORE_DT_F64: commcore_datatype = 9;
/// `struct { int16_t v; int32_t i; }` (MPI_SHORT_INT), 8 bytes.
pub const COMMCORE_DT_PAIR_I16_I32: commcore_datatype = 10;
/// `struct { int32_t v; int32_t i; }` (MPI_2INT), 8 bytes.
pub const COMMCORE_DT_PAIR_I32_I32: commcore_datatype = 11;
/// `struct { int64_t v; int32_t i; }` (MPI_LONG_INT), 16 bytes.
pub const COMMCORE_DT_PAIR_I64_I32: commcore_datatype = 12;
/// `struct { float v; int32_t i; }` (MPI_FLOAT_INT), 8 bytes.
pub const COMMCORE_DT_PAIR_F32_I32: commcore_datatype = 13;
/// `struct { double v; int32_t i; }` (MPI_DOUBLE_INT), 16 bytes.
pub const COMMCORE_DT_PAIR_F64_I32: commcore_datatype = 14;

/// A reduction (the `reduce_op` of arguments, the `op` of REDUCE steps).
pub type commcore_reduce_op = u32;
/// Sum (integers wrap).
pub const COMMCORE_OP_SUM: commcore_reduce_op = 0;
/// Product (integers wrap).
pub const COMMCORE_OP_PROD: commcore_reduce_op = 1;
/// Minimum.
pub const COMMCORE_OP_MIN: commcore_reduce_op = 2;
/// Maximum.
pub const COMMCORE_OP_MAX: commcore_reduce_op = 3;
/// Logical and (integers; result 0 or 1).
pub const COMMCORE_OP_LAND: commcore_reduce_op = 4;
/// Logical or.
pub const COMMCORE_OP_LOR: commcore_reduce_op = 5;
/// Logical exclusive or.
pub const COMMCORE_OP_LXOR: commcore_reduce_op = 6;
/// Bitwise and (integers).
pub const COMMCORE_OP_BAND: commcore_reduce_op = 7;
/// Bitwise or.
pub const COMMCORE_OP_BOR: commcore_reduce_op = 8;
/// Bitwise exclusive or.
pub const COMMCORE_OP_BXOR: commcore_reduce_op = 9;
/// Minimum value and the lowest index holding it (pair types only).
pub const COMMCORE_OP_MINLOC: commcore_reduce_op = 10;
/// Maximum value and the lowest index holding it (pair types only).
pub const COMMCORE_OP_MAXLOC: commcore_reduce_op = 11;
/// In a REDUCE step: the call's user operation (apply it with `commcore_reduce_user`).
pub const COMMCORE_OP_USER: commcore_reduce_op = 100;

/// A user reduction: over `count` elements of `dtype`, `dst = src ∘ dst` when `src_left`
/// is non-zero, else `dst = dst ∘ src`. `ctx` is the pointer given at creation.
pub type commcore_user_fn = Option<
    unsafe extern "C" fn(
        src: *const c_void,
        dst: *mut c_void,
        count: usize,
        dtype: commcore_datatype,
        src_left: i32,
        ctx: *mut c_void,
    ),
>;

/// A user reduction (opaque): a callback, its context and whether it commutes. Created by
/// `commcore_user_op_create`, owned by the caller, freed by `commcore_user_op_free` after
/// the last schedule built with it is finished. Thread-safe to read; the callback must be
/// safe to call from every thread that reduces with it.
pub struct commcore_user_op {
    shell: Shell<UserOpValue>,
}
handle!(commcore_user_op, UserOpValue, 0xC0C0_0006);

pub(crate) struct UserOpValue {
    func: unsafe extern "C" fn(*const c_void, *mut c_void, usize, u32, i32, *mut c_void),
    ctx: *mut c_void,
    pub(crate) commutative: bool,
}

// SAFETY: the context pointer is the host's; the creation contract makes the callback and
// its context usable from any thread.
unsafe impl Send for UserOpValue {}
// SAFETY: as above.
unsafe impl Sync for UserOpValue {}

/// The datatype numbered `code`.
pub(crate) fn datatype(code: commcore_datatype) -> Outcome<Datatype> {
    Datatype::ALL
        .get(code as usize)
        .copied()
        .ok_or_else(|| Fail::arg(format!("unknown datatype {code}; see COMMCORE_DT_*")))
}

/// The built-in reduction numbered `code`.
pub(crate) fn reduce_op(code: commcore_reduce_op) -> Outcome<ReduceOp> {
    ReduceOp::ALL
        .get(code as usize)
        .copied()
        .ok_or_else(|| Fail::arg(format!("unknown reduction {code}; see COMMCORE_OP_*")))
}

/// Creates a user reduction calling `func` with `ctx`; `commutative` non-zero when
/// `a ∘ b = b ∘ a` (non-commutative operations get algorithms that combine in rank order).
#[no_mangle]
pub extern "C" fn commcore_user_op_create(
    func: commcore_user_fn,
    ctx: *mut c_void,
    commutative: i32,
    out: *mut *mut commcore_user_op,
) -> commcore_result {
    guard(|| {
        let func = func.ok_or_else(|| Fail::null("func"))?;
        if out.is_null() {
            return Err(Fail::null("out"));
        }
        let value = UserOpValue { func, ctx, commutative: commutative != 0 };
        // SAFETY: checked above; valid by the caller's contract.
        unsafe { handle::put(out, handle::create::<commcore_user_op>(value), "out") }
    })
}

/// Frees a user reduction. NULL is a no-op.
#[no_mangle]
pub extern "C" fn commcore_user_op_free(op: *mut commcore_user_op) -> commcore_result {
    // SAFETY: as documented.
    guard(|| unsafe { handle::take::<commcore_user_op>(op, "op").map(drop) })
}

/// The two operands as slices, checked: not NULL, `bytes` whole elements, not
/// overlapping.
///
/// # Safety
/// `src` and `dst` are valid for `bytes` bytes (reads, and reads and writes).
unsafe fn operands<'a>(
    src: *const c_void,
    dst: *mut c_void,
    bytes: usize,
    dtype: Datatype,
) -> Outcome<(&'a [u8], &'a mut [u8])> {
    if bytes % dtype.size() != 0 {
        return Err(Fail::new(
            COMMCORE_ERR_LENGTH,
            format!("{bytes} bytes are not whole {dtype} elements of {} bytes", dtype.size()),
        ));
    }
    let (s, d) = (src as usize, dst as usize);
    if bytes > 0 && s < d.saturating_add(bytes) && d < s.saturating_add(bytes) {
        return Err(Fail::arg("`src` and `dst` overlap"));
    }
    // SAFETY: the caller's contract; the regions do not overlap, so the shared and the
    // mutable slice do not alias.
    unsafe {
        Ok((
            handle::slice(src as *const u8, bytes, "src")?,
            handle::slice_mut(dst as *mut u8, bytes, "dst")?,
        ))
    }
}

/// Applies built-in reduction `op` over `bytes` bytes of `dtype` elements: `dst = src ∘
/// dst` when `src_left` is non-zero, else `dst = dst ∘ src`. The buffers must not
/// overlap; they need no alignment. `COMMCORE_ERR_UNSUPPORTED` when `op` is not defined
/// on `dtype`. Thread-safe.
///
/// ```c
/// #include <commcore.h>
/// int example_reduce(void) {
///     double in[2] = {1.5, 2.0}, inout[2] = {0.5, 1.0};
///     if (commcore_reduce(COMMCORE_OP_SUM, COMMCORE_DT_F64, in, inout, sizeof in, 1))
///         return 1;
///     return inout[0] == 2.0 && inout[1] == 3.0 ? 0 : 1;
/// }
/// ```
#[no_mangle]
pub extern "C" fn commcore_reduce(
    op: commcore_reduce_op,
    dtype: commcore_datatype,
    src: *const c_void,
    dst: *mut c_void,
    bytes: usize,
    src_left: i32,
) -> commcore_result {
    guard(|| {
        let (op, dtype) = (reduce_op(op)?, datatype(dtype)?);
        // SAFETY: as documented.
        let (s, d) = unsafe { operands(src, dst, bytes, dtype)? };
        core_reduce(&Op::Builtin(op), dtype, s, d, src_left != 0).map_err(|e| match e {
            OpError::Unsupported(..) => Fail::new(COMMCORE_ERR_UNSUPPORTED, e.to_string()),
            OpError::Length => Fail::new(COMMCORE_ERR_LENGTH, e.to_string()),
        })
    })
}

/// Applies user reduction `op` (its callback, with `bytes / size(dtype)` elements) as
/// `commcore_reduce` does. Thread-safe as far as the callback is.
#[no_mangle]
pub extern "C" fn commcore_reduce_user(
    op: *const commcore_user_op,
    dtype: commcore_datatype,
    src: *const c_void,
    dst: *mut c_void,
    bytes: usize,
    src_left: i32,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let user = unsafe { handle::get::<commcore_user_op>(op, "op")? };
        let dtype_value = datatype(dtype)?;
        // SAFETY: as documented (checks only; the callback gets the raw pointers).
        let (s, d) = unsafe { operands(src, dst, bytes, dtype_value)? };
        let count = bytes / dtype_value.size();
        // SAFETY: the host's callback over the host's buffers, as documented.
        unsafe {
            (user.func)(
                s.as_ptr().cast(),
                d.as_mut_ptr().cast(),
                count,
                dtype,
                i32::from(src_left != 0),
                user.ctx,
            )
        };
        Ok(())
    })
}
