//! The verbs device on `libibverbs` (feature `verbs`): one context on the first active
//! device (or `COMMCORE_VERBS_DEVICE`), port 1, one protection domain, one completion queue
//! with its completion channel, one shared receive queue.
//!
//! RC queue pairs wait 67 ms for an acknowledgement (timeout 14) and retry 7 times, so a
//! dead peer's queue pair fails within about half a second; a receiver that has no buffer
//! posted makes the sender retry without end (rnr_retry 7): that is back-pressure, which
//! the transport's credits and send timeout bound. The GID is the one the
//! `COMMCORE_VERBS_GID_INDEX` names, else the first IPv4-mapped one (RoCE v2 over IPv4),
//! else index 0.

use std::collections::{HashMap, VecDeque};
use std::ptr;
use std::time::Instant;

use ibverbs_sys as ffi;

mod open;

use super::device::{
    Completed, Completion, Device, DeviceError, Gid, MemoryKeys, PortInfo, Qpn, RcDest, SendOp,
    Sge, WorkError, UD_HEADROOM,
};

pub(super) const PORT: u8 = 1;
pub(super) const CQ_DEPTH: i32 = 4096;
pub(super) const SRQ_DEPTH: u32 = 1024;
const SEND_DEPTH: u32 = 128;
const UD_RECV_DEPTH: u32 = 256;
/// Bytes per work queue entry the queue figure counts (a typical WQE size).
const WQE_BYTES: usize = 64;

#[derive(Clone, Copy)]
struct Qp {
    raw: *mut ffi::ibv_qp,
    psn: u32,
    ring_bytes: usize,
}

/// An opened verbs device.
pub struct IbvDevice {
    ctx: *mut ffi::ibv_context,
    pd: *mut ffi::ibv_pd,
    channel: *mut ffi::ibv_comp_channel,
    cq: *mut ffi::ibv_cq,
    srq: *mut ffi::ibv_srq,
    name: String,
    port: PortInfo,
    mtu: ffi::ibv_mtu,
    gid_index: u8,
    qps: HashMap<u32, Qp>,
    ud_qpn: Option<u32>,
    mrs: HashMap<u32, *mut ffi::ibv_mr>,
    ahs: HashMap<(Gid, u16), *mut ffi::ibv_ah>,
    /// UD receive buffers by work request id: where the GRH of their datagram lands.
    ud_buffers: HashMap<u64, u64>,
    stash: VecDeque<Completion>,
    wcs: Vec<ffi::ibv_wc>,
    epoch: Instant,
    seed: u32,
}

// SAFETY: libibverbs' calls are thread-safe, and every pointer here is owned by this value
// alone; moving it to another thread moves that ownership.
unsafe impl Send for IbvDevice {}

pub(super) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

