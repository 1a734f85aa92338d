//! The verbs transport of one process: a UD queue pair for handshakes, RC queue pairs made
//! on demand (or for every peer at start-up), eager frames through one shared receive
//! queue with credits, long messages read by the receiver with RDMA.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use commcore::conn::{Config, Endpoint, Identity};
use commcore::wire::{Header, HEADER_LEN};

use super::address::{VerbsAddress, QKEY};
use super::device::{Device, DeviceError, Qpn, SendOp, UD_HEADROOM};
use super::error::{PeerFault, VerbsError};
use super::frame::{self, FrameKind, RemoteBuffer, LONG_LEN, PREFIX_LEN};
use super::link::{Link, LinkState, Queued};
use super::reg_cache::{RegCache, RegStats, RegUse};
use super::slab::Slab;

/// Peers one process may have handshake or connection state for at once.
pub const MAX_PEERS: usize = 256;

/// When connections are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectMode {
    /// At the first message to a peer (the default).
    OnDemand,
    /// To every peer at start-up, all-to-all (the baseline the papers compare with).
    Eager,
}

/// Tunables.
#[derive(Clone, Copy, Debug)]
pub struct VerbsSettings {
    /// The largest payload sent in one frame; longer ones are read by the receiver.
    pub eager_max: usize,
    /// Receive buffers in the shared receive queue (shared by every peer).
    pub srq_buffers: usize,
    /// Send buffers (shared by every peer).
    pub send_buffers: usize,
    /// UD receive buffers for handshake datagrams.
    pub ud_buffers: usize,
    /// Data frames a peer may have unread at the receiver.
    pub credits: u16,
    /// Bytes that may wait for one peer before a send waits for room.
    pub queue_bytes: usize,
    /// How long a send waits for room before the peer counts as no longer receiving.
    pub send_timeout: Duration,
    /// The handshake's timers (microseconds) and the job's token.
    pub handshake: Config,
    /// When connections are made.
    pub connect: ConnectMode,
    /// How long a peer's queue pair may complete none of the work outstanding to it before
    /// the peer counts as gone (the device's own retries normally say so first).
    pub ack_timeout: Duration,
    /// Registrations the cache keeps, and their bytes.
    pub reg_cache_entries: usize,
    /// See `reg_cache_entries`.
    pub reg_cache_bytes: usize,
    /// Whether a registration stays cached after the request that lent its memory ends
    /// (off: the owner may free that memory and get other pages at the same address, which
    /// the old registration would not reach; see [`super::reg_cache`]).
    pub reg_cache_keep_idle: bool,
}

impl VerbsSettings {
    /// Defaults for a job whose handshakes carry `token`. A handshake gives up after 5 s:
    /// it bounds only a peer that never answers (a connected peer that dies fails its queue
    /// pair sooner), and processes of a loaded machine can go unscheduled for over 1.5 s.
    pub fn new(token: u128) -> Self {
        let mut handshake = Config::micros(token);
        handshake.timeout = 5_000_000;
        Self {
            eager_max: 8 << 10,
            srq_buffers: 128,
            send_buffers: 64,
            ud_buffers: 32,
            credits: 32,
            queue_bytes: 4 << 20,
            send_timeout: Duration::from_secs(1),
            handshake,
            connect: ConnectMode::OnDemand,
            ack_timeout: Duration::from_millis(1500),
            reg_cache_entries: 64,
            reg_cache_bytes: 256 << 20,
            reg_cache_keep_idle: false,
        }
    }
}

/// What a process holds on its device, for the resource figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resources {
    /// Queue pairs alive (the UD one included).
    pub queue_pairs: usize,
    /// Bytes registered (the transport's buffers and cached registrations).
    pub registered_bytes: usize,
    /// Bytes the device pins for queue pair rings.
    pub queue_bytes: usize,
    /// Peers connected.
    pub connections: usize,
}

/// A message as the transport offers it to its owner.
#[derive(Debug, PartialEq, Eq)]
pub struct Arrival<'a> {
    /// The sender's rank.
    pub from: usize,
    /// Its wire header.
    pub header: Header,
    /// The payload (empty for a long message).
    pub payload: &'a [u8],
    /// A long message's payload, to read with [`VerbsTransport::read_remote`].
    pub remote: Option<RemoteBuffer>,
}

pub(super) const WR_UD_RECV: u64 = 1;
pub(super) const WR_UD_SEND: u64 = 2;
pub(super) const WR_SRQ: u64 = 3;
pub(super) const WR_SEND: u64 = 4;
pub(super) const WR_READ: u64 = 5;

