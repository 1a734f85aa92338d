//! Futex waits on words in shared memory (process-shared, so no `FUTEX_PRIVATE_FLAG`).

use std::sync::atomic::AtomicU32;
use std::time::{Duration, Instant};

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

/// How long a wait that began at `since` yields the CPU before [`yield_then_wait`] sleeps.
/// A sleep on an otherwise idle virtual CPU halts it, and the wake that follows costs more
/// than a short wait (spawns on a quiet machine were slower than on a busy one); yielding
/// keeps the CPU awake and still lets a process that shares it run.
pub const YIELD_FIRST: Duration = Duration::from_micros(200);

/// One step of a wait for `word` to change from `expected`, begun at `since`: yields the
/// CPU during the first [`YIELD_FIRST`], then sleeps at most `timeout`. Callers re-check
/// their condition after each step.
pub fn yield_then_wait(word: &AtomicU32, expected: u32, since: Instant, timeout: Duration) {
    if since.elapsed() < YIELD_FIRST {
        std::thread::yield_now();
    } else {
        wait(word, expected, timeout);
    }
}

/// Wakes every process sleeping on `word`.
pub fn wake_all(word: &AtomicU32) {
    // SAFETY: word is a valid, aligned u32; FUTEX_WAKE only uses its address as a key.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// Words [`wait_any`] sleeps on at most (the kernel's limit for one `futex_waitv`).
pub const WAIT_ANY_MAX: usize = 128;

/// Sleeps while every `(word, expected)` pair holds, at most `timeout`: returns when any
/// word is woken or changed (or on a signal or the timeout). `false` when the kernel lacks
/// `futex_waitv` (Linux before 5.16) or more than [`WAIT_ANY_MAX`] words are given; the
/// caller then waits another way.
pub fn wait_any(words: &[(&AtomicU32, u32)], timeout: Duration) -> bool {
    #[repr(C)]
    struct WaitV {
        val: u64,
        uaddr: u64,
        flags: u32,
        reserved: u32,
    }
    /// `FUTEX2_SIZE_U32`: each word is 32 bits (no private flag: the words are shared).
    const SIZE_U32: u32 = 2;
    const SYS_FUTEX_WAITV: libc::c_long = 449;
    if words.len() > WAIT_ANY_MAX {
        return false;
    }
    let waiters: Vec<WaitV> = words
        .iter()
        .map(|&(word, expected)| WaitV {
            val: u64::from(expected),
            uaddr: word.as_ptr() as usize as u64,
            flags: SIZE_U32,
            reserved: 0,
        })
        .collect();
    // SAFETY: an all-zero timespec is valid for clock_gettime to overwrite.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: now points to a writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    let nanos = i128::from(now.tv_nsec) + timeout.subsec_nanos() as i128;
    let deadline = libc::timespec {
        tv_sec: now
            .tv_sec
            .saturating_add(libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX))
            .saturating_add((nanos / 1_000_000_000) as libc::time_t),
        tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: waiters is a valid array of waiters.len() futex_waitv entries whose addresses
    // are aligned u32 words that live for the call; the deadline lives on the stack;
    // futex_waitv only reads them.
    let rc = unsafe {
        libc::syscall(
            SYS_FUTEX_WAITV,
            waiters.as_ptr(),
            waiters.len() as libc::c_uint,
            0u32,
            &deadline as *const libc::timespec,
            libc::CLOCK_MONOTONIC,
        )
    };
    !(rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_any_returns_on_a_changed_word_and_on_its_timeout() {
        let (a, b) = (AtomicU32::new(1), AtomicU32::new(2));
        let start = std::time::Instant::now();
        // b is not 5: the call returns at once (EAGAIN), or says the kernel lacks it.
        wait_any(&[(&a, 1), (&b, 5)], Duration::from_secs(5));
        assert!(start.elapsed() < Duration::from_secs(4));
        let start = std::time::Instant::now();
        if wait_any(&[(&a, 1), (&b, 2)], Duration::from_millis(20)) {
            assert!(start.elapsed() >= Duration::from_millis(15), "{:?}", start.elapsed());
        }
        let words: Vec<(&AtomicU32, u32)> = (0..WAIT_ANY_MAX + 1).map(|_| (&a, 1)).collect();
        assert!(!wait_any(&words, Duration::ZERO));
    }
}
