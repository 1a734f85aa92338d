//! Conversions between Rust strings and PMIx's values, keys and info arrays, each owner
//! releasing what libpmix allocated for it (`PMIx_Value_destruct`, then `free` for a value
//! `PMIx_Get` returned, as `PMIX_VALUE_RELEASE` does).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::NonNull;

use super::error::{check, PmixError};
use super::ffi;

/// `text` as a C string for PMIx, if it is printable ASCII (values and names travel as such;
/// callers hex-encode anything else).
pub(super) fn printable(what: &str, text: &str) -> Result<CString, PmixError> {
    if !text.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
        return Err(PmixError::Refused(format!("{what} {text:?} is not printable ASCII")));
    }
    CString::new(text).map_err(|_| PmixError::Refused(format!("{what} {text:?} holds a NUL")))
}

/// `text` as a key: printable ASCII, non-empty, at most `PMIX_MAX_KEYLEN` bytes.
pub(super) fn key(text: &str) -> Result<CString, PmixError> {
    if text.is_empty() || text.len() > ffi::MAX_KEYLEN {
        return Err(PmixError::Refused(format!(
            "key {text:?} is not 1 to {} bytes long",
            ffi::MAX_KEYLEN
        )));
    }
    printable("key", text)
}

/// `key` in a `pmix_key_t` (NUL-padded; [`key`] checked its length).
pub(super) fn key_array(key: &CStr) -> [c_char; ffi::MAX_KEYLEN + 1] {
    let mut array = [0; ffi::MAX_KEYLEN + 1];
    for (slot, &byte) in array.iter_mut().zip(key.to_bytes().iter().take(ffi::MAX_KEYLEN)) {
        *slot = byte as c_char;
    }
    array
}

