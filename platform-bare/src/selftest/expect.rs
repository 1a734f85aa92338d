//! Inputs and directly computed results of every collective, for `p` ranks of u32
//! elements.

use commcore::coll::{CollOp, Datatype, Op, ReduceOp, UserOp};

/// Bytes of one element (u32).
pub const E: usize = 4;
/// Filler of bytes a collective must not write (gaps of `v` layouts, non-root buffers).
pub const SENTINEL: u8 = 0xAB;

/// Element `i` of the block that source `src` contributes.
pub fn value(src: usize, i: usize, salt: u32) -> u32 {
    ((src as u32).wrapping_mul(0x9e37_79b1) ^ (i as u32).wrapping_mul(40_503)) ^ salt
}

/// The reductions the self-test runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// Built-in SUM (wrapping).
    Sum,
    /// Built-in MAX.
    Max,
    /// A user operation that keeps its left operand: associative, not commutative, so a
    /// reduction that combines out of rank order, or swaps operands, gives a wrong result.
    First,
}

impl Reduction {
    /// The operation as a collective takes it.
    pub fn op(self) -> Op {
        match self {
            Self::Sum => Op::Builtin(ReduceOp::Sum),
            Self::Max => Op::Builtin(ReduceOp::Max),
            Self::First => Op::User(UserOp { func: keep_left, commutative: false }),
        }
    }
}

/// `dst = src ∘ dst` or `dst ∘ src` where `a ∘ b = a`.
fn keep_left(src: &[u8], dst: &mut [u8], _: Datatype, src_left: bool) {
    if src_left {
        dst.copy_from_slice(src);
    }
}

/// `op` over `srcs` (in rank order) of element `i`.
pub fn fold(op: Reduction, srcs: core::ops::Range<usize>, i: usize, salt: u32) -> u32 {
    let mut values = srcs.map(|s| value(s, i, salt));
    let first = values.next().unwrap_or(0);
    values.fold(first, |acc, v| match op {
        Reduction::Sum => acc.wrapping_add(v),
        Reduction::Max => acc.max(v),
        Reduction::First => acc,
    })
}

/// Writes element `i` of `buf`.
pub fn put(buf: &mut [u8], i: usize, v: u32) {
    buf[i * E..(i + 1) * E].copy_from_slice(&v.to_ne_bytes());
}

/// Per-rank counts and displacements (in elements) of a `v` layout, with a one-element
/// gap after each block; up to `P` ranks.
#[derive(Clone, Copy, Debug)]
pub struct Layout<const P: usize> {
    /// Elements per rank.
    pub counts: [usize; P],
    /// Where each rank's block starts.
    pub displs: [usize; P],
}

impl<const P: usize> Layout<P> {
    /// Counts `count(j)` for `j < p`, packed with gaps.
    pub fn new(p: usize, count: impl Fn(usize) -> usize) -> Self {
        let (mut counts, mut displs) = ([0; P], [0; P]);
        let mut at = 0;
        for j in 0..p {
            counts[j] = count(j);
            displs[j] = at;
            at += counts[j] + 1;
        }
        Self { counts, displs }
    }

    /// Elements spanned by the first `p` blocks.
    pub fn extent(&self, p: usize) -> usize {
        (0..p).map(|j| self.counts[j] + self.displs[j]).max().unwrap_or(0)
    }
}

/// One rank's buffers to fill: the send buffer, the initial receive buffer and the
/// expected receive buffer (`None` where the result is unspecified).
pub struct RankIo<'b> {
    /// Send buffer, filled here; its length is set by the caller from `send_len`.
    pub send: &'b mut [u8],
    /// Receive buffer, initialised here.
    pub recv: &'b mut [u8],
    /// Expected result.
    pub want: &'b mut [u8],
}

/// Buffer lengths and whether the result is checked, for one rank.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lens {
    /// Send bytes.
    pub send: usize,
    /// Receive bytes.
    pub recv: usize,
    /// Whether the receive buffer is compared.
    pub checked: bool,
}

/// The `v` layouts of one case.
pub struct Layouts<const P: usize> {
    /// Gatherv, allgatherv, scatterv, reduce_scatter: one layout for all ranks.
    pub shared: Layout<P>,
    /// Alltoallv: per rank, what it sends to each rank.
    pub sends: [Layout<P>; P],
    /// Alltoallv: per rank, what it receives from each rank.
    pub recvs: [Layout<P>; P],
}

impl<const P: usize> Layouts<P> {
    /// The layouts for `p` ranks, `count` elements, `root`.
    pub fn new(p: usize, count: usize, root: usize) -> Self {
        let shared = Layout::new(p, |j| (j * 7 + root * 3 + count) % (count + 3));
        let sends =
            core::array::from_fn(|r| Layout::new(p, |j| (r * 3 + j * 5 + count) % (count + 2)));
        let recvs =
            core::array::from_fn(|r| Layout::new(p, |j| (j * 3 + r * 5 + count) % (count + 2)));
        Self { shared, sends, recvs }
    }
}

