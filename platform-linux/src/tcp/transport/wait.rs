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
        let mut wake = deadline.saturating_duration_since(Instant::now());
        if let Some(timer) = self.endpoint.poll_timeout() {
            wake = wake.min(Duration::from_micros(timer.saturating_sub(self.now())));
        }
        let ms = wake.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        if self.poll_sockets(ms)? {
            self.accept_all()?;
        }
        let streams = &self.streams;
        let ready = self.fds[1..].iter().zip(&self.fd_tokens).filter(|(fd, _)| fd.revents != 0);
        Ok(ready.filter_map(|(_, token)| streams.get(token)).any(Stream::long_owed))
    }

    /// Asks the kernel which sockets have something for us now, without waiting, and lists
    /// the streams a pass services in `due`: those (readable, or writable with bytes queued
    /// for them), and those with unread bytes. Polling takes no socket's lock where a
    /// `recv` on an idle socket or a `sendmsg` on a full one does: a peer's packet that
    /// comes meanwhile then waits in the socket's backlog until our next call. Whether
    /// connections wait at the listener.
    pub(super) fn ready_now(&mut self) -> Result<bool, TcpError> {
        let accept = self.poll_sockets(0)?;
        self.due.clear();
        for (fd, &token) in self.fds[1..].iter().zip(&self.fd_tokens) {
            let unread = self.streams.get(&token).is_some_and(Stream::has_unread);
            if fd.revents != 0 || unread {
                self.due.push(token);
            }
        }
        Ok(accept)
    }

    /// `poll(2)` on the listener and every stream (for reads, and for writes where bytes
    /// are queued) for up to `ms` milliseconds; the results stay in `fds`. Whether
    /// connections wait at the listener.
    fn poll_sockets(&mut self, ms: i32) -> Result<bool, TcpError> {
        self.fds.clear();
        self.fd_tokens.clear();
        let listener = self.listener.as_raw_fd();
        self.fds.push(libc::pollfd { fd: listener, events: libc::POLLIN, revents: 0 });
        for (&token, stream) in &self.streams {
            let mut events = libc::POLLIN;
            if stream.queued() > 0 {
                events |= libc::POLLOUT;
            }
            self.fds.push(libc::pollfd { fd: stream.socket.as_raw_fd(), events, revents: 0 });
            self.fd_tokens.push(token);
        }
        // SAFETY: fds is a valid array of fds.len() pollfd structures for the call's length.
        let rc = unsafe { libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, ms) };
        if rc < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(TcpError::Local(error.kind()));
            }
            self.fds.iter_mut().for_each(|fd| fd.revents = 0);
        }
        Ok(self.fds[0].revents & libc::POLLIN != 0)
    }
}
