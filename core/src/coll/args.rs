//! The arguments of a collective call, the operations and the algorithm names.

use core::fmt;

use super::datatype::Datatype;
use super::error::CollError;
use super::op::{Op, ReduceOp};

/// A collective operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollOp {
    /// MPI_Barrier.
    Barrier,
    /// MPI_Bcast.
    Bcast,
    /// MPI_Reduce.
    Reduce,
    /// MPI_Allreduce.
    Allreduce,
    /// MPI_Allgather.
    Allgather,
    /// MPI_Allgatherv.
    Allgatherv,
    /// MPI_Alltoall.
    Alltoall,
    /// MPI_Alltoallv.
    Alltoallv,
    /// MPI_Gather.
    Gather,
    /// MPI_Gatherv.
    Gatherv,
    /// MPI_Scatter.
    Scatter,
    /// MPI_Scatterv.
    Scatterv,
    /// MPI_Reduce_scatter.
    ReduceScatter,
    /// MPI_Reduce_scatter_block.
    ReduceScatterBlock,
    /// MPI_Scan.
    Scan,
    /// MPI_Exscan.
    Exscan,
}

impl CollOp {
    /// How many operations there are.
    pub const COUNT: usize = 16;

    /// Every operation, in table order.
    pub const ALL: [CollOp; Self::COUNT] = [
        Self::Barrier,
        Self::Bcast,
        Self::Reduce,
        Self::Allreduce,
        Self::Allgather,
        Self::Allgatherv,
        Self::Alltoall,
        Self::Alltoallv,
        Self::Gather,
        Self::Gatherv,
        Self::Scatter,
        Self::Scatterv,
        Self::ReduceScatter,
        Self::ReduceScatterBlock,
        Self::Scan,
        Self::Exscan,
    ];

    /// The lower-case name, as used in control strings.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Barrier => "barrier",
            Self::Bcast => "bcast",
            Self::Reduce => "reduce",
            Self::Allreduce => "allreduce",
            Self::Allgather => "allgather",
            Self::Allgatherv => "allgatherv",
            Self::Alltoall => "alltoall",
            Self::Alltoallv => "alltoallv",
            Self::Gather => "gather",
            Self::Gatherv => "gatherv",
            Self::Scatter => "scatter",
            Self::Scatterv => "scatterv",
            Self::ReduceScatter => "reduce_scatter",
            Self::ReduceScatterBlock => "reduce_scatter_block",
            Self::Scan => "scan",
            Self::Exscan => "exscan",
        }
    }

    /// The operation named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether the operation reduces with an [`Op`].
    pub const fn reduces(self) -> bool {
        matches!(
            self,
            Self::Reduce
                | Self::Allreduce
                | Self::ReduceScatter
                | Self::ReduceScatterBlock
                | Self::Scan
                | Self::Exscan
        )
    }

    /// Whether the operation has a root.
    pub const fn rooted(self) -> bool {
        matches!(
            self,
            Self::Bcast
                | Self::Reduce
                | Self::Gather
                | Self::Gatherv
                | Self::Scatter
                | Self::Scatterv
        )
    }
}

impl fmt::Display for CollOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An algorithm name. One name serves every operation it makes sense for (e.g. `ring`
/// for allreduce, allgather and reduce_scatter); [`Algorithm::implements`] says which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Everyone talks to the root (or to everyone) directly.
    Linear,
    /// Binomial tree.
    Binomial,
    /// Dissemination barrier.
    Dissemination,
    /// Recursive doubling (with a fold for non-powers of two).
    RecursiveDoubling,
    /// Ring.
    Ring,
    /// Reduce-scatter by recursive halving, then allgather by recursive doubling.
    Rabenseifner,
    /// Binomial scatter, then ring allgather (large broadcasts).
    ScatterAllgather,
    /// Reduce-scatter by recursive halving, then gather to the root (large reductions).
    ReduceScatterGather,
    /// Bruck's algorithm.
    Bruck,
    /// Pairwise exchange.
    Pairwise,
    /// A rank-ordered reduction to rank 0, then a scatter.
    ReduceThenScatter,
    /// Node-local phase, leaders phase, node-local phase.
    Hierarchical,
    /// Inter-communicator: local phase and an exchange between the groups' leaders.
    Leaders,
}

