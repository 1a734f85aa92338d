//! Inter-communicator collectives. Rooted and reducing operations run as a local phase
//! inside each group plus an exchange between the groups' leaders (rank 0 of each); the
//! all-to-all kinds and the `v` kinds talk to the remote group directly.

use super::algo::{bcast, gather, pick, reduce, BlockLayout, Ctx, Emit};
use super::args::{Algorithm, CollArgs, CollOp, Root};
use super::datatype::Datatype;
use super::error::CollError;
use super::op::{Op, ReduceOp};
use super::schedule::{BufMap, Flat, PeerMap, Phase, Phases};
use super::step::{Buf, Peer, Region, Step};

/// What one side of a [`RemoteLinear`] moves.
#[derive(Clone, Copy, Debug)]
pub enum Side<'a> {
    /// Nothing.
    Nothing,
    /// One region to or from one remote rank.
    One(u32, Region),
    /// The same region to every remote rank.
    Each(Region),
    /// Block `j` of a layout of `Buf` to or from remote rank `j`.
    Blocks(Buf, BlockLayout<'a>),
}

/// Direct transfers with the remote group in one round.
#[derive(Clone, Copy, Debug)]
pub struct RemoteLinear<'a> {
    remote: u32,
    out: Side<'a>,
    inn: Side<'a>,
}

impl<'a> RemoteLinear<'a> {
    pub(crate) fn rounds(&self) -> u32 {
        1
    }

    fn region(side: &Side<'_>, j: u32) -> Option<Region> {
        match side {
            Side::Nothing => None,
            Side::One(peer, r) => (*peer == j).then_some(*r),
            Side::Each(r) => Some(*r),
            Side::Blocks(buf, layout) => Some(layout.block(*buf, j)),
        }
    }

    pub(crate) fn step(&mut self, _round: u32, index: u32) -> Emit {
        let fanned = |s: &Side<'_>| matches!(s, Side::Each(_) | Side::Blocks(..));
        if !fanned(&self.out) && !fanned(&self.inn) {
            let one = |s: &Side<'_>, send: bool| match *s {
                Side::One(peer, region) => Some(Emit::Step(if send {
                    Step::Send { to: Peer::remote(peer), region }
                } else {
                    Step::Recv { from: Peer::remote(peer), region }
                })),
                _ => None,
            };
            return pick([one(&self.out, true), one(&self.inn, false)], index);
        }
        let (j, incoming) = (index / 2, index % 2 == 1);
        if j >= self.remote {
            return Emit::End;
        }
        let side = if incoming { &self.inn } else { &self.out };
        match Self::region(side, j) {
            Some(region) if incoming => Emit::Step(Step::Recv { from: Peer::remote(j), region }),
            Some(region) => Emit::Step(Step::Send { to: Peer::remote(j), region }),
            None => Emit::Skip,
        }
    }
}