impl IbvDevice {
    /// The device's name (e.g. `rxe0`).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn modify(
        &mut self,
        qp: *mut ffi::ibv_qp,
        attr: &mut ffi::ibv_qp_attr,
        mask: ffi::ibv_qp_attr_mask,
    ) -> Result<(), DeviceError> {
        // SAFETY: `qp` is alive (owned by `self.qps`) and `attr` a valid attribute block.
        let rc = unsafe { ffi::ibv_modify_qp(qp, attr, mask.0 as i32) };
        if rc == 0 {
            Ok(())
        } else {
            Err(DeviceError::Os("ibv_modify_qp", rc))
        }
    }

    fn create_qp(
        &mut self,
        qp_type: ffi::ibv_qp_type::Type,
        srq: bool,
    ) -> Result<(Qp, Qpn), DeviceError> {
        // SAFETY: plain data; the fields that matter are set below.
        let mut init: ffi::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        init.send_cq = self.cq;
        init.recv_cq = self.cq;
        init.qp_type = qp_type;
        init.cap.max_send_wr = SEND_DEPTH;
        init.cap.max_send_sge = 1;
        if srq {
            init.srq = self.srq;
        } else {
            init.cap.max_recv_wr = UD_RECV_DEPTH;
            init.cap.max_recv_sge = 1;
        }
        // SAFETY: `pd` and the queues are alive; the queue pair is destroyed in
        // `destroy_qp` or Drop.
        let raw = unsafe { ffi::ibv_create_qp(self.pd, &mut init) };
        if raw.is_null() {
            return Err(DeviceError::Exhausted("queue pairs"));
        }
        self.seed = self.seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let ring_bytes = (SEND_DEPTH + if srq { 0 } else { UD_RECV_DEPTH }) as usize * WQE_BYTES;
        let qp = Qp { raw, psn: self.seed & 0xff_ffff, ring_bytes };
        // SAFETY: `raw` is a live queue pair.
        let qpn = unsafe { (*raw).qp_num };
        self.qps.insert(qpn, qp);
        Ok((qp, Qpn(qpn)))
    }

    fn ah(&mut self, gid: Gid, lid: u16) -> Result<*mut ffi::ibv_ah, DeviceError> {
        if let Some(&ah) = self.ahs.get(&(gid, lid)) {
            return Ok(ah);
        }
        let mut attr = self.route(gid, lid);
        // SAFETY: `pd` is alive and `attr` a valid address vector; destroyed in Drop.
        let ah = unsafe { ffi::ibv_create_ah(self.pd, &mut attr) };
        if ah.is_null() {
            return Err(DeviceError::Os("ibv_create_ah", errno()));
        }
        self.ahs.insert((gid, lid), ah);
        Ok(ah)
    }

    fn route(&self, gid: Gid, lid: u16) -> ffi::ibv_ah_attr {
        // SAFETY: plain data.
        let mut attr: ffi::ibv_ah_attr = unsafe { std::mem::zeroed() };
        attr.is_global = 1;
        attr.grh.dgid.raw = gid.0;
        attr.grh.sgid_index = self.gid_index;
        attr.grh.hop_limit = 64;
        attr.dlid = lid;
        attr.port_num = PORT;
        attr
    }

    fn completion(&mut self, wc: &mut ffi::ibv_wc) -> Completion {
        let qpn = Qpn(wc.qp_num);
        let wr_id = wc.wr_id();
        if let Some((status, _)) = wc.error() {
            let error = match status {
                ffi::ibv_wc_status::IBV_WC_RETRY_EXC_ERR => WorkError::RetryExceeded,
                ffi::ibv_wc_status::IBV_WC_WR_FLUSH_ERR => WorkError::Flushed,
                ffi::ibv_wc_status::IBV_WC_REM_ACCESS_ERR => WorkError::RemoteAccess,
                other => WorkError::Other(other),
            };
            self.ud_buffers.remove(&wr_id);
            return Completion { wr_id, qpn, result: Err(error), byte_len: 0 };
        }
        let byte_len = wc.len() as u32;
        let result = match wc.opcode() {
            ffi::ibv_wc_opcode::IBV_WC_RDMA_READ => Completed::Read,
            ffi::ibv_wc_opcode::IBV_WC_RECV if Some(wc.qp_num) == self.ud_qpn => {
                let grh = self.ud_buffers.remove(&wr_id).unwrap_or(0);
                // SAFETY: plain data.
                let mut ah: ffi::ibv_ah_attr = unsafe { std::mem::zeroed() };
                // SAFETY: `wc` is a completion of this context; `grh` points at the GRH
                // the device wrote at the start of the UD receive buffer.
                let rc = unsafe {
                    ffi::ibv_init_ah_from_wc(self.ctx, PORT, wc, grh as *mut ffi::ibv_grh, &mut ah)
                };
                if rc != 0 {
                    return Completion {
                        wr_id,
                        qpn,
                        result: Err(WorkError::Other(u32::MAX)),
                        byte_len: 0,
                    };
                }
                // SAFETY: `raw` covers the whole union.
                let gid = Gid(unsafe { ah.grh.dgid.raw });
                let len = byte_len.saturating_sub(UD_HEADROOM as u32);
                let from = Completed::Datagram { gid, lid: wc.slid, qpn: Qpn(wc.src_qp) };
                return Completion { wr_id, qpn, result: Ok(from), byte_len: len };
            }
            ffi::ibv_wc_opcode::IBV_WC_RECV => Completed::Recv,
            _ => Completed::Send,
        };
        Completion { wr_id, qpn, result: Ok(result), byte_len }
    }
}

