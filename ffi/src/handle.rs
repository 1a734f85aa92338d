//! Opaque handles: a tagged shell around the Rust object, checked before every use.
//!
//! Every handle the library gives out points to a [`Shell`]: a 32-bit tag naming the
//! handle's type, then the object. A call reads the tag first (one compare), so a NULL
//! pointer, a handle of another type and a freed handle are errors, not undefined
//! behaviour. Freeing drops the object and poisons the tag; the shell's memory is never
//! returned to the allocator but kept in a per-type pool and reused only after
//! [`QUARANTINE`] later frees of the same type, so a stale pointer always reads a shell
//! (a freed one, for the next `QUARANTINE` frees at least).

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::sync::Mutex;

use crate::result::{Fail, Outcome, COMMCORE_ERR_FREED, COMMCORE_ERR_HANDLE};

/// Freed shells of one type that wait before one is reused.
pub(crate) const QUARANTINE: usize = 1024;

/// The tag of a freed handle.
const FREED: u32 = 0xDEAD_F4EE;

/// The memory behind a handle: the tag first, at the same offset for every type. The value
/// is initialised exactly while the tag is the type's live tag (`create` writes it before
/// setting the tag, `take` poisons the tag as it moves the value out), so a live handle's
/// value is reached with the one compare of the tag and no other check.
#[repr(C)]
pub(crate) struct Shell<T> {
    tag: u32,
    value: MaybeUninit<T>,
}

/// A pointer kept in a pool (the pool only hands it back; nothing reads through it there).
pub(crate) struct Parked<H>(*mut H);

// SAFETY: a parked shell is not accessed while parked; the pool's mutex orders the hand-off.
unsafe impl<H> Send for Parked<H> {}

/// The freed shells of one handle type.
pub(crate) type Pool<H> = Mutex<VecDeque<Parked<H>>>;

/// An exported handle type: a struct with one field, its [`Shell`].
pub(crate) trait Handle: Sized + 'static {
    /// What the handle holds.
    type Value;
    /// The tag of a live handle of this type.
    const TAG: u32;
    /// The C name, for error details.
    const NAME: &'static str;
    fn wrap(shell: Shell<Self::Value>) -> Self;
    fn shell(&self) -> &Shell<Self::Value>;
    fn shell_mut(&mut self) -> &mut Shell<Self::Value>;
    fn pool() -> &'static Pool<Self>;
}

/// Defines the `Handle` impl of an exported handle struct `$name { shell: Shell<$value> }`.
macro_rules! handle {
    ($name:ident, $value:ty, $tag:expr) => {
        impl $crate::handle::Handle for $name {
            type Value = $value;
            const TAG: u32 = $tag;
            const NAME: &'static str = stringify!($name);
            fn wrap(shell: $crate::handle::Shell<$value>) -> Self {
                Self { shell }
            }
            fn shell(&self) -> &$crate::handle::Shell<$value> {
                &self.shell
            }
            fn shell_mut(&mut self) -> &mut $crate::handle::Shell<$value> {
                &mut self.shell
            }
            fn pool() -> &'static $crate::handle::Pool<Self> {
                static POOL: $crate::handle::Pool<$name> =
                    std::sync::Mutex::new(std::collections::VecDeque::new());
                &POOL
            }
        }
    };
}
pub(crate) use handle;

/// A new handle holding `value`, owned by the caller until it is freed.
pub(crate) fn create<H: Handle>(value: H::Value) -> *mut H {
    let reused = {
        let mut pool = H::pool().lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() > QUARANTINE {
            pool.pop_front()
        } else {
            None
        }
    };
    match reused {
        Some(Parked(ptr)) => {
            // SAFETY: `ptr` came from `Box::into_raw` of an `H` and was parked when freed;
            // nothing else owns it. Stale copies of it held by the caller only read the tag
            // (a data race with this write is a use-after-free race the caller must avoid).
            let shell = unsafe { (*ptr).shell_mut() };
            shell.value.write(value);
            shell.tag = H::TAG;
            ptr
        }
        None => {
            Box::into_raw(Box::new(H::wrap(Shell { tag: H::TAG, value: MaybeUninit::new(value) })))
        }
    }
}

/// Checks `ptr` (not NULL, live, of type `H`) and returns its tag-checked shell.
///
/// # Safety
/// `ptr` is NULL or was returned by this library as some handle type (live or freed).
#[inline(always)]
unsafe fn checked<'a, H: Handle>(ptr: *const H, what: &str) -> Outcome<&'a Shell<H::Value>> {
    if ptr.is_null() {
        return Err(Fail::null(what));
    }
    // SAFETY: every handle starts with its `u32` tag (`Shell` is `repr(C)` and each handle
    // struct's only field is its shell), and shells are never deallocated.
    let tag = unsafe { *(ptr as *const u32) };
    if tag != H::TAG {
        return Err(wrong_tag::<H>(tag, what));
    }
    // SAFETY: the tag says this is a live `H`.
    Ok(unsafe { (*ptr).shell() })
}

#[cold]
fn wrong_tag<H: Handle>(tag: u32, what: &str) -> Fail {
    if tag == FREED {
        Fail::new(COMMCORE_ERR_FREED, format!("`{what}` was freed already"))
    } else {
        Fail::new(COMMCORE_ERR_HANDLE, format!("`{what}` is not a {} handle", H::NAME))
    }
}

