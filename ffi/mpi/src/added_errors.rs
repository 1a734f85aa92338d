//! Error classes, codes and strings a program adds (`MPI_Add_error_class`, `_code`,
//! `_string`) and removes (MPICH's `MPIX_Delete_error_*`). They are numbered above
//! `MPI_ERR_LASTCODE`, as MPI asks, so that they never meet a predefined class;
//! `MPI_LASTUSEDCODE` follows the last one. Numbers are not reused.

use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::sync::{Mutex, PoisonError};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{class_text, fail, MpiResult};
use crate::ptr::{c_str, put};

#[derive(Default)]
struct Added {
    /// The class of every added class (itself) and code.
    classes: HashMap<c_int, c_int>,
    strings: HashMap<c_int, String>,
    last: c_int,
}

static ADDED: Mutex<Option<Added>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Added) -> T) -> T {
    let mut guard = ADDED.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(|| Added { last: MPI_ERR_LASTCODE, ..Added::default() }))
}

/// The class of added class or code `code`.
pub(crate) fn class_of(code: c_int) -> Option<c_int> {
    with(|a| a.classes.get(&code).copied())
}

/// The string of added class or code `code` (empty until the program sets one).
pub(crate) fn string_of(code: c_int) -> Option<String> {
    with(|a| {
        a.classes.contains_key(&code).then(|| a.strings.get(&code).cloned().unwrap_or_default())
    })
}

/// A new class or code of `class` (`None`: a new class); its number.
fn add(class: Option<c_int>) -> MpiResult<c_int> {
    let code = with(|a| {
        let code = a.last.checked_add(1)?;
        a.last = code;
        a.classes.insert(code, class.unwrap_or(code));
        Some(code)
    });
    let Some(code) = code else {
        return fail(MPI_ERR_OTHER, "every error code number has been used");
    };
    crate::attrs::set_last_used_code(code);
    Ok(code)
}

/// Removes added `code`: a class with no codes of its own left, or a code, as `class` says.
fn remove(code: c_int, class: bool) -> MpiResult {
    let (fits, has_codes) = with(|a| {
        let fits = a.classes.get(&code).is_some_and(|&of| (of == code) == class);
        let has_codes = class && a.classes.iter().any(|(&c, &of)| of == code && c != code);
        if fits && !has_codes {
            a.classes.remove(&code);
            a.strings.remove(&code);
        }
        (fits, has_codes)
    });
    let what = if class { "class" } else { "code" };
    match (fits, has_codes) {
        (false, _) => fail(MPI_ERR_ARG, format!("{code} is not an added error {what}")),
        (true, true) => fail(MPI_ERR_ARG, format!("error class {code} still has codes")),
        (true, false) => Ok(()),
    }
}

mpi_fn! {
    fn MPI_Add_error_class / PMPI_Add_error_class(errorclass: *mut c_int) {
        if errorclass.is_null() {
            return fail(MPI_ERR_ARG, "errorclass is NULL");
        }
        put(errorclass, add(None)?)
    }

    fn MPI_Add_error_code / PMPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) {
        if errorcode.is_null() {
            return fail(MPI_ERR_ARG, "errorcode is NULL");
        }
        let is_class = class_text(errorclass).is_some() || class_of(errorclass) == Some(errorclass);
        if !is_class {
            return fail(MPI_ERR_ARG, format!("{errorclass} is not an error class"));
        }
        put(errorcode, add(Some(errorclass))?)
    }

    /// Sets the string of an added class or code (a predefined one keeps its own).
    fn MPI_Add_error_string / PMPI_Add_error_string(errorcode: c_int, string: *const c_char) {
        let text = c_str(string)?;
        if text.len() >= MPI_MAX_ERROR_STRING {
            return fail(MPI_ERR_ARG, format!("the string is longer than MPI_MAX_ERROR_STRING - 1 ({})", MPI_MAX_ERROR_STRING - 1));
        }
        let known = with(|a| {
            let known = a.classes.contains_key(&errorcode);
            if known {
                a.strings.insert(errorcode, text.to_string());
            }
            known
        });
        if !known {
            return fail(MPI_ERR_ARG, format!("{errorcode} is not an added error class or code"));
        }
        Ok(())
    }

    /// Removes an added class that has no codes left.
    fn MPIX_Delete_error_class / PMPIX_Delete_error_class(errorclass: c_int) {
        remove(errorclass, true)
    }

    /// Removes an added code.
    fn MPIX_Delete_error_code / PMPIX_Delete_error_code(errorcode: c_int) {
        remove(errorcode, false)
    }

    /// Removes the string of an added class or code.
    fn MPIX_Delete_error_string / PMPIX_Delete_error_string(errorcode: c_int) {
        let removed = with(|a| a.classes.contains_key(&errorcode).then(|| a.strings.remove(&errorcode)));
        match removed {
            Some(_) => Ok(()),
            None => fail(MPI_ERR_ARG, format!("{errorcode} is not an added error class or code")),
        }
    }
}
