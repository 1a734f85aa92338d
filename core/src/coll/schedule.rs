//! A schedule: the on-demand step generator of one rank's part of one collective.

use super::algo::{
    allgather, allreduce, alltoall, barrier, bcast, gather, reduce, reduce_scatter, scan,
    BlockLayout, Ctx, Emit,
};
use super::args::{Algorithm, CollArgs, CollOp, Root};
use super::error::CollError;
use super::hier::Unpack;
use super::inter::RemoteLinear;
use super::layout::NodeLayout;
use super::step::{Buf, Group, Peer, Region, Step};

mod algorithm;

/// One leaf algorithm instance.
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub enum Flat<'a> {
    BarrierDissemination(barrier::Dissemination),
    BarrierRecursiveDoubling(barrier::RecursiveDoubling),
    BcastLinear(bcast::Linear),
    BcastBinomial(bcast::Binomial),
    BcastScatterAllgather(bcast::ScatterAllgather),
    ReduceLinear(reduce::Linear),
    ReduceBinomial(reduce::Binomial),
    ReduceScatterGather(reduce::ReduceScatterGather),
    AllreduceRecursiveDoubling(allreduce::RecursiveDoubling),
    AllreduceRing(allreduce::Ring),
    AllreduceRabenseifner(allreduce::Rabenseifner),
    AllgatherRing(allgather::Ring<'a>),
    AllgatherRecursiveDoubling(allgather::RecursiveDoubling<'a>),
    AllgatherBruck(allgather::Bruck<'a>),
    AlltoallLinear(alltoall::Linear<'a>),
    AlltoallPairwise(alltoall::Pairwise<'a>),
    AlltoallBruck(alltoall::Bruck),
    GatherScatterLinear(gather::Linear<'a>),
    GatherScatterBinomial(gather::Binomial),
    ReduceScatterRing(reduce_scatter::Ring<'a>),
    ReduceThenScatter(reduce_scatter::ReduceThenScatter<'a>),
    ScanLinear(scan::Linear),
    ScanRecursiveDoubling(scan::RecursiveDoubling),
    Remote(RemoteLinear<'a>),
    Unpack(Unpack<'a>),
}

macro_rules! each_flat {
    ($self:expr, $a:ident => $body:expr) => {
        match $self {
            Flat::BarrierDissemination($a) => $body,
            Flat::BarrierRecursiveDoubling($a) => $body,
            Flat::BcastLinear($a) => $body,
            Flat::BcastBinomial($a) => $body,
            Flat::BcastScatterAllgather($a) => $body,
            Flat::ReduceLinear($a) => $body,
            Flat::ReduceBinomial($a) => $body,
            Flat::ReduceScatterGather($a) => $body,
            Flat::AllreduceRecursiveDoubling($a) => $body,
            Flat::AllreduceRing($a) => $body,
            Flat::AllreduceRabenseifner($a) => $body,
            Flat::AllgatherRing($a) => $body,
            Flat::AllgatherRecursiveDoubling($a) => $body,
            Flat::AllgatherBruck($a) => $body,
            Flat::AlltoallLinear($a) => $body,
            Flat::AlltoallPairwise($a) => $body,
            Flat::AlltoallBruck($a) => $body,
            Flat::GatherScatterLinear($a) => $body,
            Flat::GatherScatterBinomial($a) => $body,
            Flat::ReduceScatterRing($a) => $body,
            Flat::ReduceThenScatter($a) => $body,
            Flat::ScanLinear($a) => $body,
            Flat::ScanRecursiveDoubling($a) => $body,
            Flat::Remote($a) => $body,
            Flat::Unpack($a) => $body,
        }
    };
}

/// Scratch bytes an algorithm needs (most need none).
trait Scratch {
    fn scratch(&self) -> usize {
        0
    }
}
impl Scratch for barrier::Dissemination {}
impl Scratch for barrier::RecursiveDoubling {}
impl Scratch for bcast::Linear {}
impl Scratch for bcast::Binomial {}
impl Scratch for bcast::ScatterAllgather {}
impl Scratch for allgather::Ring<'_> {}
impl Scratch for allgather::RecursiveDoubling<'_> {}
impl Scratch for alltoall::Linear<'_> {}
impl Scratch for alltoall::Pairwise<'_> {}
impl Scratch for gather::Linear<'_> {}
impl Scratch for RemoteLinear<'_> {}
impl Scratch for Unpack<'_> {}
macro_rules! own_scratch {
    ($($t:ty),*) => {$(impl Scratch for $t { fn scratch(&self) -> usize { <$t>::scratch(self) } })*};
}
own_scratch!(
    reduce::Linear,
    reduce::Binomial,
    reduce::ReduceScatterGather,
    allreduce::RecursiveDoubling,
    allreduce::Ring,
    allreduce::Rabenseifner,
    allgather::Bruck<'_>,
    alltoall::Bruck,
    gather::Binomial,
    reduce_scatter::Ring<'_>,
    reduce_scatter::ReduceThenScatter<'_>,
    scan::Linear,
    scan::RecursiveDoubling
);

impl Flat<'_> {
    #[inline]
    pub(crate) fn rounds(&self) -> u32 {
        each_flat!(self, a => a.rounds())
    }

    #[inline]
    pub(crate) fn step(&mut self, round: u32, index: u32) -> Emit {
        each_flat!(self, a => a.step(round, index))
    }

    pub(crate) fn scratch(&self) -> usize {
        each_flat!(self, a => Scratch::scratch(a))
    }
}

/// How a phase's local ranks map to the communicator's.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PeerMap<'a> {
    /// Unchanged.
    Same,
    /// Rank `i` is member `i` of node `node`.
    Members(NodeLayout<'a>, u32),
    /// Rank `i` is the leader of node `i`, except that node `substitute.0` is represented
    /// by rank `substitute.1` (the root, for rooted operations).
    Leaders(NodeLayout<'a>, Option<(u32, u32)>),
}

impl PeerMap<'_> {
    #[inline]
    fn map(&self, peer: Peer) -> Peer {
        match self {
            Self::Same => peer,
            Self::Members(layout, node) => Peer::local(layout.member(*node, peer.rank)),
            Self::Leaders(layout, substitute) => Peer::local(match substitute {
                Some((node, rank)) if *node == peer.rank => *rank,
                _ => layout.leader(peer.rank),
            }),
        }
    }
}

/// Where a phase's `Send`, `Recv` and `Scratch` lie in the schedule's buffers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BufMap(pub [(Buf, usize); 3]);

impl BufMap {
    pub(crate) const SAME: BufMap = BufMap([(Buf::Send, 0), (Buf::Recv, 0), (Buf::Scratch, 0)]);

    /// This map with `buf` moved to `to` at `offset`.
    pub(crate) const fn with(mut self, buf: Buf, to: Buf, offset: usize) -> Self {
        self.0[buf as usize] = (to, offset);
        self
    }

    #[inline]
    fn map(&self, r: Region) -> Region {
        let (buf, at) = self.0[r.buf as usize];
        Region::new(buf, at.saturating_add(r.offset), r.len)
    }
}

/// One phase of a composed schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Phase<'a> {
    pub flat: Flat<'a>,
    pub peers: PeerMap<'a>,
    pub bufs: BufMap,
}

impl Phase<'_> {
    #[inline]
    fn translate(&self, step: Step) -> Step {
        let (p, b) = (&self.peers, &self.bufs);
        let peer = |q: Peer| if q.group == Group::Local { p.map(q) } else { q };
        match step {
            Step::Send { to, region } => Step::Send { to: peer(to), region: b.map(region) },
            Step::Recv { from, region } => Step::Recv { from: peer(from), region: b.map(region) },
            Step::Reduce { op, dtype, src, dst, src_left } => {
                Step::Reduce { op, dtype, src: b.map(src), dst: b.map(dst), src_left }
            }
            Step::Copy { src, dst } => Step::Copy { src: b.map(src), dst: b.map(dst) },
            Step::Wait => Step::Wait,
        }
    }
}

/// The phases of a composed schedule (hierarchical, inter-communicator, linear pairs) and
/// the scratch it needs, as built; a [`Schedule`] keeps only the recipe and the current
/// phase.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Phases<'a> {
    pub phases: [Option<Phase<'a>>; 4],
    pub scratch: usize,
}

impl<'a> Phases<'a> {
    pub(crate) fn new(phases: [Option<Phase<'a>>; 4], scratch: usize) -> Self {
        Self { phases, scratch }
    }
}

/// How to rebuild a composed schedule's phases.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Recipe<'a> {
    Hier { op: CollOp, rank: u32, layout: NodeLayout<'a>, args: CollArgs<'a> },
    Inter { op: CollOp, ctx: Ctx, remote: u32, args: CollArgs<'a> },
    LinearPair { op: CollOp, ctx: Ctx, args: CollArgs<'a> },
}

impl<'a> Recipe<'a> {
    fn build(&self) -> Result<Phases<'a>, CollError> {
        match self {
            Self::Hier { op, rank, layout, args } => {
                super::hier::schedule(*op, *rank, *layout, args)
            }
            Self::Inter { op, ctx, remote, args } => {
                super::inter::schedule(*op, *ctx, *remote, args)
            }
            Self::LinearPair { op, ctx, args } => linear_reduce_bcast(*op, *ctx, args),
        }
    }
}

/// Up to four phases run one after another. Only the current phase is kept; the next is
/// rebuilt from the recipe when its first round comes (three times at most), which keeps a
/// schedule small.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Phased<'a> {
    recipe: Recipe<'a>,
    current: Option<Phase<'a>>,
    at: usize,
    starts: [u32; 5],
}

impl<'a> Phased<'a> {
    fn new(recipe: Recipe<'a>) -> Result<(Self, usize), CollError> {
        let built = recipe.build()?;
        let mut starts = [0; 5];
        for (i, p) in built.phases.iter().enumerate() {
            starts[i + 1] = starts[i] + p.as_ref().map_or(0, |p| p.flat.rounds());
        }
        Ok((Self { recipe, current: built.phases[0], at: 0, starts }, built.scratch))
    }

    #[inline]
    fn step(&mut self, round: u32, index: u32) -> Emit {
        let mut i = 0;
        while i < 3 && round >= self.starts[i + 1] {
            i += 1;
        }
        if i != self.at {
            // The recipe built once already; building is deterministic.
            self.current = self.recipe.build().ok().and_then(|b| b.phases[i]);
            self.at = i;
        }
        let start = self.starts[i];
        let Some(phase) = self.current.as_mut() else { return Emit::End };
        match phase.flat.step(round - start, index) {
            Emit::Step(s) => Emit::Step(phase.translate(s)),
            other => other,
        }
    }
}

// core has no heap to box the larger variant in; a schedule lives on the caller's stack.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
enum Kind<'a> {
    Flat(Flat<'a>),
    Phased(Phased<'a>),
}

/// One rank's part of one collective: an iterator of [`Step`]s, produced on demand from
/// O(1) state (O(log P) time per step at most). See [`Step`] for the execution model.
#[derive(Clone, Copy, Debug)]
pub struct Schedule<'a> {
    kind: Kind<'a>,
    rounds: u32,
    round: u32,
    index: u32,
    in_round: bool,
    scratch: usize,
}

impl<'a> Schedule<'a> {
    #[inline]
    fn from_flat(flat: Flat<'a>) -> Self {
        let (rounds, scratch) = (flat.rounds(), flat.scratch());
        Self { kind: Kind::Flat(flat), rounds, round: 0, index: 0, in_round: false, scratch }
    }

    fn from_recipe(recipe: Recipe<'a>) -> Result<Self, CollError> {
        let (phased, scratch) = Phased::new(recipe)?;
        let rounds = phased.starts[4];
        Ok(Self {
            kind: Kind::Phased(phased),
            rounds,
            round: 0,
            index: 0,
            in_round: false,
            scratch,
        })
    }

    /// Bytes of scratch space the executor must provide.
    #[inline]
    pub fn scratch_bytes(&self) -> usize {
        self.scratch
    }

    /// Rounds in this rank's schedule (an upper bound on the `Wait`s it yields, plus one).
    #[inline]
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// The hierarchical schedule of `op` (barrier, bcast, reduce, allreduce, allgather)
    /// for `rank` of a communicator grouped by `layout`. Reductions need a commutative
    /// operation.
    pub fn hier(
        op: CollOp,
        rank: u32,
        layout: NodeLayout<'a>,
        args: &CollArgs<'a>,
    ) -> Result<Self, CollError> {
        Self::from_recipe(Recipe::Hier { op, rank, layout, args: *args })
    }

    /// The inter-communicator schedule of `op` for rank `ctx.rank` of a local group of
    /// `ctx.size` facing a remote group of `remote_size`. Reductions combine the remote
    /// group's data; scan and exscan are [`CollError::NotOnInterComm`].
    pub fn inter(
        op: CollOp,
        ctx: Ctx,
        remote_size: u32,
        args: &CollArgs<'a>,
    ) -> Result<Self, CollError> {
        Self::from_recipe(Recipe::Inter { op, ctx, remote: remote_size, args: *args })
    }

    /// The schedule of intra-communicator algorithm `alg` for `op` on rank `ctx.rank` of
    /// `ctx.size`. This is the direct path; the framework reaches the same constructor
    /// after one dispatch.
    pub fn intra(
        op: CollOp,
        alg: Algorithm,
        ctx: Ctx,
        args: &CollArgs<'a>,
    ) -> Result<Self, CollError> {
        super::ctor::constructor(op, alg)?(ctx, args)
    }

    /// [`intra`](Self::intra), inlined so that constant `op` and `alg` fold the dispatch
    /// away (the per-pair constructors of [`ctor`](super::ctor) are built from it).
    #[inline(always)]
    pub(crate) fn intra_inline(
        op: CollOp,
        alg: Algorithm,
        ctx: Ctx,
        args: &CollArgs<'a>,
    ) -> Result<Self, CollError> {
        if alg == Algorithm::Linear && matches!(op, CollOp::Barrier | CollOp::Allreduce) {
            return Self::from_recipe(Recipe::LinearPair { op, ctx, args: *args });
        }
        flat(op, alg, ctx, args).map(Self::from_flat)
    }
}

impl Iterator for Schedule<'_> {
    type Item = Step;

    #[inline]
    fn next(&mut self) -> Option<Step> {
        self.next_with(|step| step.copied())
    }
}

impl Schedule<'_> {
    /// [`Iterator::next`], always inlined: for a boundary that converts every step (the C
    /// ABI). `convert` is applied where the step is produced (`None` at the end), so the
    /// step is converted in place rather than returned through memory first.
    #[inline(always)]
    pub fn next_with<R>(&mut self, convert: impl FnOnce(Option<&Step>) -> R) -> R {
        loop {
            if self.round >= self.rounds {
                return convert(None);
            }
            let emit = match &mut self.kind {
                Kind::Flat(f) => f.step(self.round, self.index),
                Kind::Phased(p) => p.step(self.round, self.index),
            };
            match &emit {
                Emit::Step(step) => {
                    self.index += 1;
                    self.in_round = true;
                    return convert(Some(step));
                }
                Emit::Skip => self.index += 1,
                Emit::End => {
                    self.round += 1;
                    self.index = 0;
                    if core::mem::take(&mut self.in_round) && self.round < self.rounds {
                        return convert(Some(&Step::Wait));
                    }
                }
            }
        }
    }
}

/// The root of an intra-communicator rooted operation.
pub(crate) fn intra_root(root: Root, size: u32) -> Result<u32, CollError> {
    match root {
        Root::Rank(r) if r < size => Ok(r),
        _ => Err(CollError::BadRoot),
    }
}

/// Builds a leaf algorithm after checking the arguments.
#[inline(always)]
pub(crate) fn flat<'a>(
    op: CollOp,
    alg: Algorithm,
    ctx: Ctx,
    args: &CollArgs<'a>,
) -> Result<Flat<'a>, CollError> {
    use Algorithm as A;
    use CollOp as C;
    if !alg.implements(op) || alg == A::Hierarchical {
        return Err(CollError::AlgorithmNotFor(alg, op));
    }
    if op.reduces() {
        args.check_op()?;
        if alg.reorders() && !args.op.is_commutative() {
            return Err(CollError::NotCommutative(alg));
        }
    }
    let root = if op.rooted() { intra_root(args.root, ctx.size)? } else { 0 };
    let (count, dtype, rop) = (args.count, args.dtype, args.op);
    let bytes = args.bytes_for(count, ctx.size)?;
    let regular = || -> Result<BlockLayout<'a>, CollError> {
        let layout = BlockLayout::regular(count, dtype)?;
        layout_fits(&layout, ctx.size)?;
        Ok(layout)
    };
    let vrecv = || BlockLayout::varying(args.recv, ctx.size, dtype);
    let vsend = || BlockLayout::varying(args.send, ctx.size, dtype);
    Ok(match (op, alg) {
        (C::Barrier, A::Dissemination) => {
            Flat::BarrierDissemination(barrier::Dissemination::new(ctx))
        }
        (C::Barrier, A::RecursiveDoubling) => {
            Flat::BarrierRecursiveDoubling(barrier::RecursiveDoubling::new(ctx))
        }
        (C::Bcast, A::Linear) => Flat::BcastLinear(bcast::Linear::new(ctx, root, bytes)),
        (C::Bcast, A::Binomial) => Flat::BcastBinomial(bcast::Binomial::new(ctx, root, bytes)),
        (C::Bcast, A::ScatterAllgather) => Flat::BcastScatterAllgather(
            bcast::ScatterAllgather::new(ctx, root, count, dtype.size()),
        ),
        (C::Reduce, A::Linear) => {
            Flat::ReduceLinear(reduce::Linear::new(ctx, root, count, dtype, rop))
        }
        (C::Reduce, A::Binomial) => {
            Flat::ReduceBinomial(reduce::Binomial::new(ctx, root, count, dtype, rop))
        }
        (C::Reduce, A::ReduceScatterGather) => Flat::ReduceScatterGather(
            reduce::ReduceScatterGather::new(ctx, root, count, dtype, rop),
        ),
        (C::Allreduce, A::RecursiveDoubling) => Flat::AllreduceRecursiveDoubling(
            allreduce::RecursiveDoubling::new(ctx, count, dtype, rop),
        ),
        (C::Allreduce, A::Ring) => {
            Flat::AllreduceRing(allreduce::Ring::new(ctx, count, dtype, rop))
        }
        (C::Allreduce, A::Rabenseifner) => {
            Flat::AllreduceRabenseifner(allreduce::Rabenseifner::new(ctx, count, dtype, rop))
        }
        (C::Allgather, A::Ring) => Flat::AllgatherRing(allgather::Ring::new(ctx, regular()?)),
        (C::Allgatherv, A::Ring) => Flat::AllgatherRing(allgather::Ring::new(ctx, vrecv()?)),
        (C::Allgather, A::RecursiveDoubling) => {
            Flat::AllgatherRecursiveDoubling(allgather::RecursiveDoubling::new(ctx, regular()?))
        }
        (C::Allgatherv, A::RecursiveDoubling) => {
            Flat::AllgatherRecursiveDoubling(allgather::RecursiveDoubling::new(ctx, vrecv()?))
        }
        (C::Allgather, A::Bruck) => Flat::AllgatherBruck(allgather::Bruck::new(ctx, regular()?)),
        (C::Allgatherv, A::Bruck) => Flat::AllgatherBruck(allgather::Bruck::new(ctx, vrecv()?)),
        (C::Alltoall, A::Linear) => {
            Flat::AlltoallLinear(alltoall::Linear::new(ctx, regular()?, regular()?))
        }
        (C::Alltoallv, A::Linear) => {
            let (send, recv) = own_blocks_match(vsend()?, vrecv()?, ctx.rank)?;
            Flat::AlltoallLinear(alltoall::Linear::new(ctx, send, recv))
        }
        (C::Alltoall, A::Pairwise) => {
            Flat::AlltoallPairwise(alltoall::Pairwise::new(ctx, regular()?, regular()?))
        }
        (C::Alltoallv, A::Pairwise) => {
            let (send, recv) = own_blocks_match(vsend()?, vrecv()?, ctx.rank)?;
            Flat::AlltoallPairwise(alltoall::Pairwise::new(ctx, send, recv))
        }
        (C::Alltoall, A::Bruck) => {
            regular()?;
            Flat::AlltoallBruck(alltoall::Bruck::new(ctx, bytes))
        }
        (C::Gather, A::Linear) => {
            Flat::GatherScatterLinear(gather::Linear::new(ctx, root, regular()?, false))
        }
        (C::Gatherv, A::Linear) if ctx.rank != root && args.recv.is_none() => {
            Flat::GatherScatterLinear(gather::Linear::leaf(ctx, root, bytes, false))
        }
        (C::Gatherv, A::Linear) => {
            Flat::GatherScatterLinear(gather::Linear::new(ctx, root, vrecv()?, false))
        }
        (C::Scatter, A::Linear) => {
            Flat::GatherScatterLinear(gather::Linear::new(ctx, root, regular()?, true))
        }
        (C::Scatterv, A::Linear) if ctx.rank != root && args.send.is_none() => {
            Flat::GatherScatterLinear(gather::Linear::leaf(ctx, root, bytes, true))
        }
        (C::Scatterv, A::Linear) => {
            Flat::GatherScatterLinear(gather::Linear::new(ctx, root, vsend()?, true))
        }
        (C::Gather, A::Binomial) => {
            regular()?;
            Flat::GatherScatterBinomial(gather::Binomial::gather(ctx, root, bytes))
        }
        (C::Scatter, A::Binomial) => {
            regular()?;
            Flat::GatherScatterBinomial(gather::Binomial::scatter(ctx, root, bytes))
        }
        (C::ReduceScatterBlock, A::Ring) => {
            Flat::ReduceScatterRing(reduce_scatter::Ring::new(ctx, regular()?, dtype, rop))
        }
        (C::ReduceScatter, A::Ring) => Flat::ReduceScatterRing(reduce_scatter::Ring::new(
            ctx,
            vector_fits(vrecv()?, ctx.size)?,
            dtype,
            rop,
        )),
        (C::ReduceScatterBlock, A::ReduceThenScatter) => Flat::ReduceThenScatter(
            reduce_scatter::ReduceThenScatter::new(ctx, regular()?, dtype, rop),
        ),
        (C::ReduceScatter, A::ReduceThenScatter) => {
            Flat::ReduceThenScatter(reduce_scatter::ReduceThenScatter::new(
                ctx,
                vector_fits(vrecv()?, ctx.size)?,
                dtype,
                rop,
            ))
        }
        (C::Scan | C::Exscan, A::Linear) => {
            Flat::ScanLinear(scan::Linear::new(ctx, count, dtype, rop, op == C::Exscan))
        }
        (C::Scan | C::Exscan, A::RecursiveDoubling) => Flat::ScanRecursiveDoubling(
            scan::RecursiveDoubling::new(ctx, count, dtype, rop, op == C::Exscan),
        ),
        _ => return Err(CollError::AlgorithmNotFor(alg, op)),
    })
}

/// Checks that every byte offset of `layout` over `size` ranks fits a `usize`.
fn layout_fits(layout: &BlockLayout<'_>, size: u32) -> Result<(), CollError> {
    if let BlockLayout::Regular { bytes } = layout {
        bytes.checked_mul(size as usize).ok_or(CollError::TooLarge)?;
    }
    Ok(())
}

/// Checks that the block a rank sends itself is as long as the block it receives from
/// itself (the schedule copies one onto the other), else [`CollError::BadBlocks`].
fn own_blocks_match<'a>(
    send: BlockLayout<'a>,
    recv: BlockLayout<'a>,
    rank: u32,
) -> Result<(BlockLayout<'a>, BlockLayout<'a>), CollError> {
    if send.len(rank) == recv.len(rank) {
        Ok((send, recv))
    } else {
        Err(CollError::BadBlocks)
    }
}

