//! The shared-memory transport: one process's view of the job's shared region, its rings to
//! and from every peer, the peers' process ids and nodes, and the doorbells that let a rank
//! sleep instead of spin.
//!
//! A peer's [`PeerAddress`] is its slot in the region (low 32 bits) and its process id (high
//! 32 bits), see [`ShmTransport::address_of`].

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{compiler_fence, fence, AtomicU32};
use std::sync::Arc;
use std::time::{Duration, Instant};

use commcore::wire::Header;

use super::{Arrival, Capabilities, PeerAddress, Taken, Transport, TransportError};
use crate::shm::bridge::Bridge;
use crate::shm::{cma, futex, membarrier, Layout, Region, Ring};

/// How long one futex sleep lasts at most before the waiter looks again on its own.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

pub(crate) struct ShmTransport {
    pub(crate) region: Region,
    pub(crate) layout: Layout,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    pub(crate) pids: Vec<u32>,
    /// Each rank's node: its node label on its host, `host * node_count + label`.
    pub(crate) nodes: Vec<u32>,
    /// Node labels per host.
    pub(crate) node_count: usize,
    pub(crate) wake: WakeFence,
}

/// How a waker and a sleeper order their ring update and sleeping flag (Dekker's pattern:
/// each stores, then loads the other's word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WakeFence {
    /// Both sides fence. Every push pays a full fence, which waits for the cell's cache line
    /// to reach this core.
    Symmetric,
    /// The sleeper, which is about to block for a long time anyway, runs a process-wide
    /// barrier ([`membarrier::global`]) that stands in for the waker's fence; wakers only
    /// keep the compiler from reordering. Needs every process of the job registered.
    Asymmetric,
}

impl ShmTransport {
    /// The ring this process writes to reach `to`.
    pub(crate) fn outbox(&self, to: usize) -> Ring<'_> {
        Ring::new(&self.region, &self.layout, self.rank, to)
    }

    /// The ring this process reads for messages from `from`.
    pub(crate) fn inbox(&self, from: usize) -> Ring<'_> {
        Ring::new(&self.region, &self.layout, from, self.rank)
    }

    /// Whether any peer's ring holds a cell for us.
    pub(crate) fn any_inbound(&self) -> bool {
        (0..self.size).any(|source| !self.inbox(source).is_empty())
    }

    fn doorbell(&self, rank: usize) -> &AtomicU32 {
        self.region.atomic_u32(self.layout.doorbell(rank))
    }

    fn sleeping(&self, rank: usize) -> &AtomicU32 {
        self.region.atomic_u32(self.layout.sleeping(rank))
    }

    /// Wakes `rank` if it sleeps: call after giving it a cell or freeing room in its ring.
    /// Our fence (or, with [`WakeFence::Asymmetric`], the sleeper's process-wide barrier)
    /// pairs with the one in [`ShmTransport::sleep`]: either the sleeper sees our ring update
    /// before it sleeps, or we see its sleeping flag and ring the bell.
    pub(crate) fn notify(&self, rank: usize) {
        self.waker_fence();
        ring_bell(&self.region, self.layout.sleeping(rank), self.layout.doorbell(rank));
    }

    /// What a waker runs between publishing and reading a sleeper count, the pair of the
    /// sleeper's fence (or process-wide barrier) in [`ShmTransport::sleep`].
    pub(crate) fn waker_fence(&self) {
        match self.wake {
            WakeFence::Symmetric => fence(SeqCst),
            WakeFence::Asymmetric => compiler_fence(SeqCst),
        }
    }

    /// Sleeps on this rank's doorbell unless `ready()` already holds.
    pub(crate) fn sleep(&self, ready: impl Fn() -> bool) {
        self.sleep_at_most(SLEEP_SLICE, &[], ready);
    }

    /// Sleeps on this rank's doorbell and on its doorbells in `bridges` (each with our slot
    /// there), unless `ready()` already holds: a peer of another group rings ours in the
    /// bridge it shares with us.
    pub(crate) fn sleep_bridged(&self, bridges: &[(Arc<Bridge>, usize)], ready: impl Fn() -> bool) {
        self.sleep_at_most(SLEEP_SLICE, bridges, ready);
    }

    fn sleep_at_most(
        &self,
        slice: Duration,
        bridges: &[(Arc<Bridge>, usize)],
        ready: impl Fn() -> bool,
    ) {
        let bell = self.doorbell(self.rank);
        let mut bells: Vec<(&AtomicU32, u32)> = vec![(bell, bell.load(Acquire))];
        let mut counts: Vec<&AtomicU32> = vec![self.sleeping(self.rank)];
        for (bridge, me) in bridges {
            let bell = bridge.word(bridge.layout.doorbell(*me));
            bells.push((bell, bell.load(Acquire)));
            counts.push(bridge.word(bridge.layout.sleeping(*me)));
        }
        // A count, not a flag: several threads of this process may sleep at once.
        for count in &counts {
            count.fetch_add(1, Relaxed);
        }
        fence(SeqCst);
        if self.wake == WakeFence::Asymmetric {
            // Every waker now either has its ring update visible to `ready` below, or runs
            // its check of our flag after this barrier and sees it.
            membarrier::global();
        }
        if !ready() {
            if bells.len() == 1 {
                futex::wait(bell, bells[0].1, slice);
            } else if !futex::wait_any(&bells, slice) {
                // No futex_waitv: a bridge's bell cannot end this sleep, so it is short.
                futex::wait(bell, bells[0].1, BRIDGED_SLICE);
            }
        }
        for count in &counts {
            count.fetch_sub(1, Relaxed);
        }
    }
}

