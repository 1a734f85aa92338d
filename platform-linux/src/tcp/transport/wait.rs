//! Waiting on the sockets: a short spin, then `poll(2)` until a socket is ready, the
//! connection machine's next timer, or the caller's deadline.

use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::TcpTransport;
use crate::tcp::error::TcpError;
use crate::tcp::stream::Stream;

impl TcpTransport {
    /// Waits until a message arrived, bytes of an announced long message are here, a lent
    /// send was written, or `deadline` passed: spins for the settings' `spin` (not while a
    /// long message is on its way: `poll(2)` says at once when its next bytes come), then
    /// sleeps in `poll(2)` on every socket. `Ok(true)` when something waits for the caller.
    pub fn wait(&mut self, deadline: Instant) -> Result<bool, TcpError> {
        let spin_until = Instant::now() + self.settings.spin;
        loop {
            if !self.arrivals.is_empty()
                || !self.written.is_empty()
                || self.streams.values().any(Stream::long_spilled)
            {
                return Ok(true);
            }
            self.progress(false)?;
            if !self.arrivals.is_empty() || !self.written.is_empty() {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            let owed = self.streams.values().any(Stream::long_owed);
            if (now >= spin_until || owed) && self.block(deadline)? {
                return Ok(true);
            }
        }
    }

    /// Sleeps in `poll(2)` until a socket is ready, the machine's next timer, or `deadline`.
    /// Whether a stream whose announced long message the owner reads became readable.
    pub(super) fn block(&mut self, deadline: Instant) -> Result<bool, TcpError> {
        let mut fds = Vec::with_capacity(self.streams.len() + 1);
        let mut owed = Vec::with_capacity(self.streams.len() + 1);
        fds.push(libc::pollfd { fd: self.listener.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        owed.push(false);
        for stream in self.streams.values() {
            let mut events = libc::POLLIN;
            if stream.queued() > 0 {
                events |= libc::POLLOUT;
            }
            fds.push(libc::pollfd { fd: stream.socket.as_raw_fd(), events, revents: 0 });
            owed.push(stream.long_owed());
        }
        let mut wake = deadline.saturating_duration_since(Instant::now());
        if let Some(timer) = self.endpoint.poll_timeout() {
            wake = wake.min(Duration::from_micros(timer.saturating_sub(self.now())));
        }
        let ms = wake.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: fds is a valid array of fds.len() pollfd structures for the call's length.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if rc < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(TcpError::Local(error.kind()));
            }
        }
        if fds[0].revents & libc::POLLIN != 0 {
            self.accept_all()?;
        }
        Ok(fds.iter().zip(owed).any(|(fd, owed)| owed && fd.revents != 0))
    }
}
