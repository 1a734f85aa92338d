//! An in-process verbs fabric: devices, queue pairs as queues, RDMA reads as copies, UD
//! datagrams that can be dropped, duplicated and reordered, processes that can die and
//! queue pairs that can be driven to error. The transport's tests and the handshake figures
//! run on it; it checks what a device checks (keys, bounds, queue pair states), so a
//! transport bug that real hardware would refuse fails here too.
//!
//! Delivery happens when any device of the fabric polls: datagrams in flight go to their
//! UD queue pairs (or are lost when no receive buffer is posted), RC sends go to the
//! peer's shared receive queue (held, as a receiver-not-ready retry, while it is empty),
//! and an RC send towards a dead process or a queue pair not connected back fails with
//! [`WorkError::RetryExceeded`] once [`RETRY_BUDGET_US`] passed. Time is the wall clock, or
//! a virtual clock that only [`Fabric::advance_to`] moves (for deterministic simulations).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

mod world;

use super::device::{
    Completed, Completion, Device, DeviceError, MemoryKeys, PortInfo, Qpn, RcDest, SendOp, Sge,
    WorkError,
};
use world::{gid_of, index_of, Datagram, Dev, PendingSend, QpKind, RcState, Region, World};

/// How long an RC send retries towards a peer that does not answer before it fails.
pub const RETRY_BUDGET_US: u64 = 500_000;
/// The fabric's UD MTU (soft-RoCE's on a 1500-byte Ethernet link).
pub const FABRIC_MTU: usize = 1024;
/// Bytes the model counts for one queue pair's rings (64 work requests of 64 bytes).
const QP_RING_BYTES: usize = 64 * 64;

/// How the fabric mistreats UD datagrams, in parts per million per datagram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Datagrams dropped.
    pub drop_ppm: u32,
    /// Datagrams delivered twice.
    pub duplicate_ppm: u32,
    /// Datagrams delivered after a later one.
    pub reorder_ppm: u32,
}

/// Counts of what the fabric carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FabricStats {
    /// UD datagrams posted.
    pub datagrams_sent: u64,
    /// UD datagrams dropped by [`Faults`] or for want of a receive buffer.
    pub datagrams_lost: u64,
    /// RC sends delivered.
    pub rc_delivered: u64,
    /// RDMA reads done.
    pub reads: u64,
}

/// The fabric every in-process device is attached to.
#[derive(Clone)]
pub struct Fabric {
    shared: Arc<Shared>,
}

struct Shared {
    world: Mutex<World>,
    /// Signalled whenever a completion is queued (the completion channel).
    completed: Condvar,
}

impl Fabric {
    /// A fabric on the wall clock.
    pub fn new(seed: u64, faults: Faults) -> Self {
        Self::build(seed, faults, None)
    }

    /// A fabric on a virtual clock starting at 0, moved only by [`Fabric::advance_to`].
    pub fn virtual_time(seed: u64, faults: Faults) -> Self {
        Self::build(seed, faults, Some(0))
    }

    fn build(seed: u64, faults: Faults, virtual_now: Option<u64>) -> Self {
        let world = World {
            devs: Vec::new(),
            next_qpn: 0x100,
            next_key: 1,
            rng: seed | 1,
            faults,
            in_flight: Vec::new(),
            pending: VecDeque::new(),
            virtual_now,
            epoch: Instant::now(),
            stats: FabricStats::default(),
        };
        Self { shared: Arc::new(Shared { world: Mutex::new(world), completed: Condvar::new() }) }
    }

    /// Attaches a new device (a process's HCA port) to the fabric.
    pub fn device(&self) -> FabricDevice {
        let mut world = self.world();
        world.devs.push(Dev { alive: true, ..Dev::default() });
        FabricDevice { fabric: self.clone(), index: world.devs.len() - 1 }
    }

    /// The process of device `index` dies: its queue pairs and memory vanish, and what its
    /// peers send it fails once their retry budget is spent.
    pub fn kill(&self, index: usize) {
        let mut world = self.world();
        if let Some(dev) = world.devs.get_mut(index) {
            *dev = Dev::default();
        }
    }

    /// The process of device `index` stops answering, and its peers' devices never report
    /// it (their sends to it neither complete nor fail; soft-RoCE in Linux 6.1 was seen to
    /// behave so): only the transport's own watch can tell.
    pub fn silence(&self, index: usize) {
        let mut world = self.world();
        if let Some(dev) = world.devs.get_mut(index) {
            dev.alive = false;
            dev.silent = true;
        }
    }

