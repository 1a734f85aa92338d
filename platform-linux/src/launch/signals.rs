//! Signals a dedicated launcher forwards to its job: the handler only records the signal;
//! the watch loop sends it to the job's process group.

use std::sync::atomic::AtomicI32;
use std::sync::atomic::Ordering::AcqRel;

/// The signals forwarded to the job, as mpirun forwards them.
pub const FORWARDED: [i32; 5] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2];

/// The last signal received and not yet forwarded (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

extern "C" fn record(signal: i32) {
    PENDING.store(signal, std::sync::atomic::Ordering::Release);
}

/// Handlers for [`FORWARDED`], installed for the process (a dedicated launcher's).
pub(super) struct Forwarder(());

impl Forwarder {
    /// Installs the handlers. Installing one also replaces an inherited "ignore" (a launcher
    /// started with `&` from a script ignores SIGINT otherwise).
    pub(super) fn install() -> Forwarder {
        for signal in FORWARDED {
            // SAFETY: an all-zero sigaction is valid; the handler only stores to an atomic,
            // which is async-signal-safe; SA_RESTART keeps the launcher's reads going.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = record as extern "C" fn(i32) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
        Forwarder(())
    }

    /// The signal received since the last call, if any.
    pub(super) fn take(&self) -> Option<i32> {
        Some(PENDING.swap(0, AcqRel)).filter(|&signal| signal != 0)
    }
}
