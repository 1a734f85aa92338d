//! A single-producer single-consumer ring of fixed-size cells in shared memory.
//!
//! The writer owns `tail` and the cells outside `[head, tail)`; the reader owns `head` and
//! the cells inside it. Each cell starts with a sequence word: the writer fills the cell,
//! then publishes it by storing `index + 1` there (release); the reader polls the sequence
//! word of the cell at `head` (acquire) and never reads `tail`, so an idle reader spins on
//! one cache line that only the next message touches. The writer keeps a private copy of
//! `head` next to `tail` and reads the reader's line only when the ring looks full.
//!
//! A cell's first cache line holds the sequence word, the header and, for a payload of at
//! most [`INLINE_BYTES`], the payload too: a small message costs the reader one line
//! transfer. Longer payloads start on the next line, so that bulk copies stay aligned.

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use commcore::wire;

use super::layout::{Layout, CELL_BYTES, RING_DEPTH};
use super::region::Region;

/// Bytes of the sequence word that starts every cell.
const SEQUENCE_BYTES: usize = 8;
/// Where a payload of at most [`INLINE_BYTES`] starts: right after the header.
const INLINE_OFFSET: usize = SEQUENCE_BYTES + CellHeader::ENCODED;
/// The longest payload that shares the cell's first cache line with the header.
pub const INLINE_BYTES: usize = CACHE_LINE - INLINE_OFFSET;
/// Where a longer payload starts: the cell's second cache line.
const BULK_OFFSET: usize = CACHE_LINE;
const CACHE_LINE: usize = 64;

// A bulk payload fits its cell, and an inline one ends with the first line.
const _: () = assert!(BULK_OFFSET + Ring::PAYLOAD_BYTES <= CELL_BYTES);
const _: () = assert!(INLINE_OFFSET < CACHE_LINE);
// A packet cell's header (wire header and payload length) fits a cell header's bytes.
const _: () = assert!(wire::HEADER_LEN + 4 <= CellHeader::ENCODED);

/// Where in a cell a payload of `len` bytes starts.
fn payload_offset(len: usize) -> usize {
    if len <= INLINE_BYTES {
        INLINE_OFFSET
    } else {
        BULK_OFFSET
    }
}

/// What a cell carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    /// The first cell of a message sent by copy: envelope and the first bytes.
    Message = 1,
    /// A following piece of a message sent by copy.
    Fragment = 2,
    /// A request to send: the envelope and the address of the sender's buffer, to be read
    /// with a single copy.
    ReadyToSend = 3,
    /// The receiver has read a ready-to-send message; its sender may reuse the buffer.
    Finished = 4,
    /// The receiver asks the sender to write part of a single-copy message itself; the
    /// payload says which part and where it goes (see the engine's rendezvous module).
    ClearToSend = 5,
    /// The sender wrote its part of a split single copy; the payload holds 0 or the errno
    /// of its failure.
    Written = 6,
}

impl CellKind {
    fn from_u32(value: u32) -> Option<CellKind> {
        Some(match value {
            1 => CellKind::Message,
            2 => CellKind::Fragment,
            3 => CellKind::ReadyToSend,
            4 => CellKind::Finished,
            5 => CellKind::ClearToSend,
            6 => CellKind::Written,
            _ => return None,
        })
    }
}

/// A cell's header; `fragment_len` payload bytes follow it. Each field has one meaning in
/// every kind of cell; a field a kind does not need is zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellHeader {
    /// What the cell carries.
    pub kind: CellKind,
    /// The communicator context of the message.
    pub context: u32,
    /// The message tag.
    pub tag: i32,
    /// Payload bytes in this cell.
    pub fragment_len: u32,
    /// Bytes of the whole message (at most `i32::MAX`).
    pub total_len: u32,
    /// The sender's rank in the message's communicator, so the receiver reports it without
    /// translating the sender's process back to a rank.
    pub source: u32,
    /// The sender's buffer address (ready-to-send).
    pub address: u64,
    /// The sender's identifier for the message (every cell of it, and its control cells).
    pub id: u64,
}

impl CellHeader {
    const ENCODED: usize = 40;

