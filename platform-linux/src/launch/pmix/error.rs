//! What a PMIx call returns when it fails: the call and the library's name for its status.

use std::ffi::CStr;

use super::ffi;

/// Why a PMIx request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PmixError {
    /// `PMIX_NAMESPACE`/`PMIX_RANK` are inconsistent, or the server's job description is
    /// unusable (no job size, this rank not below it).
    NotLaunched(String),
    /// A PMIx call returned an error status.
    Call {
        /// The call (and for reserved keys the key), e.g. `PMIx_Get(PMIX_NODEID)`.
        call: &'static str,
        /// Its status.
        status: i32,
        /// `PMIx_Error_string` of the status.
        name: String,
    },
    /// A PMIx call returned `PMIX_ERR_TIMEOUT`.
    TimedOut {
        /// The call.
        call: &'static str,
    },
    /// The request was refused: by the server (it does not serve the call), or before any
    /// call (a second client in this process, a key or value that PMIx cannot carry).
    Refused(String),
}

impl std::fmt::Display for PmixError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PmixError::NotLaunched(why) => write!(f, "not started by a usable PMIx server: {why}"),
            PmixError::Call { call, status, name } => write!(f, "{call} failed: {name} ({status})"),
            PmixError::TimedOut { call } => write!(f, "{call} timed out (PMIX_ERR_TIMEOUT)"),
            PmixError::Refused(why) => write!(f, "PMIx refused: {why}"),
        }
    }
}

impl std::error::Error for PmixError {}

/// `PMIx_Error_string` of `status`.
pub(super) fn status_name(status: ffi::Status) -> String {
    // SAFETY: PMIx_Error_string takes any status and returns NULL or a pointer to a static
    // NUL-terminated string, read here before anything else runs.
    let name = unsafe { ffi::PMIx_Error_string(status) };
    if name.is_null() {
        return format!("PMIx status {status}");
    }
    // SAFETY: non-NULL: a static NUL-terminated string (above).
    unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
}

/// `Ok` for `PMIX_SUCCESS`, the error naming `call` otherwise.
pub(super) fn check(call: &'static str, status: ffi::Status) -> Result<(), PmixError> {
    match status {
        ffi::SUCCESS => Ok(()),
        ffi::ERR_TIMEOUT => Err(PmixError::TimedOut { call }),
        _ => Err(PmixError::Call { call, status, name: status_name(status) }),
    }
}

/// As [`check`], and `PMIX_ERR_NOT_SUPPORTED` is the server's refusal to serve `call`.
pub(super) fn check_served(call: &'static str, status: ffi::Status) -> Result<(), PmixError> {
    if status == ffi::ERR_NOT_SUPPORTED {
        return Err(PmixError::Refused(format!(
            "the PMIx server does not serve {call} ({}, {status})",
            status_name(status)
        )));
    }
    check(call, status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_call_and_the_status() {
        assert_eq!(check("PMIx_Commit", ffi::SUCCESS), Ok(()));
        let error = check("PMIx_Get(PMIX_NODEID)", ffi::ERR_NOT_FOUND).unwrap_err();
        assert_eq!(error.to_string(), "PMIx_Get(PMIX_NODEID) failed: NOT-FOUND (-46)");
        let error = check("PMIx_Fence", ffi::ERR_TIMEOUT).unwrap_err();
        assert_eq!(error, PmixError::TimedOut { call: "PMIx_Fence" });
        let error = check_served("PMIx_Spawn", ffi::ERR_NOT_SUPPORTED).unwrap_err();
        assert!(matches!(&error, PmixError::Refused(why) if why.contains("PMIx_Spawn")));
        assert!(error.to_string().contains("does not serve PMIx_Spawn"), "{error}");
    }
}