impl Device for IbvDevice {
    fn port(&self) -> PortInfo {
        self.port
    }

    fn now_micros(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    unsafe fn register(&mut self, addr: *mut u8, len: usize) -> Result<MemoryKeys, DeviceError> {
        let access = ffi::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0
            | ffi::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0;
        // SAFETY: the caller keeps the memory valid until `deregister` (the trait's contract).
        let mr = unsafe { ffi::ibv_reg_mr(self.pd, addr.cast(), len, access as i32) };
        if mr.is_null() {
            return Err(DeviceError::Os("ibv_reg_mr", errno()));
        }
        // SAFETY: `mr` is a live registration.
        let (lkey, rkey) = unsafe { ((*mr).lkey, (*mr).rkey) };
        self.mrs.insert(lkey, mr);
        Ok(MemoryKeys { lkey, rkey })
    }

    fn deregister(&mut self, keys: MemoryKeys) -> Result<(), DeviceError> {
        let mr = self.mrs.remove(&keys.lkey).ok_or(DeviceError::Unknown)?;
        // SAFETY: `mr` came from ibv_reg_mr and is deregistered once.
        let rc = unsafe { ffi::ibv_dereg_mr(mr) };
        if rc == 0 {
            Ok(())
        } else {
            Err(DeviceError::Os("ibv_dereg_mr", rc))
        }
    }

    fn create_ud_qp(&mut self, qkey: u32) -> Result<Qpn, DeviceError> {
        let (qp, qpn) = self.create_qp(ffi::ibv_qp_type::IBV_QPT_UD, false)?;
        // SAFETY: plain data.
        let mut attr: ffi::ibv_qp_attr = unsafe { std::mem::zeroed() };
        use ffi::ibv_qp_attr_mask as m;
        attr.qp_state = ffi::ibv_qp_state::IBV_QPS_INIT;
        attr.port_num = PORT;
        attr.qkey = qkey;
        self.modify(
            qp.raw,
            &mut attr,
            m::IBV_QP_STATE | m::IBV_QP_PKEY_INDEX | m::IBV_QP_PORT | m::IBV_QP_QKEY,
        )?;
        attr.qp_state = ffi::ibv_qp_state::IBV_QPS_RTR;
        self.modify(qp.raw, &mut attr, m::IBV_QP_STATE)?;
        attr.qp_state = ffi::ibv_qp_state::IBV_QPS_RTS;
        attr.sq_psn = qp.psn;
        self.modify(qp.raw, &mut attr, m::IBV_QP_STATE | m::IBV_QP_SQ_PSN)?;
        self.ud_qpn = Some(qpn.0);
        Ok(qpn)
    }

    fn create_rc_qp(&mut self) -> Result<(Qpn, u32), DeviceError> {
        let (qp, qpn) = self.create_qp(ffi::ibv_qp_type::IBV_QPT_RC, true)?;
        // SAFETY: plain data.
        let mut attr: ffi::ibv_qp_attr = unsafe { std::mem::zeroed() };
        use ffi::ibv_qp_attr_mask as m;
        attr.qp_state = ffi::ibv_qp_state::IBV_QPS_INIT;
        attr.port_num = PORT;
        attr.qp_access_flags = ffi::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0
            | ffi::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0;
        let mask = m::IBV_QP_STATE | m::IBV_QP_PKEY_INDEX | m::IBV_QP_PORT | m::IBV_QP_ACCESS_FLAGS;
        if let Err(e) = self.modify(qp.raw, &mut attr, mask) {
            let _ = self.destroy_qp(qpn);
            return Err(e);
        }
        Ok((qpn, qp.psn))
    }

    fn connect_rc_qp(&mut self, qpn: Qpn, peer: RcDest) -> Result<(), DeviceError> {
        let (raw, psn) =
            self.qps.get(&qpn.0).map(|q| (q.raw, q.psn)).ok_or(DeviceError::Unknown)?;
        // SAFETY: plain data.
        let mut attr: ffi::ibv_qp_attr = unsafe { std::mem::zeroed() };
        use ffi::ibv_qp_attr_mask as m;
        attr.qp_state = ffi::ibv_qp_state::IBV_QPS_RTR;
        attr.path_mtu = self.mtu;
        attr.dest_qp_num = peer.qpn.0;
        attr.rq_psn = peer.psn;
        attr.max_dest_rd_atomic = 1;
        attr.min_rnr_timer = 12;
        attr.ah_attr = self.route(peer.gid, peer.lid);
        let rtr = m::IBV_QP_STATE
            | m::IBV_QP_AV
            | m::IBV_QP_PATH_MTU
            | m::IBV_QP_DEST_QPN
            | m::IBV_QP_RQ_PSN
            | m::IBV_QP_MAX_DEST_RD_ATOMIC
            | m::IBV_QP_MIN_RNR_TIMER;
        self.modify(raw, &mut attr, rtr)?;
        attr.qp_state = ffi::ibv_qp_state::IBV_QPS_RTS;
        attr.timeout = 14;
        attr.retry_cnt = 7;
        attr.rnr_retry = 7;
        attr.sq_psn = psn;
        attr.max_rd_atomic = 1;
        let rts = m::IBV_QP_STATE
            | m::IBV_QP_TIMEOUT
            | m::IBV_QP_RETRY_CNT
            | m::IBV_QP_RNR_RETRY
            | m::IBV_QP_SQ_PSN
            | m::IBV_QP_MAX_QP_RD_ATOMIC;
        self.modify(raw, &mut attr, rts)
    }

    fn destroy_qp(&mut self, qpn: Qpn) -> Result<(), DeviceError> {
        let qp = self.qps.remove(&qpn.0).ok_or(DeviceError::Unknown)?;
        if self.ud_qpn == Some(qpn.0) {
            self.ud_qpn = None;
        }
        // SAFETY: `raw` is a live queue pair, destroyed once.
        let rc = unsafe { ffi::ibv_destroy_qp(qp.raw) };
        if rc == 0 {
            Ok(())
        } else {
            Err(DeviceError::Os("ibv_destroy_qp", rc))
        }
    }

    fn post_send(&mut self, qpn: Qpn, wr_id: u64, sge: Sge, op: SendOp) -> Result<(), DeviceError> {
        let raw = self.qps.get(&qpn.0).map(|q| q.raw).ok_or(DeviceError::Unknown)?;
        let mut list = ffi::ibv_sge { addr: sge.addr, length: sge.len, lkey: sge.lkey };
        // SAFETY: plain data; the fields that matter are set below.
        let mut wr: ffi::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = wr_id;
        wr.sg_list = &mut list;
        wr.num_sge = 1;
        wr.send_flags = ffi::ibv_send_flags::IBV_SEND_SIGNALED.0;
        match op {
            SendOp::Send => wr.opcode = ffi::ibv_wr_opcode::IBV_WR_SEND,
            SendOp::Datagram(dest) => {
                wr.opcode = ffi::ibv_wr_opcode::IBV_WR_SEND;
                wr.wr.ud = ffi::ibv_send_wr__bindgen_ty_2__bindgen_ty_3 {
                    ah: self.ah(dest.gid, dest.lid)?,
                    remote_qpn: dest.qpn.0,
                    remote_qkey: dest.qkey,
                };
            }
            SendOp::Read { remote_addr, rkey } => {
                wr.opcode = ffi::ibv_wr_opcode::IBV_WR_RDMA_READ;
                wr.wr.rdma = ffi::ibv_send_wr__bindgen_ty_2__bindgen_ty_1 { remote_addr, rkey };
            }
        }
        let mut bad = ptr::null_mut();
        // SAFETY: `raw` is live, `wr` and its list outlive the call (the device copies the
        // request; the memory the list names is registered, as the trait requires).
        let rc = unsafe {
            let post = (*(*raw).context).ops.post_send.ok_or(DeviceError::Unknown)?;
            post(raw, &mut wr, &mut bad)
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(DeviceError::Os("ibv_post_send", rc))
        }
    }

    fn post_recv(&mut self, qpn: Option<Qpn>, wr_id: u64, sge: Sge) -> Result<(), DeviceError> {
        let mut list = ffi::ibv_sge { addr: sge.addr, length: sge.len, lkey: sge.lkey };
        let mut wr =
            ffi::ibv_recv_wr { wr_id, next: ptr::null_mut(), sg_list: &mut list, num_sge: 1 };
        let mut bad = ptr::null_mut();
        let rc = match qpn {
            None => {
                // SAFETY: `srq` is live; the request is copied by the call.
                unsafe {
                    let post = (*self.ctx).ops.post_srq_recv.ok_or(DeviceError::Unknown)?;
                    post(self.srq, &mut wr, &mut bad)
                }
            }
            Some(q) => {
                let raw = self.qps.get(&q.0).map(|q| q.raw).ok_or(DeviceError::Unknown)?;
                self.ud_buffers.insert(wr_id, sge.addr);
                // SAFETY: `raw` is live; the request is copied by the call.
                unsafe {
                    let post = (*self.ctx).ops.post_recv.ok_or(DeviceError::Unknown)?;
                    post(raw, &mut wr, &mut bad)
                }
            }
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(DeviceError::Os("ibv_post_recv", rc))
        }
    }

    fn poll(&mut self, out: &mut [Completion]) -> usize {
        let mut n = 0;
        while n < out.len() {
            if let Some(c) = self.stash.pop_front() {
                out[n] = c;
                n += 1;
                continue;
            }
            let want = (out.len() - n).min(self.wcs.len()) as i32;
            // SAFETY: `cq` is live and `wcs` holds at least `want` entries.
            let got = unsafe {
                match (*self.ctx).ops.poll_cq {
                    Some(poll) => poll(self.cq, want, self.wcs.as_mut_ptr()),
                    None => -1,
                }
            };
            if got <= 0 {
                break;
            }
            for i in 0..got as usize {
                let mut wc = self.wcs[i];
                out[n] = self.completion(&mut wc);
                n += 1;
            }
        }
        n
    }

    fn wait(&mut self, deadline: u64) {
        // Arm the channel, then look once more, so a completion between the caller's last
        // poll and the arming is not slept through.
        // SAFETY: `cq` is live.
        unsafe {
            if let Some(notify) = (*self.ctx).ops.req_notify_cq {
                notify(self.cq, 0);
            }
        }
        let mut one =
            [Completion { wr_id: 0, qpn: Qpn(0), result: Ok(Completed::Send), byte_len: 0 }; 8];
        let n = self.poll(&mut one);
        if n > 0 {
            self.stash.extend(one[..n].iter().copied());
            return;
        }
        let left = deadline.saturating_sub(self.now_micros());
        // SAFETY: `channel` is live.
        let fd = unsafe { (*self.channel).fd };
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let ms = left.div_ceil(1000).min(100) as i32;
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
        if ready > 0 {
            let mut cq = ptr::null_mut();
            let mut context = ptr::null_mut();
            // SAFETY: the channel's fd is non-blocking; an event taken is acknowledged.
            unsafe {
                if ffi::ibv_get_cq_event(self.channel, &mut cq, &mut context) == 0 {
                    ffi::ibv_ack_cq_events(cq, 1);
                }
            }
        }
    }

    fn queue_pairs(&self) -> usize {
        self.qps.len()
    }

    fn queue_bytes(&self) -> usize {
        self.qps.values().map(|q| q.ring_bytes).sum()
    }
}

impl Drop for IbvDevice {
    fn drop(&mut self) {
        // SAFETY: every object below was made by this value and is released once, in the
        // order verbs requires: queue pairs and address handles, regions, then the queues,
        // the channel, the domain and the context.
        unsafe {
            for (_, qp) in self.qps.drain() {
                ffi::ibv_destroy_qp(qp.raw);
            }
            for (_, ah) in self.ahs.drain() {
                ffi::ibv_destroy_ah(ah);
            }
            for (_, mr) in self.mrs.drain() {
                ffi::ibv_dereg_mr(mr);
            }
            if !self.srq.is_null() {
                ffi::ibv_destroy_srq(self.srq);
            }
            if !self.cq.is_null() {
                ffi::ibv_destroy_cq(self.cq);
            }
            if !self.channel.is_null() {
                ffi::ibv_destroy_comp_channel(self.channel);
            }
            if !self.pd.is_null() {
                ffi::ibv_dealloc_pd(self.pd);
            }
            ffi::ibv_close_device(self.ctx);
        }
    }
}