pub(super) fn wr(kind: u64, index: usize) -> u64 {
    (kind << 56) | index as u64
}

/// A received frame held for the owner: the sender and the receive buffer it is in.
pub(super) struct Held {
    pub from: usize,
    pub buffer: usize,
    pub len: usize,
}

/// The verbs transport of one rank of a job.
pub struct VerbsTransport<D: Device> {
    pub(super) device: D,
    pub(super) rank: usize,
    pub(super) pgid: u16,
    pub(super) settings: VerbsSettings,
    pub(super) me: VerbsAddress,
    /// Each rank's address; `None` for a rank without a device.
    pub(super) peers: Vec<Option<VerbsAddress>>,
    pub(super) links: Vec<Link>,
    pub(super) by_qpn: HashMap<Qpn, usize>,
    pub(super) endpoint: Box<Endpoint<MAX_PEERS>>,
    pub(super) ud_qp: Qpn,
    pub(super) ud_recv: Slab,
    pub(super) ud_send: Slab,
    pub(super) ud_send_free: Vec<usize>,
    pub(super) srq: Slab,
    pub(super) send: Slab,
    pub(super) send_free: Vec<usize>,
    /// Frames of peers the owner has not taken yet, oldest first.
    pub(super) held: VecDeque<Held>,
    /// Messages to this rank itself.
    pub(super) loopback: VecDeque<(Header, Vec<u8>)>,
    pub(super) cache: RegCache,
    /// Long sends waiting for their `Done`: id → (peer, registration use).
    pub(super) lent: HashMap<u64, (usize, RegUse)>,
    pub(super) written: Vec<u64>,
    /// RDMA reads in flight: their completion status when it comes.
    pub(super) reads: HashMap<u64, Option<bool>>,
    pub(super) next_read: u64,
    /// Peer failures not reported yet.
    pub(super) faults: VecDeque<VerbsError>,
    /// When the next watch over outstanding work runs (device clock).
    pub(super) next_watch: u64,
    /// What the message-transport boundary holds between calls.
    pub(super) messages: super::message::Messages,
}

impl<D: Device> VerbsTransport<D> {
    /// Opens the transport of `rank` in process group `pgid` on `device`: the UD queue
    /// pair, the shared receive queue and the buffers. Peers are set with
    /// [`VerbsTransport::set_peers`] once the job's addresses are exchanged.
    pub fn new(
        mut device: D,
        pgid: u16,
        rank: usize,
        settings: VerbsSettings,
        seed: u64,
    ) -> Result<Self, VerbsError> {
        let port = device.port();
        let frame_max = PREFIX_LEN + HEADER_LEN + settings.eager_max.max(LONG_LEN);
        let ud_qp = device.create_ud_qp(QKEY)?;
        let ud_recv =
            Slab::new(&mut device, settings.ud_buffers.max(2), UD_HEADROOM + port.ud_mtu)?;
        let ud_send = Slab::new(&mut device, 8, port.ud_mtu)?;
        let srq = Slab::new(&mut device, settings.srq_buffers.max(2), frame_max)?;
        let send = Slab::new(&mut device, settings.send_buffers.max(2), frame_max)?;
        let me = VerbsAddress { gid: port.gid, lid: port.lid, qpn: ud_qp, qkey: QKEY };
        let identity = Identity::new(pgid, rank as u32);
        let endpoint = Endpoint::new(identity, me.to_addr(), settings.handshake, seed)
            .map_err(|_| VerbsError::Device(DeviceError::Exhausted("handshake settings")))?;
        let mut t = Self {
            device,
            rank,
            pgid,
            settings,
            me,
            peers: Vec::new(),
            links: Vec::new(),
            by_qpn: HashMap::new(),
            endpoint: Box::new(endpoint),
            ud_qp,
            ud_send_free: (0..ud_send.count()).collect(),
            ud_recv,
            ud_send,
            send_free: (0..send.count()).rev().collect(),
            srq,
            send,
            held: VecDeque::new(),
            loopback: VecDeque::new(),
            cache: RegCache::new(settings.reg_cache_entries, settings.reg_cache_bytes)
                .keep_idle(settings.reg_cache_keep_idle),
            lent: HashMap::new(),
            written: Vec::new(),
            reads: HashMap::new(),
            next_read: 1,
            faults: VecDeque::new(),
            next_watch: 0,
            messages: super::message::Messages::default(),
        };
        for i in 0..t.ud_recv.count() {
            t.repost_ud(i)?;
        }
        for i in 0..t.srq.count() {
            t.repost_srq(i)?;
        }
        Ok(t)
    }

