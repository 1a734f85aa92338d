//! Result codes, `commcore_strerror`, the per-thread error detail and the panic boundary.

use core::ffi::c_char;
use std::cell::RefCell;
use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The result of every function: `COMMCORE_OK` (0) or one of the `COMMCORE_ERR_*` codes,
/// which start at 7000 so that they never read as an errno value. After an error,
/// `commcore_last_error()` on the same thread says what was wrong.
pub type commcore_result = i32;

/// Success.
pub const COMMCORE_OK: commcore_result = 0;
/// A pointer argument that must not be NULL was NULL.
pub const COMMCORE_ERR_NULL: commcore_result = 7001;
/// A handle of another type was passed (or a pointer that is no commcore handle at all).
pub const COMMCORE_ERR_HANDLE: commcore_result = 7002;
/// The handle was freed already.
pub const COMMCORE_ERR_FREED: commcore_result = 7003;
/// commcore panicked inside the call: a bug in commcore; the call had no effect that can
/// be relied on.
pub const COMMCORE_ERR_PANIC: commcore_result = 7004;
/// An argument has a value outside its domain (an unknown enumerator, a negative count,
/// a flag on an operation that does not take it).
pub const COMMCORE_ERR_ARG: commcore_result = 7005;
/// A length or count overflows, or arrays disagree in length, or an output is too small.
pub const COMMCORE_ERR_LENGTH: commcore_result = 7006;
/// A rank, process, group or CID is out of range.
pub const COMMCORE_ERR_RANGE: commcore_result = 7007;
/// Bounded storage is full (groups, table arena, address store, CID store).
pub const COMMCORE_ERR_FULL: commcore_result = 7008;
/// The object is still in use (a process-group registry with live rank maps).
pub const COMMCORE_ERR_BUSY: commcore_result = 7009;
/// A control string was refused; the detail names the offending token.
pub const COMMCORE_ERR_CONTROL: commcore_result = 7010;
/// A collective call cannot be scheduled with these arguments (the detail says why).
pub const COMMCORE_ERR_COLL: commcore_result = 7011;
/// The reduction is not defined on the datatype (e.g. BAND on f32).
pub const COMMCORE_ERR_UNSUPPORTED: commcore_result = 7012;
/// A CID agreement failed (inconsistent results between members, a duplicate ⟨parent
/// cid, tag⟩ in flight, too many requests).
pub const COMMCORE_ERR_CID: commcore_result = 7013;
/// No CID is free on every member.
pub const COMMCORE_ERR_CID_EXHAUSTED: commcore_result = 7014;
/// A call out of order (a result handed in with no allreduce outstanding, a finished
/// request polled, a schedule stepped before it was built).
pub const COMMCORE_ERR_STATE: commcore_result = 7015;
/// Nothing is stored under the key.
pub const COMMCORE_ERR_NOT_FOUND: commcore_result = 7016;
/// The function exists in the ABI but does not work yet.
pub const COMMCORE_ERR_NOT_IMPLEMENTED: commcore_result = 7017;

/// A failed call: its code and a sentence for `commcore_last_error`.
#[derive(Debug)]
pub(crate) struct Fail {
    pub code: commcore_result,
    pub detail: String,
}

impl Fail {
    pub(crate) fn new(code: commcore_result, detail: impl Into<String>) -> Self {
        Self { code, detail: detail.into() }
    }

    pub(crate) fn null(what: &str) -> Self {
        Self::new(COMMCORE_ERR_NULL, format!("`{what}` is NULL; pass a valid pointer"))
    }

    pub(crate) fn arg(detail: impl Into<String>) -> Self {
        Self::new(COMMCORE_ERR_ARG, detail)
    }
}

pub(crate) type Outcome<T> = Result<T, Fail>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `fail` as this thread's last error and returns its code.
#[cold]
pub(crate) fn record(fail: Fail) -> commcore_result {
    let text = CString::new(fail.detail.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = text);
    fail.code
}

/// Runs `body` behind the panic boundary: a panic becomes `COMMCORE_ERR_PANIC`, an error
/// its code (with the detail recorded for this thread).
#[inline(always)]
pub(crate) fn guard(body: impl FnOnce() -> Outcome<()>) -> commcore_result {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => COMMCORE_OK,
        Ok(Err(fail)) => record(fail),
        Err(payload) => panicked(payload),
    }
}

#[cold]
pub(crate) fn panicked(payload: Box<dyn std::any::Any + Send>) -> commcore_result {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    record(Fail::new(COMMCORE_ERR_PANIC, format!("internal error (please report): {what}")))
}

/// A static, NUL-terminated description of `code` ("unknown result code" for a value
/// that is none of the codes). Thread-safe; never NULL.
#[no_mangle]
pub extern "C" fn commcore_strerror(code: commcore_result) -> *const c_char {
    let text: &'static core::ffi::CStr = match code {
        COMMCORE_OK => c"success",
        COMMCORE_ERR_NULL => c"a required pointer argument is NULL",
        COMMCORE_ERR_HANDLE => c"the handle is of another type or not a commcore handle",
        COMMCORE_ERR_FREED => c"the handle was freed already",
        COMMCORE_ERR_PANIC => c"internal error in commcore (a bug; please report it)",
        COMMCORE_ERR_ARG => c"an argument is outside its domain",
        COMMCORE_ERR_LENGTH => c"a length overflows, disagrees with another, or is too small",
        COMMCORE_ERR_RANGE => c"a rank, process, group or CID is out of range",
        COMMCORE_ERR_FULL => c"bounded storage is full",
        COMMCORE_ERR_BUSY => c"the object is still in use",
        COMMCORE_ERR_CONTROL => c"the control string was refused",
        COMMCORE_ERR_COLL => c"the collective cannot be scheduled with these arguments",
        COMMCORE_ERR_UNSUPPORTED => c"the reduction is not defined on the datatype",
        COMMCORE_ERR_CID => c"the CID agreement failed",
        COMMCORE_ERR_CID_EXHAUSTED => c"no CID is free on every member",
        COMMCORE_ERR_STATE => c"call out of order",
        COMMCORE_ERR_NOT_FOUND => c"nothing is stored under the key",
        COMMCORE_ERR_NOT_IMPLEMENTED => c"not implemented yet",
        _ => c"unknown result code",
    };
    text.as_ptr()
}

/// The detail of the last error on the calling thread (e.g. the offending token of a
/// control string), or "" when no call on this thread has failed. The string stays valid
/// until the next failing call on the same thread; copy it to keep it. Never NULL.
#[no_mangle]
pub extern "C" fn commcore_last_error() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

/// The library's version, e.g. "0.1.0": static, NUL-terminated, never NULL.
#[no_mangle]
pub extern "C" fn commcore_version() -> *const c_char {
    const VERSION: &core::ffi::CStr = match core::ffi::CStr::from_bytes_with_nul(
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
    ) {
        Ok(v) => v,
        Err(_) => c"unknown",
    };
    VERSION.as_ptr()
}
