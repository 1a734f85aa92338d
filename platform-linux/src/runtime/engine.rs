//! MPI matching over the rings: posted receives against arriving messages on
//! (context, source, tag) with wildcards, in order per pair, with an unexpected queue.
//!
//! The engine keeps no pointer to a caller's buffer. A call that owns one (a blocking
//! receive, or `wait`/`test` on a request) lends it for that call as a [`Sink`] (receive) or
//! a [`Feed`] (send); bytes that arrive while their receive's buffer is not lent wait in the
//! engine and are copied over when it is.

use std::collections::VecDeque;
use std::hash::{BuildHasherDefault, Hasher};

use super::error::P2pError;
use crate::shm::layout::RING_DEPTH;
use crate::shm::{cma, CellHeader, CellKind, Ring};
use crate::transport::shm::ShmTransport;

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

/// Spare buffers kept for reuse, at most this many of at most this many bytes each.
const SPARE_BUFFERS: usize = 256;
const SPARE_BYTES: usize = 64 * 1024;

/// Which messages a receive accepts (`None` = any).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pattern {
    pub(crate) context: u32,
    pub(crate) source: Option<usize>,
    pub(crate) tag: Option<i32>,
}

impl Pattern {
    fn accepts(&self, arrival: &Arrival) -> bool {
        self.context == arrival.context
            && self.source.map_or(true, |s| s == arrival.source)
            && self.tag.map_or(true, |t| t == arrival.tag)
    }
}

/// A received message's envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Envelope {
    /// The sender's rank in the communicator, from the message's header.
    pub(crate) source: usize,
    pub(crate) tag: i32,
    pub(crate) len: usize,
}

enum Body {
    /// Sent by copy through the ring: `pending` holds bytes `[in_sink, received)` that came
    /// while the receive's buffer was not lent.
    Copied { pending: Vec<u8>, in_sink: usize, received: usize },
    /// Announced for a single-copy read from the sender's memory. `split` is set once the
    /// receiver asked the sender to write the bytes `start..end` of the message itself.
    Remote { address: u64, sender_id: u64, split: Option<(usize, usize)> },
}

struct Arrival {
    context: u32,
    /// The peer (world rank) the message came from: the ring it arrived on.
    source: usize,
    /// The sender's rank in the communicator, from the header.
    rank: u32,
    tag: i32,
    len: usize,
    body: Body,
    recv: Option<u64>,
    discard: bool,
}

impl Arrival {
    fn complete(&self) -> bool {
        match self.body {
            Body::Copied { received, .. } => received >= self.len,
            Body::Remote { .. } => true,
        }
    }
}

/// A single-copy message being received.
#[derive(Clone, Copy)]
struct Remote {
    source: usize,
    len: usize,
    address: u64,
    sender_id: u64,
}

enum Outgoing {
    Owned { header: CellHeader, payload: Vec<u8>, sent: usize, started: bool },
    Borrowed { id: u64, header: CellHeader, sent: usize, started: bool },
}

/// A receive's buffer, lent to the engine for one call.
pub(crate) struct Sink<'s> {
    pub(crate) recv: u64,
    pub(crate) buf: &'s mut [u8],
    /// The call does not return before the receive completes, so a peer may be let write
    /// into `buf` (a split single copy).
    pub(crate) blocking: bool,
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
    arrivals: HashMap<u64, Arrival>,
    matched: HashMap<u64, u64>,
    inbound: Vec<Option<u64>>,
    outbound: Vec<VecDeque<Outgoing>>,
    control: Vec<VecDeque<Control>>,
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
    spare: Vec<Vec<u8>>,
    /// Our single-copy sends in flight: id → (destination, buffer address, length).
    rendezvous: HashMap<u64, (usize, u64, usize)>,
    /// Split copies whose sender has written its part: (source, sender's id) → errno or 0.
    written: std::collections::HashMap<(usize, u64), i32>,
}

impl Engine {
    pub(crate) fn new(
        size: usize,
        single_copy_above: Option<usize>,
        split_above: Option<usize>,
    ) -> Engine {
        Engine {
            next_id: 1,
            posted: VecDeque::new(),
            unexpected: VecDeque::new(),
            arrivals: HashMap::default(),
            matched: HashMap::default(),
            inbound: vec![None; size],
            outbound: (0..size).map(|_| VecDeque::new()).collect(),
            control: (0..size).map(|_| VecDeque::new()).collect(),
            finished_sends: HashSet::default(),
            blocked: Vec::new(),
            single_copy_above,
            split_above,
            rendezvous: HashMap::default(),
            spare: Vec::new(),
            owned_rendezvous: HashMap::default(),
            news: false,
            written: std::collections::HashMap::new(),
        }
    }