impl Algorithm {
    /// Every algorithm.
    pub const ALL: [Algorithm; 13] = [
        Self::Linear,
        Self::Binomial,
        Self::Dissemination,
        Self::RecursiveDoubling,
        Self::Ring,
        Self::Rabenseifner,
        Self::ScatterAllgather,
        Self::ReduceScatterGather,
        Self::Bruck,
        Self::Pairwise,
        Self::ReduceThenScatter,
        Self::Hierarchical,
        Self::Leaders,
    ];

    /// The lower-case name, as used in control strings.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Linear => "linear",
            Self::Binomial => "binomial",
            Self::Dissemination => "dissemination",
            Self::RecursiveDoubling => "recursive_doubling",
            Self::Ring => "ring",
            Self::Rabenseifner => "rabenseifner",
            Self::ScatterAllgather => "scatter_allgather",
            Self::ReduceScatterGather => "reduce_scatter_gather",
            Self::Bruck => "bruck",
            Self::Pairwise => "pairwise",
            Self::ReduceThenScatter => "reduce_then_scatter",
            Self::Hierarchical => "hier",
            Self::Leaders => "leaders",
        }
    }

    /// The algorithm named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether this flat (intra-communicator) algorithm implements `op`.
    pub const fn implements(self, op: CollOp) -> bool {
        use CollOp as C;
        match self {
            Self::Linear => !matches!(
                op,
                C::ReduceScatter | C::ReduceScatterBlock | C::Allgather | C::Allgatherv
            ),
            Self::Binomial => matches!(op, C::Bcast | C::Reduce | C::Gather | C::Scatter),
            Self::Dissemination => matches!(op, C::Barrier),
            Self::RecursiveDoubling => matches!(
                op,
                C::Barrier | C::Allreduce | C::Allgather | C::Allgatherv | C::Scan | C::Exscan
            ),
            Self::Ring => matches!(
                op,
                C::Allreduce
                    | C::Allgather
                    | C::Allgatherv
                    | C::ReduceScatter
                    | C::ReduceScatterBlock
            ),
            Self::Rabenseifner => matches!(op, C::Allreduce),
            Self::ScatterAllgather => matches!(op, C::Bcast),
            Self::ReduceScatterGather => matches!(op, C::Reduce),
            Self::Bruck => matches!(op, C::Allgather | C::Allgatherv | C::Alltoall),
            Self::Pairwise => matches!(op, C::Alltoall | C::Alltoallv),
            Self::ReduceThenScatter => matches!(op, C::ReduceScatter | C::ReduceScatterBlock),
            Self::Hierarchical => {
                matches!(op, C::Barrier | C::Bcast | C::Reduce | C::Allreduce | C::Allgather)
            }
            Self::Leaders => false,
        }
    }

    /// Whether the algorithm combines operands out of rank order (so needs a commutative
    /// operation).
    pub const fn reorders(self) -> bool {
        matches!(self, Self::Ring | Self::Hierarchical)
    }
}

/// Per-rank element counts and displacements (in elements) for the `v` operations.
#[derive(Clone, Copy, Debug)]
pub struct Blocks<'a> {
    /// Elements per rank.
    pub counts: &'a [usize],
    /// Offset of each rank's block, in elements.
    pub displs: &'a [usize],
}

/// The root of a rooted collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// Intra-communicator: the root's rank. Inter-communicator, in the group that does not
    /// hold the root: the root's rank in the remote group.
    Rank(u32),
    /// Inter-communicator: this process is the root (MPI_ROOT).
    Here,
    /// Inter-communicator: the root is another process of this group (MPI_PROC_NULL).
    Elsewhere,
}