/// Checks that the whole vector of a reduce-scatter `layout` leaves room for the copies the
/// algorithms keep in scratch: like a message (see `CollArgs::bytes_for`), `size + 4` of
/// it must fit a `usize`. Absurd counts or displacements are [`CollError::TooLarge`] here
/// rather than an overflowing scratch size.
fn vector_fits(layout: BlockLayout<'_>, size: u32) -> Result<BlockLayout<'_>, CollError> {
    layout.extent(size).checked_mul(size as usize + 4).ok_or(CollError::TooLarge)?;
    Ok(layout)
}

/// Linear barrier and linear allreduce: a linear reduce to rank 0, then a linear broadcast.
fn linear_reduce_bcast<'a>(
    op: CollOp,
    ctx: Ctx,
    args: &CollArgs<'a>,
) -> Result<Phases<'a>, CollError> {
    let count = if op == CollOp::Barrier { 0 } else { args.count };
    if op == CollOp::Allreduce {
        args.check_op()?;
    }
    let bytes = args.bytes_for(count, ctx.size)?;
    let up = reduce::Linear::new(ctx, 0, count, args.dtype, args.op);
    let scratch = up.scratch();
    let phase = |flat| Some(Phase { flat, peers: PeerMap::Same, bufs: BufMap::SAME });
    Ok(Phases::new(
        [
            phase(Flat::ReduceLinear(up)),
            phase(Flat::BcastLinear(bcast::Linear::new(ctx, 0, bytes))),
            None,
            None,
        ],
        scratch,
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_schedule_stays_small() {
        // A caller keeps one per collective in flight; composed schedules keep only their
        // current phase.
        let size = core::mem::size_of::<super::Schedule<'_>>();
        std::eprintln!("schedule: {size} bytes");
        assert!(size <= 512);
    }

    #[test]
    fn alltoallv_refuses_a_self_block_of_two_lengths() {
        // The copy of a rank's own block once had a source and destination of different
        // lengths, breaking `Step::Copy`'s contract.
        use crate::coll::{Algorithm, Blocks, CollArgs, CollError, CollOp, Ctx, Datatype};
        let (sc, rc, displs) = ([2, 1], [2, 3], [0, 4]);
        let args = CollArgs::new(1, Datatype::I32)
            .with_send(Blocks { counts: &sc, displs: &displs })
            .with_recv(Blocks { counts: &rc, displs: &displs });
        for alg in [Algorithm::Linear, Algorithm::Pairwise] {
            let ok = super::Schedule::intra(CollOp::Alltoallv, alg, Ctx::new(0, 2).unwrap(), &args);
            assert!(ok.is_ok(), "{}", alg.name());
            let bad =
                super::Schedule::intra(CollOp::Alltoallv, alg, Ctx::new(1, 2).unwrap(), &args);
            assert_eq!(bad.err(), Some(CollError::BadBlocks), "{}", alg.name());
        }
    }

    #[test]
    fn absurd_reduce_scatter_layouts_are_too_large() {
        // The whole vector's extent once overflowed the scratch size (2 × extent).
        use crate::coll::{Algorithm, Blocks, CollArgs, CollError, CollOp, Ctx, Datatype};
        let counts = [1, 1];
        let displs = [0, usize::MAX / 8];
        let args =
            CollArgs::new(1, Datatype::I64).with_recv(Blocks { counts: &counts, displs: &displs });
        let ctx = Ctx::new(1, 2).unwrap();
        for alg in [Algorithm::Ring, Algorithm::ReduceThenScatter] {
            let s = super::Schedule::intra(CollOp::ReduceScatter, alg, ctx, &args);
            assert_eq!(s.err(), Some(CollError::TooLarge), "{}", alg.name());
        }
    }
}