/// How long one sleep lasts at most when bridges' bells cannot wake it.
const BRIDGED_SLICE: Duration = Duration::from_millis(1);

/// Rings the doorbell at `doorbell` in `region` if the count at `sleeping` says someone
/// sleeps on it. The caller fenced (see [`ShmTransport::waker_fence`]) after publishing.
pub(crate) fn ring_bell(region: &Region, sleeping: usize, doorbell: usize) {
    if region.atomic_u32(sleeping).load(Relaxed) != 0 {
        let bell = region.atomic_u32(doorbell);
        bell.fetch_add(1, Release);
        futex::wake_all(bell);
    }
}

impl ShmTransport {
    /// The address of the process in slot `slot` of the region, whose process id is `pid`.
    pub fn address_of(slot: usize, pid: u32) -> PeerAddress {
        PeerAddress((u64::from(pid) << 32) | slot as u64)
    }

    /// The engine's index of the peer an address names: a slot of this job's region, or
    /// from the job's size up, a guest reached through a bridge.
    #[inline]
    pub(crate) fn peer_index(peer: PeerAddress) -> usize {
        (peer.0 & u64::from(u32::MAX)) as usize
    }

    /// The slot an address names, if the region has it.
    #[inline]
    pub(crate) fn slot(&self, peer: PeerAddress) -> Result<usize, TransportError> {
        let slot = (peer.0 & u64::from(u32::MAX)) as usize;
        if slot < self.size {
            Ok(slot)
        } else {
            Err(TransportError::UnknownPeer { peer })
        }
    }

    fn pid(&self, peer: PeerAddress) -> Result<u32, TransportError> {
        self.slot(peer)?;
        Ok((peer.0 >> 32) as u32)
    }
}

/// A packet at the head of a ring.
pub struct ShmArrival<'a> {
    ring: Ring<'a>,
    header: Header,
    payload_len: usize,
}

impl Arrival for ShmArrival<'_> {
    fn header(&self) -> &Header {
        &self.header
    }

    fn payload_len(&self) -> usize {
        self.payload_len
    }

    fn read_payload(&self, dst: &mut [u8]) {
        let n = dst.len().min(self.payload_len);
        self.ring.read_payload_of(self.payload_len, &mut dst[..n]);
    }
}

impl Transport for ShmTransport {
    type Arrival<'a> = ShmArrival<'a>;

