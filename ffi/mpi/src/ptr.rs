//! The program's pointers: NULL checks, MPI's sentinel addresses, and slices over buffers.

use std::ffi::{c_char, c_int, c_void};

use crate::consts::*;
use crate::error::{fail, MpiResult};

/// Writes `value` through the output argument `out`.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) -> MpiResult {
    if out.is_null() {
        return fail(MPI_ERR_ARG, "an output argument is NULL");
    }
    // SAFETY: not NULL, and valid for writes by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Reads the input argument `arg`.
///
/// # Safety
/// `arg` is NULL or valid for a read of `T`.
pub(crate) unsafe fn get<T: Copy>(arg: *const T) -> MpiResult<T> {
    if arg.is_null() {
        return fail(MPI_ERR_ARG, "an input argument is NULL");
    }
    // SAFETY: not NULL, and valid for reads by the caller's contract.
    Ok(unsafe { arg.read() })
}

/// Whether `buf` is `MPI_IN_PLACE`.
pub(crate) fn in_place(buf: *const c_void) -> bool {
    buf as usize == MPI_IN_PLACE
}

/// `len` bytes at `buf`.
///
/// # Safety
/// `buf` is valid for reads of `len` bytes until `'a` ends, or `len` is 0.
pub(crate) unsafe fn bytes<'a>(buf: *const c_void, len: usize) -> MpiResult<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if buf.is_null() || in_place(buf) {
        return fail(MPI_ERR_BUFFER, "the buffer is NULL or MPI_IN_PLACE");
    }
    // SAFETY: not NULL, and valid for `len` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) })
}

/// `len` writable bytes at `buf`.
///
/// # Safety
/// `buf` is valid for writes of `len` bytes, not aliased, until `'a` ends, or `len` is 0.
pub(crate) unsafe fn bytes_mut<'a>(buf: *mut c_void, len: usize) -> MpiResult<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if buf.is_null() || in_place(buf) {
        return fail(MPI_ERR_BUFFER, "the buffer is NULL or MPI_IN_PLACE");
    }
    // SAFETY: not NULL, valid and unaliased for `len` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) })
}

/// `n` elements at `arr`.
///
/// # Safety
/// `arr` is valid for reads of `n` elements of `T`, or `n` is 0.
pub(crate) unsafe fn array<'a, T>(arr: *const T, n: usize) -> MpiResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if arr.is_null() {
        return fail(MPI_ERR_ARG, "an array argument is NULL");
    }
    // SAFETY: not NULL, and valid for `n` elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(arr, n) })
}

/// `n` writable elements at `arr`.
///
/// # Safety
/// `arr` is valid for writes of `n` elements of `T`, unaliased, or `n` is 0.
pub(crate) unsafe fn array_mut<'a, T>(arr: *mut T, n: usize) -> MpiResult<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if arr.is_null() {
        return fail(MPI_ERR_ARG, "an array argument is NULL");
    }
    // SAFETY: not NULL, valid and unaliased for `n` elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(arr, n) })
}

/// A count argument as `usize`.
pub(crate) fn count(count: c_int) -> MpiResult<usize> {
    usize::try_from(count).or_else(|_| fail(MPI_ERR_COUNT, format!("count {count} is negative")))
}

/// Writes `status` unless `out` is NULL or `MPI_STATUS_IGNORE`, all but `MPI_ERROR`: a
/// single-completion call leaves that field as it was (MPI sets it only with
/// `MPI_ERR_IN_STATUS`).
///
/// # Safety
/// `out` is NULL, `MPI_STATUS_IGNORE` or valid for a write of a status.
pub(crate) unsafe fn put_status(out: *mut MpiStatus, status: MpiStatus) {
    if !out.is_null() && out as usize != MPI_STATUS_IGNORE {
        // SAFETY: a real status by the caller's contract; fields written in place.
        unsafe {
            std::ptr::addr_of_mut!((*out).count_lo).write(status.count_lo);
            std::ptr::addr_of_mut!((*out).count_hi_and_cancelled)
                .write(status.count_hi_and_cancelled);
            std::ptr::addr_of_mut!((*out).source).write(status.source);
            std::ptr::addr_of_mut!((*out).tag).write(status.tag);
        }
    }
}

/// The status array of `n` entries, or `None` for `MPI_STATUSES_IGNORE`.
///
/// # Safety
/// As [`array_mut`], unless `out` is NULL or `MPI_STATUSES_IGNORE`.
pub(crate) unsafe fn statuses<'a>(out: *mut MpiStatus, n: usize) -> Option<&'a mut [MpiStatus]> {
    if out.is_null() || out as usize == MPI_STATUS_IGNORE || n == 0 {
        return None;
    }
    // SAFETY: a real array of `n` statuses by the caller's contract.
    Some(unsafe { std::slice::from_raw_parts_mut(out, n) })
}

/// Copies `text` into the C string `out` of room `room` (with its NUL) and sets `len`.
///
/// # Safety
/// `out` is valid for `room` bytes and `len` for an `int`, or NULL.
pub(crate) unsafe fn put_text(
    out: *mut c_char,
    room: usize,
    len: *mut c_int,
    text: &str,
) -> MpiResult {
    let n = text.len().min(room.saturating_sub(1));
    // SAFETY: the caller's contract for `out`.
    let dst = unsafe { array_mut(out.cast::<u8>(), n + 1) }?;
    dst[..n].copy_from_slice(&text.as_bytes()[..n]);
    dst[n] = 0;
    if !len.is_null() {
        // SAFETY: not NULL, valid by the caller's contract.
        unsafe { put(len, n as c_int) }?;
    }
    Ok(())
}

/// The C string at `text`.
///
/// # Safety
/// `text` is NULL or a NUL-terminated string that lives for `'a`.
pub(crate) unsafe fn c_str<'a>(text: *const c_char) -> MpiResult<&'a str> {
    if text.is_null() {
        return fail(MPI_ERR_ARG, "a string argument is NULL");
    }
    // SAFETY: NUL-terminated by the caller's contract.
    let text = unsafe { std::ffi::CStr::from_ptr(text) };
    text.to_str().or_else(|_| fail(MPI_ERR_ARG, "a string argument is not UTF-8"))
}