/// The arguments of one collective call on one rank. Counts are in elements of `dtype`.
///
/// Per operation, `count` is: bcast, reduce, allreduce, scan, exscan: the elements of the
/// message; gather, scatter, allgather, alltoall, reduce_scatter_block: the elements per
/// rank's block; the `v` variants and reduce_scatter take [`Blocks`] instead (`recv` for
/// gatherv, allgatherv and reduce_scatter counts; `send` for scatterv; both for
/// alltoallv) and `count` is this rank's own send count where one is needed.
#[derive(Clone, Copy, Debug)]
pub struct CollArgs<'a> {
    /// Elements (see above).
    pub count: usize,
    /// Element type.
    pub dtype: Datatype,
    /// Reduction, for reducing operations.
    pub op: Op,
    /// Root, for rooted operations.
    pub root: Root,
    /// Layout of the send buffer, for scatterv and alltoallv.
    pub send: Option<Blocks<'a>>,
    /// Layout of the receive buffer, for gatherv, allgatherv, alltoallv and reduce_scatter.
    pub recv: Option<Blocks<'a>>,
}

impl<'a> CollArgs<'a> {
    /// `count` elements of `dtype`, a SUM reduction, root 0, no block lists.
    pub const fn new(count: usize, dtype: Datatype) -> Self {
        Self {
            count,
            dtype,
            op: Op::Builtin(ReduceOp::Sum),
            root: Root::Rank(0),
            send: None,
            recv: None,
        }
    }

    /// With reduction `op`.
    pub const fn with_op(mut self, op: Op) -> Self {
        self.op = op;
        self
    }

    /// With root `root`.
    pub const fn with_root(mut self, root: Root) -> Self {
        self.root = root;
        self
    }

    /// With a send layout.
    pub const fn with_send(mut self, blocks: Blocks<'a>) -> Self {
        self.send = Some(blocks);
        self
    }

    /// With a receive layout.
    pub const fn with_recv(mut self, blocks: Blocks<'a>) -> Self {
        self.recv = Some(blocks);
        self
    }

    /// The size of this rank's message in bytes: `count` elements (for the `v` operations,
    /// this rank's own count). O(1). Selection uses [`selection_bytes`](Self::selection_bytes).
    #[inline]
    pub fn message_bytes(&self) -> usize {
        self.count.saturating_mul(self.dtype.size())
    }

    /// The size in bytes that selection ranges compare against for `op`, the same on every
    /// rank of the call (ranks that pick different algorithms never match): `count` elements
    /// where every rank passes the same `count`; for allgatherv the mean block and for
    /// reduce_scatter the total of the receive counts, which every rank passes alike (its
    /// `count` may be its own block); 0 for gatherv, scatterv and alltoallv, whose counts no
    /// two ranks need share, so their algorithm never depends on the size. O(1), but O(size)
    /// for allgatherv and reduce_scatter.
    #[inline]
    pub fn selection_bytes(&self, op: CollOp) -> usize {
        let total = |b: &Blocks<'_>| b.counts.iter().fold(0usize, |a, &c| a.saturating_add(c));
        match (op, self.recv) {
            (CollOp::Allgatherv, Some(b)) if !b.counts.is_empty() => {
                (total(&b) / b.counts.len()).saturating_mul(self.dtype.size())
            }
            (CollOp::ReduceScatter, Some(b)) => total(&b).saturating_mul(self.dtype.size()),
            (CollOp::Allgatherv | CollOp::ReduceScatter, None) => 0,
            (CollOp::Gatherv | CollOp::Scatterv | CollOp::Alltoallv, _) => 0,
            _ => self.message_bytes(),
        }
    }

    /// Checks the reduction against the datatype.
    pub(crate) fn check_op(&self) -> Result<(), CollError> {
        if self.op.supports(self.dtype) {
            Ok(())
        } else {
            Err(CollError::OpDatatype(self.op.name(), self.dtype))
        }
    }

    /// Bytes of `elems` elements, refused unless `(size + 4)` such messages fit a `usize`:
    /// every schedule's offsets stay below that, so no step computation can overflow.
    pub(crate) fn bytes(&self, elems: usize) -> Result<usize, CollError> {
        let bytes = elems.checked_mul(self.dtype.size()).ok_or(CollError::TooLarge)?;
        Ok(bytes)
    }

    /// [`bytes`](Self::bytes), checked against a group of `size` ranks.
    pub(crate) fn bytes_for(&self, elems: usize, size: u32) -> Result<usize, CollError> {
        let bytes = self.bytes(elems)?;
        bytes.checked_mul(size as usize + 4).ok_or(CollError::TooLarge)?;
        Ok(bytes)
    }
}