    fn capabilities(&self, peer: PeerAddress) -> Capabilities {
        let same_node =
            self.slot(peer).is_ok_and(|slot| self.nodes.get(slot) == self.nodes.get(self.rank));
        // The transport can copy between processes; whether the kernel lets it is probed
        // at start-up, and the runtime turns single copy off when the probe failed.
        Capabilities { max_payload: Ring::PAYLOAD_BYTES, single_copy: true, same_node }
    }

    #[inline]
    fn try_send(
        &self,
        peer: PeerAddress,
        header: &Header,
        payload: &[u8],
    ) -> Result<bool, TransportError> {
        if payload.len() > Ring::PAYLOAD_BYTES {
            return Err(TransportError::Corrupt { peer });
        }
        Ok(self.outbox(self.slot(peer)?).try_push_packet(header, payload))
    }

    fn has_room(&self, peer: PeerAddress) -> bool {
        self.slot(peer).is_ok_and(|slot| self.outbox(slot).has_room())
    }

    fn poll<F>(
        &self,
        peer: PeerAddress,
        budget: usize,
        mut take: F,
    ) -> Result<usize, TransportError>
    where
        F: FnMut(&ShmArrival<'_>) -> Taken,
    {
        let slot = self.slot(peer)?;
        let ring = self.inbox(slot);
        let mut consumed = 0;
        while consumed < budget {
            let (header, payload_len) = match ring.peek_packet() {
                Ok(Some(packet)) => packet,
                Ok(None) => break,
                Err(_) => return Err(TransportError::Corrupt { peer }),
            };
            let arrival = ShmArrival { ring: self.inbox(slot), header, payload_len };
            if take(&arrival) == Taken::Leave {
                break;
            }
            ring.pop();
            consumed += 1;
        }
        Ok(consumed)
    }

    fn any_arrived(&self) -> bool {
        self.any_inbound()
    }

    fn notify(&self, peer: PeerAddress) {
        if let Ok(slot) = self.slot(peer) {
            ShmTransport::notify(self, slot);
        }
    }

    fn wait(&self, deadline: Instant, ready: impl Fn() -> bool) {
        let left = deadline.saturating_duration_since(Instant::now());
        if !left.is_zero() {
            self.sleep_at_most(left.min(SLEEP_SLICE), &[], ready);
        }
    }

    fn read_remote(
        &self,
        peer: PeerAddress,
        remote: u64,
        dst: &mut [u8],
    ) -> Result<(), TransportError> {
        cma::read(self.pid(peer)?, remote, dst)
            .map_err(|e| TransportError::Os { peer, errno: e.raw_os_error().unwrap_or(0) })
    }

    fn write_remote(
        &self,
        peer: PeerAddress,
        src: &[u8],
        remote: u64,
    ) -> Result<(), TransportError> {
        cma::write(self.pid(peer)?, src.as_ptr() as usize as u64, remote, src.len())
            .map_err(|e| TransportError::Os { peer, errno: e.raw_os_error().unwrap_or(0) })
    }
}

/// Two processes' views of one two-slot region (slots 0 and 1), here in one process.
#[cfg(test)]
pub(crate) fn test_pair() -> (ShmTransport, ShmTransport) {
    let layout = Layout::new(2).unwrap();
    let region = Region::create(layout.region_bytes()).unwrap();
    // SAFETY: dup of a descriptor we own; the new one is handed to Region::open.
    let again = unsafe { libc::dup(region.fd()) };
    assert!(again >= 0);
    let second = Region::open(again).unwrap();
    let view = |region, rank| ShmTransport {
        region,
        layout: Layout::new(2).unwrap(),
        rank,
        size: 2,
        pids: vec![std::process::id(); 2],
        nodes: vec![0, 1],
        node_count: 2,
        wake: WakeFence::Symmetric,
    };
    (view(region, 0), view(second, 1))
}

#[cfg(test)]
mod tests {
    use commcore::wire::Kind;

    use super::*;
    use crate::shm::layout::RING_DEPTH;

    fn header(sequence: u32, length: u64) -> Header {
        Header { kind: Kind::Eager, context: 4, source: 0, tag: 9, sequence, length }
    }

