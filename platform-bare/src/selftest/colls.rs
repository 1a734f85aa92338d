//! Every intra-communicator collective × algorithm, run through the in-memory executor
//! and checked on every rank.

use commcore::coll::{
    ctor, Algorithm, Blocks, CollArgs, CollOp, Ctx, Datatype, NodeLayout, Root, Schedule,
};

use super::expect::{fill, needed, Layouts, Lens, RankIo, Reduction};
use super::SelftestError;
use crate::exec::Executor;
use crate::transport::{RankBufs, RankRun};

/// Bytes of each rank's send, receive and expected buffers.
pub const SLOT_BYTES: usize = 512;
/// Bytes of each rank's scratch, and of the bounce buffer.
const SCRATCH_BYTES: usize = 2048;
/// Elements per block (per message for the non-gathering operations).
const COUNT: usize = 3;
/// Ranks a node holds in the hierarchical layout.
const PER_NODE: u32 = 4;
/// Passes the executor may take for one collective.
const MAX_PASSES: u64 = 100_000;
/// Receives a rank may have outstanding.
const PENDING: usize = 32;

/// Buffers for `P` ranks: zero-initialised, so a `static` costs no image bytes.
#[derive(Debug)]
pub struct CollBuffers<const P: usize> {
    send: [[u8; SLOT_BYTES]; P],
    recv: [[u8; SLOT_BYTES]; P],
    want: [[u8; SLOT_BYTES]; P],
    scratch: [[u8; SCRATCH_BYTES]; P],
    temp: [u8; SCRATCH_BYTES],
}

impl<const P: usize> CollBuffers<P> {
    /// Zeroed buffers.
    pub const fn new() -> Self {
        Self {
            send: [[0; SLOT_BYTES]; P],
            recv: [[0; SLOT_BYTES]; P],
            want: [[0; SLOT_BYTES]; P],
            scratch: [[0; SCRATCH_BYTES]; P],
            temp: [0; SCRATCH_BYTES],
        }
    }
}

impl<const P: usize> Default for CollBuffers<P> {
    fn default() -> Self {
        Self::new()
    }
}

/// What [`collectives`] ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollReport {
    /// Ranks.
    pub ranks: u32,
    /// Collectives run (operation × algorithm × root × reduction).
    pub runs: u32,
    /// Distinct (operation, algorithm) pairs run.
    pub pairs: u32,
    /// Steps executed over all ranks and runs.
    pub steps: u64,
    /// Messages sent.
    pub messages: u64,
    /// Payload bytes sent.
    pub bytes: u64,
}

/// The roots a rooted operation runs with: the first, the second and the last rank.
fn roots(op: CollOp, p: u32) -> heapless::Vec<u32, 3> {
    let candidates: &[u32] = if op.rooted() { &[0, 1, p.saturating_sub(1)] } else { &[0] };
    let mut roots = heapless::Vec::new();
    for &root in candidates {
        if root < p.max(1) && !roots.contains(&root) {
            // Cannot fail: at most three candidates.
            let _ = roots.push(root);
        }
    }
    roots
}

/// Runs every operation with every algorithm core offers for it (the flat ones and the
/// hierarchical one over nodes of four ranks) for `P` ranks: rooted operations at roots
/// 0, 1 and P-1, reductions with SUM, MAX and (where the algorithm keeps rank order) a
/// non-commutative user operation, all on u32. Every checked rank's receive
/// buffer must equal the directly computed one.
pub fn collectives<const P: usize, const R: usize, const D: usize, const M: usize>(
    bufs: &mut CollBuffers<P>,
    exec: &mut Executor<'_, R, D, M>,
) -> Result<CollReport, SelftestError> {
    let p = P as u32;
    if P == 0 || needed(P, COUNT) > SLOT_BYTES {
        return Err(SelftestError::TooSmall {
            what: "collective buffers",
            needed: needed(P, COUNT),
        });
    }
    let nodes: [u32; P] = core::array::from_fn(|r| r as u32 / PER_NODE);
    let mut layout_words = [[0u32; 5]; P];
    let layout = NodeLayout::build(&nodes, layout_words.as_flattened_mut())
        .map_err(|_| SelftestError::TooSmall { what: "node layout", needed: 5 * P })?;
    let mut report = CollReport { ranks: p, ..CollReport::default() };
    for op in CollOp::ALL {
        for alg in Algorithm::ALL {
            let hier = alg == Algorithm::Hierarchical && alg.implements(op);
            if !hier && ctor::constructor(op, alg).is_err() {
                continue;
            }
            report.pairs += 1;
            // Algorithms that combine out of rank order refuse a non-commutative operation.
            let rops: &[Reduction] = match (op.reduces(), alg.reorders()) {
                (false, _) => &[Reduction::Sum],
                (true, true) => &[Reduction::Sum, Reduction::Max],
                (true, false) => &[Reduction::Sum, Reduction::Max, Reduction::First],
            };
            for root in roots(op, p) {
                for &rop in rops {
                    let case = Case { op, alg, root, rop, layout: hier.then_some(layout) };
                    run_case(&case, bufs, exec, &mut report)?;
                }
            }
        }
    }
    Ok(report)
}