    fn encode(&self) -> [u8; Self::ENCODED] {
        let mut out = [0u8; Self::ENCODED];
        out[0..4].copy_from_slice(&(self.kind as u32).to_le_bytes());
        out[4..8].copy_from_slice(&self.context.to_le_bytes());
        out[8..12].copy_from_slice(&self.tag.to_le_bytes());
        out[12..16].copy_from_slice(&self.fragment_len.to_le_bytes());
        out[16..20].copy_from_slice(&self.total_len.to_le_bytes());
        out[20..24].copy_from_slice(&self.source.to_le_bytes());
        out[24..32].copy_from_slice(&self.address.to_le_bytes());
        out[32..40].copy_from_slice(&self.id.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8; Self::ENCODED]) -> Option<CellHeader> {
        let u32_at =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let u64_at = |i: usize| (u64::from(u32_at(i + 4)) << 32) | u64::from(u32_at(i));
        let header = CellHeader {
            kind: CellKind::from_u32(u32_at(0))?,
            context: u32_at(4),
            tag: u32_at(8) as i32,
            fragment_len: u32_at(12),
            total_len: u32_at(16),
            source: u32_at(20),
            address: u64_at(24),
            id: u64_at(32),
        };
        // A peer's bytes are checked before they are trusted.
        (header.fragment_len as usize <= Ring::PAYLOAD_BYTES).then_some(header)
    }
}

/// A packet cell's header bytes: core's wire header, then the payload's length (the
/// transport's framing). A wire header starts with its magic, never with a [`CellKind`], so
/// a packet cell read as a [`CellHeader`] (or the reverse) is refused, not misread.
fn encode_packet(header: &wire::Header, payload_len: usize) -> [u8; CellHeader::ENCODED] {
    let mut out = [0u8; CellHeader::ENCODED];
    out[..wire::HEADER_LEN].copy_from_slice(&header.encode());
    // Fits: a payload is at most Ring::PAYLOAD_BYTES.
    out[wire::HEADER_LEN..][..4].copy_from_slice(&(payload_len as u32).to_le_bytes());
    out
}

fn decode_packet(bytes: &[u8; CellHeader::ENCODED]) -> Option<(wire::Header, usize)> {
    let header = wire::Header::decode(bytes).ok()?;
    let at = wire::HEADER_LEN;
    let len = u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
    (len <= Ring::PAYLOAD_BYTES).then_some((header, len))
}

/// Why a cell could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CorruptCell;

/// What [`Ring::take_if`] did with the oldest cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    /// No cell waits.
    Empty,
    /// The cell was refused and stays where it is.
    Left,
    /// The cell was accepted: its payload copied out, the cell released to the writer.
    Taken(CellHeader),
}

/// One ring, as seen by its writer or its reader (each uses only its own half).
#[derive(Clone, Copy)]
pub struct Ring<'r> {
    region: &'r Region,
    control: usize,
}

impl<'r> Ring<'r> {
    /// Payload bytes one cell holds.
    pub const PAYLOAD_BYTES: usize = CELL_BYTES - BULK_OFFSET;

    /// The ring from `from` to `to` in `region` laid out by `layout`.
    pub fn new(region: &'r Region, layout: &Layout, from: usize, to: usize) -> Ring<'r> {
        Ring { region, control: layout.ring(from, to) }
    }

    /// The ring whose control block is at `control` in `region` (a bridge's rings).
    pub fn at(region: &'r Region, control: usize) -> Ring<'r> {
        Ring { region, control }
    }

    fn cell(&self, index: u64) -> usize {
        self.control + Layout::RING_CELLS + (index % RING_DEPTH as u64) as usize * CELL_BYTES
    }

    fn tail(&self) -> &'r std::sync::atomic::AtomicU64 {
        self.region.atomic_u64(self.control + Layout::RING_TAIL)
    }

    fn cached_head(&self) -> &'r std::sync::atomic::AtomicU64 {
        self.region.atomic_u64(self.control + Layout::RING_CACHED_HEAD)
    }

