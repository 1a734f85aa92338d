//! One TCP stream with its inbound bytes and its queue of outbound bytes.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpStream};

use commcore::wire::HEADER_LEN;

use super::frame::{FrameKind, BODY_MAX, PREFIX_LEN};

/// Bytes asked of the kernel per read into the inbound buffer.
const READ_CHUNK: usize = 256 * 1024;
/// A message whose payload is at least this long is read straight into a buffer of its
/// own once its header is here ([`Stream::start_long`]): no copy out of the inbound buffer.
const LONG_PAYLOAD: usize = 32 * 1024;
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
    /// A long message being read into its own buffer.
    long: Option<LongFrame>,
}

/// A long message's wire header and its payload, `filled` bytes of it read so far.
#[derive(Debug)]
struct LongFrame {
    header: [u8; HEADER_LEN],
    payload: Vec<u8>,
    filled: usize,
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
            long: None,
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

    /// Reads what the kernel holds for this stream: into the long message's own buffer
    /// while one is being read, else into the inbound buffer, which is zeroed only when it
    /// grows, not at every read, so polling an idle stream is cheap.
    pub fn fill(&mut self) -> ReadEnd {
        loop {
            let target = match &mut self.long {
                Some(long) if long.filled < long.payload.len() => &mut long.payload[long.filled..],
                // A finished long message waits to be taken before more is read.
                Some(_) => return ReadEnd::WouldBlock,
                None => {
                    if self.inbound.len() - self.end < READ_CHUNK / 4 {
                        if self.start > 0 {
                            self.inbound.copy_within(self.start..self.end, 0);
                            self.end -= self.start;
                            self.start = 0;
                        }
                        if self.inbound.len() - self.end < READ_CHUNK / 4 {
                            self.inbound.resize(self.end + READ_CHUNK, 0);
                        }
                    }
                    &mut self.inbound[self.end..]
                }
            };
            let room = target.len();
            match self.socket.read(target) {
                Ok(0) => return ReadEnd::Closed,
                Ok(n) => {
                    match &mut self.long {
                        Some(long) => long.filled += n,
                        None => self.end += n,
                    }
                    if n < room {
                        return ReadEnd::WouldBlock;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return ReadEnd::WouldBlock,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return ReadEnd::Failed(e),
            }
        }
    }

    /// When the unread bytes start with a message frame whose header is here and whose
    /// payload is long, moves it into a buffer of its own (with the payload bytes already
    /// read), so that the rest is read straight there. Only for a connected peer's stream:
    /// its frames are trusted with a buffer of their claimed length.
    pub fn start_long(&mut self) -> bool {
        let unread = self.unread();
        if self.long.is_some() || self.peer.is_none() || unread.len() < PREFIX_LEN + HEADER_LEN {
            return false;
        }
        let body = u32::from_le_bytes([unread[0], unread[1], unread[2], unread[3]]) as usize;
        if unread[4] != FrameKind::Message as u8 || !(HEADER_LEN..=BODY_MAX).contains(&body) {
            return false;
        }
        let payload_len = body - HEADER_LEN;
        if payload_len < LONG_PAYLOAD {
            return false;
        }
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&unread[PREFIX_LEN..PREFIX_LEN + HEADER_LEN]);
        let here = &unread[PREFIX_LEN + HEADER_LEN..];
        let filled = here.len().min(payload_len);
        let mut payload = vec![0u8; payload_len];
        payload[..filled].copy_from_slice(&here[..filled]);
        self.consume(PREFIX_LEN + HEADER_LEN + filled);
        self.long = Some(LongFrame { header, payload, filled });
        true
    }

    /// Whether a long message is being read (it must come out before any later frame).
    pub fn reading_long(&self) -> bool {
        self.long.is_some()
    }

    /// The long message once all of it is here: its wire header's bytes and its payload.
    pub fn take_long(&mut self) -> Option<([u8; HEADER_LEN], Vec<u8>)> {
        match &self.long {
            Some(long) if long.filled == long.payload.len() => {
                self.long.take().map(|long| (long.header, long.payload))
            }
            _ => None,
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