    #[test]
    fn packets_arrive_in_order_with_their_payloads_and_full_pushes_back() {
        let (a, b) = test_pair();
        let to_b = ShmTransport::address_of(1, std::process::id());
        let from_a = ShmTransport::address_of(0, std::process::id());
        let mut sent = 0u32;
        while a.try_send(to_b, &header(sent, 3), &[sent as u8; 3]).unwrap() {
            sent += 1;
        }
        assert_eq!(sent as usize, RING_DEPTH, "the ring pushes back when full");
        assert!(!a.has_room(to_b));
        assert!(b.any_arrived());
        let mut seen = Vec::new();
        let consumed = b
            .poll(from_a, usize::MAX, |packet| {
                let mut payload = [0u8; 3];
                packet.read_payload(&mut payload);
                seen.push((packet.header().sequence, payload, packet.payload_len()));
                if seen.len() == 5 {
                    Taken::Leave
                } else {
                    Taken::Consumed
                }
            })
            .unwrap();
        assert_eq!(consumed, 4);
        assert_eq!(seen[4], (4, [4; 3], 3), "a left packet is offered again");
        let consumed = b.poll(from_a, 10, |_| Taken::Consumed).unwrap();
        assert_eq!(consumed, 10, "the budget bounds a poll");
        let rest = b.poll(from_a, usize::MAX, |_| Taken::Consumed).unwrap();
        assert_eq!(4 + 10 + rest, RING_DEPTH);
        assert!(a.has_room(to_b));
        assert!(!b.any_arrived());
    }

    #[test]
    fn bad_addresses_oversized_payloads_and_garbage_are_errors() {
        let (a, b) = test_pair();
        let nobody = ShmTransport::address_of(2, 1);
        assert_eq!(
            a.try_send(nobody, &header(0, 0), &[]),
            Err(TransportError::UnknownPeer { peer: nobody })
        );
        let to_b = ShmTransport::address_of(1, 1);
        let big = vec![0u8; Ring::PAYLOAD_BYTES + 1];
        assert_eq!(
            a.try_send(to_b, &header(0, 0), &big),
            Err(TransportError::Corrupt { peer: to_b })
        );
        // A cell in the runtime's older format is not a packet.
        let old = crate::shm::CellHeader {
            kind: crate::shm::CellKind::Message,
            context: 0,
            tag: 0,
            fragment_len: 0,
            total_len: 0,
            source: 0,
            address: 0,
            id: 0,
        };
        assert!(a.outbox(1).try_push(&old, &[]));
        let from_a = ShmTransport::address_of(0, 1);
        assert_eq!(
            b.poll(from_a, 1, |_| Taken::Consumed),
            Err(TransportError::Corrupt { peer: from_a })
        );
    }

    #[test]
    fn capabilities_say_which_peers_share_the_node() {
        let (a, _) = test_pair();
        let me = ShmTransport::address_of(0, 1);
        let other = ShmTransport::address_of(1, 1);
        assert!(a.capabilities(me).same_node);
        assert!(!a.capabilities(other).same_node);
        assert_eq!(a.capabilities(other).max_payload, Ring::PAYLOAD_BYTES);
    }

    #[test]
    fn wait_returns_by_its_deadline_and_at_once_when_ready() {
        let (a, _) = test_pair();
        let start = Instant::now();
        a.wait(start + Duration::from_millis(20), || false);
        assert!(start.elapsed() < Duration::from_secs(2));
        let start = Instant::now();
        a.wait(start + Duration::from_secs(5), || true);
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn single_copy_reads_and_writes_this_process() {
        let (a, _) = test_pair();
        let me = ShmTransport::address_of(0, std::process::id());
        let source = *b"single copy";
        let mut got = [0u8; 11];
        a.read_remote(me, source.as_ptr() as usize as u64, &mut got).unwrap();
        assert_eq!(&got, b"single copy");
        let mut target = [0u8; 4];
        a.write_remote(me, b"abcd", target.as_mut_ptr() as usize as u64).unwrap();
        assert_eq!(&target, b"abcd");
    }
}
