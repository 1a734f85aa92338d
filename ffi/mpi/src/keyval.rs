//! User attributes on communicators and datatypes: keyvals with copy and delete callbacks,
//! values set, read and deleted; duplicating an object copies them, freeing it deletes them.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, PoisonError};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiError, MpiResult};
use crate::ptr::{get, put};
use crate::state;

/// `MPI_Comm_copy_attr_function`.
type CopyFn =
    unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function`.
type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

#[derive(Clone, Copy)]
struct Keyval {
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    extra: usize,
}

#[derive(Default)]
struct Attributes {
    keyvals: HashMap<c_int, Keyval>,
    /// Values by (communicator, keyval), as addresses, with when each was set.
    values: HashMap<(c_int, c_int), (usize, u64)>,
    next: u32,
    sets: u64,
}

static ATTRIBUTES: Mutex<Option<Attributes>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Attributes) -> MpiResult<T>) -> MpiResult<T> {
    let mut guard = ATTRIBUTES.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(Attributes::default))
}

fn keyval(a: &Attributes, keyval: c_int) -> MpiResult<Keyval> {
    match a.keyvals.get(&keyval) {
        Some(k) => Ok(*k),
        None => fail(MPI_ERR_KEYVAL, format!("{keyval:#x} is not a keyval")),
    }
}

/// Runs `keyval`'s delete callback on `value` of `comm` (no lock held: it may call MPI).
fn call_delete(comm: c_int, keyval: c_int, k: Keyval, value: usize) -> MpiResult {
    let Some(delete) = k.delete else { return Ok(()) };
    // SAFETY: the program's callback, given the arguments MPI defines for it.
    let code = unsafe { delete(comm, keyval, value as *mut c_void, k.extra as *mut c_void) };
    if code != MPI_SUCCESS {
        return Err(MpiError::new(code, "an attribute delete callback failed"));
    }
    Ok(())
}

/// The value of user attribute `keyval` on `comm`, if set.
pub(crate) fn value(comm: c_int, keyval: c_int) -> MpiResult<Option<usize>> {
    with(|a| {
        self::keyval(a, keyval)?;
        Ok(a.values.get(&(comm, keyval)).map(|v| v.0))
    })
}

/// `comm`'s attributes, in the order they were set.
fn attributes_of(comm: c_int) -> MpiResult<Vec<(c_int, Keyval, usize)>> {
    with(|a| {
        let mut present: Vec<_> = a
            .values
            .iter()
            .filter(|((c, _), _)| *c == comm)
            .map(|(&(_, k), &(v, when))| (when, k, a.keyvals[&k], v))
            .collect();
        present.sort_unstable_by_key(|p| p.0);
        Ok(present.into_iter().map(|(_, k, keyval, v)| (k, keyval, v)).collect())
    })
}

/// Stores `value` of `keyval` on `comm` as the latest set.
fn insert(comm: c_int, keyval: c_int, value: usize) -> MpiResult {
    with(|a| {
        a.sets += 1;
        a.values.insert((comm, keyval), (value, a.sets));
        Ok(())
    })
}

/// Copies `old`'s attributes to its duplicate `new` through their copy callbacks.
pub(crate) fn copy_all(old: c_int, new: c_int) -> MpiResult {
    let present = attributes_of(old)?;
    for (key, k, value) in present {
        let Some(copy) = k.copy else { continue };
        let (mut out, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
        // SAFETY: the program's callback, given the arguments MPI defines for it.
        let code = unsafe {
            copy(
                old,
                key,
                k.extra as *mut c_void,
                value as *mut c_void,
                (&mut out as *mut *mut c_void).cast(),
                &mut flag,
            )
        };
        if code != MPI_SUCCESS {
            return Err(MpiError::new(code, "an attribute copy callback failed"));
        }
        if flag != 0 {
            insert(new, key, out as usize)?;
        }
    }
    Ok(())
}

/// Deletes every attribute of `comm` (it is being freed, or it is `MPI_COMM_SELF` at
/// `MPI_Finalize`), the last set first as MPI requires at finalize. A failing delete
/// callback stops it and keeps that attribute, so that the free fails.
pub(crate) fn delete_all(comm: c_int) -> MpiResult {
    for (key, k, value) in attributes_of(comm)?.into_iter().rev() {
        call_delete(comm, key, k, value)?;
        with(|a| Ok(a.values.remove(&(comm, key))))?;
    }
    Ok(())
}

/// # Safety
/// `keyval_out` is valid for a write, or NULL.
unsafe fn create(
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    keyval_out: *mut c_int,
    extra: *mut c_void,
) -> MpiResult {
    let handle = with(|a| {
        a.next += 1;
        let handle = (MPI_KEYVAL_INVALID as u32 | a.next) as c_int;
        a.keyvals.insert(handle, Keyval { copy, delete, extra: extra as usize });
        Ok(handle)
    })?;
    // SAFETY: the caller's contract.
    unsafe { put(keyval_out, handle) }
}

/// Fails unless `object` is a communicator or a datatype (attributes are kept by handle:
/// the kinds' handles differ).
fn exists(object: c_int) -> MpiResult {
    if state::with(|s| s.comm(object).map(drop)).is_ok() {
        return Ok(());
    }
    crate::typemap::layout(object).map(drop)
}

/// Sets an attribute; a value it replaces is deleted first, and stays when its delete
/// callback fails (the call then fails with the callback's code).
fn set(comm: c_int, keyval: c_int, value: *mut c_void) -> MpiResult {
    exists(comm)?;
    let (k, old) =
        with(|a| Ok((self::keyval(a, keyval)?, a.values.get(&(comm, keyval)).copied())))?;
    if let Some((old, _)) = old {
        call_delete(comm, keyval, k, old)?;
    }
    insert(comm, keyval, value as usize)
}

/// Deletes an attribute; it stays when its delete callback fails.
fn delete(comm: c_int, keyval: c_int) -> MpiResult {
    exists(comm)?;
    let (k, old) =
        with(|a| Ok((self::keyval(a, keyval)?, a.values.get(&(comm, keyval)).copied())))?;
    match old {
        Some((old, _)) => {
            call_delete(comm, keyval, k, old)?;
            with(|a| {
                a.values.remove(&(comm, keyval));
                Ok(())
            })
        }
        None => {
            fail(MPI_ERR_KEYVAL, format!("keyval {keyval:#x} has no value on the communicator"))
        }
    }
}

mpi_fn! {
    fn MPI_Comm_create_keyval / PMPI_Comm_create_keyval(copy_fn: Option<CopyFn>, delete_fn: Option<DeleteFn>, keyval: *mut c_int, extra_state: *mut c_void) {
        create(copy_fn, delete_fn, keyval, extra_state)
    }

    fn MPI_Keyval_create / PMPI_Keyval_create(copy_fn: Option<CopyFn>, delete_fn: Option<DeleteFn>, keyval: *mut c_int, extra_state: *mut c_void) {
        create(copy_fn, delete_fn, keyval, extra_state)
    }

    /// Frees the keyval; values still set keep it until deleted.
    fn MPI_Comm_free_keyval / PMPI_Comm_free_keyval(keyval: *mut c_int) {
        let handle = get(keyval)?;
        with(|a| self::keyval(a, handle).map(drop))?;
        put(keyval, MPI_KEYVAL_INVALID)
    }

    fn MPI_Keyval_free / PMPI_Keyval_free(keyval: *mut c_int) {
        let handle = get(keyval)?;
        with(|a| self::keyval(a, handle).map(drop))?;
        put(keyval, MPI_KEYVAL_INVALID)
    }

    fn MPI_Comm_set_attr / PMPI_Comm_set_attr(comm: c_int, keyval: c_int, attribute_val: *mut c_void) {
        set(comm, keyval, attribute_val)
    }

    fn MPI_Attr_put / PMPI_Attr_put(comm: c_int, keyval: c_int, attribute_val: *mut c_void) {
        set(comm, keyval, attribute_val)
    }

    fn MPI_Comm_delete_attr / PMPI_Comm_delete_attr(comm: c_int, keyval: c_int) {
        delete(comm, keyval)
    }

    fn MPI_Attr_delete / PMPI_Attr_delete(comm: c_int, keyval: c_int) {
        delete(comm, keyval)
    }

    fn MPI_Type_create_keyval / PMPI_Type_create_keyval(copy_fn: Option<CopyFn>, delete_fn: Option<DeleteFn>, keyval: *mut c_int, extra_state: *mut c_void) {
        create(copy_fn, delete_fn, keyval, extra_state)
    }

    fn MPI_Type_free_keyval / PMPI_Type_free_keyval(keyval: *mut c_int) {
        let handle = get(keyval)?;
        with(|a| self::keyval(a, handle).map(drop))?;
        put(keyval, MPI_KEYVAL_INVALID)
    }

    fn MPI_Type_set_attr / PMPI_Type_set_attr(datatype: c_int, keyval: c_int, attribute_val: *mut c_void) {
        crate::typemap::layout(datatype)?;
        set(datatype, keyval, attribute_val)
    }

    fn MPI_Type_get_attr / PMPI_Type_get_attr(datatype: c_int, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) {
        crate::typemap::layout(datatype)?;
        match value(datatype, keyval)? {
            Some(v) => {
                put(attribute_val.cast::<*mut c_void>(), v as *mut c_void)?;
                put(flag, 1)
            }
            None => put(flag, 0),
        }
    }

    fn MPI_Type_delete_attr / PMPI_Type_delete_attr(datatype: c_int, keyval: c_int) {
        crate::typemap::layout(datatype)?;
        delete(datatype, keyval)
    }
}