    fn sequence(&self, index: u64) -> &'r std::sync::atomic::AtomicU64 {
        self.region.atomic_u64(self.cell(index))
    }

    /// Writer: whether cell `tail` is free, refreshing the private copy of `head` if not.
    /// Always inlined: a send's hot path, which a change elsewhere in the crate could
    /// otherwise leave with a call here (18 instructions more per send).
    #[inline(always)]
    fn room_at(&self, tail: u64) -> bool {
        let depth = RING_DEPTH as u64;
        if tail.wrapping_sub(self.cached_head().load(Relaxed)) < depth {
            return true;
        }
        let head = self.head().load(Acquire);
        self.cached_head().store(head, Relaxed);
        tail.wrapping_sub(head) < depth
    }

    fn head(&self) -> &'r std::sync::atomic::AtomicU64 {
        self.region.atomic_u64(self.control + Layout::RING_HEAD)
    }

    /// Writer: appends a cell unless the ring is full (then returns `false`).
    /// `payload` must fit in [`Ring::PAYLOAD_BYTES`]. Always inlined: with a send path to
    /// guests calling it too, the compiler left a call here (18 instructions more per send).
    #[inline(always)]
    pub fn try_push(&self, header: &CellHeader, payload: &[u8]) -> bool {
        debug_assert_eq!(header.fragment_len as usize, payload.len());
        self.push_encoded(&header.encode(), payload)
    }

    /// Writer: appends a cell holding core's wire header and `payload` (at most
    /// [`Ring::PAYLOAD_BYTES`]) unless the ring is full (then returns `false`).
    pub fn try_push_packet(&self, header: &wire::Header, payload: &[u8]) -> bool {
        self.push_encoded(&encode_packet(header, payload.len()), payload)
    }

    fn push_encoded(&self, encoded: &[u8; CellHeader::ENCODED], payload: &[u8]) -> bool {
        debug_assert!(payload.len() <= Self::PAYLOAD_BYTES);
        let tail = self.tail().load(Relaxed);
        if !self.room_at(tail) {
            return false;
        }
        let cell = self.cell(tail);
        // SAFETY: cell `tail` is outside [head, tail) and tail - head < depth (the acquire
        // load of head saw the reader release it), so the reader does not touch it until the
        // release store of its sequence word below publishes it; only we write it.
        unsafe {
            if payload.len() <= INLINE_BYTES {
                // Header and payload in one write of the first line.
                let mut line = [0u8; CACHE_LINE - SEQUENCE_BYTES];
                line[..CellHeader::ENCODED].copy_from_slice(encoded);
                line[CellHeader::ENCODED..][..payload.len()].copy_from_slice(payload);
                self.region.copy_in(cell + SEQUENCE_BYTES, &line);
            } else {
                self.region.copy_in(cell + SEQUENCE_BYTES, encoded);
                self.region.copy_in(cell + BULK_OFFSET, payload);
            }
        }
        self.sequence(tail).store(tail.wrapping_add(1), Release);
        let next = tail.wrapping_add(1);
        self.tail().store(next, Relaxed);
        // Own the next cell's first line before the next push: its store then does not
        // wait for the reader's copy to go, nor does the engine lock's release after it.
        // Not when the reader may still read that cell.
        if next.wrapping_sub(self.cached_head().load(Relaxed)) < RING_DEPTH as u64 {
            self.region.prefetch(self.cell(next), true);
        }
        true
    }

    /// Writer: whether a push would succeed now.
    pub fn has_room(&self) -> bool {
        self.room_at(self.tail().load(Relaxed))
    }

    /// Reader: the oldest cell's header, if any; `Err` when a peer wrote garbage.
    pub fn peek(&self) -> Result<Option<CellHeader>, CorruptCell> {
        match self.peek_encoded() {
            None => Ok(None),
            Some(bytes) => CellHeader::decode(&bytes).map(Some).ok_or(CorruptCell),
        }
    }

    /// Reader: the oldest cell as a packet (core's wire header and its payload's length), if
    /// any; `Err` when a peer wrote garbage.
    pub fn peek_packet(&self) -> Result<Option<(wire::Header, usize)>, CorruptCell> {
        match self.peek_encoded() {
            None => Ok(None),
            Some(bytes) => decode_packet(&bytes).map(Some).ok_or(CorruptCell),
        }
    }

    fn peek_encoded(&self) -> Option<[u8; CellHeader::ENCODED]> {
        let head = self.head().load(Relaxed);
        if self.sequence(head).load(Acquire) != head.wrapping_add(1) {
            return None;
        }
        let mut bytes = [0u8; CellHeader::ENCODED];
        // SAFETY: cell `head` was published by the writer's release store of its sequence
        // word, which our acquire load observed; the writer leaves it alone until we advance
        // head.
        unsafe { self.region.copy_out(self.cell(head) + SEQUENCE_BYTES, &mut bytes) };
        Some(bytes)
    }

    /// Reader: copies the first `dst.len()` bytes of the oldest cell's payload into `dst`.
    /// Call only after [`Ring::peek`] returned `header`, with `dst.len() <=
    /// header.fragment_len`.
    pub fn read_payload(&self, header: &CellHeader, dst: &mut [u8]) {
        self.read_payload_of(header.fragment_len as usize, dst);
    }

    /// Reader: copies the first `dst.len()` bytes of the oldest cell's payload, which is
    /// `payload_len` bytes long, into `dst` (after [`Ring::peek_packet`]).
    pub fn read_payload_of(&self, payload_len: usize, dst: &mut [u8]) {
        debug_assert!(dst.len() <= payload_len);
        let head = self.head().load(Relaxed);
        let offset = payload_offset(payload_len);
        // SAFETY: as in peek: the cell is published and owned by us until pop.
        unsafe { self.region.copy_out(self.cell(head) + offset, dst) };
    }

    /// Reader: [`Ring::peek`], [`Ring::read_payload`] and [`Ring::pop`] in one, for a receive's
    /// fast path: the oldest cell's header goes to `accept`; if accepted, as much of its
    /// payload as fits goes into `dst` and the cell is released. `head` is read once and the
    /// cell's first line copied once (header and a short payload both).
    #[inline]
    pub fn take_if(
        &self,
        dst: &mut [u8],
        accept: impl FnOnce(&CellHeader) -> bool,
    ) -> Result<Take, CorruptCell> {
        self.take_run().take_if(dst, accept)
    }

    /// Reader: a run of [`TakeRun::take_if`]s that gives its cells back to the writer once,
    /// when it ends: a window of messages moves `head`'s line once, not once per cell.
    #[inline]
    pub fn take_run(&self) -> TakeRun<'r> {
        let head = self.head().load(Relaxed);
        TakeRun { ring: *self, head, released: head }
    }

    /// Reader: releases the oldest cell to the writer.
    pub fn pop(&self) {
        let head = self.head().load(Relaxed);
        self.head().store(head.wrapping_add(1), Release);
        self.prefetch_next(head);
    }

    /// Reader, having released cell `head`: fetches the next cell's first line while the
    /// caller works, so that a window of messages does not wait for each line in turn.
    #[inline(always)]
    fn prefetch_next(&self, head: u64) {
        self.region.prefetch(self.cell(head.wrapping_add(1)), false);
    }

    /// Reader: whether no cell waits.
    pub fn is_empty(&self) -> bool {
        let head = self.head().load(Relaxed);
        self.sequence(head).load(Acquire) != head.wrapping_add(1)
    }
}

