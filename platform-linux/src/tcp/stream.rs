//! One TCP stream with its inbound bytes and its queue of outbound bytes.

use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;

use commcore::wire::HEADER_LEN;

use super::frame::{FrameKind, BODY_MAX, PREFIX_LEN};
use super::outbound::Outbound;

/// Bytes asked of the kernel per read into the inbound buffer: many short messages at
/// once, and little of a long one's payload (which then goes straight to its destination).
const READ_CHUNK: usize = 64 * 1024;
/// A message whose payload is at least this long is read straight into a buffer of its
/// own once its header is here ([`Stream::start_long`]): no copy out of the inbound buffer.
pub const LONG_PAYLOAD: usize = 32 * 1024;

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
    outbound: Outbound,
    /// A long message being read into its own buffer.
    long: Option<LongFrame>,
}

/// A long message's wire header and its payload on their way. Bytes read by the stream
/// itself wait in `spill[handed..filled]`; once the header is announced to the owner
/// ([`LongStart::Announced`]) the owner takes the payload with [`Stream::read_long`],
/// straight from the socket into its own buffer when nothing is spilled.
#[derive(Debug)]
struct LongFrame {
    header: [u8; HEADER_LEN],
    spill: Vec<u8>,
    filled: usize,
    handed: usize,
    /// Payload bytes still in the socket.
    left: usize,
    announced: bool,
}

