//! The baseline: the paper's VC-VCRT model, built for real in the same run.
//!
//! One 480-byte virtual connection (VC) per process, every transport's state replicated in
//! it, the network address in its first cache line; a global table of pointers to the VCs;
//! per communicator a VCRT of 4-byte indices into that table. A lookup reads the VCRT entry,
//! the pointer, then the VC.

/// A transport operation as the VC replicates it: one function pointer per operation.
pub type VcOp = fn(u64) -> u64;

fn noop(x: u64) -> u64 {
    x
}

/// A virtual connection: what MPICH-derived implementations keep per process.
#[repr(C)]
pub struct Vc {
    /// Core network address (first cache line, as in the paper).
    pub address: u64,
    /// Connection state.
    pub state: u32,
    /// Reference count.
    pub ref_count: u32,
    /// Process group this process belongs to (dynamic processes).
    pub pg_id: u64,
    /// Rank in that process group.
    pub pg_rank: u32,
    /// Local process id.
    pub lpid: u32,
    /// Node id, embedded for transport selection.
    pub node_id: u32,
    /// Which transport reaches the process.
    pub transport: u32,
    /// Eager/rendezvous thresholds, replicated per VC.
    pub eager_max_msg_sz: u64,
    /// Ready-send eager limit.
    pub ready_eager_max_msg_sz: u64,
    /// The transport's function table, replicated per VC (16 operations).
    pub ops: [VcOp; 16],
    /// Shared-memory transport state: queue heads and tails, buffer pointers.
    pub shm_queues: [u64; 16],
    /// Network transport state: connection handles, credits, pending-send queue.
    pub net_state: [u64; 12],
    /// Dynamic-process bookkeeping: port name and connection info.
    pub dpm_port: [u8; 64],
    /// Remaining per-VC fields (locks, statistics, debug state).
    pub misc: [u64; 1],
}

const _: () = assert!(core::mem::size_of::<Vc>() == 480);

impl Vc {
    /// A VC for process `lpid` of group `pg_id` at `address` on `node_id`.
    pub fn new(address: u64, pg_id: u64, lpid: u32, node_id: u32) -> Self {
        Self {
            address,
            state: 1,
            ref_count: 1,
            pg_id,
            pg_rank: lpid,
            lpid,
            node_id,
            transport: lpid & 1,
            eager_max_msg_sz: 65_536,
            ready_eager_max_msg_sz: 65_536,
            ops: [noop; 16],
            shm_queues: [lpid as u64; 16],
            net_state: [address; 12],
            dpm_port: [0; 64],
            misc: [0; 1],
        }
    }
}

/// A VC-VCRT communicator: its VCRT, one 4-byte index per rank into the global table.
pub struct VcComm {
    /// `vcrt[rank]` indexes the global pointer table.
    pub vcrt: Vec<u32>,
}

impl VcComm {
    /// Bytes this communicator's VCRT takes (a small header plus the indices).
    pub fn bytes(&self) -> usize {
        16 + self.vcrt.len() * 4
    }
}

/// The global table of VC pointers, one per process of every group (MPICH's VC table behind
/// a global pointer: a lookup loads the table's address and length from memory).
pub struct VcTable<'v> {
    /// `vcs[index]` is the VC of the process a VCRT entry `index` names.
    pub vcs: Vec<&'v Vc>,
}

/// The address of `rank`'s process: VCRT index, global pointer, VC.
#[inline(always)]
pub fn lookup(table: &VcTable<'_>, comm: &VcComm, rank: u32) -> Option<u64> {
    let index = *comm.vcrt.get(rank as usize)?;
    Some(table.vcs.get(index as usize)?.address)
}