/// A namespace (`pmix_nspace_t`) as text, up to its first NUL.
pub(super) fn nspace_text(nspace: &[c_char]) -> String {
    let bytes: Vec<u8> = nspace.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The process `rank` of the namespace `of` names.
pub(super) fn proc_in(of: &ffi::Proc, rank: ffi::Rank) -> ffi::Proc {
    ffi::Proc { nspace: of.nspace, rank }
}

/// The string a value holds, if it is a `PMIX_STRING`.
pub(super) fn string_of(value: &ffi::Value) -> Option<String> {
    if value.kind != ffi::STRING {
        return None;
    }
    // SAFETY: a PMIX_STRING value's member is `string`.
    let pointer = unsafe { value.data.string };
    if pointer.is_null() {
        return None;
    }
    // SAFETY: a non-NULL PMIX_STRING is a NUL-terminated string the value owns.
    Some(unsafe { CStr::from_ptr(pointer) }.to_string_lossy().into_owned())
}

/// The number a value holds, if it is of an unsigned (or non-negative signed) integer type.
pub(super) fn unsigned_of(value: &ffi::Value) -> Option<u64> {
    let data = value.data;
    // SAFETY: each arm reads the member the type tag names.
    unsafe {
        match value.kind {
            ffi::UINT8 => Some(data.uint8.into()),
            ffi::UINT16 => Some(data.uint16.into()),
            ffi::UINT32 | ffi::UINT => Some(data.uint32.into()),
            ffi::PROC_RANK => Some(data.rank.into()),
            ffi::UINT64 => Some(data.uint64),
            ffi::SIZE => Some(data.size as u64),
            ffi::INT => u64::try_from(data.int).ok(),
            ffi::INT32 => u64::try_from(data.int32).ok(),
            _ => None,
        }
    }
}

/// A value `PMIx_Get` allocated; released on drop.
pub(super) struct Fetched(NonNull<ffi::Value>);

impl Fetched {
    /// Owns what `PMIx_Get` stored in its last argument (`None` for NULL).
    pub(super) fn new(value: *mut ffi::Value) -> Option<Fetched> {
        NonNull::new(value).map(Fetched)
    }

    pub(super) fn value(&self) -> &ffi::Value {
        // SAFETY: PMIx_Get returned this value initialized; it lives until drop.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for Fetched {
    fn drop(&mut self) {
        // SAFETY: PMIx_Get allocated the value with malloc and handed it over; this is its
        // one release (PMIX_VALUE_RELEASE: destruct the contents, free the struct).
        unsafe {
            ffi::PMIx_Value_destruct(self.0.as_ptr());
            libc::free(self.0.as_ptr().cast());
        }
    }
}

/// A string value loaded for `PMIx_Put` (copied by the library); destructed on drop.
pub(super) struct StringValue(ffi::Value);

impl StringValue {
    pub(super) fn new(text: &CStr) -> Result<StringValue, PmixError> {
        let mut value = StringValue(ffi::Value::undefined());
        // SAFETY: the value is constructed (PMIX_UNDEF); for PMIX_STRING, data is the
        // NUL-terminated string itself, which the library copies.
        let status = unsafe {
            ffi::PMIx_Value_load(&mut value.0, text.as_ptr().cast::<c_void>(), ffi::STRING)
        };
        check("PMIx_Value_load", status)?;
        Ok(value)
    }

    pub(super) fn as_mut_ptr(&mut self) -> *mut ffi::Value {
        &mut self.0
    }
}

impl Drop for StringValue {
    fn drop(&mut self) {
        // SAFETY: the value was constructed and loaded here; destructing frees its copy.
        unsafe { ffi::PMIx_Value_destruct(&mut self.0) }
    }
}

/// A `pmix_info_t` array for a call's directives; every value destructed on drop.
#[derive(Default)]
pub(super) struct Infos(Vec<ffi::Info>);

impl Infos {
    /// Adds `key` = the boolean `flag`.
    pub(super) fn flag(self, key: &CStr, flag: bool) -> Result<Infos, PmixError> {
        self.load(key, (&flag as *const bool).cast(), ffi::BOOL)
    }

    /// Adds `key` = the string `text`.
    pub(super) fn string(self, key: &CStr, text: &CStr) -> Result<Infos, PmixError> {
        self.load(key, text.as_ptr().cast(), ffi::STRING)
    }

    /// Adds `key` = the C int `number`.
    pub(super) fn int(self, key: &CStr, number: c_int) -> Result<Infos, PmixError> {
        self.load(key, (&number as *const c_int).cast(), ffi::INT)
    }

    /// Adds `key` = the data range `range`.
    pub(super) fn range(self, key: &CStr, range: ffi::DataRange) -> Result<Infos, PmixError> {
        self.load(key, (&range as *const ffi::DataRange).cast(), ffi::DATA_RANGE)
    }

    fn load(
        mut self,
        key: &CStr,
        data: *const c_void,
        kind: ffi::DataType,
    ) -> Result<Infos, PmixError> {
        self.0.push(ffi::Info::empty());
        let Some(info) = self.0.last_mut() else { return Ok(self) };
        // SAFETY: the info is constructed; `data` points to a value of type `kind` (a bool,
        // an int, a data range, or for PMIX_STRING the string itself), which the library copies.
        let status = unsafe { ffi::PMIx_Info_load(info, key.as_ptr(), data, kind) };
        check("PMIx_Info_load", status)?;
        Ok(self)
    }

    /// The array and its length, for a call.
    pub(super) fn as_parts(&self) -> (*const ffi::Info, usize) {
        match self.0.len() {
            0 => (std::ptr::null(), 0),
            n => (self.0.as_ptr(), n),
        }
    }
}

impl Drop for Infos {
    fn drop(&mut self) {
        for info in &mut self.0 {
            // SAFETY: each info was constructed here; destructing an undefined or loaded
            // value frees what PMIx_Info_load copied, once.
            unsafe { ffi::PMIx_Value_destruct(&mut info.value) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_checks_and_conversions() {
        assert!(printable("value", "hello 1,2").is_ok());
        assert!(printable("value", "tab\t").is_err());
        assert!(printable("value", "é").is_err());
        assert!(key("").is_err());
        assert!(key(&"k".repeat(ffi::MAX_KEYLEN + 1)).is_err());
        let k = key("greeting").unwrap();
        let array = key_array(&k);
        assert_eq!(nspace_text(&array), "greeting");
        let mut infos = Infos::default().flag(ffi::COLLECT_DATA, true).unwrap();
        infos = infos.string(c"name", c"value").unwrap();
        assert_eq!(infos.as_parts().1, 2);
        assert_eq!(string_of(&infos.0[1].value).as_deref(), Some("value"));
        let mut value = StringValue::new(c"text").unwrap();
        // SAFETY: the value is alive.
        assert_eq!(string_of(unsafe { &*value.as_mut_ptr() }).as_deref(), Some("text"));
        assert_eq!(unsigned_of(&ffi::Value::undefined()), None);
    }
}