/// What [`Stream::start_long`] did.
#[derive(Debug)]
pub enum LongStart {
    /// No long message starts here.
    No,
    /// The stream reads the payload whole into a buffer of its own ([`Stream::take_long`]).
    Whole,
    /// The owner takes the rest of the payload with [`Stream::read_long`].
    Announced { header: [u8; HEADER_LEN], first: Vec<u8>, rest: usize },
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
            outbound: Outbound::default(),
            long: None,
        }
    }

    /// Bytes waiting to be written.
    pub fn queued(&self) -> usize {
        self.outbound.queued()
    }

    /// Queues `bytes` behind what is queued already.
    pub fn push(&mut self, bytes: Vec<u8>) {
        self.outbound.push(bytes);
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

    /// Queues the frame of `head` and the region of `len` bytes at `address`, which its
    /// owner keeps unchanged until [`Stream::take_written`] reports `id`, and writes what
    /// the kernel takes now.
    pub fn send_lent(
        &mut self,
        head: &[u8],
        address: usize,
        len: usize,
        id: u64,
    ) -> io::Result<()> {
        // The header goes out in a write of its own, ahead of the payload: the peer's read
        // returns with it at once and its next read waits while the payload comes. In
        // interleaved runs this took a 1 MiB ping-pong over loopback from 230 to 139 µs
        // (likely as the receiving side of the kernel's work then runs on the peer's CPU).
        let sent = if self.outbound.is_empty() { self.write_now(head)? } else { 0 };
        if sent < head.len() {
            self.outbound.push(head[sent..].to_vec());
        }
        self.outbound.push_lent(address, len, id);
        self.outbound.flush(self.socket.as_raw_fd()).map(drop)
    }

    /// Writes what of `bytes` the kernel takes now; the count.
    fn write_now(&mut self, bytes: &[u8]) -> io::Result<usize> {
        loop {
            return match self.socket.write(bytes) {
                Ok(n) => Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
        }
    }

    /// Moves the ids of lent regions written whole into `into`.
    pub fn take_written(&mut self, into: &mut Vec<u64>) {
        self.outbound.take_written(into);
    }

    /// Writes as much of the queue as the kernel takes now. `Ok(true)` when it is empty.
    pub fn flush(&mut self) -> io::Result<bool> {
        self.outbound.flush(self.socket.as_raw_fd())
    }

    /// Reads what the kernel holds for this stream: into the long message's buffer while
    /// one is on its way (an announced one only when `spill`: the owner reads it itself),
    /// else into the inbound buffer, which is zeroed only when it grows, not at every read,
    /// so polling an idle stream is cheap.
    pub fn fill(&mut self, spill: bool) -> ReadEnd {
        loop {
            let long_starts = self.long.is_none() && self.long_frame_starts();
            let target = match &mut self.long {
                // A finished long message waits to be taken before more is read.
                Some(long) if long.left == 0 || (long.announced && !spill) => {
                    return ReadEnd::WouldBlock
                }
                Some(long) => {
                    if long.filled == long.spill.len() {
                        let grow =
                            if long.announced { long.left.min(READ_CHUNK) } else { long.left };
                        long.spill.resize(long.filled + grow, 0);
                    }
                    let room = (long.spill.len() - long.filled).min(long.left);
                    &mut long.spill[long.filled..long.filled + room]
                }
                // The rest of a long message goes straight to its destination: stop here.
                None if long_starts => return ReadEnd::WouldBlock,
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
                    let end = self.inbound.len().min(self.end + READ_CHUNK);
                    &mut self.inbound[self.end..end]
                }
            };
            let room = target.len();
            match self.socket.read(target) {
                Ok(0) => return ReadEnd::Closed,
                Ok(n) => {
                    match &mut self.long {
                        Some(long) => {
                            long.filled += n;
                            long.left -= n;
                        }
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

    /// Whether the unread bytes start with the header of a long message whose payload is
    /// not all here: what follows is read by [`Stream::start_long`]'s destination.
    fn long_frame_starts(&self) -> bool {
        let unread = self.unread();
        if self.peer.is_none() || unread.len() < PREFIX_LEN + HEADER_LEN {
            return false;
        }
        let body = u32::from_le_bytes([unread[0], unread[1], unread[2], unread[3]]) as usize;
        unread[4] == FrameKind::Message as u8
            && body >= HEADER_LEN + LONG_PAYLOAD
            && unread.len() < PREFIX_LEN + body
    }

    /// When the unread bytes start with a message frame whose header is here and whose
    /// payload is long, takes it out of the inbound buffer (with the payload bytes already
    /// read), so that the rest is read straight into the payload's destination: a buffer of
    /// its own, or with `announce` the owner's (the frame is then announced). Only for a
    /// connected peer's stream: its frames are trusted with a buffer of their claimed length.
    pub fn start_long(&mut self, announce: bool) -> LongStart {
        let unread = self.unread();
        if self.long.is_some() || self.peer.is_none() || unread.len() < PREFIX_LEN + HEADER_LEN {
            return LongStart::No;
        }
        let body = u32::from_le_bytes([unread[0], unread[1], unread[2], unread[3]]) as usize;
        if unread[4] != FrameKind::Message as u8 || !(HEADER_LEN..=BODY_MAX).contains(&body) {
            return LongStart::No;
        }
        let payload_len = body - HEADER_LEN;
        // A frame that is here whole is parsed as it is.
        if payload_len < LONG_PAYLOAD || unread.len() >= PREFIX_LEN + body {
            return LongStart::No;
        }
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&unread[PREFIX_LEN..PREFIX_LEN + HEADER_LEN]);
        let here = &unread[PREFIX_LEN + HEADER_LEN..];
        let filled = here.len().min(payload_len);
        let left = payload_len - filled;
        let started = if announce {
            let first = here[..filled].to_vec();
            (LongStart::Announced { header, first, rest: left }, Vec::new(), 0)
        } else {
            let mut payload = vec![0u8; payload_len];
            payload[..filled].copy_from_slice(&here[..filled]);
            (LongStart::Whole, payload, filled)
        };
        let (start, spill, filled) = started;
        self.consume(PREFIX_LEN + HEADER_LEN + here.len().min(payload_len));
        self.long = Some(LongFrame { header, spill, filled, handed: 0, left, announced: announce });
        start
    }

    /// Whether a long message is being read (it must come out before any later frame).
    pub fn reading_long(&self) -> bool {
        self.long.is_some()
    }

    /// Whether an announced long message has bytes for its owner already read (spilled).
    pub fn long_spilled(&self) -> bool {
        self.long.as_ref().is_some_and(|long| long.announced && long.handed < long.filled)
    }

    /// Whether an announced long message waits for its owner to read the socket.
    pub fn long_owed(&self) -> bool {
        self.long.as_ref().is_some_and(|long| long.announced && long.left > 0)
    }

    /// The long message once all of it is here: its wire header's bytes and its payload.
    pub fn take_long(&mut self) -> Option<([u8; HEADER_LEN], Vec<u8>)> {
        match &self.long {
            Some(long) if !long.announced && long.left == 0 => {
                self.long.take().map(|long| (long.header, long.spill))
            }
            _ => None,
        }
    }

    /// Reads the next bytes of the announced long message into `dest` (at most what is left
    /// of it): spilled bytes first, then straight from the socket. The count (0 while
    /// nothing is here), or how the stream ended. Once all of it is read, the stream goes on
    /// with the frames behind it.
    pub fn read_long(&mut self, dest: &mut [u8]) -> Result<usize, ReadEnd> {
        let Some(long) = self.long.as_mut().filter(|long| long.announced) else { return Ok(0) };
        let spilled = (long.filled - long.handed).min(dest.len());
        dest[..spilled].copy_from_slice(&long.spill[long.handed..long.handed + spilled]);
        long.handed += spilled;
        if long.handed == long.filled {
            (long.handed, long.filled) = (0, 0);
            long.spill.clear();
        }
        let mut done = spilled;
        while done < dest.len() && long.left > 0 {
            let want = (dest.len() - done).min(long.left);
            match self.socket.read(&mut dest[done..done + want]) {
                Ok(0) => return Err(ReadEnd::Closed),
                Ok(n) => {
                    done += n;
                    long.left -= n;
                    if n < want {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadEnd::Failed(e)),
            }
        }
        if long.left == 0 && long.filled == 0 {
            self.long = None;
        }
        Ok(done)
    }

    /// Whether received bytes wait to be framed.
    pub fn has_unread(&self) -> bool {
        self.start < self.end
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

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    use commcore::wire::{Header, Kind};

    use super::*;
    use crate::tcp::frame::{self, Parsed};

    /// A connected peer's stream (the reading side, nonblocking) and the writing side.
    fn pair() -> (Stream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let writer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (socket, _) = listener.accept().unwrap();
        socket.set_nonblocking(true).unwrap();
        let mut stream = Stream::new(socket, None);
        stream.peer = Some(1);
        (stream, writer)
    }

    fn frame_of(tag: i32, payload: &[u8]) -> Vec<u8> {
        let header = Header {
            kind: Kind::Eager,
            context: 3,
            source: 1,
            tag,
            sequence: 0,
            length: payload.len() as u64,
        };
        let mut bytes = frame::message_prefix(&header, payload.len()).to_vec();
        bytes.extend_from_slice(payload);
        bytes
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// Fills until the unread bytes hold at least `want` bytes (or a long message started).
    fn fill_until(stream: &mut Stream, want: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while stream.unread().len() < want {
            assert!(matches!(stream.fill(false), ReadEnd::WouldBlock));
            assert!(Instant::now() < deadline, "the bytes did not come");
        }
    }

    #[test]
    fn lent_sends_keep_their_order_behind_queued_bytes_and_their_header_goes_first() {
        let (reader, writer) = pair();
        let mut sender = Stream::new(reader.socket, None);
        // More than loopback's buffers take at once: the first lent send queues behind it.
        let copied = pattern(12 << 20);
        let lent = [pattern(300_000), pattern(70_000)];
        let head = |tag, len| frame_of(tag, &vec![0; len])[..PREFIX_LEN + HEADER_LEN].to_vec();
        sender.send_frame(&head(1, copied.len()), &copied).unwrap();
        assert!(sender.queued() > 0, "12 MiB should not fit the kernel's buffers");
        // The peer reads a part, so that the kernel has room again while bytes still wait
        // in our queue: a header written at once would overtake them.
        let expected_len = 3 * (PREFIX_LEN + HEADER_LEN) + copied.len() + 370_000;
        let part = (PREFIX_LEN + HEADER_LEN + copied.len() - sender.queued()) / 2;
        let (part_read, read_part) = std::sync::mpsc::channel();
        let reading = std::thread::spawn(move || {
            let mut writer = writer;
            let mut received = vec![0u8; expected_len];
            writer.read_exact(&mut received[..part])?;
            part_read.send(()).unwrap();
            writer.read_exact(&mut received[part..]).map(|()| received)
        });
        read_part.recv().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        for (i, region) in lent.iter().enumerate() {
            let id = i as u64 + 1;
            let head = head(id as i32 + 1, region.len());
            sender.send_lent(&head, region.as_ptr() as usize, region.len(), id).unwrap();
        }
        let (mut ids, deadline) = (Vec::new(), Instant::now() + Duration::from_secs(10));
        while !sender.flush().unwrap() {
            assert!(Instant::now() < deadline, "the queue did not drain");
        }
        sender.take_written(&mut ids);
        assert_eq!(ids, [1, 2]);
        let received = reading.join().unwrap().unwrap();
        let mut expected = head(1, copied.len());
        expected.extend_from_slice(&copied);
        for (i, region) in lent.iter().enumerate() {
            expected.extend_from_slice(&head(i as i32 + 2, region.len()));
            expected.extend_from_slice(region);
        }
        assert!(received == expected, "the bytes came out of order");
        // On an empty queue the header is written at once, ahead of the payload.
        let (reader, mut writer) = pair();
        let mut sender = Stream::new(reader.socket, None);
        let region = pattern(100_000);
        sender
            .send_lent(&head(9, region.len()), region.as_ptr() as usize, region.len(), 3)
            .unwrap();
        let mut received = vec![0u8; PREFIX_LEN + HEADER_LEN + region.len()];
        let deadline = Instant::now() + Duration::from_secs(10);
        while !sender.flush().unwrap() {
            assert!(Instant::now() < deadline, "the queue did not drain");
        }
        writer.read_exact(&mut received).unwrap();
        assert_eq!(received[..PREFIX_LEN + HEADER_LEN], head(9, region.len())[..]);
        assert!(received[PREFIX_LEN + HEADER_LEN..] == region[..], "the payload differs");
    }

    #[test]
    fn an_announced_long_payload_goes_into_the_owners_buffer_and_the_next_frame_follows() {
        let (mut stream, mut writer) = pair();
        let long = pattern(300_000);
        let mut bytes = frame_of(7, &long);
        bytes.extend_from_slice(&frame_of(8, b"after"));
        writer.write_all(&bytes[..1000]).unwrap();
        fill_until(&mut stream, 1000);
        let LongStart::Announced { header, first, rest } = stream.start_long(true) else {
            panic!("a 300,000-byte payload is long")
        };
        assert_eq!(Header::decode(&header).unwrap().tag, 7);
        assert_eq!(first.len() + rest, long.len());
        let sender = std::thread::spawn(move || writer.write_all(&bytes[1000..]).map(|()| writer));
        // The stream does not read the payload itself unless asked to spill.
        assert!(matches!(stream.fill(false), ReadEnd::WouldBlock));
        let mut dest = vec![0u8; long.len()];
        dest[..first.len()].copy_from_slice(&first);
        let mut at = first.len();
        let deadline = Instant::now() + Duration::from_secs(5);
        while at < long.len() {
            // Small reads: the payload may come in any number of pieces.
            let end = (at + 40_000).min(long.len());
            at += stream.read_long(&mut dest[at..end]).unwrap_or_else(|_| panic!("read failed"));
            assert!(Instant::now() < deadline, "the payload did not come");
        }
        assert!(dest == long, "the payload differs");
        assert!(!stream.reading_long(), "the stream goes on after the payload");
        let _writer = sender.join().unwrap().unwrap();
        fill_until(&mut stream, PREFIX_LEN + HEADER_LEN + 5);
        let Parsed::Frame { end, .. } = frame::parse(stream.unread()) else { panic!("no frame") };
        assert_eq!(&stream.unread()[PREFIX_LEN + HEADER_LEN..end], b"after");
    }

    #[test]
    fn spilled_bytes_of_an_announced_payload_come_first_and_in_order() {
        let (mut stream, mut writer) = pair();
        let long = pattern(100_000);
        let bytes = frame_of(7, &long);
        // The header comes before the rest of the payload (else it is one whole frame).
        writer.write_all(&bytes[..1000]).unwrap();
        fill_until(&mut stream, 1000);
        let LongStart::Announced { first, .. } = stream.start_long(true) else {
            panic!("a 100,000-byte payload is long")
        };
        writer.write_all(&bytes[1000..]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        // A send waiting for room reads on: the payload is spilled into the stream.
        while stream.long_owed() {
            assert!(matches!(stream.fill(true), ReadEnd::WouldBlock));
            assert!(Instant::now() < deadline, "the payload did not come");
        }
        assert!(stream.long_spilled());
        let mut dest = first;
        let mut piece = vec![0u8; 30_000];
        while dest.len() < long.len() {
            let n = stream.read_long(&mut piece).unwrap_or_else(|_| panic!("read failed"));
            assert!(n > 0, "spilled bytes are there at once");
            dest.extend_from_slice(&piece[..n]);
        }
        assert!(dest == long, "the payload differs");
        assert!(!stream.reading_long() && !stream.long_spilled());
    }

    #[test]
    fn a_whole_long_payload_is_read_by_the_stream_when_not_announced() {
        let (mut stream, mut writer) = pair();
        let long = pattern(70_000);
        let bytes = frame_of(9, &long);
        writer.write_all(&bytes[..1000]).unwrap();
        fill_until(&mut stream, 1000);
        assert!(matches!(stream.start_long(false), LongStart::Whole));
        writer.write_all(&bytes[1000..]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some((header, payload)) = stream.take_long() {
                assert_eq!(Header::decode(&header).unwrap().tag, 9);
                assert!(payload == long, "the payload differs");
                break;
            }
            assert!(matches!(stream.fill(false), ReadEnd::WouldBlock));
            assert!(Instant::now() < deadline, "the payload did not come");
        }
    }

    #[test]
    fn a_peer_that_closes_inside_an_announced_payload_is_an_end_not_a_wait() {
        let (mut stream, mut writer) = pair();
        let bytes = frame_of(7, &pattern(50_000));
        writer.write_all(&bytes[..bytes.len() / 2]).unwrap();
        drop(writer);
        fill_until(&mut stream, bytes.len() / 2);
        assert!(matches!(stream.start_long(true), LongStart::Announced { .. }));
        let mut dest = vec![0u8; 50_000];
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match stream.read_long(&mut dest) {
                Ok(_) => assert!(Instant::now() < deadline, "the end was not seen"),
                Err(end) => {
                    assert!(matches!(end, ReadEnd::Closed), "{end:?}");
                    break;
                }
            }
        }
    }
}
