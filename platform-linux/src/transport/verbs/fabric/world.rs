//! The fabric's state behind its lock: devices, queue pairs, regions, datagrams in flight
//! and RC sends waiting, and how each is delivered.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use super::super::device::{
    Completed, Completion, Gid, MemoryKeys, Qpn, Sge, WorkError, UD_HEADROOM,
};
use super::{FabricStats, Faults, RETRY_BUDGET_US};

#[derive(Clone, Copy)]
pub(super) enum RcState {
    Init,
    Connected { dev: usize, qpn: Qpn },
    Error,
}

pub(super) enum QpKind {
    Ud { qkey: u32, recvs: VecDeque<(u64, Sge)> },
    Rc { state: RcState },
}

pub(super) struct Region {
    pub(super) addr: u64,
    pub(super) len: usize,
    pub(super) keys: MemoryKeys,
}

#[derive(Default)]
pub(super) struct Dev {
    pub(super) alive: bool,
    /// Gone without its peers' devices ever reporting it: their sends to it stay pending.
    pub(super) silent: bool,
    pub(super) qps: HashMap<u32, QpKind>,
    pub(super) regions: Vec<Region>,
    pub(super) srq: VecDeque<(u64, Sge)>,
    pub(super) cq: VecDeque<Completion>,
}

pub(super) struct Datagram {
    pub(super) to_dev: usize,
    pub(super) to_qpn: Qpn,
    pub(super) qkey: u32,
    pub(super) from: (usize, Qpn),
    pub(super) bytes: Vec<u8>,
}

/// An RC send waiting for the peer's receive buffer or for its budget to run out.
pub(super) struct PendingSend {
    pub(super) dev: usize,
    pub(super) qpn: Qpn,
    pub(super) wr_id: u64,
    pub(super) sge: Sge,
    pub(super) since: u64,
}

pub(super) struct World {
    pub(super) devs: Vec<Dev>,
    pub(super) next_qpn: u32,
    pub(super) next_key: u32,
    pub(super) rng: u64,
    pub(super) faults: Faults,
    pub(super) in_flight: Vec<Datagram>,
    pub(super) pending: VecDeque<PendingSend>,
    pub(super) virtual_now: Option<u64>,
    pub(super) epoch: Instant,
    pub(super) stats: FabricStats,
}

pub(super) fn gid_of(index: usize) -> Gid {
    let mut gid = [0u8; 16];
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12..].copy_from_slice(&(index as u32 + 1).to_be_bytes());
    Gid(gid)
}

pub(super) fn index_of(gid: Gid) -> Option<usize> {
    let n = u32::from_be_bytes([gid.0[12], gid.0[13], gid.0[14], gid.0[15]]);
    (n as usize).checked_sub(1)
}

impl World {
    pub(super) fn now(&self) -> u64 {
        self.virtual_now.unwrap_or_else(|| self.epoch.elapsed().as_micros() as u64)
    }

    pub(super) fn chance(&mut self, ppm: u32) -> bool {
        // xorshift64*: enough for fault injection, reproducible from the seed.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (r % 1_000_000) < u64::from(ppm)
    }

    /// The registered bytes an element names on device `dev`, checked like a device does.
    pub(super) fn resolve(&self, dev: usize, sge: Sge) -> Option<(u64, usize)> {
        let region = self.devs.get(dev)?.regions.iter().find(|r| r.keys.lkey == sge.lkey)?;
        let end = sge.addr.checked_add(u64::from(sge.len))?;
        let inside = sge.addr >= region.addr && end <= region.addr + region.len as u64;
        inside.then_some((sge.addr, sge.len as usize))
    }

    pub(super) fn resolve_remote(
        &self,
        dev: usize,
        addr: u64,
        len: usize,
        rkey: u32,
    ) -> Option<u64> {
        let region = self.devs.get(dev)?.regions.iter().find(|r| r.keys.rkey == rkey)?;
        let end = addr.checked_add(len as u64)?;
        (addr >= region.addr && end <= region.addr + region.len as u64).then_some(addr)
    }

