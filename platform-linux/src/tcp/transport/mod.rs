//! The TCP transport: one listener, streams made on demand, the handshake driven by core's
//! connection machine, bounded send queues, and waiting that spins briefly then polls.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use commcore::conn::{Addr, Config, ConnectOutcome, Endpoint, Event, FailReason, Identity};
use commcore::wire::{Header, HEADER_LEN};

use super::error::{PeerFault, TcpError};
use super::frame::{self, FrameKind, Parsed, PREFIX_LEN};
use super::socket;
use super::stream::{LongStart, ReadEnd, Stream};

mod wait;

/// Peers one process may have handshake or connection state for at once.
pub const MAX_PEERS: usize = 256;

/// Tunables, with defaults fit for a job on one machine or a LAN.
#[derive(Clone, Copy, Debug)]
pub struct TcpSettings {
    /// Bytes that may wait to be written to one peer; a send beyond it waits for room.
    pub queue_bytes: usize,
    /// How long a send waits for room before the peer counts as no longer reading.
    pub send_timeout: Duration,
    /// How long a wait spins (polling sockets without sleeping) before it blocks.
    pub spin: Duration,
    /// Handshake timers in microseconds and the job's token.
    pub handshake: Config,
}

impl TcpSettings {
    /// The defaults for a job whose handshakes carry `token`: 4 MiB per peer, sends give
    /// up after 1 s without room, 50 µs of spinning, handshakes give up after 5 s. A connected
    /// peer that dies is seen at once (its stream ends); the handshake's limit bounds a peer
    /// that never answers. It was 1.5 s until a rank of a loaded machine, not scheduled for
    /// that long, failed a live handshake.
    pub fn new(token: u128) -> Self {
        let mut handshake = Config::micros(token);
        handshake.timeout = 5_000_000;
        Self {
            queue_bytes: 4 << 20,
            send_timeout: Duration::from_secs(1),
            spin: Duration::from_micros(50),
            handshake,
        }
    }
}

/// A message that arrived.
#[derive(Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The sender's world rank.
    pub from: usize,
    /// Its wire header.
    pub header: Header,
    /// Its payload, or with long payloads announced its first bytes.
    pub payload: Vec<u8>,
    /// Payload bytes still to come, taken with [`TcpTransport::read_rest`] (0 unless long
    /// payloads are announced: [`TcpTransport::announce_long_payloads`]).
    pub rest: usize,
}

/// The TCP transport of one rank of a job whose ranks listen at `addrs`.
pub struct TcpTransport {
    rank: usize,
    addrs: Vec<SocketAddr>,
    settings: TcpSettings,
    listener: TcpListener,
    endpoint: Box<Endpoint<MAX_PEERS>>,
    epoch: Instant,
    streams: HashMap<u64, Stream>,
    next_token: u64,
    /// The stream carrying each connected peer's connection.
    connected: HashMap<usize, u64>,
    /// Frames for peers whose handshake is not finished.
    pending: HashMap<usize, (VecDeque<Vec<u8>>, usize)>,
    /// Peers that said goodbye.
    finished: Vec<usize>,
    fault: Option<TcpError>,
    /// This rank said goodbye: streams that end now end normally.
    finishing: bool,
    arrivals: VecDeque<Arrival>,
    /// The sockets as `poll(2)` takes them: the listener first, then the stream of each
    /// token in `fd_tokens` (rebuilt for every poll into the same memory).
    fds: Vec<libc::pollfd>,
    fd_tokens: Vec<u64>,
    /// The streams a pass over the sockets services.
    due: Vec<u64>,
    /// Long payloads are announced and read by the owner into its own buffer.
    announce_long: bool,
    /// Lent sends written whole, by id ([`Self::send_lent`]).
    written: Vec<u64>,
}

