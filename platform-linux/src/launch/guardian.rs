//! The guardian: a small process forked from a dedicated launcher that kills the job's
//! process group if the launcher dies without ending it (SIGKILL cannot be caught). Ranks
//! die with the launcher through the parent-death signal anyway, but the processes ranks
//! start do not inherit it; they are in the job's group, which the guardian ends.

use std::io;

/// The launcher's side of the guardian: the write end of a pipe whose read end the
/// guardian blocks on. The launcher writes the job's group, then a release byte at the end;
/// if the pipe closes without the release (the launcher died), the guardian kills the group.
pub(super) struct Guardian {
    pid: i32,
    pipe: i32,
}

const RELEASE: u8 = 0xff;

impl Guardian {
    /// Forks the guardian. Call before starting threads (only async-signal-safe calls run
    /// in the child).
    pub(super) fn start() -> io::Result<Guardian> {
        let mut fds = [0i32; 2];
        // SAFETY: fds is a valid array of two descriptors to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let [read_end, write_end] = fds;
        // SAFETY: the child calls only async-signal-safe functions (close, read, killpg,
        // _exit) and never returns into Rust code.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let error = io::Error::last_os_error();
            // SAFETY: closing the two descriptors just opened.
            unsafe {
                libc::close(read_end);
                libc::close(write_end);
            }
            return Err(error);
        }
        if pid == 0 {
            // SAFETY: in the forked child; see above.
            unsafe { guard(read_end, write_end) }
        }
        // SAFETY: the parent does not read; closing its copy of the read end.
        unsafe { libc::close(read_end) };
        Ok(Guardian { pid, pipe: write_end })
    }

    /// Tells the guardian the job's process group.
    pub(super) fn watch(&mut self, pgid: i32) {
        let bytes = pgid.to_ne_bytes();
        // SAFETY: writes 4 bytes from a live array to our pipe.
        unsafe { libc::write(self.pipe, bytes.as_ptr().cast(), bytes.len()) };
    }

    /// The job has ended: the guardian exits without killing; reaps it.
    pub(super) fn release(self) {
        let byte = [RELEASE];
        // SAFETY: writes 1 byte to our pipe, closes it and reaps our child.
        unsafe {
            libc::write(self.pipe, byte.as_ptr().cast(), 1);
            libc::close(self.pipe);
            let mut status = 0;
            libc::waitpid(self.pid, &mut status, 0);
        }
    }
}

/// The guardian's life: read the group, then wait; killed group unless released.
///
/// # Safety
/// Only in the child of `fork`, with the pipe's two ends.
unsafe fn guard(read_end: i32, write_end: i32) -> ! {
    // SAFETY: async-signal-safe calls on our own descriptors and the group we were told.
    unsafe {
        libc::close(write_end);
        // Leave the launcher's process group, so a Ctrl-C at the terminal does not end us
        // before the launcher has forwarded it.
        libc::setpgid(0, 0);
        // Four bytes of the group, then the release byte; the launcher closes the pipe
        // after either, so reading to the end sees everything it sent.
        let mut bytes = [0u8; 5];
        let mut got = 0usize;
        while got < bytes.len() {
            let n = libc::read(read_end, bytes.as_mut_ptr().add(got).cast(), bytes.len() - got);
            if n > 0 {
                got += n as usize;
            } else if n == 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        let released = got == bytes.len() && bytes[4] == RELEASE;
        if got >= 4 && !released {
            let pgid = i32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            if pgid > 0 {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        libc::_exit(0)
    }
}
