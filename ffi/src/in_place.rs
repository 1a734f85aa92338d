//! In-place collectives through a schedule: the input copied out of the receive buffer
//! first, and the schedule's regions remapped onto that copy.

use commcore_core::coll::{Blocks, Buf, CollOp, Region, Schedule, Step};

use crate::coll::{coll_op, CollValue};
use crate::reduce::datatype;
use crate::result::*;
use crate::schedule::{commcore_coll_args, CallBlocks};

/// How an in-place call is run: the input is copied from the receive buffer into scratch
/// first (the prologue), and the schedule's send regions read that copy. Scatter's root
/// sends its own block into scratch instead of the receive buffer. The call's schedule
/// lives here, and the value's own schedule is empty: the hot path sees its end at once
/// and turns here, so plain calls pay nothing for this.
#[derive(Clone, Copy)]
pub(crate) struct InPlace {
    schedule: Schedule<'static>,
    prologue: Option<Step>,
    send_at: Option<usize>,
    recv_at: Option<usize>,
    /// The end of the scratch the call needs in all.
    pub(crate) end: usize,
}

const ALIGN: usize = 64;

fn align_up(n: usize) -> Outcome<usize> {
    n.checked_add(ALIGN - 1)
        .map(|v| v / ALIGN * ALIGN)
        .ok_or_else(|| Fail::new(COMMCORE_ERR_LENGTH, "scratch size overflows"))
}

fn too_large() -> Fail {
    Fail::new(COMMCORE_ERR_LENGTH, "in-place input overflows the address space")
}

/// Where an in-place call's input lies in the receive buffer, and the remapping.
pub(crate) fn in_place(
    coll: &CollValue,
    args: &commcore_coll_args,
    blocks: &CallBlocks,
    schedule: Schedule<'static>,
) -> Outcome<InPlace> {
    let scratch = schedule.scratch_bytes();
    let op = coll_op(args.coll_op)?;
    let dtype = datatype(args.dtype)?;
    if coll.remote_size != 0 {
        return Err(Fail::arg("in_place is not defined on inter-communicators"));
    }
    let es = dtype.size();
    let (rank, size) = (coll.rank as usize, coll.size as usize);
    let bytes = |elems: usize| elems.checked_mul(es).ok_or_else(too_large);
    let is_root = args.root >= 0 && args.root as usize == rank;
    let root_only = |name: &str| -> Outcome<()> {
        if is_root {
            Ok(())
        } else {
            Err(Fail::arg(format!("in_place {name} is allowed at the root only")))
        }
    };
    let extent = |b: Option<Blocks<'_>>| -> Outcome<usize> {
        let b = b.ok_or_else(|| Fail::arg("in_place needs the receive block list"))?;
        let mut end = 0usize;
        for (c, d) in b.counts.iter().zip(b.displs) {
            end = end.max(c.checked_add(*d).ok_or_else(too_large)?);
        }
        bytes(end)
    };
    let own = |b: Option<Blocks<'_>>| -> Outcome<(usize, usize)> {
        let b = b.ok_or_else(|| Fail::arg("in_place needs the receive block list"))?;
        let (c, d) = (b.counts.get(rank), b.displs.get(rank));
        match (c, d) {
            (Some(&c), Some(&d)) => Ok((bytes(d)?, bytes(c)?)),
            _ => Err(Fail::new(
                COMMCORE_ERR_LENGTH,
                "the receive block list is shorter than the group",
            )),
        }
    };
    let block = bytes(args.count)?;
    let (at, len) = match op {
        CollOp::Allreduce | CollOp::Scan | CollOp::Exscan => (0, block),
        CollOp::Reduce => {
            root_only("reduce")?;
            (0, block)
        }
        CollOp::Allgather => (rank.checked_mul(block).ok_or_else(too_large)?, block),
        CollOp::Gather => {
            root_only("gather")?;
            (rank.checked_mul(block).ok_or_else(too_large)?, block)
        }
        CollOp::Allgatherv => own(blocks.recv())?,
        CollOp::Gatherv => {
            root_only("gatherv")?;
            own(blocks.recv())?
        }
        CollOp::ReduceScatterBlock | CollOp::Alltoall => {
            (0, size.checked_mul(block).ok_or_else(too_large)?)
        }
        CollOp::ReduceScatter | CollOp::Alltoallv => (0, extent(blocks.recv())?),
        CollOp::Scatter | CollOp::Scatterv => {
            root_only("scatter")?;
            let recv_at = align_up(scratch)?;
            let end = recv_at.checked_add(block).ok_or_else(too_large)?;
            return Ok(InPlace {
                schedule,
                prologue: None,
                send_at: None,
                recv_at: Some(recv_at),
                end,
            });
        }
        CollOp::Barrier | CollOp::Bcast => {
            return Err(Fail::arg(format!("{op} takes no in_place")))
        }
    };
    let send_at = align_up(scratch)?;
    let end = send_at.checked_add(len).ok_or_else(too_large)?;
    at.checked_add(len).ok_or_else(too_large)?;
    let prologue = Step::Copy {
        src: Region::new(Buf::Recv, at, len),
        dst: Region::new(Buf::Scratch, send_at, len),
    };
    Ok(InPlace { schedule, prologue: Some(prologue), send_at: Some(send_at), recv_at: None, end })
}

impl InPlace {
    fn map(&self, r: Region) -> Region {
        match (r.buf, self.send_at, self.recv_at) {
            (Buf::Send, Some(at), _) | (Buf::Recv, _, Some(at)) => {
                Region::new(Buf::Scratch, at.saturating_add(r.offset), r.len)
            }
            _ => r,
        }
    }

    fn step(&self, step: Step) -> Step {
        match step {
            Step::Send { to, region } => Step::Send { to, region: self.map(region) },
            Step::Recv { from, region } => Step::Recv { from, region: self.map(region) },
            Step::Reduce { op, dtype, src, dst, src_left } => {
                Step::Reduce { op, dtype, src: self.map(src), dst: self.map(dst), src_left }
            }
            Step::Copy { src, dst } => Step::Copy { src: self.map(src), dst: self.map(dst) },
            Step::Wait => Step::Wait,
        }
    }
}

impl InPlace {
    /// The next step: the prologue, then the schedule's steps remapped.
    #[cold]
    pub(crate) fn next(&mut self) -> Option<Step> {
        if let Some(first) = self.prologue.take() {
            return Some(first);
        }
        let step = self.schedule.next()?;
        Some(self.step(step))
    }
}