impl TcpTransport {
    /// Listens on `listener` (made by [`socket::listen`], whose address the job's other
    /// ranks know as `addrs[rank]`).
    pub fn new(
        rank: usize,
        addrs: Vec<SocketAddr>,
        listener: TcpListener,
        settings: TcpSettings,
        seed: u64,
    ) -> Result<Self, TcpError> {
        let local = addrs
            .get(rank)
            .copied()
            .ok_or(TcpError::peer(rank, PeerFault::NoSuchRank { size: addrs.len() }))?;
        listener.set_nonblocking(true).map_err(|e| TcpError::Local(e.kind()))?;
        let identity = Identity::new(0, rank as u32);
        let endpoint = Endpoint::new(identity, socket::encode(local), settings.handshake, seed)
            .map_err(|_| TcpError::Local(io::ErrorKind::InvalidInput))?;
        Ok(Self {
            rank,
            addrs,
            settings,
            listener,
            endpoint: Box::new(endpoint),
            epoch: Instant::now(),
            streams: HashMap::new(),
            next_token: 1,
            connected: HashMap::new(),
            pending: HashMap::new(),
            finished: Vec::new(),
            fault: None,
            finishing: false,
            arrivals: VecDeque::new(),
            fds: Vec::new(),
            fd_tokens: Vec::new(),
            due: Vec::new(),
            announce_long: false,
            written: Vec::new(),
        })
    }

    /// From now on a long message is announced as soon as its header is here ([`Arrival`]'s
    /// `rest`), and the owner reads the rest of its payload with [`Self::read_rest`] into
    /// the buffer it ends in: no copy through a buffer of the transport's. The owner must
    /// read it: later messages from that peer wait behind it (the transport reads it itself
    /// only while a send or flush waits for room, so that two peers sending to each other
    /// cannot block each other).
    pub fn announce_long_payloads(&mut self) {
        self.announce_long = true;
    }

