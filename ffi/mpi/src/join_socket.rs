//! The program's socket for `MPI_Comm_join`, read and written without taking it over (the
//! program closes it).

use std::ffi::c_int;
use std::io::{Read, Write};

use crate::consts::*;
use crate::error::{fail, MpiResult};

/// A descriptor this library reads and writes but does not close.
pub(crate) struct Borrowed(c_int);

impl Borrowed {
    pub fn new(fd: c_int) -> MpiResult<Self> {
        if fd < 0 {
            return fail(MPI_ERR_ARG, format!("{fd} is not a descriptor"));
        }
        Ok(Borrowed(fd))
    }
}

impl Read for Borrowed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // SAFETY: `buf` is valid for `buf.len()` bytes; a bad descriptor is an error.
        let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

impl Write for Borrowed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // SAFETY: `buf` is valid for `buf.len()` bytes; a bad descriptor is an error.
        let n = unsafe { libc::write(self.0, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