    /// Drives queue pair `qpn` of device `index` to the error state: its pending work and
    /// every later request complete flushed.
    pub fn break_qp(&self, index: usize, qpn: Qpn) {
        let mut world = self.world();
        if let Some(QpKind::Rc { state }) =
            world.devs.get_mut(index).and_then(|d| d.qps.get_mut(&qpn.0))
        {
            *state = RcState::Error;
        }
    }

    /// Moves the virtual clock forward to `now` (no effect on the wall clock, or backwards).
    pub fn advance_to(&self, now: u64) {
        let mut world = self.world();
        if let Some(v) = world.virtual_now.as_mut() {
            *v = (*v).max(now);
        }
    }

    /// Changes how datagrams are mistreated from now on.
    pub fn set_faults(&self, faults: Faults) {
        self.world().faults = faults;
    }

    /// Queue pairs and registered regions device `index` holds now.
    pub fn held(&self, index: usize) -> (usize, usize) {
        let world = self.world();
        world.devs.get(index).map_or((0, 0), |d| (d.qps.len(), d.regions.len()))
    }

    /// What the fabric carried so far.
    pub fn stats(&self) -> FabricStats {
        self.world().stats
    }

    fn world(&self) -> MutexGuard<'_, World> {
        // A panic elsewhere poisons the lock; the world's data stays consistent per call.
        self.shared.world.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One process's device on a [`Fabric`].
pub struct FabricDevice {
    fabric: Fabric,
    index: usize,
}

impl FabricDevice {
    /// This device's index on the fabric (what [`Fabric::kill`] takes).
    pub fn index(&self) -> usize {
        self.index
    }
}

impl FabricDevice {
    fn world(&self) -> MutexGuard<'_, World> {
        self.fabric.world()
    }
}

impl Device for FabricDevice {
    fn port(&self) -> PortInfo {
        PortInfo { gid: gid_of(self.index), lid: 0, ud_mtu: FABRIC_MTU }
    }

    fn now_micros(&self) -> u64 {
        self.world().now()
    }

    unsafe fn register(&mut self, addr: *mut u8, len: usize) -> Result<MemoryKeys, DeviceError> {
        let mut world = self.world();
        let key = world.next_key;
        world.next_key = world.next_key.wrapping_add(2);
        let keys = MemoryKeys { lkey: key, rkey: key + 1 };
        let dev = &mut world.devs[self.index];
        if !dev.alive {
            return Err(DeviceError::NoDevice);
        }
        dev.regions.push(Region { addr: addr as u64, len, keys });
        Ok(keys)
    }

    fn deregister(&mut self, keys: MemoryKeys) -> Result<(), DeviceError> {
        let mut world = self.world();
        let regions = &mut world.devs[self.index].regions;
        let i = regions.iter().position(|r| r.keys == keys).ok_or(DeviceError::Unknown)?;
        regions.swap_remove(i);
        Ok(())
    }

    fn create_ud_qp(&mut self, qkey: u32) -> Result<Qpn, DeviceError> {
        self.create(QpKind::Ud { qkey, recvs: VecDeque::new() })
    }

    fn create_rc_qp(&mut self) -> Result<(Qpn, u32), DeviceError> {
        let qpn = self.create(QpKind::Rc { state: RcState::Init })?;
        Ok((qpn, qpn.0.wrapping_mul(0x9e37_79b9) & 0xff_ffff))
    }

    fn connect_rc_qp(&mut self, qpn: Qpn, peer: RcDest) -> Result<(), DeviceError> {
        let peer_dev = index_of(peer.gid).ok_or(DeviceError::Unknown)?;
        let mut world = self.world();
        match world.devs[self.index].qps.get_mut(&qpn.0) {
            Some(QpKind::Rc { state: state @ RcState::Init }) => {
                *state = RcState::Connected { dev: peer_dev, qpn: peer.qpn };
                Ok(())
            }
            Some(_) => Err(DeviceError::Os("ibv_modify_qp", libc::EINVAL)),
            None => Err(DeviceError::Unknown),
        }
    }