    /// Numbers this process `rank` among peers not set yet: a group that meets another
    /// learns its numbering (the other group's processes first) only after it published
    /// its address. Rebuilds the handshake's endpoint, which has done nothing yet.
    #[cfg(any(test, feature = "verbs"))]
    pub(crate) fn set_rank(&mut self, rank: usize, seed: u64) {
        let identity = Identity::new(self.pgid, rank as u32);
        if let Ok(endpoint) =
            Endpoint::new(identity, self.me.to_addr(), self.settings.handshake, seed)
        {
            *self.endpoint = endpoint;
            self.rank = rank;
        }
    }

    /// This process's verbs address, for the job's exchange.
    pub fn address(&self) -> VerbsAddress {
        self.me
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The job's addresses, by rank; with [`ConnectMode::Eager`], begins the handshake with
    /// every peer (see [`VerbsTransport::wait_connected`]).
    pub fn set_peers(&mut self, peers: Vec<VerbsAddress>) -> Result<(), VerbsError> {
        self.set_reachable_peers(peers.into_iter().map(Some).collect())
    }

    /// [`set_peers`](Self::set_peers) for a job where some ranks have no device (`None`):
    /// a message to one of them is [`PeerFault::NoDevice`], and eager connection skips them.
    pub fn set_reachable_peers(
        &mut self,
        peers: Vec<Option<VerbsAddress>>,
    ) -> Result<(), VerbsError> {
        self.links = (0..peers.len()).map(|_| Link::new()).collect();
        self.peers = peers;
        if self.settings.connect == ConnectMode::Eager {
            let rank = self.rank;
            let reachable = |p: &usize| *p != rank && self.peers[*p].is_some();
            for peer in (0..self.peers.len()).filter(reachable).collect::<Vec<_>>() {
                self.connect(peer)?;
            }
        }
        Ok(())
    }

    /// Waits until no handshake is open any more (every connection begun is up or failed),
    /// at most twice the handshake timeout; the first failure is the error.
    pub fn wait_connected(&mut self) -> Result<(), VerbsError> {
        let deadline = self.device.now_micros() + 2 * self.settings.handshake.timeout;
        self.block_until(deadline, Self::settled)?;
        Ok(())
    }

    /// Whether no handshake is open (each link is idle, up, finished or failed).
    pub fn settled(&self) -> bool {
        let open =
            |l: &Link| matches!(l.state, LinkState::Connecting | LinkState::AwaitReady { .. });
        !self.links.iter().any(open)
    }

    /// What this process holds on its device.
    pub fn resources(&self) -> Resources {
        let slabs =
            self.ud_recv.bytes() + self.ud_send.bytes() + self.srq.bytes() + self.send.bytes();
        Resources {
            queue_pairs: self.device.queue_pairs(),
            registered_bytes: slabs + self.cache.bytes(),
            queue_bytes: self.device.queue_bytes(),
            connections: self.links.iter().filter(|l| l.state == LinkState::Up).count(),
        }
    }

    /// The registration cache's counts.
    pub fn reg_stats(&self) -> RegStats {
        self.cache.stats()
    }

    /// Handshake datagrams this process posted to `peer`.
    pub fn datagrams_to(&self, peer: usize) -> u64 {
        self.links.get(peer).map_or(0, |l| l.datagrams)
    }

    /// Whether the connection to `peer` is up both ways.
    pub fn is_connected(&self, peer: usize) -> bool {
        self.links.get(peer).is_some_and(|l| l.state == LinkState::Up)
    }

    /// Sends a message of `payload.len()` bytes to `peer` (the header's length is set to
    /// that); connects first if need be. A payload up to `eager_max` is copied and the call
    /// returns; a longer one is announced and the call waits until the receiver has read it.
    pub fn send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), VerbsError> {
        let header = &Header { length: payload.len() as u64, ..*header };
        if payload.len() > self.settings.eager_max && peer != self.rank {
            let id = u64::MAX - self.next_read;
            self.next_read += 1;
            // SAFETY: `payload` stays borrowed until its `Done` is taken below (or the
            // transport fails the peer, which releases the registration's use).
            unsafe { self.send_lent(peer, header, payload, id)? };
            let deadline = u64::MAX;
            self.block_until(deadline, |t| t.written.contains(&id) || t.link_failed(peer))?;
            self.written.retain(|&w| w != id);
            return self.report(peer);
        }
        self.report(peer)?;
        if peer == self.rank {
            self.loopback.push_back((*header, payload.to_vec()));
            return Ok(());
        }
        if self.links[peer].open_for_data() {
            if let Some(slot) = self.send_free.pop() {
                let len = PREFIX_LEN + HEADER_LEN + payload.len();
                let buf = self.send.buffer_mut(slot);
                let owed = std::mem::take(&mut self.links[peer].owed);
                frame::put_prefix(buf, FrameKind::Data, owed);
                buf[PREFIX_LEN..PREFIX_LEN + HEADER_LEN].copy_from_slice(&header.encode());
                buf[PREFIX_LEN + HEADER_LEN..len].copy_from_slice(payload);
                self.links[peer].credits -= 1;
                return self.post_slot(peer, slot, len);
            }
        }
        let mut bytes = vec![0u8; PREFIX_LEN + HEADER_LEN + payload.len()];
        bytes[PREFIX_LEN..PREFIX_LEN + HEADER_LEN].copy_from_slice(&header.encode());
        bytes[PREFIX_LEN + HEADER_LEN..].copy_from_slice(payload);
        self.enqueue(peer, Queued { kind: FrameKind::Data, bytes }, false)
    }

