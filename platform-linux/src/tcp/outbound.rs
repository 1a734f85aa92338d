//! A stream's queue of bytes to write: buffers it owns, and regions of a sender's memory
//! that the sender keeps unchanged until told they were written (a nonblocking send of a
//! long message, whose bytes go from its own buffer to the kernel: no copy of ours).
//!
//! A lent region is held as an address, never as a Rust reference: the queue outlives the
//! borrow that the sender's request holds, and only the kernel reads the region (`sendmsg`),
//! as it reads a single-copy send's buffer for another process. A request that is leaked
//! instead of completed leaves an address the kernel reads as whatever is there then, or
//! refuses (`EFAULT`, an error of the stream): never a read by this process.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

/// Buffers gathered into one `writev`.
const WRITE_GATHER: usize = 16;

/// One piece of the queue.
#[derive(Debug)]
enum Chunk {
    Owned(Vec<u8>),
    /// `len` bytes at `address` of this process, reported as written under `id`.
    Lent {
        address: usize,
        len: usize,
        id: u64,
    },
}

impl Chunk {
    fn len(&self) -> usize {
        match self {
            Chunk::Owned(bytes) => bytes.len(),
            Chunk::Lent { len, .. } => *len,
        }
    }
}

/// The queue of one stream.
#[derive(Debug, Default)]
pub struct Outbound {
    chunks: VecDeque<Chunk>,
    /// Bytes of the first chunk already written.
    written: usize,
    queued: usize,
    /// Lent regions written whole, by id, not yet taken ([`Outbound::take_written`]).
    done: Vec<u64>,
}

impl Outbound {
    /// Bytes waiting to be written.
    pub fn queued(&self) -> usize {
        self.queued
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Queues `bytes` behind what is queued already.
    pub fn push(&mut self, bytes: Vec<u8>) {
        self.queued += bytes.len();
        self.chunks.push_back(Chunk::Owned(bytes));
    }

    /// Queues the region of `len` bytes at `address`, which its owner keeps unchanged until
    /// [`Outbound::take_written`] reports `id`.
    pub fn push_lent(&mut self, address: usize, len: usize, id: u64) {
        self.queued += len;
        self.chunks.push_back(Chunk::Lent { address, len, id });
    }

    /// Moves the ids of lent regions written whole into `into`.
    pub fn take_written(&mut self, into: &mut Vec<u64>) {
        into.append(&mut self.done);
    }

    /// Writes as much of the queue to `fd` as the kernel takes now. `Ok(true)` when it is
    /// empty.
    pub fn flush(&mut self, fd: RawFd) -> io::Result<bool> {
        let empty = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
        let mut iov = [empty; WRITE_GATHER];
        while !self.chunks.is_empty() {
            let count = self.chunks.len().min(WRITE_GATHER);
            for (i, chunk) in self.chunks.iter().take(count).enumerate() {
                let skip = if i == 0 { self.written } else { 0 };
                let base = match chunk {
                    Chunk::Owned(bytes) => bytes.as_ptr() as usize,
                    Chunk::Lent { address, .. } => *address,
                };
                let iov_base = (base + skip) as *mut libc::c_void;
                iov[i] = libc::iovec { iov_base, iov_len: chunk.len() - skip };
            }
            // SAFETY: an all-zero msghdr is valid (no address, no control data).
            let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
            message.msg_iov = iov.as_ptr() as *mut libc::iovec;
            message.msg_iovlen = count;
            // SAFETY: each of the first `count` entries of `iov` describes an owned buffer of
            // ours (alive for the call) or a lent region, which the kernel only reads (see
            // the module's text); `message` points at those entries for the call's length.
            // No SIGPIPE: a closed peer is an error of the stream.
            let rc = unsafe { libc::sendmsg(fd, &message, libc::MSG_NOSIGNAL) };
            if rc < 0 {
                let error = io::Error::last_os_error();
                match error.kind() {
                    io::ErrorKind::WouldBlock => return Ok(false),
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(error),
                }
            }
            if rc == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.consume(rc as usize);
        }
        Ok(true)
    }

    /// Drops the first `n` written bytes from the queue, noting lent regions written whole.
    fn consume(&mut self, mut n: usize) {
        self.queued -= n;
        while n > 0 {
            let left = self.chunks[0].len() - self.written;
            if n < left {
                self.written += n;
                return;
            }
            n -= left;
            self.written = 0;
            if let Some(Chunk::Lent { id, .. }) = self.chunks.pop_front() {
                self.done.push(id);
            }
        }
        // A lent region of no bytes is written as soon as it is first in line.
        while let Some(&Chunk::Lent { len: 0, id, .. }) = self.chunks.front() {
            self.chunks.pop_front();
            self.done.push(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    use super::*;

    #[test]
    fn owned_and_lent_bytes_go_out_in_order_and_lent_ids_come_back_once_written() {
        let (writer, mut reader) = UnixStream::pair().unwrap();
        writer.set_nonblocking(true).unwrap();
        let lent: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        let mut queue = Outbound::default();
        queue.push(b"head".to_vec());
        queue.push_lent(lent.as_ptr() as usize, lent.len(), 7);
        queue.push(b"tail".to_vec());
        assert_eq!(queue.queued(), 8 + lent.len());
        let mut received = Vec::new();
        let mut ids = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        while !queue.flush(writer.as_raw_fd()).unwrap() || received.len() < 8 + lent.len() {
            queue.take_written(&mut ids);
            if ids.is_empty() {
                assert!(received.len() < 4 + lent.len(), "id 7 not reported once written");
            }
            let n = reader.read(&mut chunk).unwrap();
            received.extend_from_slice(&chunk[..n]);
        }
        queue.take_written(&mut ids);
        assert_eq!(ids, [7]);
        assert!(queue.is_empty() && queue.queued() == 0);
        assert_eq!(&received[..4], b"head");
        assert!(received[4..4 + lent.len()] == lent[..], "the lent bytes differ");
        assert_eq!(&received[4 + lent.len()..], b"tail");
    }

    #[test]
    fn a_closed_reader_is_an_error_of_the_stream() {
        let (writer, reader) = UnixStream::pair().unwrap();
        drop(reader);
        let mut queue = Outbound::default();
        queue.push(vec![1; 10]);
        assert!(queue.flush(writer.as_raw_fd()).is_err());
    }
}
