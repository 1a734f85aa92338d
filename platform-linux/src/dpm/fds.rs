//! Handing file descriptors to another process over a Unix stream socket (`SCM_RIGHTS`).
//!
//! Jobs on one host give each other their shared-memory regions this way: the owner sends
//! the region's memfd, the receiver maps it. No name in /dev/shm or anywhere else is
//! involved, so a crash leaves nothing behind. Each message carries at least one byte of
//! payload (the kernel attaches descriptors to data) and at most [`MAX_FDS`] descriptors.

use std::fmt;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// Descriptors one message carries at most.
pub const MAX_FDS: usize = 16;

/// Why descriptors could not be sent or received.
#[derive(Debug)]
pub enum FdError {
    /// More than [`MAX_FDS`] descriptors in one message.
    TooMany {
        /// How many were given.
        count: usize,
    },
    /// A message needs at least one byte of payload to carry descriptors.
    EmptyPayload,
    /// The peer sent more descriptors (or control data) than fit: the message was cut and
    /// the descriptors that arrived have been closed.
    Truncated,
    /// The control message was not the `SCM_RIGHTS` this protocol sends.
    UnexpectedControl,
    /// The peer closed the socket before sending anything.
    Closed,
    /// The system call failed.
    Io(io::Error),
}

impl fmt::Display for FdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FdError::TooMany { count } => {
                write!(f, "{count} descriptors in one message: send at most {MAX_FDS} at a time")
            }
            FdError::EmptyPayload => {
                f.write_str("descriptors need at least one byte of payload to travel with")
            }
            FdError::Truncated => f.write_str(
                "the peer sent more descriptors than this side accepts: the message was refused",
            ),
            FdError::UnexpectedControl => {
                f.write_str("the peer sent a control message other than descriptors")
            }
            FdError::Closed => f.write_str("the peer closed the socket before sending"),
            FdError::Io(e) => write!(f, "descriptor handover failed: {e}"),
        }
    }
}

impl std::error::Error for FdError {}

/// Control-buffer storage aligned for `cmsghdr`, large enough for [`MAX_FDS`] descriptors.
#[repr(C)]
struct ControlBuffer {
    _align: [libc::cmsghdr; 0],
    bytes: [u8; 512],
}

fn control_space(count: usize) -> usize {
    // SAFETY: CMSG_SPACE only computes a size from its argument.
    unsafe { libc::CMSG_SPACE((count * mem::size_of::<RawFd>()) as u32) as usize }
}

/// Sends `payload` with `fds` attached. Returns how many payload bytes went out (a short
/// write sends the descriptors with the first part; the caller sends the rest as data).
pub fn send_fds(
    socket: &UnixStream,
    payload: &[u8],
    fds: &[BorrowedFd<'_>],
) -> Result<usize, FdError> {
    if fds.len() > MAX_FDS {
        return Err(FdError::TooMany { count: fds.len() });
    }
    if payload.is_empty() {
        return Err(FdError::EmptyPayload);
    }
    let mut control = ControlBuffer { _align: [], bytes: [0; 512] };
    let mut iov =
        libc::iovec { iov_base: payload.as_ptr() as *mut libc::c_void, iov_len: payload.len() };
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let data_len = mem::size_of_val(fds);
        msg.msg_control = control.bytes.as_mut_ptr().cast();
        msg.msg_controllen = control_space(fds.len());
        // SAFETY: msg_control points at `control`, which is aligned for cmsghdr and at least
        // CMSG_SPACE(data_len) bytes long (512 > CMSG_SPACE(16 × 4)), so CMSG_FIRSTHDR is
        // non-null and the header and CMSG_DATA's data_len bytes lie inside it.
        unsafe {
            let header = libc::CMSG_FIRSTHDR(&msg);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(data_len as u32) as usize;
            let data = libc::CMSG_DATA(header).cast::<RawFd>();
            for (i, fd) in fds.iter().enumerate() {
                data.add(i).write_unaligned(fd.as_raw_fd());
            }
        }
    }
    loop {
        // SAFETY: msg points at the live iovec and control buffer above; the payload is
        // only read by the kernel.
        let sent = unsafe { libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            return Ok(sent as usize);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(FdError::Io(error));
        }
    }
}

/// Receives into `payload` and returns the bytes read with the descriptors that came with
/// them (at most `max_fds`, each close-on-exec). More descriptors than `max_fds`, or a cut
/// control message, is [`FdError::Truncated`], with every descriptor that did arrive closed.
/// A socket timeout set with `set_read_timeout` bounds the wait ([`FdError::Io`]).
pub fn recv_fds(
    socket: &UnixStream,
    payload: &mut [u8],
    max_fds: usize,
) -> Result<(usize, Vec<OwnedFd>), FdError> {
    if max_fds > MAX_FDS {
        return Err(FdError::TooMany { count: max_fds });
    }
    if payload.is_empty() {
        return Err(FdError::EmptyPayload);
    }
    let mut control = ControlBuffer { _align: [], bytes: [0; 512] };
    let mut iov = libc::iovec { iov_base: payload.as_mut_ptr().cast(), iov_len: payload.len() };
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if max_fds > 0 {
        msg.msg_control = control.bytes.as_mut_ptr().cast();
        msg.msg_controllen = control_space(max_fds);
    }
    let received = loop {
        // SAFETY: msg points at the live iovec (writable payload) and control buffer, whose
        // lengths it states; MSG_CMSG_CLOEXEC marks received descriptors close-on-exec
        // atomically.
        let received =
            unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if received >= 0 {
            break received as usize;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(FdError::Io(error));
        }
    };
    let mut fds = Vec::new();
    let mut unexpected = false;
    if max_fds > 0 {
        // SAFETY: the kernel filled msg_control up to msg_controllen; CMSG_FIRSTHDR and
        // CMSG_NXTHDR stay within it and return null past the end. Every SCM_RIGHTS entry
        // holds (cmsg_len - CMSG_LEN(0)) / 4 descriptors that this process now owns, so
        // wrapping each in an OwnedFd (closed when dropped) is sound.
        unsafe {
            let mut header = libc::CMSG_FIRSTHDR(&msg);
            while !header.is_null() {
                let h = &*header;
                if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_RIGHTS {
                    let bytes = h.cmsg_len - libc::CMSG_LEN(0) as usize;
                    let data = libc::CMSG_DATA(header).cast::<RawFd>();
                    for i in 0..bytes / mem::size_of::<RawFd>() {
                        fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                    }
                } else {
                    unexpected = true;
                }
                header = libc::CMSG_NXTHDR(&msg, header);
            }
        }
    }
    // Dropping `fds` closes whatever arrived with a refused message.
    if msg.msg_flags & libc::MSG_CTRUNC != 0 || fds.len() > max_fds {
        return Err(FdError::Truncated);
    }
    if unexpected {
        return Err(FdError::UnexpectedControl);
    }
    if received == 0 {
        return Err(FdError::Closed);
    }
    Ok((received, fds))
}

#[cfg(test)]
mod tests;