/// Cells taken one after another by the reader, released to the writer together when the
/// run is dropped. Until then the writer sees them as unread, which only delays its room:
/// the cells are ours either way, and the one release store publishes that we are done with
/// all of them, as one store per cell would.
pub struct TakeRun<'r> {
    ring: Ring<'r>,
    /// The next cell to look at.
    head: u64,
    /// `head` as the writer last saw it.
    released: u64,
}

impl TakeRun<'_> {
    /// The run's next cell, as [`Ring::take_if`] takes the oldest.
    #[inline]
    pub fn take_if(
        &mut self,
        dst: &mut [u8],
        accept: impl FnOnce(&CellHeader) -> bool,
    ) -> Result<Take, CorruptCell> {
        let (ring, head) = (&self.ring, self.head);
        let cell = ring.cell(head);
        if ring.region.atomic_u64(cell).load(Acquire) != head.wrapping_add(1) {
            return Ok(Take::Empty);
        }
        let mut line = [0u8; CACHE_LINE - SEQUENCE_BYTES];
        // SAFETY: as in peek: the cell is published, and ours until the run's release store
        // of a head past it.
        unsafe { ring.region.copy_out(cell + SEQUENCE_BYTES, &mut line) };
        let (encoded, inline) =
            line.split_first_chunk::<{ CellHeader::ENCODED }>().ok_or(CorruptCell)?;
        let header = CellHeader::decode(encoded).ok_or(CorruptCell)?;
        if !accept(&header) {
            return Ok(Take::Left);
        }
        let len = header.fragment_len as usize;
        let n = len.min(dst.len());
        if len <= INLINE_BYTES {
            dst[..n].copy_from_slice(&inline[..n]);
        } else {
            // SAFETY: as above, until the release store gives the cell back.
            unsafe { ring.region.copy_out(cell + BULK_OFFSET, &mut dst[..n]) };
        }
        self.head = head.wrapping_add(1);
        ring.prefetch_next(head);
        Ok(Take::Taken(header))
    }

    /// Whether the run took any cell (which the writer may be waiting for).
    #[inline]
    pub fn took_any(&self) -> bool {
        self.head != self.released
    }
}

impl Drop for TakeRun<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.took_any() {
            self.ring.head().store(self.head, Release);
            self.released = self.head;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(i: u32, len: usize) -> CellHeader {
        CellHeader {
            kind: CellKind::Message,
            context: i,
            tag: -5,
            fragment_len: len as u32,
            total_len: len as u32,
            source: 3,
            address: 7,
            id: u64::MAX - 1,
        }
    }

