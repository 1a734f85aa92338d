//! One TCP stream with its inbound bytes and its queue of outbound bytes.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpStream};

/// Bytes asked of the kernel per read: large enough that a 1 MiB message takes few reads.
const READ_CHUNK: usize = 256 * 1024;
/// Buffers gathered into one `writev`.
const WRITE_GATHER: usize = 16;

/// A stream, what arrived on it and is not yet framed, and what waits to be written.
#[derive(Debug)]
pub struct Stream {
    pub(super) socket: TcpStream,
    /// The listening address we dialed (`None` for an accepted stream).
    pub(super) dialed: Option<SocketAddr>,
    /// The peer rank whose connection this stream carries, once the handshake made it so.
    pub(super) peer: Option<usize>,
    /// Received bytes `start..end` are not consumed yet; the rest is room to read into.
    inbound: Vec<u8>,
    start: usize,
    end: usize,
    outbound: VecDeque<Vec<u8>>,
    /// Bytes of the first outbound buffer already written.
    written: usize,
    queued: usize,
}

/// How a read ended.
#[derive(Debug)]
pub enum ReadEnd {
    /// Nothing more to read now.
    WouldBlock,
    /// The peer closed its side.
    Closed,
    /// The stream failed (reset, refused, ...).
    Failed(io::Error),
}

impl Stream {
    pub(super) fn new(socket: TcpStream, dialed: Option<SocketAddr>) -> Self {
        Self {
            socket,
            dialed,
            peer: None,
            inbound: Vec::new(),
            start: 0,
            end: 0,
            outbound: VecDeque::new(),
            written: 0,
            queued: 0,
        }
    }

    /// Bytes waiting to be written.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Queues `bytes` behind what is queued already.
    pub fn push(&mut self, bytes: Vec<u8>) {
        self.queued += bytes.len();
        self.outbound.push_back(bytes);
    }

    /// Sends a frame of `head` and `payload`: written straight from the caller's buffer when
    /// nothing is queued before it, and what the kernel did not take is copied to the queue.
    pub fn send_frame(&mut self, head: &[u8], payload: &[u8]) -> io::Result<()> {
        let mut done = 0;
        if self.outbound.is_empty() {
            loop {
                let slices = [IoSlice::new(head), IoSlice::new(payload)];
                match self.socket.write_vectored(&slices) {
                    Ok(n) => done = n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
                break;
            }
        }
        let total = head.len() + payload.len();
        if done < total {
            let mut rest = Vec::with_capacity(total - done);
            if done < head.len() {
                rest.extend_from_slice(&head[done..]);
                rest.extend_from_slice(payload);
            } else {
                rest.extend_from_slice(&payload[done - head.len()..]);
            }
            self.push(rest);
        }
        Ok(())
    }

    /// Writes as much of the queue as the kernel takes now. `Ok(true)` when it is empty.
    pub fn flush(&mut self) -> io::Result<bool> {
        while !self.outbound.is_empty() {
            let slices: Vec<IoSlice<'_>> = self
                .outbound
                .iter()
                .take(WRITE_GATHER)
                .enumerate()
                .map(|(i, b)| IoSlice::new(if i == 0 { &b[self.written..] } else { b }))
                .collect();
            match self.socket.write_vectored(&slices) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(mut n) => {
                    self.queued -= n;
                    while n > 0 {
                        let left = self.outbound[0].len() - self.written;
                        if n >= left {
                            n -= left;
                            self.written = 0;
                            self.outbound.pop_front();
                        } else {
                            self.written += n;
                            n = 0;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Reads what the kernel holds for this stream into the inbound buffer. Room is made
    /// for the whole frame being read once its prefix is here, so a long message is read
    /// straight into place; the buffer is zeroed only when it grows, not at every read, so
    /// polling an idle stream is cheap.
    pub fn fill(&mut self) -> ReadEnd {
        loop {
            // Only a connected peer's frames are trusted with room for their claimed length.
            let frame_rest = match super::frame::parse(self.unread()) {
                super::frame::Parsed::Need(total) if self.peer.is_some() => {
                    total.saturating_sub(self.end - self.start)
                }
                _ => 0,
            };
            let room = frame_rest.max(READ_CHUNK / 4);
            if self.inbound.len() - self.end < room {
                if self.start > 0 {
                    self.inbound.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                }
                if self.inbound.len() - self.end < room {
                    self.inbound.resize(self.end + room.max(READ_CHUNK), 0);
                }
            }
            match self.socket.read(&mut self.inbound[self.end..]) {
                Ok(0) => return ReadEnd::Closed,
                Ok(n) => {
                    self.end += n;
                    if self.end < self.inbound.len() {
                        return ReadEnd::WouldBlock;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return ReadEnd::WouldBlock,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return ReadEnd::Failed(e),
            }
        }
    }

    /// The bytes received and not consumed.
    pub fn unread(&self) -> &[u8] {
        &self.inbound[self.start..self.end]
    }

    /// Marks the first `n` unread bytes consumed.
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        }
    }
}