    /// An empty buffer, reused when one is spare.
    fn buffer(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_default()
    }

    /// Keeps `buffer` for reuse unless it is large or enough are kept already.
    fn recycle(&mut self, mut buffer: Vec<u8>) {
        if buffer.capacity() != 0
            && buffer.capacity() <= SPARE_BYTES
            && self.spare.len() < SPARE_BUFFERS
        {
            buffer.clear();
            self.spare.push(buffer);
        }
    }

    fn recycle_arrival(&mut self, arrival: Arrival) {
        if let Body::Copied { pending, .. } = arrival.body {
            self.recycle(pending);
        }
    }

    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Whether any send still waits for room or for its receiver.
    pub(crate) fn has_outbound(&self) -> bool {
        self.outbound.iter().any(|q| !q.is_empty())
            || self.control.iter().any(|q| !q.is_empty())
            || !self.owned_rendezvous.is_empty()
    }

    // ---- receives -------------------------------------------------------------------

    /// A blocking receive's fast path, taken while no posted receive and no unexpected
    /// message could compete for the next message: the first cell of a source's ring is then
    /// the next message to match, and a one-cell message that matches goes straight from the
    /// ring into `buf`, without being posted or queued.
    pub(crate) fn try_direct_recv(
        &mut self,
        fabric: &ShmTransport,
        pattern: &Pattern,
        buf: &mut [u8],
    ) -> Direct {
        if !self.posted.is_empty()
            || self
                .unexpected
                .iter()
                .any(|id| self.arrivals.get(id).is_some_and(|a| pattern.accepts(a)))
        {
            return Direct::Slow;
        }
        self.take_from_rings(fabric, pattern, buf)
    }

    /// The same fast path for posted receive `recv` while it is the oldest one posted (a
    /// nonblocking receive's wait, as in a window of them): no unexpected message accepted
    /// by it can be queued, as progress would have matched it, and no other posted receive
    /// may take a message it accepts before it does.
    pub(crate) fn try_direct_posted(
        &mut self,
        fabric: &ShmTransport,
        recv: u64,
        buf: &mut [u8],
    ) -> Direct {
        let pattern = match self.posted.front() {
            Some(&(oldest, pattern)) if oldest == recv => pattern,
            _ => return Direct::Slow,
        };
        let taken = self.take_from_rings(fabric, &pattern, buf);
        if let Direct::Done(_) = taken {
            self.posted.pop_front();
        }
        taken
    }

    /// Takes a one-cell message that `pattern` accepts from the head of a source's ring
    /// into `buf`, when no competing message may come first (see the callers).
    fn take_from_rings(
        &mut self,
        fabric: &ShmTransport,
        pattern: &Pattern,
        buf: &mut [u8],
    ) -> Direct {
        let sources = match pattern.source {
            Some(source) => source..source + 1,
            None => 0..fabric.size,
        };
        for source in sources {
            let ring = fabric.inbox(source);
            let header = match ring.peek() {
                Ok(None) => continue,
                Ok(Some(header)) => header,
                Err(_) => return Direct::Slow,
            };
            let one_cell = header.kind == CellKind::Message
                && header.fragment_len == header.total_len
                && self.inbound[source].is_none();
            if !one_cell
                || header.context != pattern.context
                || pattern.tag.is_some_and(|t| t != header.tag)
            {
                return Direct::Slow;
            }
            let len = header.total_len as usize;
            let n = len.min(buf.len());
            ring.read_payload(&header, &mut buf[..n]);
            ring.pop();
            fabric.notify(source);
            if len > buf.len() {
                return Direct::Done(Err(P2pError::Truncated {
                    message_len: len,
                    buffer_len: buf.len(),
                }));
            }
            return Direct::Done(Ok(Envelope {
                source: header.source as usize,
                tag: header.tag,
                len,
            }));
        }
        Direct::Empty
    }

