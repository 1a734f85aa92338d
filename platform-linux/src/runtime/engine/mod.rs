//! The point-to-point engine: MPI matching, the ring protocol, single-copy rendezvous and
//! split copies over the shared-memory transport, and whole messages over message
//! transports (TCP, verbs).
//!
//! The engine keeps no reference to a caller's buffer. A call that owns one (a blocking
//! receive, or `wait`/`test` on a request) lends it for that call as a [`Sink`] (receive) or
//! a [`Feed`] (send); bytes that arrive while their receive's buffer is not lent wait in the
//! engine and are copied over when it is. A long send by single copy, or over a message
//! transport, is known by its address only, for the kernel or the device to read, while
//! its request borrows the buffer.
//!
//! Concerns, one file each: [`matching`] (posted and unexpected queues), [`receive`]
//! (the direct fast path and completing receives), [`send`], [`progress`] (the ring
//! protocol: draining and pushing cells), [`rendezvous`] (single copy, split copies and
//! their control cells), [`connections`] (per-peer state) and [`pool`] (spare buffers).
//!
//! Peers are named by [`Peer`]: their slot in the shared-memory transport (for the world's
//! group, the world rank) or their link and index in a message transport. Matching compares
//! peers, which is exact because a peer is one process; the rank a receive reports comes
//! from the message's header. A message transport carries each message whole (its own
//! framing and bounded queue), so its peers need none of the per-peer cell state; their
//! arrivals join the same queues, a long one as soon as its header is here (see
//! [`message`]).
//!
//! Matching is not core's `commcore::matching`: that matcher's queues are bounded, and a
//! full unexpected queue would have to stop draining a ring, which can hide the very
//! message a posted receive waits for behind unexpected ones from the same peer. The
//! engine keeps unbounded queues until that back-pressure has a deadlock-free design.

mod arrivals;
mod connections;
mod links;
mod matching;
mod message;
#[cfg(test)]
mod message_tests;
mod pool;
mod progress;
mod receive;
mod rendezvous;
mod send;
#[cfg(test)]
mod tests;
mod window;

use std::collections::VecDeque;
use std::hash::{BuildHasherDefault, Hasher};

use arrivals::Arrivals;
use connections::Connections;
pub(crate) use links::GuestInbox;
pub(crate) use matching::Pattern;
use matching::{Arrival, Body, Matched};
pub(crate) use message::{message_peer, MessageLink};
use pool::BufferPool;
pub(crate) use receive::RecvStart;
pub(crate) use window::{Window, WindowSlot};

use super::error::P2pError;
use crate::shm::{CellHeader, CellKind};

/// A process the engine talks to, as its transport names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Peer {
    /// A slot of the shared-memory transport.
    Shm(usize),
    /// A peer of a message transport (TCP, verbs): its link and index ([`message_peer`]).
    Message(usize),
}

/// Hashes the engine's identifiers, which are distinct counters: one multiply spreads them.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<IdHasher>>;
type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<IdHasher>>;

/// A received message's envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Envelope {
    /// The sender's rank in the communicator, from the message's header.
    pub(crate) source: usize,
    pub(crate) tag: i32,
    pub(crate) len: usize,
}

/// A receive's buffer, lent to the engine for one call.
pub(crate) struct Sink<'s> {
    pub(crate) recv: u64,
    pub(crate) buf: &'s mut [u8],
    /// The call does not return before the receive completes, so a peer may be let write
    /// into `buf` (a split single copy).
    pub(crate) blocking: bool,
    /// Other receives' buffers lent for the same call (the rest of a wait on many): the
    /// bytes of their long messages that come meanwhile go straight in, not through a copy.
    pub(crate) also: &'s mut dyn Lend,
}

/// The smallest receive buffer worth lending beside a sink: a shorter message is never
/// read into a lent buffer (over TCP, only long messages are).
pub(crate) const LENT_FROM: usize = crate::tcp::LONG_PAYLOAD;

/// Receives' buffers lent beside a [`Sink`]'s.
pub(crate) trait Lend {
    /// The buffer lent for receive `recv`, if it is one of these.
    fn buffer_of(&mut self, recv: u64) -> Option<&mut [u8]>;
}

/// Another receive's buffer, lent beside a [`Sink`]'s.
pub(crate) struct Lent<'s> {
    pub(crate) recv: u64,
    pub(crate) buf: &'s mut [u8],
}

/// A run of lent buffers.
pub(crate) struct LentRun<'r, 's>(pub(crate) &'r mut [Lent<'s>]);

impl Lend for LentRun<'_, '_> {
    fn buffer_of(&mut self, recv: u64) -> Option<&mut [u8]> {
        self.0.iter_mut().find(|lent| lent.recv == recv).map(|lent| &mut *lent.buf)
    }
}

/// None lent.
impl Lend for [Lent<'_>; 0] {
    fn buffer_of(&mut self, _recv: u64) -> Option<&mut [u8]> {
        None
    }
}

impl<'s> Sink<'s> {
    /// The buffer of receive `recv`, lent for one call, with no other lent beside it.
    pub(crate) fn new(recv: u64, buf: &'s mut [u8], blocking: bool) -> Self {
        let none: &'s mut [Lent<'s>; 0] = &mut [];
        Sink { recv, buf, blocking, also: none }
    }

    /// The buffer lent for receive `recv`: the sink's own or one beside it.
    pub(crate) fn buffer_of(&mut self, recv: u64) -> Option<&mut [u8]> {
        if recv == self.recv {
            return Some(&mut *self.buf);
        }
        self.also.buffer_of(recv)
    }
}

