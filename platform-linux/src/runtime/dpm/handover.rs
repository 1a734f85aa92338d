//! Handing a descriptor (a bridge's memory file) from a group's root to the rest of its
//! group: the root says which process and descriptor number; every other process takes a
//! copy of it with `pidfd_getfd` (Linux 5.6; the same permission single-copy reads need).
//! Nothing passes through the file system.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::DpmError;
use crate::runtime::Comm;

const SYS_PIDFD_OPEN: libc::c_long = 434;
const SYS_PIDFD_GETFD: libc::c_long = 438;

/// A copy of descriptor `fd` of process `pid`.
pub(crate) fn take_from(pid: u32, fd: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(SYS_PIDFD_OPEN, pid as libc::pid_t, 0u32) };
    if pidfd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pidfd_open returned a fresh descriptor that nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
    // SAFETY: pidfd_getfd takes an open pidfd, a descriptor number and flags; it returns a
    // new close-on-exec descriptor or -1.
    let copy = unsafe { libc::syscall(SYS_PIDFD_GETFD, pidfd.as_raw_fd(), fd, 0u32) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pidfd_getfd returned a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(copy as i32) })
}

impl Comm {
    /// Gives every rank its own copy of the root's descriptor `fd` (collective; only the
    /// root passes `Some`). The root's copy stays open until every rank has taken its own.
    pub(super) fn share_fd(
        &self,
        root: usize,
        fd: Option<BorrowedFd<'_>>,
    ) -> Result<OwnedFd, DpmError> {
        let mine = match fd {
            Some(fd) if self.rank() == root => {
                Some(fd.try_clone_to_owned().map_err(|e| DpmError::Handover(format!("dup: {e}")))?)
            }
            _ => None,
        };
        let mut words = [0u8; 8];
        if let Some(fd) = &mine {
            words[..4].copy_from_slice(&std::process::id().to_le_bytes());
            words[4..].copy_from_slice(&fd.as_raw_fd().to_le_bytes());
        }
        self.bcast(&mut words, root)?;
        let pid = u32::from_le_bytes([words[0], words[1], words[2], words[3]]);
        let number = i32::from_le_bytes([words[4], words[5], words[6], words[7]]);
        let taken = match mine {
            Some(fd) => Ok(fd),
            None => take_from(pid, number).map_err(|e| {
                DpmError::Handover(format!(
                    "cannot take descriptor {number} of process {pid} ({e}); the kernel must \
                     allow ptrace access between the group's processes"
                ))
            }),
        };
        // Everyone agrees on the result, and the root keeps its copy until all have theirs.
        let ok = u8::from(taken.is_ok());
        let mut all = vec![0u8; self.size()];
        self.allgather(&[ok], &mut all)?;
        match taken {
            Ok(fd) if all.iter().all(|&b| b == 1) => Ok(fd),
            Ok(_) => {
                Err(DpmError::Handover("a process of the group could not take the bridge".into()))
            }
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_takes_its_own_descriptor_and_a_bad_one_is_an_error() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let copy = take_from(std::process::id(), a.as_raw_fd());
        if let Ok(copy) = copy {
            assert_ne!(copy.as_raw_fd(), a.as_raw_fd());
        }
        assert!(take_from(std::process::id(), 100_000).is_err());
        assert!(take_from(u32::MAX >> 1, 0).is_err());
    }
}