/// One collective to run.
struct Case<'l> {
    op: CollOp,
    alg: Algorithm,
    root: u32,
    rop: Reduction,
    layout: Option<NodeLayout<'l>>,
}

fn run_case<const P: usize, const R: usize, const D: usize, const M: usize>(
    case: &Case<'_>,
    bufs: &mut CollBuffers<P>,
    exec: &mut Executor<'_, R, D, M>,
    report: &mut CollReport,
) -> Result<(), SelftestError> {
    let Case { op, alg, root, rop, .. } = *case;
    let layouts: Layouts<P> = Layouts::new(P, COUNT, root as usize);
    let mut lens = [Lens::default(); P];
    for (r, len) in lens.iter_mut().enumerate() {
        let io =
            RankIo { send: &mut bufs.send[r], recv: &mut bufs.recv[r], want: &mut bufs.want[r] };
        *len = fill(op, rop, P, r, root as usize, COUNT, &layouts, io);
    }
    let mut runs: heapless::Vec<RankRun<'_, PENDING>, P> = heapless::Vec::new();
    for r in 0..P {
        let schedule = schedule(case, r as u32, &layouts)?;
        // Cannot fail: one run per rank, `P` of them.
        let _ = runs.push(RankRun::new(schedule));
    }
    let mut rank_bufs: heapless::Vec<RankBufs<'_>, P> = bufs
        .send
        .iter()
        .zip(bufs.recv.iter_mut())
        .zip(bufs.scratch.iter_mut())
        .zip(&lens)
        .map(|(((send, recv), scratch), len)| RankBufs {
            send: &send[..len.send],
            recv: &mut recv[..len.recv],
            scratch,
        })
        .collect();
    let stats = exec
        .run(&mut runs, &mut rank_bufs, &mut bufs.temp, MAX_PASSES)
        .map_err(|error| SelftestError::Exec { op, alg, error })?;
    drop(rank_bufs);
    for (r, len) in lens.iter().enumerate() {
        if len.checked && bufs.recv[r][..len.recv] != bufs.want[r][..len.recv] {
            return Err(SelftestError::CollWrong { op, alg, root, rank: r as u32 });
        }
    }
    report.runs += 1;
    report.steps += stats.steps;
    report.messages += stats.messages;
    report.bytes += stats.bytes;
    Ok(())
}

/// Rank `r`'s schedule of `case`.
fn schedule<'a, const P: usize>(
    case: &Case<'a>,
    r: u32,
    layouts: &'a Layouts<P>,
) -> Result<Schedule<'a>, SelftestError> {
    let Case { op, alg, root, rop, layout } = *case;
    let blocks = |l: &'a super::expect::Layout<P>| Blocks { counts: &l.counts, displs: &l.displs };
    let mut args =
        CollArgs::new(COUNT, Datatype::U32).with_op(rop.op()).with_root(Root::Rank(root));
    match op {
        CollOp::Allgatherv | CollOp::Gatherv | CollOp::ReduceScatter => {
            args = args.with_recv(blocks(&layouts.shared))
        }
        CollOp::Scatterv => args = args.with_send(blocks(&layouts.shared)),
        CollOp::Alltoallv => {
            args = args
                .with_send(blocks(&layouts.sends[r as usize]))
                .with_recv(blocks(&layouts.recvs[r as usize]))
        }
        _ => {}
    }
    let built = match layout {
        Some(layout) => Schedule::hier(op, r, layout, &args),
        None => Ctx::new(r, P as u32).and_then(|ctx| Schedule::intra(op, alg, ctx, &args)),
    };
    built.map_err(|error| SelftestError::Schedule { op, alg, error })
}

#[cfg(test)]
mod tests {
    use std::boxed::Box;

    use super::*;
    use crate::exec::Mailboxes;

    fn run<const P: usize, const D: usize>() -> CollReport {
        let mut bufs: Box<CollBuffers<P>> = Box::default();
        let mut boxes: Box<Mailboxes<17, D, 512>> = Box::default();
        let mut exec = Executor::new(&mut boxes);
        collectives(&mut bufs, &mut exec).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_collective_of_seventeen_ranks_gives_the_computed_result() {
        let report = run::<17, 4>();
        assert_eq!(report.ranks, 17);
        // 38 flat (operation, algorithm) pairs and 5 hierarchical ones.
        assert_eq!(report.pairs, 43);
        assert!(report.runs > report.pairs && report.messages > 0, "{report:?}");
    }

    #[test]
    fn one_slot_queues_and_other_sizes_still_complete() {
        let deep = run::<17, 4>();
        let shallow = run::<17, 1>();
        assert_eq!((shallow.runs, shallow.messages), (deep.runs, deep.messages));
        for report in [run::<1, 2>(), run::<2, 2>(), run::<5, 2>(), run::<8, 2>()] {
            assert!(report.runs > 0);
        }
    }

    #[test]
    fn the_roots_are_distinct() {
        assert_eq!(roots(CollOp::Bcast, 17), [0, 1, 16]);
        assert_eq!(roots(CollOp::Bcast, 1), [0]);
        assert_eq!(roots(CollOp::Bcast, 2), [0, 1]);
        assert_eq!(roots(CollOp::Allreduce, 17), [0]);
    }
}
