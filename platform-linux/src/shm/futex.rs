//! Futex waits on words in shared memory (process-shared, so no `FUTEX_PRIVATE_FLAG`).

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleeps while `word` holds `expected`, at most `timeout`. Returns on a wake, on a changed
/// value, on a signal or on the timeout; callers re-check their condition in any case.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let spec = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::from(timeout.subsec_nanos()),
    };
    // SAFETY: word is a valid, aligned u32 for the duration of the call; the timespec lives
    // on the stack; FUTEX_WAIT reads the word and never writes through the pointers.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &spec as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wakes every process sleeping on `word`.
pub fn wake_all(word: &AtomicU32) {
    // SAFETY: word is a valid, aligned u32; FUTEX_WAKE only uses its address as a key.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}