    #[test]
    fn cells_come_out_in_order_and_full_is_refused() {
        let layout = Layout::new(2).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let ring = Ring::new(&region, &layout, 0, 1);
        for round in 0..3u32 {
            for i in 0..RING_DEPTH as u32 {
                assert!(ring.try_push(&header(round * 100 + i, 3), &[i as u8; 3]));
            }
            assert!(!ring.try_push(&header(0, 0), &[]));
            for i in 0..RING_DEPTH as u32 {
                let got = ring.peek().unwrap().unwrap();
                assert_eq!(got, header(round * 100 + i, 3));
                let mut payload = [0u8; 3];
                ring.read_payload(&got, &mut payload);
                assert_eq!(payload, [i as u8; 3]);
                ring.pop();
            }
            assert_eq!(ring.peek(), Ok(None));
        }
    }

    #[test]
    fn inline_and_bulk_payloads_round_trip_at_every_length_boundary() {
        let layout = Layout::new(1).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let ring = Ring::new(&region, &layout, 0, 0);
        for len in [0, 1, INLINE_BYTES, INLINE_BYTES + 1, Ring::PAYLOAD_BYTES] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            assert!(ring.try_push(&header(len as u32, len), &payload));
            let got = ring.peek().unwrap().unwrap();
            assert_eq!(got, header(len as u32, len));
            let mut out = vec![0u8; len];
            ring.read_payload(&got, &mut out);
            assert_eq!(out, payload, "payload of {len} bytes");
            ring.pop();
        }
    }

    #[test]
    fn take_if_leaves_a_refused_cell_and_takes_an_accepted_one_at_every_length() {
        let layout = Layout::new(1).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let ring = Ring::new(&region, &layout, 0, 0);
        let mut out = vec![0u8; Ring::PAYLOAD_BYTES];
        assert_eq!(ring.take_if(&mut out, |_| true), Ok(Take::Empty));
        for len in [0, 1, INLINE_BYTES, INLINE_BYTES + 1, Ring::PAYLOAD_BYTES] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 5 + len) as u8).collect();
            assert!(ring.try_push(&header(len as u32, len), &payload));
            assert_eq!(ring.take_if(&mut out, |_| false), Ok(Take::Left));
            assert_eq!(ring.peek(), Ok(Some(header(len as u32, len))), "a refused cell stays");
            let taken = ring.take_if(&mut out[..len], |h| h.context == len as u32);
            assert_eq!(taken, Ok(Take::Taken(header(len as u32, len))));
            assert_eq!(out[..len], payload[..], "payload of {len} bytes");
            assert_eq!(ring.peek(), Ok(None));
        }
        // A short destination takes the payload's start; the cell goes all the same.
        assert!(ring.try_push(&header(9, 3), b"abc"));
        let mut short = [0u8; 2];
        assert_eq!(ring.take_if(&mut short, |_| true), Ok(Take::Taken(header(9, 3))));
        assert_eq!((&short, ring.peek()), (b"ab", Ok(None)));
    }

    #[test]
    fn a_run_gives_its_cells_back_when_it_ends() {
        let layout = Layout::new(1).unwrap();
        let region = Region::create(layout.region_bytes()).unwrap();
        let ring = Ring::new(&region, &layout, 0, 0);
        for i in 0..RING_DEPTH as u32 {
            assert!(ring.try_push(&header(i, 1), &[i as u8]));
        }
        let mut out = [0u8; 1];
        let mut run = ring.take_run();
        for i in 0..2u32 {
            assert_eq!(run.take_if(&mut out, |_| true), Ok(Take::Taken(header(i, 1))));
            assert_eq!(out, [i as u8]);
        }
        assert_eq!(run.take_if(&mut out, |_| false), Ok(Take::Left), "a refused cell stays");
        assert!(run.took_any());
        assert!(!ring.try_push(&header(0, 0), &[]), "no room before the run ends");
        drop(run);
        assert!(ring.try_push(&header(100, 0), &[]) && ring.try_push(&header(101, 0), &[]));
        assert!(!ring.try_push(&header(0, 0), &[]), "exactly the run's two cells came back");
        assert_eq!(ring.peek(), Ok(Some(header(2, 1))), "the next cell is the refused one");
        assert!(!ring.take_run().took_any(), "an empty run releases nothing");
    }

    #[test]
    fn garbage_from_a_peer_is_rejected() {
        let mut bytes = header(1, 3).encode();
        bytes[12..16].copy_from_slice(&(Ring::PAYLOAD_BYTES as u32 + 1).to_le_bytes());
        assert_eq!(CellHeader::decode(&bytes), None);
        bytes[0] = 99;
        assert_eq!(CellHeader::decode(&bytes), None);
    }
}