    pub(super) fn complete(&mut self, dev: usize, c: Completion) {
        if let Some(d) = self.devs.get_mut(dev) {
            d.cq.push_back(c);
        }
    }

    pub(super) fn deliver_datagrams(&mut self) {
        let mut batch = std::mem::take(&mut self.in_flight);
        for i in 0..batch.len() {
            let reorder = self.faults.reorder_ppm;
            if i + 1 < batch.len() && self.chance(reorder) {
                batch.swap(i, i + 1);
            }
        }
        for d in batch {
            let (drop, dup) = (self.faults.drop_ppm, self.faults.duplicate_ppm);
            if self.chance(drop) {
                self.stats.datagrams_lost += 1;
                continue;
            }
            let copies = if self.chance(dup) { 2 } else { 1 };
            for _ in 0..copies {
                self.deliver_datagram(&d);
            }
        }
    }

    pub(super) fn deliver_datagram(&mut self, d: &Datagram) {
        let Some(dev) = self.devs.get_mut(d.to_dev).filter(|x| x.alive) else {
            self.stats.datagrams_lost += 1;
            return;
        };
        let Some(QpKind::Ud { qkey, recvs }) = dev.qps.get_mut(&d.to_qpn.0) else {
            self.stats.datagrams_lost += 1;
            return;
        };
        if *qkey != d.qkey {
            self.stats.datagrams_lost += 1;
            return;
        }
        let Some((wr_id, sge)) = recvs.pop_front() else {
            self.stats.datagrams_lost += 1;
            return;
        };
        let fits = d.bytes.len() + UD_HEADROOM <= sge.len as usize;
        let target = if fits { self.resolve(d.to_dev, sge) } else { None };
        let Some((addr, _)) = target else {
            self.stats.datagrams_lost += 1;
            return;
        };
        // SAFETY: `addr..addr + UD_HEADROOM + len` lies in a region the receiving device
        // registered (checked by `resolve` and `fits`); `register`'s contract keeps it valid
        // until it is deregistered, which takes this fabric's lock, held here.
        unsafe {
            let dst = (addr as usize + UD_HEADROOM) as *mut u8;
            std::ptr::copy_nonoverlapping(d.bytes.as_ptr(), dst, d.bytes.len());
        }
        let (from_dev, from_qpn) = d.from;
        let from = Completed::Datagram { gid: gid_of(from_dev), lid: 0, qpn: from_qpn };
        let c =
            Completion { wr_id, qpn: d.to_qpn, result: Ok(from), byte_len: d.bytes.len() as u32 };
        self.complete(d.to_dev, c);
    }

    /// Tries the RC sends still waiting; those past their budget fail.
    pub(super) fn deliver_sends(&mut self) {
        let now = self.now();
        for _ in 0..self.pending.len() {
            let Some(p) = self.pending.pop_front() else { break };
            match self.try_rc_send(&p) {
                Ok(()) => {}
                Err(WorkError::RetryExceeded) if self.silenced_peer(&p) => {
                    self.pending.push_back(p)
                }
                Err(error)
                    if error != WorkError::RetryExceeded || now >= p.since + RETRY_BUDGET_US =>
                {
                    self.fail_qp(p.dev, p.qpn, p.wr_id, error);
                }
                Err(_) => self.pending.push_back(p),
            }
        }
    }

    pub(super) fn silenced_peer(&self, p: &PendingSend) -> bool {
        match self.devs[p.dev].qps.get(&p.qpn.0) {
            Some(QpKind::Rc { state: RcState::Connected { dev, .. } }) => self.devs[*dev].silent,
            _ => false,
        }
    }