/// Fills rank `r`'s buffers for `op` over `p` ranks with `count` elements (per block),
/// `root` and reduction `rop`, and returns their lengths. The buffers must be long enough
/// ([`needed`] bytes).
#[allow(clippy::too_many_arguments)]
pub fn fill<const P: usize>(
    op: CollOp,
    rop: Reduction,
    p: usize,
    r: usize,
    root: usize,
    count: usize,
    layouts: &Layouts<P>,
    io: RankIo<'_>,
) -> Lens {
    let salt = op as u32 * 0x0101 + root as u32;
    let c = count;
    io.send.fill(SENTINEL);
    io.recv.fill(SENTINEL);
    io.want.fill(SENTINEL);
    let v = &layouts.shared;
    let mut lens = Lens::default();
    let is_root = r == root;
    match op {
        CollOp::Barrier => lens.checked = true,
        CollOp::Bcast => {
            for i in 0..c {
                put(io.want, i, value(root, i, salt));
                if is_root {
                    put(io.recv, i, value(root, i, salt));
                }
            }
            lens = Lens { send: 0, recv: c * E, checked: true };
        }
        CollOp::Reduce | CollOp::Allreduce | CollOp::Scan | CollOp::Exscan => {
            let srcs = match op {
                CollOp::Scan => 0..r + 1,
                CollOp::Exscan => 0..r,
                _ => 0..p,
            };
            for i in 0..c {
                put(io.send, i, value(r, i, salt));
                put(io.want, i, fold(rop, srcs.clone(), i, salt));
            }
            let checked = match op {
                CollOp::Reduce => is_root,
                CollOp::Exscan => r > 0,
                _ => true,
            };
            lens = Lens { send: c * E, recv: c * E, checked };
        }
        CollOp::Allgather | CollOp::Gather => {
            for i in 0..c {
                put(io.send, i, value(r, i, salt));
            }
            for j in 0..p {
                for i in 0..c {
                    put(io.want, j * c + i, value(j, i, salt));
                }
            }
            let gets = op == CollOp::Allgather || is_root;
            lens = Lens { send: c * E, recv: if gets { p * c * E } else { 0 }, checked: gets };
        }
        CollOp::Allgatherv | CollOp::Gatherv => {
            for i in 0..v.counts[r] {
                put(io.send, i, value(r, i, salt));
            }
            for j in 0..p {
                for i in 0..v.counts[j] {
                    put(io.want, v.displs[j] + i, value(j, i, salt));
                }
            }
            let gets = op == CollOp::Allgatherv || is_root;
            let recv = if gets { v.extent(p) * E } else { 0 };
            lens = Lens { send: v.counts[r] * E, recv, checked: gets };
        }
        CollOp::Scatter => {
            if is_root {
                for j in 0..p {
                    for i in 0..c {
                        put(io.send, j * c + i, value(j, i, salt));
                    }
                }
            }
            for i in 0..c {
                put(io.want, i, value(r, i, salt));
            }
            lens = Lens { send: if is_root { p * c * E } else { 0 }, recv: c * E, checked: true };
        }
        CollOp::Scatterv => {
            if is_root {
                for j in 0..p {
                    for i in 0..v.counts[j] {
                        put(io.send, v.displs[j] + i, value(j, i, salt));
                    }
                }
            }
            for i in 0..v.counts[r] {
                put(io.want, i, value(r, i, salt));
            }
            let send = if is_root { v.extent(p) * E } else { 0 };
            lens = Lens { send, recv: v.counts[r] * E, checked: true };
        }
        CollOp::Alltoall => {
            for j in 0..p {
                for i in 0..c {
                    put(io.send, j * c + i, value(r * p + j, i, salt));
                    put(io.want, j * c + i, value(j * p + r, i, salt));
                }
            }
            lens = Lens { send: p * c * E, recv: p * c * E, checked: true };
        }
        CollOp::Alltoallv => {
            let (s, w) = (&layouts.sends[r], &layouts.recvs[r]);
            for j in 0..p {
                for i in 0..s.counts[j] {
                    put(io.send, s.displs[j] + i, value(r * p + j, i, salt));
                }
                for i in 0..w.counts[j] {
                    put(io.want, w.displs[j] + i, value(j * p + r, i, salt));
                }
            }
            lens = Lens { send: s.extent(p) * E, recv: w.extent(p) * E, checked: true };
        }
        CollOp::ReduceScatter | CollOp::ReduceScatterBlock => {
            // reduce_scatter: the shared layout (with gaps); the block form: packed blocks.
            let (total, count, first) = if op == CollOp::ReduceScatter {
                (v.extent(p), v.counts[r], v.displs[r])
            } else {
                (p * c, c, r * c)
            };
            for x in 0..total {
                put(io.send, x, value(r, x, salt));
            }
            for i in 0..count {
                put(io.want, i, fold(rop, 0..p, first + i, salt));
            }
            lens = Lens { send: total * E, recv: count * E, checked: true };
        }
    }
    lens
}

/// Bytes each of a rank's buffers needs for any operation over `p` ranks of `count`
/// elements.
pub const fn needed(p: usize, count: usize) -> usize {
    p * (count + 3) * E
}
