//! Hierarchical collectives: a node-local phase, a phase among one representative per
//! node (the leaders), and a node-local phase, so that only leaders cross node
//! boundaries. Built from flat algorithms on the sub-groups; peers and buffers are
//! translated per phase, nothing is allocated.

use super::algo::{
    allgather, allreduce, barrier, bcast, copy, gather, reduce, BlockLayout, Ctx, Emit,
};
use super::args::{Algorithm, CollArgs, CollOp};
use super::datatype::Datatype;
use super::error::CollError;
use super::layout::NodeLayout;
use super::op::{Op, ReduceOp};
use super::schedule::{intra_root, BufMap, Flat, PeerMap, Phase, Phases};
use super::step::{Buf, Region};

/// Leaders copy the node-sorted bundle in scratch to each rank's block of `Recv`.
#[derive(Clone, Copy, Debug)]
pub struct Unpack<'a> {
    order: &'a [u32],
    bytes: usize,
}

impl<'a> Unpack<'a> {
    pub(crate) fn rounds(&self) -> u32 {
        1
    }

    pub(crate) fn step(&mut self, _round: u32, index: u32) -> Emit {
        let Some(&rank) = self.order.get(index as usize) else { return Emit::End };
        let b = self.bytes;
        copy(
            Region::new(Buf::Scratch, index as usize * b, b),
            Region::new(Buf::Recv, rank as usize * b, b),
        )
    }
}

/// Message size above which the leaders' allreduce switches to Rabenseifner.
const LEADERS_LARGE: usize = 64 * 1024;

fn local<'a>(flat: Flat<'a>, layout: NodeLayout<'a>, node: u32, bufs: BufMap) -> Option<Phase<'a>> {
    Some(Phase { flat, peers: PeerMap::Members(layout, node), bufs })
}

fn leaders<'a>(
    flat: Flat<'a>,
    layout: NodeLayout<'a>,
    substitute: Option<(u32, u32)>,
    bufs: BufMap,
) -> Option<Phase<'a>> {
    Some(Phase { flat, peers: PeerMap::Leaders(layout, substitute), bufs })
}

