//! Opening a device: the context, port 1's attributes and GID, the protection domain,
//! the completion queue and channel, and the shared receive queue.

use std::collections::{HashMap, VecDeque};
use std::ffi::CStr;
use std::ptr;
use std::time::Instant;

use ibverbs_sys as ffi;

use super::super::device::{DeviceError, Gid, PortInfo};
use super::{errno, IbvDevice, CQ_DEPTH, PORT, SRQ_DEPTH};

fn gid_index_from_env() -> Option<u8> {
    std::env::var("COMMCORE_VERBS_GID_INDEX").ok()?.parse().ok()
}

impl IbvDevice {
    /// Opens the device named `COMMCORE_VERBS_DEVICE`, or the first one, on port 1.
    pub fn open() -> Result<Self, DeviceError> {
        let wanted = std::env::var("COMMCORE_VERBS_DEVICE").ok();
        let mut count = 0;
        // SAFETY: `count` is a valid out-pointer; the list is freed below.
        let list = unsafe { ffi::ibv_get_device_list(&mut count) };
        if list.is_null() || count <= 0 {
            if !list.is_null() {
                // SAFETY: `list` came from ibv_get_device_list.
                unsafe { ffi::ibv_free_device_list(list) };
            }
            return Err(DeviceError::NoDevice);
        }
        let mut chosen = None;
        for i in 0..count as usize {
            // SAFETY: the list holds `count` valid device pointers.
            let dev = unsafe { *list.add(i) };
            // SAFETY: `dev` is valid while the list lives; the name is a C string.
            let name = unsafe { CStr::from_ptr(ffi::ibv_get_device_name(dev)) };
            let name = name.to_string_lossy().into_owned();
            if wanted.as_deref().map_or(true, |w| w == name) {
                chosen = Some((dev, name));
                break;
            }
        }
        let opened = chosen.map(|(dev, name)| {
            // SAFETY: `dev` is valid while the list lives (freed after this).
            (unsafe { ffi::ibv_open_device(dev) }, name)
        });
        // SAFETY: `list` came from ibv_get_device_list; opened contexts outlive it.
        unsafe { ffi::ibv_free_device_list(list) };
        let (ctx, name) = opened.ok_or(DeviceError::NoDevice)?;
        if ctx.is_null() {
            return Err(DeviceError::Os("ibv_open_device", errno()));
        }
        let mut device = IbvDevice {
            ctx,
            pd: ptr::null_mut(),
            channel: ptr::null_mut(),
            cq: ptr::null_mut(),
            srq: ptr::null_mut(),
            name,
            port: PortInfo { gid: Gid::default(), lid: 0, ud_mtu: 0 },
            mtu: ffi::IBV_MTU_1024,
            gid_index: 0,
            qps: HashMap::new(),
            ud_qpn: None,
            mrs: HashMap::new(),
            ahs: HashMap::new(),
            ud_buffers: HashMap::new(),
            stash: VecDeque::new(),
            // SAFETY: ibv_wc is plain data; all-zero is a valid value.
            wcs: vec![unsafe { std::mem::zeroed() }; 32],
            epoch: Instant::now(),
            seed: std::process::id().wrapping_mul(0x9e37_79b9),
        };
        device.set_up()?; // on error, Drop releases what was made
        Ok(device)
    }

    pub(super) fn set_up(&mut self) -> Result<(), DeviceError> {
        // SAFETY: ibv_port_attr is plain data; all-zero is valid.
        let mut attr: ffi::ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: `ctx` is open; the exported ibv_query_port fills a whole ibv_port_attr
        // (the compat type in its prototype is the same layout's prefix).
        let rc = unsafe {
            ffi::ibv_query_port(self.ctx, PORT, (&mut attr as *mut ffi::ibv_port_attr).cast())
        };
        if rc != 0 {
            return Err(DeviceError::Os("ibv_query_port", rc));
        }
        if attr.state != ffi::ibv_port_state::IBV_PORT_ACTIVE {
            return Err(DeviceError::PortDown);
        }
        self.mtu = attr.active_mtu;
        let ud_mtu = 128usize << attr.active_mtu.clamp(1, 5);
        self.gid_index = match gid_index_from_env() {
            Some(i) => i,
            None => self.pick_gid(attr.gid_tbl_len.clamp(0, 16) as u8),
        };
        let gid =
            self.query_gid(self.gid_index).ok_or(DeviceError::Os("ibv_query_gid", errno()))?;
        self.port = PortInfo { gid, lid: attr.lid, ud_mtu };
        // SAFETY: `ctx` is open; each object is checked and released in Drop.
        unsafe {
            self.pd = ffi::ibv_alloc_pd(self.ctx);
            if self.pd.is_null() {
                return Err(DeviceError::Os("ibv_alloc_pd", errno()));
            }
            self.channel = ffi::ibv_create_comp_channel(self.ctx);
            if self.channel.is_null() {
                return Err(DeviceError::Os("ibv_create_comp_channel", errno()));
            }
            let fd = (*self.channel).fd;
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            self.cq = ffi::ibv_create_cq(self.ctx, CQ_DEPTH, ptr::null_mut(), self.channel, 0);
            if self.cq.is_null() {
                return Err(DeviceError::Os("ibv_create_cq", errno()));
            }
            let mut srq_attr: ffi::ibv_srq_init_attr = std::mem::zeroed();
            srq_attr.attr.max_wr = SRQ_DEPTH;
            srq_attr.attr.max_sge = 1;
            self.srq = ffi::ibv_create_srq(self.pd, &mut srq_attr);
            if self.srq.is_null() {
                return Err(DeviceError::Os("ibv_create_srq", errno()));
            }
        }
        Ok(())
    }

    pub(super) fn query_gid(&self, index: u8) -> Option<Gid> {
        // SAFETY: ibv_gid is plain data.
        let mut gid: ffi::ibv_gid = unsafe { std::mem::zeroed() };
        // SAFETY: `ctx` is open and `gid` a valid out-pointer.
        let rc = unsafe { ffi::ibv_query_gid(self.ctx, PORT, i32::from(index), &mut gid) };
        if rc != 0 {
            return None;
        }
        // SAFETY: `raw` covers the whole union.
        Some(Gid(unsafe { gid.raw }))
    }

    /// The first IPv4-mapped GID (RoCE v2 over IPv4), else the first non-zero one, else 0.
    pub(super) fn pick_gid(&self, entries: u8) -> u8 {
        let gids: Vec<(u8, Gid)> =
            (0..entries).filter_map(|i| Some((i, self.query_gid(i)?))).collect();
        let mapped = |g: &Gid| g.0[..10] == [0; 10] && g.0[10..12] == [0xff, 0xff];
        gids.iter()
            .find(|(_, g)| mapped(g))
            .or_else(|| gids.iter().find(|(_, g)| g.0 != [0; 16]))
            .map_or(0, |(i, _)| *i)
    }
}