    /// Posts a receive: matched at once against the unexpected queue, else queued.
    pub(crate) fn post_recv(&mut self, pattern: Pattern) -> u64 {
        let recv = self.fresh_id();
        let found = self
            .unexpected
            .iter()
            .position(|id| self.arrivals.get(id).is_some_and(|a| pattern.accepts(a)));
        match found.and_then(|i| self.unexpected.remove(i)) {
            Some(arrival) => {
                if let Some(a) = self.arrivals.get_mut(&arrival) {
                    a.recv = Some(recv);
                }
                self.matched.insert(recv, arrival);
            }
            None => self.posted.push_back((recv, pattern)),
        }
        recv
    }

    /// Completes receive `recv` into `sink` if its whole message is here; the envelope or a
    /// truncation error once done, `None` while it is not.
    pub(crate) fn finish_recv(
        &mut self,
        fabric: &ShmTransport,
        sink: &mut Sink<'_>,
    ) -> Result<Option<Envelope>, P2pError> {
        let Some(&arrival_id) = self.matched.get(&sink.recv) else { return Ok(None) };
        let Some(arrival) = self.arrivals.get_mut(&arrival_id) else { return Ok(None) };
        let mut read_error = None;
        match &mut arrival.body {
            Body::Copied { pending, in_sink, received } => {
                if !pending.is_empty() {
                    let start = (*in_sink).min(sink.buf.len());
                    let end = (*in_sink + pending.len()).min(sink.buf.len());
                    sink.buf[start..end].copy_from_slice(&pending[..end - start]);
                    pending.clear();
                    *in_sink = *received;
                }
                if *received < arrival.len {
                    return Ok(None);
                }
            }
            &mut Body::Remote { address, sender_id, split } => {
                let remote =
                    Remote { source: arrival.source, len: arrival.len, address, sender_id };
                match self.finish_remote(fabric, sink, arrival_id, remote, split) {
                    None => return Ok(None),
                    Some(result) => read_error = result.err(),
                }
            }
        }
        self.matched.remove(&sink.recv);
        let Some(arrival) = self.arrivals.remove(&arrival_id) else { return Ok(None) };
        let envelope =
            Envelope { source: arrival.rank as usize, tag: arrival.tag, len: arrival.len };
        self.recycle_arrival(arrival);
        if let Some(error) = read_error {
            return Err(error);
        }
        if envelope.len > sink.buf.len() {
            return Err(P2pError::Truncated {
                message_len: envelope.len,
                buffer_len: sink.buf.len(),
            });
        }
        Ok(Some(envelope))
    }

    /// Moves a single-copy message into `sink`: one read, or, in a blocking call above the
    /// split threshold, one half read here while the sender writes the other. `None` while
    /// the sender's part is outstanding.
    fn finish_remote(
        &mut self,
        fabric: &ShmTransport,
        sink: &mut Sink<'_>,
        arrival_id: u64,
        remote: Remote,
        split: Option<(usize, usize)>,
    ) -> Option<Result<(), P2pError>> {
        let Remote { source, len, address, sender_id } = remote;
        let n = len.min(sink.buf.len());
        let pid = fabric.pids[source];
        let failed = |e: std::io::Error| P2pError::SingleCopyFailed {
            peer: source,
            errno: e.raw_os_error().unwrap_or(0),
        };
        let mut result = Ok(());
        let mut read = |buf: &mut [u8], from: usize| {
            if let Err(e) = cma::read(pid, address + from as u64, buf) {
                result = Err(failed(e));
            }
        };
        let split = match split {
            None if sink.blocking && self.split_above.is_some_and(|limit| n > limit) => {
                let (mine, theirs) = halves(fabric.rank, source, n);
                let cell = ClearToSend::cell(sender_id, theirs, sink.buf[theirs.0..].as_ptr());
                self.send_control(fabric, source, cell);
                if let Some(Arrival { body: Body::Remote { split, .. }, .. }) =
                    self.arrivals.get_mut(&arrival_id)
                {
                    *split = Some(theirs);
                }
                read(&mut sink.buf[mine.0..mine.1], mine.0);
                Some(theirs)
            }
            None => {
                read(&mut sink.buf[..n], 0);
                None
            }
            Some(theirs) => Some(theirs),
        };
        if let Some((start, end)) = split {
            // Until the sender's word comes, it may still be writing into the buffer.
            let errno = self.written.remove(&(source, sender_id))?;
            if errno != 0 {
                // The sender could not write its part: read it after all.
                read(&mut sink.buf[start..end], start);
            }
        }
        self.send_control(fabric, source, finished_cell(sender_id));
        Some(result)
    }