    /// Offers the messages that arrived, oldest first, to `take`; each is consumed (its
    /// buffer goes back to the device and its credit to the sender). Returns how many.
    pub fn poll(&mut self, mut take: impl FnMut(Arrival<'_>)) -> Result<usize, VerbsError> {
        self.progress()?;
        let mut n = 0;
        while let Some((header, payload)) = self.loopback.pop_front() {
            take(Arrival { from: self.rank, header, payload: &payload, remote: None });
            n += 1;
        }
        while let Some(held) = self.held.pop_front() {
            let bytes = &self.srq.buffer(held.buffer)[..held.len];
            match frame::parse(bytes) {
                Some((_, frame::Frame::Data(header, payload))) => {
                    take(Arrival { from: held.from, header, payload, remote: None })
                }
                Some((_, frame::Frame::Long(header, remote))) => {
                    take(Arrival { from: held.from, header, payload: &[], remote: Some(remote) })
                }
                _ => {}
            }
            n += 1;
            self.repost_srq(held.buffer)?;
            self.return_credit(held.from);
        }
        Ok(n)
    }

    /// Says goodbye to every connected peer and waits (briefly) until it has left.
    pub fn finish(&mut self) -> Result<(), VerbsError> {
        let up: Vec<usize> = (0..self.links.len()).filter(|&p| self.is_connected(p)).collect();
        for &p in &up {
            self.enqueue(p, Queued { kind: FrameKind::Bye, bytes: vec![0u8; PREFIX_LEN] }, false)?;
        }
        let deadline = self.device.now_micros() + 200_000;
        self.block_until(deadline, |t| {
            t.send_free.len() == t.send.count() && t.links.iter().all(|l| l.queue.is_empty())
        })
        .map(|_| ())
    }

    pub(super) fn link_failed(&self, peer: usize) -> bool {
        matches!(self.links.get(peer).map(|l| l.state), Some(LinkState::Failed(_)) | None)
    }

    /// `Ok` while `peer` can be sent to.
    pub(super) fn check(&self, peer: usize) -> Result<(), VerbsError> {
        match self.links.get(peer).map(|l| l.state) {
            None => Err(VerbsError::peer(peer, PeerFault::NoSuchRank { size: self.links.len() })),
            Some(LinkState::Failed(fault)) => Err(VerbsError::peer(peer, fault)),
            Some(LinkState::Finished) => Err(VerbsError::peer(peer, PeerFault::Finished)),
            Some(_) => Ok(()),
        }
    }

    /// [`Self::check`] for a call that returns the error to its caller: the peer's failure
    /// is then reported, and `progress` does not report it again.
    pub(super) fn report(&mut self, peer: usize) -> Result<(), VerbsError> {
        let outcome = self.check(peer);
        if outcome.is_err() {
            self.faults.retain(|f| !matches!(f, VerbsError::Peer { rank, .. } if *rank == peer));
        }
        outcome
    }

    /// Queues a frame to `peer` (connecting first if need be) and posts what may go; waits
    /// for room while more than `queue_bytes` wait for it.
    pub(super) fn enqueue(
        &mut self,
        peer: usize,
        frame: Queued,
        urgent: bool,
    ) -> Result<(), VerbsError> {
        self.links[peer].push(frame, urgent);
        if self.links[peer].state == LinkState::Idle {
            self.connect(peer)?;
        }
        self.flush(peer)?;
        if self.links[peer].queued_bytes <= self.settings.queue_bytes {
            return Ok(());
        }
        let start = self.device.now_micros();
        let limit = self.settings.send_timeout.as_micros() as u64;
        let deadline = start.saturating_add(limit);
        let room =
            |t: &Self| t.links[peer].queued_bytes <= t.settings.queue_bytes || t.link_failed(peer);
        if !self.block_until(deadline, room)? {
            let queued = self.links[peer].queued_bytes;
            let waited_ms = (self.device.now_micros() - start) / 1000;
            self.fail(peer, PeerFault::StoppedReading { queued, waited_ms });
        }
        self.report(peer)
    }

    /// Posts `peer`'s queued frames while the connection, credits and send buffers allow.
    pub(super) fn flush(&mut self, peer: usize) -> Result<(), VerbsError> {
        while self.links[peer].front_ready() {
            let Some(slot) = self.send_free.pop() else { return Ok(()) };
            let link = &mut self.links[peer];
            let Some(frame) = link.queue.pop_front() else {
                self.send_free.push(slot);
                return Ok(());
            };
            link.queued_bytes -= frame.bytes.len();
            if frame.kind.takes_credit() {
                link.credits -= 1;
            }
            let owed = std::mem::take(&mut link.owed);
            let len = frame.bytes.len();
            let buf = self.send.buffer_mut(slot);
            buf[..len].copy_from_slice(&frame.bytes);
            frame::put_prefix(buf, frame.kind, owed);
            self.post_slot(peer, slot, len)?;
        }
        Ok(())
    }

    fn post_slot(&mut self, peer: usize, slot: usize, len: usize) -> Result<(), VerbsError> {
        let Some((qpn, _)) = self.links[peer].qp else {
            return Err(VerbsError::peer(peer, PeerFault::Corrupt));
        };
        let sge = self.send.sge(slot, len);
        if let Err(e) = self.device.post_send(qpn, wr(WR_SEND, slot), sge, SendOp::Send) {
            self.send_free.push(slot);
            return Err(e.into());
        }
        self.links[peer].unacked += 1;
        Ok(())
    }

    /// The owner took one of `peer`'s frames: a credit goes back on the next frame posted
    /// to it, or alone, ahead of the queue, once half are owed and no frame can go now.
    /// Frames that wait for credits of their own must not hold it back: two peers that both
    /// ran out would each wait for the other's credits for ever.
    fn return_credit(&mut self, peer: usize) {
        let link = &mut self.links[peer];
        link.owed = link.owed.saturating_add(1);
        let alone = link.owed >= self.settings.credits / 2 && !link.front_ready();
        if alone && link.state == LinkState::Up {
            let credit = Queued { kind: FrameKind::Credit, bytes: vec![0u8; PREFIX_LEN] };
            link.push(credit, true);
        }
        let _ = self.flush(peer);
    }

    pub(super) fn repost_srq(&mut self, i: usize) -> Result<(), VerbsError> {
        let sge = self.srq.sge(i, self.srq.size());
        self.device.post_recv(None, wr(WR_SRQ, i), sge).map_err(VerbsError::from)
    }

    pub(super) fn repost_ud(&mut self, i: usize) -> Result<(), VerbsError> {
        let sge = self.ud_recv.sge(i, self.ud_recv.size());
        self.device.post_recv(Some(self.ud_qp), wr(WR_UD_RECV, i), sge).map_err(VerbsError::from)
    }

    /// Moves traffic until `done` holds (`Ok(true)`) or the device's clock passes
    /// `deadline` (`Ok(false)`), sleeping on the completion channel in between.
    pub(super) fn block_until(
        &mut self,
        deadline: u64,
        done: impl Fn(&Self) -> bool,
    ) -> Result<bool, VerbsError> {
        loop {
            self.progress()?;
            if done(self) {
                return Ok(true);
            }
            let now = self.device.now_micros();
            if now >= deadline {
                return Ok(false);
            }
            let next = self.next_timer().map_or(deadline, |t| t.min(deadline));
            self.device.wait(next);
        }
    }
}

impl<D: Device> Drop for VerbsTransport<D> {
    fn drop(&mut self) {
        // Queue pairs first (their work is flushed), then the memory they named.
        for link in &mut self.links {
            if let Some((qpn, _)) = link.qp.take() {
                let _ = self.device.destroy_qp(qpn);
            }
        }
        let _ = self.device.destroy_qp(self.ud_qp);
        for keys in self.cache.drain() {
            let _ = self.device.deregister(keys);
        }
        for slab in [&mut self.ud_recv, &mut self.ud_send, &mut self.srq, &mut self.send] {
            slab.deregister(&mut self.device);
        }
    }
}
