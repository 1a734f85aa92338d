//! CID → communicator handle: a flat table the host fills as communicators come and go.

use std::sync::RwLock;

use commcore_core::cid::store::{CidStore, Flat, StoreError};

use crate::handle::{self, handle, Shell};
use crate::result::*;
use crate::storage::Storage;

/// A CID → host handle store (opaque): one 64-bit value (a pointer or index of the host's
/// communicator) per CID, looked up with one load. Created by `commcore_cid_store_create`,
/// owned by the caller, freed by `commcore_cid_store_free`. Insert, remove and get are
/// thread-safe (a reader-writer lock); free must not run concurrently with them.
pub struct commcore_cid_store {
    shell: Shell<StoreValue>,
}
handle!(commcore_cid_store, StoreValue, 0xC0C0_0005);

/// The store first: it borrows the slots.
pub(crate) struct StoreValue {
    store: RwLock<Flat<'static, u64>>,
    _slots: Storage<Option<u64>>,
}

/// Creates a store for CIDs `0..width` (at most 65536).
#[no_mangle]
pub extern "C" fn commcore_cid_store_create(
    width: u32,
    out: *mut *mut commcore_cid_store,
) -> commcore_result {
    guard(|| {
        if out.is_null() {
            return Err(Fail::null("out"));
        }
        if width == 0 || width > commcore_core::cid::MAX_WIDTH {
            return Err(Fail::arg(format!("width {width} is not in 1..=65536")));
        }
        let (owner, slots) = Storage::new(vec![None; width as usize]);
        let value = StoreValue { store: RwLock::new(Flat::new(slots)), _slots: owner };
        // SAFETY: checked above; valid by the caller's contract.
        unsafe { handle::put(out, handle::create::<commcore_cid_store>(value), "out") }
    })
}

/// Frees a store. NULL is a no-op.
#[no_mangle]
pub extern "C" fn commcore_cid_store_free(store: *mut commcore_cid_store) -> commcore_result {
    // SAFETY: as documented.
    guard(|| unsafe { handle::take::<commcore_cid_store>(store, "store").map(drop) })
}

/// Maps `cid` to `value`. `COMMCORE_ERR_BUSY` when `cid` is mapped already,
/// `COMMCORE_ERR_RANGE` when it is past the store's width.
#[no_mangle]
pub extern "C" fn commcore_cid_store_insert(
    store: *const commcore_cid_store,
    cid: u32,
    value: u64,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let s = unsafe { handle::get::<commcore_cid_store>(store, "store")? };
        let mut table = s.store.write().unwrap_or_else(|e| e.into_inner());
        table.insert(cid, value).map_err(|e| {
            let code = match e {
                StoreError::Occupied => COMMCORE_ERR_BUSY,
                StoreError::Full => COMMCORE_ERR_FULL,
                StoreError::OutOfRange => COMMCORE_ERR_RANGE,
            };
            Fail::new(code, format!("cid {cid}: {e}"))
        })
    })
}

/// Removes `cid`'s mapping and writes its value to `*value` (when not NULL).
/// `COMMCORE_ERR_NOT_FOUND` when `cid` is not mapped.
#[no_mangle]
pub extern "C" fn commcore_cid_store_remove(
    store: *const commcore_cid_store,
    cid: u32,
    value: *mut u64,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let s = unsafe { handle::get::<commcore_cid_store>(store, "store")? };
        let removed = s.store.write().unwrap_or_else(|e| e.into_inner()).remove(cid);
        let removed = removed.ok_or_else(|| not_found(cid))?;
        if !value.is_null() {
            // SAFETY: not NULL; valid by the caller's contract.
            unsafe { value.write(removed) };
        }
        Ok(())
    })
}

/// Writes the value `cid` maps to into `*value`; `COMMCORE_ERR_NOT_FOUND` when unmapped.
#[no_mangle]
pub extern "C" fn commcore_cid_store_get(
    store: *const commcore_cid_store,
    cid: u32,
    value: *mut u64,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let s = unsafe { handle::get::<commcore_cid_store>(store, "store")? };
        let found = s.store.read().unwrap_or_else(|e| e.into_inner()).get(cid);
        // SAFETY: as documented.
        unsafe { handle::put(value, found.ok_or_else(|| not_found(cid))?, "value") }
    })
}

#[cold]
fn not_found(cid: u32) -> Fail {
    Fail::new(COMMCORE_ERR_NOT_FOUND, format!("cid {cid} maps to nothing"))
}
