//! The steps a schedule yields: the small, stable interface between a schedule and
//! whatever executes it (the simulator, a shared-memory runtime, a network).

use super::datatype::Datatype;
use super::op::Op;

/// The buffer a [`Region`] lies in. A schedule never knows where buffers live: the
/// executor resolves these names to memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Buf {
    /// The caller's send buffer (read-only to a schedule).
    Send,
    /// The caller's receive buffer (for a broadcast: the one buffer).
    Recv,
    /// Scratch space of [`Schedule::scratch_bytes`](super::Schedule::scratch_bytes) bytes,
    /// owned by the executor for the lifetime of the schedule.
    Scratch,
}

/// `len` bytes at byte `offset` of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// Which buffer.
    pub buf: Buf,
    /// First byte.
    pub offset: usize,
    /// Length in bytes (may be zero: a zero-byte message still synchronises).
    pub len: usize,
}

impl Region {
    /// `len` bytes at `offset` of `buf`.
    #[inline]
    pub const fn new(buf: Buf, offset: usize, len: usize) -> Self {
        Self { buf, offset, len }
    }

    /// One past the last byte.
    #[inline]
    pub const fn end(&self) -> usize {
        self.offset.saturating_add(self.len)
    }
}

/// Which group a peer rank belongs to. Intra-communicator schedules only name
/// [`Group::Local`] peers; inter-communicator schedules also name ranks of the remote group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    /// The caller's own group (the whole communicator for an intra-communicator).
    Local,
    /// The remote group of an inter-communicator.
    Remote,
}

/// A peer: a rank in a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Peer {
    /// The group the rank is numbered in.
    pub group: Group,
    /// The rank within that group.
    pub rank: u32,
}

impl Peer {
    /// Rank `rank` of the local group.
    #[inline]
    pub const fn local(rank: u32) -> Self {
        Self { group: Group::Local, rank }
    }

    /// Rank `rank` of the remote group.
    #[inline]
    pub const fn remote(rank: u32) -> Self {
        Self { group: Group::Remote, rank }
    }
}

/// One step of one rank's part of a collective.
///
/// Execution model (what an executor must guarantee):
/// - [`Step::Send`] and [`Step::Recv`] *start* a transfer and do not wait for it. Messages
///   between one ordered pair of ranks match in the order they were started (MPI's
///   non-overtaking rule); a receive region's length equals the matching send's.
/// - [`Step::Reduce`], [`Step::Copy`] and [`Step::Wait`] first wait until every transfer
///   this rank has started is complete; a send region is not modified before then.
/// - The end of the schedule waits for every transfer too.
///
/// So the steps between two `Wait`s form a *round*: its transfers may all be in flight
/// together, its local steps depend on everything before them.
///
/// An executor must bounds-check every region against its buffers (a `v` layout with
/// absurd counts yields regions that fit no buffer; offsets saturate rather than wrap),
/// and must not assume scratch starts zeroed.
///
/// ```
/// use commcore::coll::{Algorithm, CollArgs, CollOp, Ctx, Datatype, Schedule, Step};
///
/// // Rank 2 of 5 in a binomial broadcast of 4 f64 from root 0.
/// let args = CollArgs::new(4, Datatype::F64);
/// let schedule = Schedule::intra(CollOp::Bcast, Algorithm::Binomial, Ctx::new(2, 5)?, &args)?;
/// let mut scratch = vec![0u8; schedule.scratch_bytes()];
/// # let _ = &mut scratch;
/// for step in schedule {
///     match step {
///         Step::Send { to, region } => { /* start sending region to `to` */ }
///         Step::Recv { from, region } => { /* start receiving into region */ }
///         Step::Reduce { .. } | Step::Copy { .. } | Step::Wait => {
///             /* wait for this rank's transfers, then apply */
///         }
///     }
/// }
/// # Ok::<(), commcore::coll::CollError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// Start sending `region` to `to`.
    Send {
        /// Destination.
        to: Peer,
        /// Bytes to send.
        region: Region,
    },
    /// Start receiving into `region` from `from`.
    Recv {
        /// Source.
        from: Peer,
        /// Where the bytes land.
        region: Region,
    },
    /// `dst = src ∘ dst` when `src_left`, else `dst = dst ∘ src`, element-wise with `op` over
    /// `dtype`. Both regions have the same length, a multiple of the element size.
    Reduce {
        /// The reduction.
        op: Op,
        /// The element type.
        dtype: Datatype,
        /// Operand that is not overwritten.
        src: Region,
        /// Operand that receives the result.
        dst: Region,
        /// Whether `src` is the left (lower-rank) operand.
        src_left: bool,
    },
    /// Copy `src` to `dst` (same length; in the same buffer the regions are either
    /// disjoint or identical, the latter a no-op).
    Copy {
        /// From.
        src: Region,
        /// To.
        dst: Region,
    },
    /// End of a round: wait for every started transfer.
    Wait,
}