/// The hierarchical schedule of `op` for `rank`. Reductions need a commutative
/// operation (node groups are not contiguous in rank order).
pub(crate) fn schedule<'a>(
    op: CollOp,
    rank: u32,
    layout: NodeLayout<'a>,
    args: &CollArgs<'a>,
) -> Result<Phases<'a>, CollError> {
    let (node, li) = layout.locate(rank).ok_or(CollError::BadRoot)?;
    let lctx = Ctx::new(li, layout.node_size(node))?;
    let nctx = Ctx::new(node, layout.nodes())?;
    let is_leader = li == 0;
    let (count, dtype, rop) = (args.count, args.dtype, args.op);
    let b = args.bytes_for(count, layout.size())?;
    if op.reduces() {
        args.check_op()?;
        if !rop.is_commutative() {
            return Err(CollError::NotCommutative(Algorithm::Hierarchical));
        }
    }
    let same = BufMap::SAME;
    Ok(match op {
        CollOp::Bcast => {
            let root = intra_root(args.root, layout.size())?;
            let (rn, rl) = layout.locate(root).ok_or(CollError::BadRoot)?;
            let in_leaders = (is_leader && node != rn) || rank == root;
            let up = bcast::Binomial::new(nctx, rn, b);
            let lroot = if node == rn { rl } else { 0 };
            Phases::new(
                [
                    in_leaders
                        .then(|| leaders(Flat::BcastBinomial(up), layout, Some((rn, root)), same))
                        .flatten(),
                    local(
                        Flat::BcastBinomial(bcast::Binomial::new(lctx, lroot, b)),
                        layout,
                        node,
                        same,
                    ),
                    None,
                    None,
                ],
                0,
            )
        }
        CollOp::Reduce => {
            let root = intra_root(args.root, layout.size())?;
            let (rn, rl) = layout.locate(root).ok_or(CollError::BadRoot)?;
            let in_leaders = (is_leader && node != rn) || rank == root;
            let lroot = if node == rn { rl } else { 0 };
            let down = reduce::Binomial::new(lctx, lroot, count, dtype, rop);
            let phase1 = same.with(Buf::Recv, Buf::Scratch, 0).with(Buf::Scratch, Buf::Scratch, b);
            let up = reduce::Binomial::new(nctx, rn, count, dtype, rop);
            let phase2 = same.with(Buf::Send, Buf::Scratch, 0).with(Buf::Scratch, Buf::Scratch, b);
            Phases::new(
                [
                    local(Flat::ReduceBinomial(down), layout, node, phase1),
                    in_leaders
                        .then(|| {
                            leaders(Flat::ReduceBinomial(up), layout, Some((rn, root)), phase2)
                        })
                        .flatten(),
                    None,
                    None,
                ],
                3 * b,
            )
        }
        CollOp::Allreduce => {
            let down = reduce::Binomial::new(lctx, 0, count, dtype, rop);
            let phase1 = same.with(Buf::Recv, Buf::Scratch, 0).with(Buf::Scratch, Buf::Scratch, b);
            let across = if b > LEADERS_LARGE {
                Flat::AllreduceRabenseifner(allreduce::Rabenseifner::new(nctx, count, dtype, rop))
            } else {
                Flat::AllreduceRecursiveDoubling(allreduce::RecursiveDoubling::new(
                    nctx, count, dtype, rop,
                ))
            };
            let phase2 = same.with(Buf::Send, Buf::Scratch, 0).with(Buf::Scratch, Buf::Scratch, b);
            Phases::new(
                [
                    local(Flat::ReduceBinomial(down), layout, node, phase1),
                    is_leader.then(|| leaders(across, layout, None, phase2)).flatten(),
                    local(
                        Flat::BcastBinomial(bcast::Binomial::new(lctx, 0, b)),
                        layout,
                        node,
                        same,
                    ),
                    None,
                ],
                3 * b,
            )
        }
        CollOp::Barrier => {
            let nothing = Op::Builtin(ReduceOp::Bor);
            let down = reduce::Binomial::new(lctx, 0, 0, Datatype::U8, nothing);
            Phases::new(
                [
                    local(Flat::ReduceBinomial(down), layout, node, same),
                    is_leader
                        .then(|| {
                            leaders(
                                Flat::BarrierDissemination(barrier::Dissemination::new(nctx)),
                                layout,
                                None,
                                same,
                            )
                        })
                        .flatten(),
                    local(
                        Flat::BcastBinomial(bcast::Binomial::new(lctx, 0, 0)),
                        layout,
                        node,
                        same,
                    ),
                    None,
                ],
                0,
            )
        }
        CollOp::Allgather => {
            let p = layout.size() as usize;
            let total = p.checked_mul(b).ok_or(CollError::TooLarge)?;
            let bundle_at = layout.starts()[node as usize] as usize * b;
            let phase1 = same.with(Buf::Recv, Buf::Scratch, bundle_at).with(
                Buf::Scratch,
                Buf::Scratch,
                total,
            );
            let grouped = BlockLayout::Grouped { starts: layout.starts(), bytes: b };
            let phase2 =
                same.with(Buf::Send, Buf::Scratch, bundle_at).with(Buf::Recv, Buf::Scratch, 0);
            let unpack = Unpack { order: layout.order(), bytes: b };
            let gather_in = gather::Binomial::gather(lctx, 0, b);
            let scratch = total + Flat::GatherScatterBinomial(gather_in).scratch();
            Phases::new(
                [
                    local(Flat::GatherScatterBinomial(gather_in), layout, node, phase1),
                    is_leader
                        .then(|| {
                            leaders(
                                Flat::AllgatherRecursiveDoubling(
                                    allgather::RecursiveDoubling::new(nctx, grouped),
                                ),
                                layout,
                                None,
                                phase2,
                            )
                        })
                        .flatten(),
                    is_leader.then_some(Phase {
                        flat: Flat::Unpack(unpack),
                        peers: PeerMap::Same,
                        bufs: same,
                    }),
                    local(
                        Flat::BcastBinomial(bcast::Binomial::new(lctx, 0, total)),
                        layout,
                        node,
                        same,
                    ),
                ],
                scratch,
            )
        }
        _ => return Err(CollError::AlgorithmNotFor(Algorithm::Hierarchical, op)),
    })
}
