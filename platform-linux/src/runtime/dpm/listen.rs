//! Waiting for connections while the process's other traffic moves on: a listener asked
//! without blocking, and a short sleep until one of them is readable.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use super::DpmError;

/// What a nonblocking `accept` gave: the connection, or `None` when none waits.
pub(super) fn accepted<S, A>(result: io::Result<(S, A)>) -> Result<Option<S>, DpmError> {
    match result {
        Ok((stream, _)) => Ok(Some(stream)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(DpmError::Port(format!("accept failed: {e}"))),
    }
}

/// Sleeps until one of `listeners` is readable, for 1 ms at most and never past `left`:
/// short, so that the traffic moved between naps and a peer that died are seen soon.
pub(super) fn nap(listeners: &[RawFd], left: Duration) {
    let mut fds: Vec<libc::pollfd> =
        listeners.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ms = left.as_millis().min(1) as i32;
    // SAFETY: fds is a valid array of fds.len() pollfd structures for the call's length.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}
