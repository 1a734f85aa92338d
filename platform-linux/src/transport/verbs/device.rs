//! The verbs calls the transport makes, as a small trait: one implementation drives a real
//! device through `libibverbs` (feature `verbs`), another is an in-process fabric for tests
//! ([`super::fabric`]). Everything the transport knows of a device goes through here.
//!
//! The shapes follow verbs: queue pairs named by number, work requests carrying a caller's
//! `wr_id` and one scatter/gather element of registered memory, completions polled from one
//! completion queue, and a completion channel to sleep on. Unreliable datagram (UD) receive
//! buffers start with [`UD_HEADROOM`] bytes the device may fill (InfiniBand's global route
//! header); the payload follows them.

use std::fmt;

/// Bytes at the start of every UD receive buffer that belong to the device, not the payload.
pub const UD_HEADROOM: usize = 40;

/// A queue pair's number, unique on its device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Qpn(pub u32);

/// A port's global identifier (RoCE: an IPv6 or IPv4-mapped address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Gid(pub [u8; 16]);

/// The port the transport uses, as the device reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// The GID the transport announces.
    pub gid: Gid,
    /// The port's local identifier (InfiniBand; 0 on Ethernet links).
    pub lid: u16,
    /// The largest UD payload: the port's active MTU.
    pub ud_mtu: usize,
}

/// Where a UD datagram goes: a peer's UD queue pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UdDest {
    /// The peer's port.
    pub gid: Gid,
    /// The peer's LID (InfiniBand).
    pub lid: u16,
    /// The peer's UD queue pair.
    pub qpn: Qpn,
    /// The key both ends' UD queue pairs were made with.
    pub qkey: u32,
}

/// What a reliable-connection (RC) queue pair needs of its peer to move to ready-to-receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RcDest {
    /// The peer's port.
    pub gid: Gid,
    /// The peer's LID (InfiniBand).
    pub lid: u16,
    /// The peer's RC queue pair made for this connection.
    pub qpn: Qpn,
    /// The first packet sequence number the peer sends with.
    pub psn: u32,
}

/// A registered memory region's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemoryKeys {
    /// The key local work requests name the region with.
    pub lkey: u32,
    /// The key a peer's RDMA read names the region with.
    pub rkey: u32,
}

/// One scatter/gather element: `len` bytes of registered memory at `addr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    /// The address in this process.
    pub addr: u64,
    /// The length.
    pub len: u32,
    /// The region's local key.
    pub lkey: u32,
}

/// A work request on a send queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// A send on a connected (RC) queue pair, into a receive buffer the peer posted.
    Send,
    /// A datagram from the UD queue pair.
    Datagram(UdDest),
    /// An RDMA read of the peer's registered memory into the local element.
    Read {
        /// The address in the peer's process.
        remote_addr: u64,
        /// The peer region's remote key.
        rkey: u32,
    },
}

/// What a completion completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completed {
    /// A send or datagram left (its buffer may be reused).
    Send,
    /// An RDMA read landed.
    Read,
    /// A receive buffer was filled on an RC queue pair (from the shared receive queue).
    Recv,
    /// A receive buffer of the UD queue pair was filled by a datagram from `from`.
    Datagram {
        /// The sender's port.
        gid: Gid,
        /// The sender's LID.
        lid: u16,
        /// The sender's UD queue pair.
        qpn: Qpn,
    },
}

/// Why a work request did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkError {
    /// The peer did not acknowledge within the retry budget (it died, or its link is down).
    RetryExceeded,
    /// The queue pair was flushed: it is in the error state or being destroyed.
    Flushed,
    /// The peer refused the access (a bad key or a region deregistered).
    RemoteAccess,
    /// Any other status the device reports, by its number.
    Other(u32),
}

/// A completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The work request's id, as posted.
    pub wr_id: u64,
    /// The local queue pair it belongs to.
    pub qpn: Qpn,
    /// What completed, or why not.
    pub result: Result<Completed, WorkError>,
    /// Bytes received (receives; for datagrams without [`UD_HEADROOM`]).
    pub byte_len: u32,
}

/// Why a device call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceError {
    /// No verbs device on this machine (or `libibverbs` found none).
    NoDevice,
    /// The port is not active (link down).
    PortDown,
    /// The device is out of a resource (queue pairs, memory registrations, queue space).
    Exhausted(&'static str),
    /// A queue pair or region the call names does not exist.
    Unknown,
    /// A verbs call failed with this errno.
    Os(&'static str, i32),
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::NoDevice => f.write_str("no RDMA device found on this machine"),
            DeviceError::PortDown => f.write_str("the RDMA device's port is not active"),
            DeviceError::Exhausted(what) => write!(f, "the RDMA device is out of {what}"),
            DeviceError::Unknown => f.write_str("no such queue pair or memory region"),
            DeviceError::Os(call, errno) => write!(f, "{call} failed: errno {errno}"),
        }
    }
}

impl std::error::Error for DeviceError {}

/// The verbs calls the transport makes. One device context, one protection domain, one
/// completion queue with its channel, one shared receive queue for every RC queue pair.
pub trait Device {
    /// The port in use.
    fn port(&self) -> PortInfo;

    /// Microseconds on the device's clock (the wall clock, or a simulation's).
    fn now_micros(&self) -> u64;

    /// Registers `len` bytes at `addr` for local use and remote reads.
    ///
    /// # Safety
    /// The memory must stay valid, and not be handed out again by its owner, until
    /// [`Device::deregister`]: the device reads and writes it whenever a work request or a
    /// peer's read names it.
    unsafe fn register(&mut self, addr: *mut u8, len: usize) -> Result<MemoryKeys, DeviceError>;

    /// Deregisters the region `keys` names.
    fn deregister(&mut self, keys: MemoryKeys) -> Result<(), DeviceError>;

    /// Makes the UD queue pair (ready to send and receive, with `qkey`).
    fn create_ud_qp(&mut self, qkey: u32) -> Result<Qpn, DeviceError>;

    /// Makes an RC queue pair (state INIT, receiving from the shared receive queue) and the
    /// first packet sequence number it will send with.
    fn create_rc_qp(&mut self) -> Result<(Qpn, u32), DeviceError>;

    /// Moves an RC queue pair through ready-to-receive to ready-to-send, towards `peer`.
    fn connect_rc_qp(&mut self, qpn: Qpn, peer: RcDest) -> Result<(), DeviceError>;

    /// Destroys a queue pair; its outstanding work completes flushed.
    fn destroy_qp(&mut self, qpn: Qpn) -> Result<(), DeviceError>;

    /// Posts a send-queue work request.
    fn post_send(&mut self, qpn: Qpn, wr_id: u64, sge: Sge, op: SendOp) -> Result<(), DeviceError>;

    /// Posts a receive buffer to the shared receive queue (`qpn` None) or to the UD queue
    /// pair.
    fn post_recv(&mut self, qpn: Option<Qpn>, wr_id: u64, sge: Sge) -> Result<(), DeviceError>;

    /// Moves up to `out.len()` completions into `out`; how many.
    fn poll(&mut self, out: &mut [Completion]) -> usize;

    /// Sleeps on the completion channel until a completion may be there or `deadline`
    /// (on [`Device::now_micros`]'s clock) passes. May return early.
    fn wait(&mut self, deadline: u64);

    /// Queue pairs alive.
    fn queue_pairs(&self) -> usize;

    /// Bytes the device pins for the queue pairs and queues alive (their rings), besides
    /// the memory registered by [`Device::register`].
    fn queue_bytes(&self) -> usize;
}