/// The value of a live handle, or `None` for NULL, a freed handle or one of another type:
/// the hot paths' check (one compare and branch besides the NULL test), whose callers
/// report the failure with [`get`] out of line.
///
/// # Safety
/// As for [`get`].
#[inline(always)]
pub(crate) unsafe fn live<'a, H: Handle>(ptr: *const H) -> Option<&'a H::Value> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: as in `checked`: every handle starts with its tag; shells are never freed.
    if unsafe { *(ptr as *const u32) } != H::TAG {
        return None;
    }
    // SAFETY: a live tag means an initialised value (see `Shell`).
    Some(unsafe { (*ptr).shell().value.assume_init_ref() })
}

/// [`live`], mutably.
///
/// # Safety
/// As for [`get_mut`].
#[inline(always)]
pub(crate) unsafe fn live_mut<'a, H: Handle>(ptr: *mut H) -> Option<&'a mut H::Value> {
    // SAFETY: as in `live`, with exclusive access by the caller's contract.
    unsafe {
        if ptr.is_null() || *(ptr as *const u32) != H::TAG {
            return None;
        }
        Some((*ptr).shell_mut().value.assume_init_mut())
    }
}

/// The value of a live handle.
///
/// # Safety
/// As for [`checked`]; the value is not freed while the reference lives (the caller's side
/// of each function's thread-safety contract).
#[inline(always)]
pub(crate) unsafe fn get<'a, H: Handle>(ptr: *const H, what: &str) -> Outcome<&'a H::Value> {
    // SAFETY: forwarded contract; a live tag means an initialised value (see `Shell`).
    unsafe { Ok(checked(ptr, what)?.value.assume_init_ref()) }
}

/// The value of a live handle, mutably.
///
/// # Safety
/// As for [`get`], and no other reference to the value exists during the call.
#[inline(always)]
pub(crate) unsafe fn get_mut<'a, H: Handle>(ptr: *mut H, what: &str) -> Outcome<&'a mut H::Value> {
    // SAFETY: the tag check of `checked` (a live tag means an initialised value), then
    // exclusive access by the caller's contract.
    unsafe {
        checked(ptr, what)?;
        Ok((*ptr).shell_mut().value.assume_init_mut())
    }
}

/// Frees a handle: returns its value to the caller for dropping and poisons the shell.
/// NULL is not an error (`Ok(None)`), as with `free(3)`.
///
/// # Safety
/// As for [`get_mut`].
pub(crate) unsafe fn take<H: Handle>(ptr: *mut H, what: &str) -> Outcome<Option<H::Value>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: `checked` validates the tag, so the value is initialised; it is moved out
    // as the tag is poisoned, so it is never read again. Exclusive access by the caller's
    // contract.
    let value = unsafe {
        checked(ptr, what)?;
        let shell = (*ptr).shell_mut();
        shell.tag = FREED;
        shell.value.assume_init_read()
    };
    H::pool().lock().unwrap_or_else(|e| e.into_inner()).push_back(Parked(ptr));
    Ok(Some(value))
}

/// Writes `value` through `out`, checked for NULL.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
#[inline(always)]
pub(crate) unsafe fn put<T>(out: *mut T, value: T, what: &str) -> Outcome<()> {
    if out.is_null() {
        return Err(Fail::null(what));
    }
    // SAFETY: not NULL, and valid by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Checks a C array before a slice is made of it: `Ok(false)` for an empty one (any
/// pointer), `Ok(true)` when `ptr` may be read for `len` elements of `T` (not NULL, the
/// byte length within `isize`).
fn array<T>(is_null: bool, len: usize, what: &str) -> Outcome<bool> {
    if len == 0 {
        return Ok(false);
    }
    if is_null {
        return Err(Fail::null(what));
    }
    if len.checked_mul(core::mem::size_of::<T>()).map_or(true, |b| b > isize::MAX as usize) {
        return Err(Fail::new(
            crate::result::COMMCORE_ERR_LENGTH,
            format!("`{what}` length {len} overflows the address space"),
        ));
    }
    Ok(true)
}

/// The slice `ptr[..len]`; NULL is allowed when `len` is 0.
///
/// # Safety
/// When `len > 0`, `ptr` is NULL or valid for reads of `len` elements that nothing writes
/// during the call.
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Outcome<&'a [T]> {
    if !array::<T>(ptr.is_null(), len, what)? {
        return Ok(&[]);
    }
    // SAFETY: not NULL, the byte length fits `isize`, validity by the caller's contract.
    Ok(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// The mutable slice `ptr[..len]`; NULL is allowed when `len` is 0.
///
/// # Safety
/// When `len > 0`, `ptr` is NULL or valid for writes of `len` elements that nothing else
/// accesses during the call.
pub(crate) unsafe fn slice_mut<'a, T>(ptr: *mut T, len: usize, what: &str) -> Outcome<&'a mut [T]> {
    if !array::<T>(ptr.is_null(), len, what)? {
        return Ok(&mut []);
    }
    // SAFETY: as in `slice`, with exclusive access by the caller's contract.
    Ok(unsafe { core::slice::from_raw_parts_mut(ptr, len) })
}