fn phase(flat: Flat<'_>, bufs: BufMap) -> Option<Phase<'_>> {
    Some(Phase { flat, peers: PeerMap::Same, bufs })
}

fn remote<'a>(remote: u32, out: Side<'a>, inn: Side<'a>) -> Flat<'a> {
    Flat::Remote(RemoteLinear { remote, out, inn })
}

fn reg(buf: Buf, offset: usize, len: usize) -> Region {
    Region::new(buf, offset, len)
}

/// The inter-communicator schedule of `op` for rank `ctx.rank` of a local group of
/// `ctx.size`, facing a remote group of `remote_size`.
pub(crate) fn schedule<'a>(
    op: CollOp,
    ctx: Ctx,
    remote_size: u32,
    args: &CollArgs<'a>,
) -> Result<Phases<'a>, CollError> {
    let same = BufMap::SAME;
    let (count, dtype, rop) = (args.count, args.dtype, args.op);
    let b = args.bytes_for(count, ctx.size.max(remote_size))?;
    let r = ctx.rank;
    let leader = r == 0;
    if op.reduces() {
        args.check_op()?;
    }
    if remote_size == 0 {
        return Err(CollError::BadRoot);
    }
    let remote_root = |root: Root| match root {
        Root::Rank(rr) if rr < remote_size => Ok(Some(rr)),
        Root::Rank(_) => Err(CollError::BadRoot),
        Root::Here | Root::Elsewhere => Ok(None),
    };
    let empty = Phases::new([None, None, None, None], 0);
    // Local reduce to rank 0 in rank order, result in Scratch[0..n], inner scratch after it.
    let reduce_up = |elems: usize, n: usize| {
        phase(
            Flat::ReduceBinomial(reduce::Binomial::ordered_into_scratch(ctx, elems, dtype, rop)),
            same.with(Buf::Scratch, Buf::Scratch, 0),
        )
        .map(|p| (p, 2 * n))
    };
    let bcast_down = |n: usize| phase(Flat::BcastBinomial(bcast::Binomial::new(ctx, 0, n)), same);
    // The leaders swap Scratch[0..sent] for the remote group's Recv[0..received].
    let leaders_swap = |sent: usize, received: usize| {
        leader
            .then(|| {
                phase(
                    remote(
                        remote_size,
                        Side::One(0, reg(Buf::Scratch, 0, sent)),
                        Side::One(0, reg(Buf::Recv, 0, received)),
                    ),
                    same,
                )
            })
            .flatten()
    };
    Ok(match op {
        CollOp::Scan | CollOp::Exscan => return Err(CollError::NotOnInterComm(op)),
        CollOp::Bcast => match (args.root, remote_root(args.root)?) {
            (Root::Here, _) => Phases::new(
                [
                    phase(
                        remote(remote_size, Side::One(0, reg(Buf::Recv, 0, b)), Side::Nothing),
                        same,
                    ),
                    None,
                    None,
                    None,
                ],
                0,
            ),
            (_, Some(rr)) => Phases::new(
                [
                    leader
                        .then(|| {
                            phase(
                                remote(
                                    remote_size,
                                    Side::Nothing,
                                    Side::One(rr, reg(Buf::Recv, 0, b)),
                                ),
                                same,
                            )
                        })
                        .flatten(),
                    bcast_down(b),
                    None,
                    None,
                ],
                0,
            ),
            _ => empty,
        },
        CollOp::Reduce => match (args.root, remote_root(args.root)?) {
            (Root::Here, _) => Phases::new(
                [
                    phase(
                        remote(remote_size, Side::Nothing, Side::One(0, reg(Buf::Recv, 0, b))),
                        same,
                    ),
                    None,
                    None,
                    None,
                ],
                0,
            ),
            (_, Some(rr)) => {
                let (up, scratch) = reduce_up(count, b).ok_or(CollError::BadRoot)?;
                Phases::new(
                    [
                        Some(up),
                        leader
                            .then(|| {
                                phase(
                                    remote(
                                        remote_size,
                                        Side::One(rr, reg(Buf::Scratch, 0, b)),
                                        Side::Nothing,
                                    ),
                                    same,
                                )
                            })
                            .flatten(),
                        None,
                        None,
                    ],
                    scratch,
                )
            }
            _ => empty,
        },
        CollOp::Allreduce | CollOp::Barrier => {
            let (elems, n, rop) = if op == CollOp::Barrier {
                (0, 0, Op::Builtin(ReduceOp::Bor))
            } else {
                (count, b, rop)
            };
            let dtype = if op == CollOp::Barrier { Datatype::U8 } else { dtype };
            let up = phase(
                Flat::ReduceBinomial(reduce::Binomial::ordered_into_scratch(
                    ctx, elems, dtype, rop,
                )),
                same,
            );
            Phases::new([up, leaders_swap(n, n), bcast_down(n), None], 2 * n)
        }
        CollOp::Allgather => {
            let mine = (ctx.size as usize).checked_mul(b).ok_or(CollError::TooLarge)?;
            let theirs = (remote_size as usize).checked_mul(b).ok_or(CollError::TooLarge)?;
            let up = gather::Binomial::gather(ctx, 0, b);
            let inner = Flat::GatherScatterBinomial(up).scratch();
            Phases::new(
                [
                    phase(
                        Flat::GatherScatterBinomial(up),
                        same.with(Buf::Recv, Buf::Scratch, 0).with(
                            Buf::Scratch,
                            Buf::Scratch,
                            mine,
                        ),
                    ),
                    leaders_swap(mine, theirs),
                    bcast_down(theirs),
                    None,
                ],
                mine + inner,
            )
        }
        CollOp::Allgatherv => {
            let layout = BlockLayout::varying(args.recv, remote_size, dtype)?;
            single(remote(
                remote_size,
                Side::Each(reg(Buf::Send, 0, b)),
                Side::Blocks(Buf::Recv, layout),
            ))
        }
        CollOp::Alltoall | CollOp::Alltoallv => {
            let (s, v) = if op == CollOp::Alltoall {
                let l = BlockLayout::regular(count, dtype)?;
                (remote_size as usize).checked_mul(b).ok_or(CollError::TooLarge)?;
                (l, l)
            } else {
                (
                    BlockLayout::varying(args.send, remote_size, dtype)?,
                    BlockLayout::varying(args.recv, remote_size, dtype)?,
                )
            };
            single(remote(remote_size, Side::Blocks(Buf::Send, s), Side::Blocks(Buf::Recv, v)))
        }
        CollOp::Gather | CollOp::Gatherv | CollOp::Scatter | CollOp::Scatterv => {
            let scatter = matches!(op, CollOp::Scatter | CollOp::Scatterv);
            let rr = remote_root(args.root)?;
            let layout = || {
                if matches!(op, CollOp::Gather | CollOp::Scatter) {
                    (remote_size as usize).checked_mul(b).ok_or(CollError::TooLarge)?;
                    BlockLayout::regular(count, dtype)
                } else {
                    BlockLayout::varying(
                        if scatter { args.send } else { args.recv },
                        remote_size,
                        dtype,
                    )
                }
            };
            match (args.root, rr, scatter) {
                (Root::Here, _, false) => {
                    single(remote(remote_size, Side::Nothing, Side::Blocks(Buf::Recv, layout()?)))
                }
                (Root::Here, _, true) => {
                    single(remote(remote_size, Side::Blocks(Buf::Send, layout()?), Side::Nothing))
                }
                (_, Some(rr), false) => {
                    single(remote(remote_size, Side::One(rr, reg(Buf::Send, 0, b)), Side::Nothing))
                }
                (_, Some(rr), true) => {
                    single(remote(remote_size, Side::Nothing, Side::One(rr, reg(Buf::Recv, 0, b))))
                }
                _ => empty,
            }
        }
        CollOp::ReduceScatter | CollOp::ReduceScatterBlock => {
            // Send holds the whole vector for the remote group; it is reduced here, handed
            // to the remote leader, and the remote group's vector is scattered here. As MPI
            // says, both vectors are as long as this group's blocks together (`count` a
            // member), so groups of different sizes pass different counts.
            let (elems, layout) = if op == CollOp::ReduceScatterBlock {
                let n = count.checked_mul(ctx.size as usize).ok_or(CollError::TooLarge)?;
                (ctx.size as usize).checked_mul(b).ok_or(CollError::TooLarge)?;
                (n, BlockLayout::regular(count, dtype)?)
            } else {
                (count, BlockLayout::varying(args.recv, ctx.size, dtype)?)
            };
            let out_n = args.bytes_for(elems, 0)?;
            let in_n = layout.extent(ctx.size);
            let (up, reduce_scratch) = reduce_up(elems, out_n).ok_or(CollError::BadRoot)?;
            let at = reduce_scratch;
            let down = match layout {
                BlockLayout::Regular { bytes } => {
                    Flat::GatherScatterBinomial(gather::Binomial::scatter(ctx, 0, bytes))
                }
                _ => Flat::GatherScatterLinear(gather::Linear::new(ctx, 0, layout, true)),
            };
            let down_scratch = down.scratch();
            Phases::new(
                [
                    Some(up),
                    leader
                        .then(|| {
                            phase(
                                remote(
                                    remote_size,
                                    Side::One(0, reg(Buf::Scratch, 0, out_n)),
                                    Side::One(0, reg(Buf::Scratch, at, in_n)),
                                ),
                                same,
                            )
                        })
                        .flatten(),
                    phase(
                        down,
                        same.with(Buf::Send, Buf::Scratch, at).with(
                            Buf::Scratch,
                            Buf::Scratch,
                            at.saturating_add(in_n),
                        ),
                    ),
                    None,
                ],
                at.saturating_add(in_n).saturating_add(down_scratch),
            )
        }
    })
}

fn single(flat: Flat<'_>) -> Phases<'_> {
    Phases::new([phase(flat, BufMap::SAME), None, None, None], 0)
}

/// The algorithm name the inter component reports.
pub const ALGORITHM: Algorithm = Algorithm::Leaders;