    fn destroy_qp(&mut self, qpn: Qpn) -> Result<(), DeviceError> {
        let mut world = self.world();
        let index = self.index;
        world.devs[index].qps.remove(&qpn.0).ok_or(DeviceError::Unknown)?;
        // Its sends still waiting complete flushed.
        let mut flushed = Vec::new();
        world.pending.retain(|p| {
            let mine = p.dev == index && p.qpn == qpn;
            if mine {
                flushed.push(p.wr_id);
            }
            !mine
        });
        for wr_id in flushed {
            let c = Completion { wr_id, qpn, result: Err(WorkError::Flushed), byte_len: 0 };
            world.complete(index, c);
        }
        Ok(())
    }

    fn post_send(&mut self, qpn: Qpn, wr_id: u64, sge: Sge, op: SendOp) -> Result<(), DeviceError> {
        let mut world = self.world();
        let index = self.index;
        if !world.devs[index].qps.contains_key(&qpn.0) {
            return Err(DeviceError::Unknown);
        }
        let now = world.now();
        match op {
            SendOp::Datagram(dest) => {
                let (addr, len) = world.resolve(index, sge).ok_or(DeviceError::Unknown)?;
                if len > FABRIC_MTU {
                    return Err(DeviceError::Os("ibv_post_send", libc::EINVAL));
                }
                let mut bytes = vec![0u8; len];
                // SAFETY: the range lies in a region this device registered (checked by
                // `resolve`), valid until deregistered under the lock held here.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        addr as usize as *const u8,
                        bytes.as_mut_ptr(),
                        len,
                    )
                };
                world.stats.datagrams_sent += 1;
                if let Some(to_dev) = index_of(dest.gid) {
                    let from = (index, qpn);
                    let d = Datagram { to_dev, to_qpn: dest.qpn, qkey: dest.qkey, from, bytes };
                    world.in_flight.push(d);
                }
                let c = Completion { wr_id, qpn, result: Ok(Completed::Send), byte_len: 0 };
                world.complete(index, c);
            }
            SendOp::Send => {
                world.pending.push_back(PendingSend { dev: index, qpn, wr_id, sge, since: now });
                world.deliver_sends();
            }
            SendOp::Read { remote_addr, rkey } => {
                let result = match world.read(index, qpn, sge, remote_addr, rkey) {
                    Ok(()) => Ok(Completed::Read),
                    Err(e) => {
                        if let Some(QpKind::Rc { state }) = world.devs[index].qps.get_mut(&qpn.0) {
                            *state = RcState::Error;
                        }
                        Err(e)
                    }
                };
                world.complete(index, Completion { wr_id, qpn, result, byte_len: sge.len });
            }
        }
        self.fabric.shared.completed.notify_all();
        Ok(())
    }

    fn post_recv(&mut self, qpn: Option<Qpn>, wr_id: u64, sge: Sge) -> Result<(), DeviceError> {
        let mut world = self.world();
        let dev = &mut world.devs[self.index];
        match qpn {
            None => dev.srq.push_back((wr_id, sge)),
            Some(q) => match dev.qps.get_mut(&q.0) {
                Some(QpKind::Ud { recvs, .. }) => recvs.push_back((wr_id, sge)),
                _ => return Err(DeviceError::Unknown),
            },
        }
        Ok(())
    }

    fn poll(&mut self, out: &mut [Completion]) -> usize {
        let mut world = self.world();
        world.deliver_datagrams();
        world.deliver_sends();
        let cq = &mut world.devs[self.index].cq;
        let n = out.len().min(cq.len());
        for (slot, c) in out.iter_mut().zip(cq.drain(..n)) {
            *slot = c;
        }
        n
    }

    fn wait(&mut self, deadline: u64) {
        let world = self.world();
        if world.virtual_now.is_some() || !world.devs[self.index].cq.is_empty() {
            return;
        }
        let left = deadline.saturating_sub(world.now()).min(1_000);
        // Sends and datagrams are delivered by polls, so wake often enough to poll.
        let _unused =
            self.fabric.shared.completed.wait_timeout(world, Duration::from_micros(left.max(20)));
    }

    fn queue_pairs(&self) -> usize {
        self.world().devs[self.index].qps.len()
    }

    fn queue_bytes(&self) -> usize {
        self.queue_pairs() * QP_RING_BYTES
    }
}

impl FabricDevice {
    fn create(&mut self, kind: QpKind) -> Result<Qpn, DeviceError> {
        let mut world = self.world();
        let qpn = Qpn(world.next_qpn);
        world.next_qpn += 1;
        let dev = &mut world.devs[self.index];
        if !dev.alive {
            return Err(DeviceError::NoDevice);
        }
        dev.qps.insert(qpn.0, kind);
        Ok(qpn)
    }
}