    /// Sends a control cell now if its ring has room, else queues it for progress.
    fn send_control(&mut self, fabric: &ShmTransport, dest: usize, cell: Control) {
        if self.control[dest].is_empty()
            && fabric.outbox(dest).try_push(&cell.header, cell.payload())
        {
            fabric.notify(dest);
        } else {
            self.control[dest].push_back(cell);
        }
    }

    /// Abandons receive `recv`: unposted if unmatched, its message dropped if matched.
    pub(crate) fn cancel_recv(&mut self, fabric: &ShmTransport, recv: u64) {
        if let Some(i) = self.posted.iter().position(|(id, _)| *id == recv) {
            self.posted.remove(i);
            return;
        }
        let Some(arrival_id) = self.matched.remove(&recv) else { return };
        let Some(arrival) = self.arrivals.get_mut(&arrival_id) else { return };
        let remote = match arrival.body {
            Body::Remote { sender_id, .. } => Some((arrival.source, finished_cell(sender_id))),
            Body::Copied { .. } => None,
        };
        if arrival.complete() {
            if let Some(arrival) = self.arrivals.remove(&arrival_id) {
                self.recycle_arrival(arrival);
            }
        } else {
            arrival.recv = None;
            arrival.discard = true;
        }
        if let Some((source, cell)) = remote {
            self.send_control(fabric, source, cell);
        }
    }

    // ---- sends ----------------------------------------------------------------------

    /// Starts sending `buf`; `lend` says whether the caller will lend it until done
    /// (a blocking send) or needs it free at once unless it goes by single copy (isend).
    pub(crate) fn start_send(
        &mut self,
        fabric: &ShmTransport,
        dest: usize,
        envelope: Outbound,
        buf: &[u8],
        lend: bool,
    ) -> SendStart {
        let Outbound { context, tag, source } = envelope;
        // Fits: a message is at most MAX_MESSAGE_BYTES (i32::MAX) long.
        let total_len = buf.len() as u32;
        let header = |kind, fragment_len: usize, address: u64, id: u64| CellHeader {
            kind,
            context,
            tag,
            fragment_len: fragment_len as u32,
            total_len,
            source,
            address,
            id,
        };
        let idle = self.outbound[dest].is_empty();
        if buf.len() <= Ring::PAYLOAD_BYTES {
            let cell = header(CellKind::Message, buf.len(), 0, 0);
            if idle && fabric.outbox(dest).try_push(&cell, buf) {
                fabric.notify(dest);
            } else {
                let mut payload = self.buffer();
                payload.extend_from_slice(buf);
                self.outbound[dest].push_back(Outgoing::Owned {
                    header: cell,
                    payload,
                    sent: 0,
                    started: false,
                });
            }
            return SendStart::Done;
        }
        let id = self.fresh_id();
        if self.single_copy_above.is_some_and(|limit| buf.len() > limit) {
            let address = buf.as_ptr() as usize as u64;
            self.rendezvous.insert(id, (dest, address, buf.len()));
            let cell = header(CellKind::ReadyToSend, 0, address, id);
            if idle && fabric.outbox(dest).try_push(&cell, &[]) {
                fabric.notify(dest);
            } else {
                self.outbound[dest].push_back(Outgoing::Owned {
                    header: cell,
                    payload: Vec::new(),
                    sent: 0,
                    started: false,
                });
            }
            return SendStart::Rendezvous(id);
        }
        let cell = header(CellKind::Message, 0, 0, id);
        if lend {
            self.outbound[dest].push_back(Outgoing::Borrowed {
                id,
                header: cell,
                sent: 0,
                started: false,
            });
            SendStart::Streaming(id)
        } else {
            let payload = buf.to_vec();
            self.outbound[dest].push_back(Outgoing::Owned {
                header: cell,
                payload,
                sent: 0,
                started: false,
            });
            SendStart::Done
        }
    }