/// A send's buffer, lent to the engine for one call.
pub(crate) struct Feed<'s> {
    pub(crate) send: u64,
    pub(crate) buf: &'s [u8],
}

/// What [`Engine::try_direct_recv`] found.
pub(crate) enum Direct {
    /// The message, straight from the ring.
    Done(Result<Envelope, P2pError>),
    /// Nothing has arrived from the sources the receive accepts.
    Empty,
    /// The general path must run (a competing receive or message, or a cell that is not a
    /// matching one-cell message).
    Slow,
}

/// What a send's header says about its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Outbound {
    /// The context the message is sent in.
    pub(crate) context: u32,
    /// Its tag.
    pub(crate) tag: i32,
    /// The sender's rank in the communicator the receiver sees.
    pub(crate) source: u32,
}

impl Outbound {
    /// A ring cell of this message: `fragment_len` of its `total_len` bytes.
    pub(crate) fn cell(
        self,
        kind: CellKind,
        fragment_len: usize,
        total_len: u32,
        address: u64,
        id: u64,
    ) -> CellHeader {
        let Outbound { context, tag, source } = self;
        let fragment_len = fragment_len as u32;
        CellHeader { kind, context, tag, fragment_len, total_len, source, address, id }
    }
}

/// How a send continues after [`Engine::start_send`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendStart {
    /// The message is in the ring or copied into the engine: the buffer is free.
    Done,
    /// Announced for a single-copy read: the buffer is busy until [`Engine::send_finished`].
    Rendezvous(u64),
    /// Streamed by copy from the lent buffer: busy until [`Engine::send_queued`] is false.
    Streaming(u64),
}

pub(crate) struct Engine {
    next_id: u64,
    posted: VecDeque<(u64, Pattern)>,
    unexpected: VecDeque<u64>,
    arrivals: Arrivals,
    matched: Matched,
    /// Per-peer queues, for the peers talked to only.
    peers: Connections,
    finished_sends: HashSet<u64>,
    /// Destinations whose ring was full at the end of the last progress.
    pub(crate) blocked: Vec<usize>,
    /// Messages above this many bytes go by single copy (when enabled).
    pub(crate) single_copy_above: Option<usize>,
    /// Single copies above this many bytes are split: the receiver reads one half while the
    /// sender writes the other, so both cores copy (see `halves`).
    pub(crate) split_above: Option<usize>,
    /// Set when progress matched a posted receive or completed a send: another thread of
    /// this process may be asleep waiting for exactly that.
    news: bool,
    /// Data of owned single-copy sends, kept until their receiver has read it.
    owned_rendezvous: HashMap<u64, Vec<u8>>,
    /// Emptied byte buffers kept for reuse, so that small messages cost no allocation.
    pool: BufferPool,
    /// Our single-copy sends in flight: id → (destination, buffer address, length).
    rendezvous: HashMap<u64, (usize, u64, usize)>,
    /// Split copies whose sender has written its part: (source, sender's id) → errno or 0.
    written: std::collections::HashMap<(usize, u64), i32>,
    /// The message links by number (see [`message`]): the job's own at 0, when some rank
    /// is reached over TCP or verbs, then one per group connected across hosts.
    message_links: Vec<Option<MessageLink>>,
    /// Long messages whose payload is still coming: (message peer, arrival id), one per
    /// peer at most (see [`message`]).
    message_long: Vec<(usize, u64)>,
    /// Where bytes nobody keeps are read to (a cancelled receive's, a truncated one's).
    message_scratch: Vec<u8>,
    /// Lent sends the links report the peers have whole.
    message_written: Vec<u64>,
    /// Processes of other groups on this host, reached through bridges.
    guests: links::Guests,
}

impl Engine {
    pub(crate) fn new(
        single_copy_above: Option<usize>,
        split_above: Option<usize>,
        link: Option<MessageLink>,
    ) -> Engine {
        Engine {
            next_id: 1,
            posted: VecDeque::new(),
            unexpected: VecDeque::new(),
            arrivals: Arrivals::default(),
            matched: Matched::default(),
            peers: Connections::default(),
            finished_sends: HashSet::default(),
            blocked: Vec::new(),
            single_copy_above,
            split_above,
            rendezvous: HashMap::default(),
            pool: BufferPool::default(),
            owned_rendezvous: HashMap::default(),
            news: false,
            written: std::collections::HashMap::new(),
            message_links: link.map(|link| vec![Some(link)]).unwrap_or_default(),
            message_long: Vec::new(),
            message_scratch: Vec::new(),
            message_written: Vec::new(),
            guests: links::Guests::default(),
        }
    }

    fn recycle_arrival(&mut self, arrival: Arrival) {
        if let Body::Copied { pending, .. } = arrival.body {
            self.pool.recycle(pending);
        }
    }

    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Whether any send still waits for room or for its receiver.
    pub(crate) fn has_outbound(&self) -> bool {
        self.peers.any_outbound() || !self.owned_rendezvous.is_empty() || self.messages_outbound()
    }
}