    /// Reads the next bytes of `peer`'s announced long message into `dest` (at most what
    /// is left of it); the count, 0 while none are here.
    pub fn read_rest(&mut self, peer: usize, dest: &mut [u8]) -> Result<usize, TcpError> {
        self.check(peer)?;
        let stream = self.connected.get(&peer).and_then(|token| self.streams.get_mut(token));
        let Some(stream) = stream else { return Err(self.lose(peer, PeerFault::Closed)) };
        match stream.read_long(dest) {
            Ok(n) => Ok(n),
            Err(ReadEnd::Failed(e)) => Err(self.lose(peer, PeerFault::Broken(e.kind()))),
            Err(_) => Err(self.lose(peer, PeerFault::Closed)),
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Peers with a connection up.
    pub fn connections(&self) -> usize {
        self.connected.len()
    }

    /// Whether bytes wait to be written to any peer (queued on a stream, or waiting for a
    /// handshake to finish).
    pub fn has_queued(&self) -> bool {
        self.streams.values().any(|s| s.queued() > 0) || !self.pending.is_empty()
    }

    /// Sends a message to `peer`: connects first if need be. Returns once the message is
    /// written or queued; waits (moving other traffic) while more than `queue_bytes` wait
    /// for the peer, and fails naming the peer after `send_timeout` without room.
    pub fn send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), TcpError> {
        self.check(peer)?;
        if peer == self.rank {
            let arrival =
                Arrival { from: peer, header: *header, payload: payload.to_vec(), rest: 0 };
            self.arrivals.push_back(arrival);
            return Ok(());
        }
        let head = frame::message_prefix(header, payload.len());
        match self.connected.get(&peer).and_then(|t| self.streams.get_mut(t)) {
            Some(stream) => {
                if let Err(e) = stream.send_frame(&head, payload) {
                    return Err(self.lose(peer, PeerFault::Broken(e.kind())));
                }
            }
            None => {
                let mut bytes = Vec::with_capacity(head.len() + payload.len());
                bytes.extend_from_slice(&head);
                bytes.extend_from_slice(payload);
                let (queue, queued) = self.pending.entry(peer).or_default();
                *queued += bytes.len();
                queue.push_back(bytes);
                self.connect(peer)?;
            }
        }
        if self.queued_to(peer) == 0 {
            // Written whole: nothing to move on for it (reads happen when the caller polls).
            return Ok(());
        }
        self.wait_for_room(peer)
    }

    /// Moves traffic on while more than `queue_bytes` wait for `peer`; fails naming the
    /// peer after `send_timeout` without room.
    fn wait_for_room(&mut self, peer: usize) -> Result<(), TcpError> {
        let start = Instant::now();
        self.progress(true)?;
        while self.queued_to(peer) > self.settings.queue_bytes {
            let waited = start.elapsed();
            if waited >= self.settings.send_timeout {
                let queued = self.queued_to(peer);
                let waited_ms = waited.as_millis() as u64;
                return Err(self.lose(peer, PeerFault::StoppedReading { queued, waited_ms }));
            }
            self.block(start + self.settings.send_timeout)?;
            self.progress(true)?;
            self.check(peer)?;
        }
        Ok(())
    }

    /// Sends `payload` to a connected `peer` from the caller's memory: queued as a region
    /// that the kernel reads when the stream has room, and reported under `id` by
    /// [`Self::take_written`] once written; until then the caller keeps it unchanged (a
    /// request that borrows it). `Ok(false)`, and nothing sent, when the peer is not
    /// connected yet (or is this rank): the caller sends it by copy ([`Self::send`]). Lent
    /// bytes count in the peer's queue as copied ones do ([`TcpSettings::queue_bytes`]).
    pub fn send_lent(
        &mut self,
        peer: usize,
        header: &Header,
        payload: &[u8],
        id: u64,
    ) -> Result<bool, TcpError> {
        self.check(peer)?;
        let Some(stream) = self.connected.get(&peer).and_then(|t| self.streams.get_mut(t)) else {
            return Ok(false);
        };
        let head = frame::message_prefix(header, payload.len());
        let address = payload.as_ptr() as usize;
        if let Err(e) = stream.send_lent(&head, address, payload.len(), id) {
            return Err(self.lose(peer, PeerFault::Broken(e.kind())));
        }
        stream.take_written(&mut self.written);
        self.wait_for_room(peer)?;
        Ok(true)
    }

    /// Moves the ids of lent sends written whole into `into`.
    pub fn take_written(&mut self, into: &mut Vec<u64>) {
        into.append(&mut self.written);
    }

    /// The next message that arrived, after moving what the sockets have now.
    pub fn poll(&mut self) -> Result<Option<Arrival>, TcpError> {
        if self.arrivals.is_empty() {
            self.progress(false)?;
        }
        Ok(self.arrivals.pop_front())
    }

    /// Writes everything queued, waiting up to `deadline`; fails naming a peer whose queue
    /// did not drain.
    pub fn flush(&mut self, deadline: Instant) -> Result<(), TcpError> {
        loop {
            self.progress(true)?;
            let stuck = self.streams.values().find(|s| s.queued() > 0).and_then(|s| s.peer);
            let waiting = self.pending.keys().next().copied();
            let Some(peer) = stuck.or(waiting) else { return Ok(()) };
            if Instant::now() >= deadline {
                let queued = self.queued_to(peer);
                return Err(self.lose(peer, PeerFault::StoppedReading { queued, waited_ms: 0 }));
            }
            self.block(deadline)?;
        }
    }

    /// Says goodbye to every connected peer, writes what is queued (until `deadline`), and
    /// closes every stream. Peers then take the end of the connection as normal.
    pub fn finish(&mut self, deadline: Instant) -> Result<(), TcpError> {
        let result = self.flush(deadline);
        for token in self.connected.values() {
            if let Some(stream) = self.streams.get_mut(token) {
                stream.push(frame::goodbye_frame());
            }
        }
        // A peer finishing at the same time closes once it has our goodbye or we its: the
        // end of a stream is no failure from here on.
        self.finishing = true;
        let flushed = self.flush(deadline);
        self.streams.clear();
        self.connected.clear();
        result.and(flushed)
    }

    /// For tests: resets the connection to `peer` (the peer sees a reset, not an end).
    pub fn reset(&mut self, peer: usize) -> bool {
        let Some(token) = self.connected.remove(&peer) else { return false };
        let Some(stream) = self.streams.remove(&token) else { return false };
        socket::reset_on_close(&stream.socket).is_ok()
    }

    fn check(&self, peer: usize) -> Result<(), TcpError> {
        if let Some(fault) = &self.fault {
            return Err(*fault);
        }
        if peer >= self.addrs.len() {
            return Err(TcpError::peer(peer, PeerFault::NoSuchRank { size: self.addrs.len() }));
        }
        if self.finished.contains(&peer) {
            return Err(TcpError::peer(peer, PeerFault::Finished));
        }
        Ok(())
    }

    /// Records that `peer` is lost; every later call reports it, as the job cannot go on.
    fn lose(&mut self, peer: usize, fault: PeerFault) -> TcpError {
        let error = TcpError::peer(peer, fault);
        self.fault.get_or_insert(error);
        if let Some(token) = self.connected.remove(&peer) {
            self.streams.remove(&token);
        }
        self.pending.remove(&peer);
        error
    }

    fn queued_to(&self, peer: usize) -> usize {
        let streamed = self.connected.get(&peer).and_then(|t| self.streams.get(t));
        streamed.map_or(0, Stream::queued) + self.pending.get(&peer).map_or(0, |p| p.1)
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    fn connect(&mut self, peer: usize) -> Result<(), TcpError> {
        let identity = Identity::new(0, peer as u32);
        let addr = socket::encode(self.addrs[peer]);
        match self.endpoint.connect(self.now(), identity, addr) {
            Ok(ConnectOutcome::Started | ConnectOutcome::InProgress) => {}
            // Established in the machine but its event is not handled yet: that comes next.
            Ok(ConnectOutcome::Connected(_)) => {}
            Err(_) => return Err(self.lose(peer, PeerFault::TableFull)),
        }
        self.drive_machine();
        self.fault.map_or(Ok(()), Err)
    }

    /// One pass over the sockets without waiting: accepts, writes, reads, timers. Only the
    /// sockets the kernel says are ready are read (see [`Self::ready_now`]). With `spill`,
    /// announced long messages are read too (see [`Self::announce_long_payloads`]).
    fn progress(&mut self, spill: bool) -> Result<(), TcpError> {
        if self.ready_now()? {
            self.accept_all()?;
        }
        for i in 0..self.due.len() {
            self.service(self.due[i], spill);
        }
        if self.endpoint.poll_timeout().is_some_and(|t| t <= self.now()) {
            self.endpoint.handle_timeout(self.now());
            self.drive_machine();
        }
        self.fault.map_or(Ok(()), Err)
    }

    /// Takes every connection waiting at the listener.
    fn accept_all(&mut self) -> Result<(), TcpError> {
        loop {
            match self.listener.accept() {
                Ok((socket, _)) => {
                    if socket.set_nonblocking(true).and(socket.set_nodelay(true)).is_ok() {
                        self.add_stream(Stream::new(socket, None));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A connection that failed before we accepted it: nothing to do.
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
                Err(e) => return Err(TcpError::Local(e.kind())),
            }
        }
        Ok(())
    }

    /// Writes and reads one stream and handles the frames that arrived on it.
    fn service(&mut self, token: u64, spill: bool) {
        let Some(stream) = self.streams.get_mut(&token) else { return };
        let written = stream.flush();
        stream.take_written(&mut self.written);
        let read = stream.fill(spill);
        let peer = stream.peer;
        let mut corrupt = false;
        loop {
            let Some(stream) = self.streams.get_mut(&token) else { return };
            if let (Some((head, payload)), Some(from)) = (stream.take_long(), peer) {
                match Header::decode(&head) {
                    Ok(header) => {
                        self.arrivals.push_back(Arrival { from, header, payload, rest: 0 })
                    }
                    Err(_) => {
                        corrupt = true;
                        break;
                    }
                }
                // More may wait in the kernel behind it.
                let _ = stream.fill(spill);
                continue;
            }
            if stream.reading_long() {
                break;
            }
            let unread = stream.unread();
            let (kind, end) = match frame::parse(unread) {
                Parsed::Need(_) => match (stream.start_long(self.announce_long), peer) {
                    (LongStart::No, _) => break,
                    (LongStart::Whole, _) => {
                        let _ = stream.fill(spill);
                        continue;
                    }
                    (LongStart::Announced { header, first, rest }, Some(from)) => {
                        match Header::decode(&header) {
                            Ok(header) => self.arrivals.push_back(Arrival {
                                from,
                                header,
                                payload: first,
                                rest,
                            }),
                            Err(_) => corrupt = true,
                        }
                        break;
                    }
                    // Only a connected peer's stream starts a long message.
                    (LongStart::Announced { .. }, None) => break,
                },
                Parsed::Corrupt => {
                    corrupt = true;
                    break;
                }
                Parsed::Frame { kind, end } => (kind, end),
            };
            let body = &unread[PREFIX_LEN..end];
            match (kind, peer) {
                (FrameKind::Handshake, _) => {
                    let body = body.to_vec();
                    stream.consume(end);
                    let now = self.now();
                    self.endpoint.handle_datagram(now, Addr::from_u64(token), &body);
                    self.drive_machine();
                    if self.streams.get(&token).is_some_and(|s| s.peer != peer) {
                        // This frame made the connection: later frames belong to the peer.
                        return self.service(token, spill);
                    }
                }
                (FrameKind::Message, Some(from)) => match Header::decode(body) {
                    Ok(header) => {
                        let payload = body[HEADER_LEN..].to_vec();
                        stream.consume(end);
                        self.arrivals.push_back(Arrival { from, header, payload, rest: 0 });
                    }
                    Err(_) => {
                        corrupt = true;
                        break;
                    }
                },
                (FrameKind::Goodbye, Some(from)) => {
                    stream.consume(end);
                    self.finished.push(from);
                    self.connected.remove(&from);
                    self.streams.remove(&token);
                    return;
                }
                (_, None) => {
                    corrupt = true;
                    break;
                }
            }
        }
        if self.finishing && (corrupt || written.is_err() || !matches!(read, ReadEnd::WouldBlock)) {
            self.streams.remove(&token);
            return;
        }
        let failure = match (corrupt, written, read) {
            (true, ..) => Some(PeerFault::Corrupt),
            (_, Err(e), _) | (_, _, ReadEnd::Failed(e)) => Some(PeerFault::Broken(e.kind())),
            (_, _, ReadEnd::Closed) => Some(PeerFault::Closed),
            _ => None,
        };
        if let Some(fault) = failure {
            match peer {
                Some(rank) => {
                    self.lose(rank, fault);
                }
                // A stream that carries no connection (a handshake that lost, a dial that
                // failed): drop it; the machine retries or reports its own failure.
                None => {
                    self.streams.remove(&token);
                }
            }
        }
    }

    /// Sends the datagrams the connection machine owes and acts on its events.
    fn drive_machine(&mut self) {
        let now = self.now();
        while let Some(datagram) = self.endpoint.poll_transmit(now) {
            let bytes = frame::handshake_frame(datagram.payload());
            if let Some(token) = datagram.to.to_u64() {
                if let Some(stream) = self.streams.get_mut(&token) {
                    stream.push(bytes);
                }
            } else if let Some(to) = socket::decode(&datagram.to) {
                let open = self.streams.values_mut().find(|s| s.dialed == Some(to));
                match open {
                    Some(stream) => stream.push(bytes),
                    None => {
                        // A failed dial is retried when the machine retransmits.
                        if let Ok(socket) = socket::connect_nonblocking(to) {
                            let mut stream = Stream::new(socket, Some(to));
                            stream.push(bytes);
                            self.add_stream(stream);
                        }
                    }
                }
            }
        }
        while let Some(event) = self.endpoint.poll_event() {
            match event {
                Event::Connected(connection) => {
                    let peer = connection.peer.lpid as usize;
                    let Some(via) = connection.via.to_u64() else { continue };
                    let dialed = self.addrs.get(peer).copied();
                    // Streams this side dialed for handshakes that lost are not needed.
                    self.streams
                        .retain(|&t, s| t == via || s.dialed.is_none() || s.dialed != dialed);
                    let Some(stream) = self.streams.get_mut(&via) else { continue };
                    stream.peer = Some(peer);
                    if let Some((frames, _)) = self.pending.remove(&peer) {
                        frames.into_iter().for_each(|f| stream.push(f));
                    }
                    self.connected.insert(peer, via);
                }
                Event::Superseded { peer, .. } => {
                    self.lose(peer.lpid as usize, PeerFault::Reconnected);
                }
                Event::Failed { peer, reason } => {
                    let fault = match reason {
                        FailReason::NoAnswer => PeerFault::NoAnswer,
                        FailReason::Unconfirmed => PeerFault::Unconfirmed,
                    };
                    self.lose(peer.lpid as usize, fault);
                }
            }
        }
    }

    fn add_stream(&mut self, stream: Stream) {
        self.streams.insert(self.next_token, stream);
        self.next_token += 1;
    }
}

impl Drop for TcpTransport {
    fn drop(&mut self) {
        if !self.streams.is_empty() && self.fault.is_none() {
            let _ = self.finish(Instant::now() + Duration::from_millis(500));
        }
    }
}