    /// Sends `data`, which the engine keeps until it is delivered: no caller buffer stays
    /// borrowed, so any number of such sends may be in flight (collective schedules).
    pub(crate) fn start_send_owned(
        &mut self,
        fabric: &ShmTransport,
        dest: usize,
        envelope: Outbound,
        data: Vec<u8>,
    ) {
        let single_copy = self.single_copy_above.is_some_and(|limit| data.len() > limit);
        if data.len() <= Ring::PAYLOAD_BYTES || !single_copy {
            if data.len() <= Ring::PAYLOAD_BYTES {
                self.start_send(fabric, dest, envelope, &data, false);
                self.recycle(data);
            } else {
                let id = self.fresh_id();
                let header = CellHeader {
                    kind: CellKind::Message,
                    context: envelope.context,
                    tag: envelope.tag,
                    fragment_len: 0,
                    // Fits: a message is at most MAX_MESSAGE_BYTES (i32::MAX) long.
                    total_len: data.len() as u32,
                    source: envelope.source,
                    address: 0,
                    id,
                };
                self.outbound[dest].push_back(Outgoing::Owned {
                    header,
                    payload: data,
                    sent: 0,
                    started: false,
                });
                // Start it now: the caller may not call in again for a while.
                self.push_out(fabric, dest, None);
            }
            return;
        }
        // The vector's heap block does not move while the engine holds it.
        if let SendStart::Rendezvous(id) = self.start_send(fabric, dest, envelope, &data, true) {
            self.owned_rendezvous.insert(id, data);
        }
    }

    /// Whether the single-copy send `id` has been read by its receiver (consumes the news).
    pub(crate) fn send_finished(&mut self, id: u64) -> bool {
        self.finished_sends.remove(&id)
    }

    /// Whether the streamed send `id` to `dest` still has cells to push.
    pub(crate) fn send_queued(&self, dest: usize, id: u64) -> bool {
        self.outbound[dest]
            .iter()
            .any(|o| matches!(o, Outgoing::Borrowed { id: i, .. } if *i == id))
    }

    // ---- progress -------------------------------------------------------------------

    /// Drains every inbound ring and pushes what waits to go out. Bytes for the receive in
    /// `sink` go straight into it; cells of the streamed send in `feed` come from it.
    pub(crate) fn progress(
        &mut self,
        fabric: &ShmTransport,
        mut sink: Option<&mut Sink<'_>>,
        feed: Option<&Feed<'_>>,
    ) -> Result<(), P2pError> {
        for source in 0..fabric.size {
            self.drain(fabric, source, sink.as_deref_mut())?;
        }
        self.blocked.clear();
        for dest in 0..fabric.size {
            if !self.control[dest].is_empty() || !self.outbound[dest].is_empty() {
                self.push_out(fabric, dest, feed);
            }
        }
        if std::mem::take(&mut self.news) {
            fabric.notify(fabric.rank);
        }
        Ok(())
    }

    fn drain(
        &mut self,
        fabric: &ShmTransport,
        source: usize,
        mut sink: Option<&mut Sink<'_>>,
    ) -> Result<(), P2pError> {
        let ring = fabric.inbox(source);
        let corrupt = P2pError::CorruptQueue { peer: source };
        let mut popped = false;
        for _ in 0..RING_DEPTH {
            let header = match ring.peek() {
                Ok(Some(header)) => header,
                Ok(None) => break,
                Err(_) => return Err(corrupt),
            };
            match header.kind {
                CellKind::Message | CellKind::ReadyToSend => {
                    if self.inbound[source].is_some() {
                        return Err(corrupt);
                    }
                    let len = header.total_len as usize;
                    let body = if header.kind == CellKind::Message {
                        Body::Copied { pending: self.buffer(), in_sink: 0, received: 0 }
                    } else {
                        Body::Remote { address: header.address, sender_id: header.id, split: None }
                    };
                    let id = self.fresh_id();
                    let mut arrival = Arrival {
                        context: header.context,
                        source,
                        rank: header.source,
                        tag: header.tag,
                        len,
                        body,
                        recv: None,
                        discard: false,
                    };
                    // Matched and filled before it is stored: one map insert per message.
                    self.arrive(id, &mut arrival);
                    if header.kind == CellKind::Message {
                        take_payload(&mut arrival, &ring, &header, sink.as_deref_mut());
                        if !arrival.complete() {
                            self.inbound[source] = Some(id);
                        }
                    }
                    self.arrivals.insert(id, arrival);
                }
                CellKind::Fragment => {
                    let id = self.inbound[source].ok_or(corrupt)?;
                    if self.deliver(id, &ring, &header, sink.as_deref_mut()) {
                        self.inbound[source] = None;
                    }
                }
                CellKind::Finished => {
                    self.rendezvous.remove(&header.id);
                    match self.owned_rendezvous.remove(&header.id) {
                        Some(data) => self.recycle(data),
                        None => {
                            self.finished_sends.insert(header.id);
                        }
                    }
                    self.news = true;
                }
                CellKind::ClearToSend => {
                    // The receiver asks for bytes `offset..offset + part` of the message.
                    let mut bytes = [0u8; CONTROL_BYTES];
                    if header.fragment_len as usize != CONTROL_BYTES {
                        return Err(corrupt);
                    }
                    ring.read_payload(&header, &mut bytes);
                    let (offset, part, target) = ClearToSend::decode(&bytes);
                    let errno = match self.rendezvous.get(&header.id) {
                        Some(&(dest, address, len))
                            if dest == source
                                && offset
                                    .checked_add(part)
                                    .is_some_and(|end| end <= len as u64) =>
                        {
                            let local = address + offset;
                            let part = part as usize;
                            match cma::write(fabric.pids[source], local, target, part) {
                                Ok(()) => 0,
                                Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
                            }
                        }
                        _ => libc::EINVAL,
                    };
                    self.send_control(fabric, source, written_cell(header.id, errno));
                }
                CellKind::Written => {
                    let mut errno = [0u8; 4];
                    if header.fragment_len != 4 {
                        return Err(corrupt);
                    }
                    ring.read_payload(&header, &mut errno);
                    self.written.insert((source, header.id), i32::from_le_bytes(errno));
                    self.news = true;
                }
            }
            ring.pop();
            popped = true;
        }
        if popped {
            fabric.notify(source);
        }
        Ok(())
    }