    pub(super) fn fail_qp(&mut self, dev: usize, qpn: Qpn, wr_id: u64, error: WorkError) {
        if let Some(QpKind::Rc { state }) = self.devs[dev].qps.get_mut(&qpn.0) {
            *state = RcState::Error;
        }
        self.complete(dev, Completion { wr_id, qpn, result: Err(error), byte_len: 0 });
    }

    /// One RC send: `Err(RetryExceeded)` while the peer cannot take it yet (it retries).
    pub(super) fn try_rc_send(&mut self, p: &PendingSend) -> Result<(), WorkError> {
        let (peer_dev, peer_qpn) = self.connected_peer(p.dev, p.qpn)?;
        let Some((src, len)) = self.resolve(p.dev, p.sge) else {
            return Err(WorkError::Other(4)); // a local protection error
        };
        // No receive buffer posted: receiver not ready, retried.
        let Some((wr_id, sge)) = self.devs[peer_dev].srq.pop_front() else {
            return Err(WorkError::RetryExceeded);
        };
        let Some((dst, _)) = self.resolve(peer_dev, sge).filter(|&(_, room)| room >= len) else {
            let c =
                Completion { wr_id, qpn: peer_qpn, result: Err(WorkError::Other(1)), byte_len: 0 };
            self.complete(peer_dev, c);
            return Err(WorkError::RemoteAccess);
        };
        // SAFETY: both ranges were checked against regions their devices registered; the
        // registrations keep them valid until deregistered under this fabric's lock.
        unsafe {
            std::ptr::copy_nonoverlapping(src as usize as *const u8, dst as usize as *mut u8, len);
        }
        self.stats.rc_delivered += 1;
        let recv =
            Completion { wr_id, qpn: peer_qpn, result: Ok(Completed::Recv), byte_len: len as u32 };
        self.complete(peer_dev, recv);
        let sent =
            Completion { wr_id: p.wr_id, qpn: p.qpn, result: Ok(Completed::Send), byte_len: 0 };
        self.complete(p.dev, sent);
        Ok(())
    }

    /// The peer of a connected RC queue pair while both ends are alive and connected to
    /// each other; `Err(Flushed)` when the local queue pair is not connected, and
    /// `Err(RetryExceeded)` while the peer does not answer.
    pub(super) fn connected_peer(&self, dev: usize, qpn: Qpn) -> Result<(usize, Qpn), WorkError> {
        let Some(QpKind::Rc { state }) = self.devs[dev].qps.get(&qpn.0) else {
            return Err(WorkError::Flushed);
        };
        let RcState::Connected { dev: peer_dev, qpn: peer_qpn } = *state else {
            return Err(WorkError::Flushed);
        };
        let peer = self.devs.get(peer_dev).filter(|d| d.alive);
        let back = match peer.and_then(|d| d.qps.get(&peer_qpn.0)) {
            Some(QpKind::Rc { state: RcState::Connected { dev: d, qpn: q } }) => {
                *d == dev && *q == qpn
            }
            _ => false,
        };
        if back {
            Ok((peer_dev, peer_qpn))
        } else {
            Err(WorkError::RetryExceeded)
        }
    }

    pub(super) fn read(
        &mut self,
        dev: usize,
        qpn: Qpn,
        sge: Sge,
        remote_addr: u64,
        rkey: u32,
    ) -> Result<(), WorkError> {
        let (peer_dev, _) = self.connected_peer(dev, qpn)?;
        let Some((dst, len)) = self.resolve(dev, sge) else { return Err(WorkError::Other(4)) };
        let Some(src) = self.resolve_remote(peer_dev, remote_addr, len, rkey) else {
            return Err(WorkError::RemoteAccess);
        };
        // SAFETY: both ranges lie in registered regions (checked above), valid until they
        // are deregistered under this fabric's lock.
        unsafe {
            std::ptr::copy_nonoverlapping(src as usize as *const u8, dst as usize as *mut u8, len);
        }
        self.stats.reads += 1;
        Ok(())
    }
}