    /// Matches arrival `id` with the oldest posted receive that accepts it, or queues it as
    /// unexpected; the caller stores it in `arrivals`.
    fn arrive(&mut self, id: u64, arrival: &mut Arrival) {
        let found = self.posted.iter().position(|(_, p)| p.accepts(arrival));
        match found.and_then(|i| self.posted.remove(i)) {
            Some((recv, _)) => {
                self.news = true;
                arrival.recv = Some(recv);
                self.matched.insert(recv, id);
            }
            None => self.unexpected.push_back(id),
        }
    }

    /// Adds a fragment to arrival `id`; whether the message is now whole (or was dropped).
    fn deliver(
        &mut self,
        id: u64,
        ring: &Ring<'_>,
        header: &CellHeader,
        sink: Option<&mut Sink<'_>>,
    ) -> bool {
        let Some(arrival) = self.arrivals.get_mut(&id) else { return true };
        take_payload(arrival, ring, header, sink);
        let complete = arrival.complete();
        if arrival.discard && complete {
            if let Some(arrival) = self.arrivals.remove(&id) {
                self.recycle_arrival(arrival);
            }
        }
        complete
    }

    fn push_out(&mut self, fabric: &ShmTransport, dest: usize, feed: Option<&Feed<'_>>) {
        let ring = fabric.outbox(dest);
        let mut pushed = false;
        while let Some(cell) = self.control[dest].front() {
            if !ring.try_push(&cell.header, cell.payload()) {
                break;
            }
            self.control[dest].pop_front();
            pushed = true;
        }
        'queue: while let Some(out) = self.outbound[dest].front_mut() {
            let (header, payload, sent, started) = match out {
                Outgoing::Owned { header, payload, sent, started } => {
                    (*header, &payload[..], sent, started)
                }
                Outgoing::Borrowed { id, header, sent, started } => match feed {
                    Some(feed) if feed.send == *id => (*header, feed.buf, sent, started),
                    _ => break,
                },
            };
            while !*started || *sent < payload.len() {
                let chunk = &payload[*sent..payload.len().min(*sent + Ring::PAYLOAD_BYTES)];
                let cell = if *started {
                    CellHeader {
                        kind: CellKind::Fragment,
                        fragment_len: chunk.len() as u32,
                        ..header
                    }
                } else {
                    CellHeader { fragment_len: chunk.len() as u32, ..header }
                };
                if !ring.try_push(&cell, chunk) {
                    break 'queue;
                }
                *started = true;
                *sent += chunk.len();
                pushed = true;
            }
            if let Some(Outgoing::Owned { payload, .. }) = self.outbound[dest].pop_front() {
                self.recycle(payload);
            }
        }
        let waiting = !self.control[dest].is_empty() || !self.outbound[dest].is_empty();
        if waiting && !ring.has_room() {
            self.blocked.push(dest);
        }
        if pushed {
            fabric.notify(dest);
        }
    }
}

/// Copies the payload of the ring's oldest cell into `arrival`: straight into `sink` when it
/// is the arrival's receive and nothing is held back, else into the pending bytes (unless
/// the receive was cancelled).
fn take_payload(
    arrival: &mut Arrival,
    ring: &Ring<'_>,
    header: &CellHeader,
    sink: Option<&mut Sink<'_>>,
) {
    let n = (header.fragment_len as usize).min(arrival.len);
    let recv = arrival.recv;
    let Body::Copied { pending, in_sink, received } = &mut arrival.body else { return };
    match sink {
        Some(sink) if Some(sink.recv) == recv && pending.is_empty() && *in_sink == *received => {
            let start = (*received).min(sink.buf.len());
            let end = (*received + n).min(sink.buf.len());
            ring.read_payload(header, &mut sink.buf[start..end]);
            *in_sink += n;
        }
        _ => {
            if !arrival.discard {
                let old = pending.len();
                pending.resize(old + n, 0);
                ring.read_payload(header, &mut pending[old..]);
            }
        }
    }
    *received += n;
}

/// How a split single copy of `n` bytes between receiver `receiver` and sender `sender`
/// divides the message: (the receiver's part, the sender's part), as byte ranges. The lower
/// rank of a pair always copies the head and the higher the tail, whichever way the message
/// goes, so a buffer that a pair passes back and forth stays in the cache of the core that
/// copied each half last, and neither side reads lines the other core just wrote.
fn halves(receiver: usize, sender: usize, n: usize) -> ((usize, usize), (usize, usize)) {
    let at = (n / 2) & !63;
    let (head, tail) = ((0, at), (at, n));
    if receiver < sender {
        (head, tail)
    } else {
        (tail, head)
    }
}

/// Payload bytes a control cell carries at most (inline in the cell's first cache line).
const CONTROL_BYTES: usize = 16;

/// A control cell and its payload, queued while the peer's ring is full.
#[derive(Clone, Copy, Debug)]
struct Control {
    header: CellHeader,
    payload: [u8; CONTROL_BYTES],
}

impl Control {
    fn new(kind: CellKind, id: u64, payload: &[u8]) -> Control {
        let mut bytes = [0u8; CONTROL_BYTES];
        bytes[..payload.len()].copy_from_slice(payload);
        let header = CellHeader {
            kind,
            context: 0,
            tag: 0,
            // Fits: at most CONTROL_BYTES.
            fragment_len: payload.len() as u32,
            total_len: 0,
            source: 0,
            address: 0,
            id,
        };
        Control { header, payload: bytes }
    }

    fn payload(&self) -> &[u8] {
        &self.payload[..self.header.fragment_len as usize]
    }
}

/// The payload of a clear-to-send: the part of the message the sender is asked to write
/// itself (offset and length) and where it goes in the receiver's memory.
struct ClearToSend;

impl ClearToSend {
    /// Asks the sender of message `sender_id` to write its bytes `part` to `address`.
    fn cell(sender_id: u64, part: (usize, usize), address: *const u8) -> Control {
        let mut bytes = [0u8; CONTROL_BYTES];
        // Fit: messages are at most i32::MAX bytes.
        bytes[0..4].copy_from_slice(&(part.0 as u32).to_le_bytes());
        bytes[4..8].copy_from_slice(&((part.1 - part.0) as u32).to_le_bytes());
        bytes[8..16].copy_from_slice(&(address as usize as u64).to_le_bytes());
        Control::new(CellKind::ClearToSend, sender_id, &bytes)
    }

    /// (offset, length, receiver's address) of a clear-to-send's payload.
    fn decode(bytes: &[u8; CONTROL_BYTES]) -> (u64, u64, u64) {
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let mut address = [0u8; 8];
        address.copy_from_slice(&bytes[8..16]);
        (u64::from(word(0)), u64::from(word(4)), u64::from_le_bytes(address))
    }
}

/// Tells the receiver of message `sender_id` that the sender wrote its part (`errno` 0) or
/// could not (the errno).
fn written_cell(sender_id: u64, errno: i32) -> Control {
    Control::new(CellKind::Written, sender_id, &errno.to_le_bytes())
}

fn finished_cell(sender_id: u64) -> Control {
    Control::new(CellKind::Finished, sender_id, &[])
}
