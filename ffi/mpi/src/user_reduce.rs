//! User operations on datatypes core's schedules cannot take (non-contiguous, or of an
//! extent that is no core element): every contribution is gathered (to the root, or to
//! all) and combined here in rank order, `x0 op (x1 op (... op xn-1))`, with the
//! program's function on buffers laid out as the datatype says.

use std::ffi::{c_int, c_void};

use commcore::coll::{CollArgs, CollOp, Datatype, Root};
use commcore_linux::runtime::Comm;

use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::pack::Place;
use crate::typemap::layout;

/// Whether user operation `op` on `datatype` takes this path.
pub(crate) fn needed(datatype: c_int, op: c_int) -> bool {
    if !crate::ops::is_user(op) {
        return false;
    }
    layout(datatype).is_ok_and(|(info, _)| !crate::ops::core_takes(&info))
}

/// `count` elements of `datatype` in memory of their own, filled from `packed`.
struct Laid {
    /// Held, not read: `base` points into it.
    _memory: Vec<u8>,
    /// Where element 0 starts: the memory less the datatype's true lower bound.
    base: usize,
    count: c_int,
    datatype: c_int,
}

impl Laid {
    fn new(packed: &[u8], count: c_int, datatype: c_int) -> MpiResult<Self> {
        let span = crate::arguments::span(count.max(0) as usize, datatype)?;
        let Ok(len) = usize::try_from(span.end - span.start) else {
            return fail(MPI_ERR_ARG, "the elements span more than the address space");
        };
        let mut memory = vec![0u8; len.max(1)];
        // The lowest byte the elements touch is the memory's first.
        let base = (memory.as_mut_ptr() as usize).wrapping_sub(span.start as usize);
        let laid = Laid { _memory: memory, base, count, datatype };
        // SAFETY: the elements lie in `memory`, from the true lower bound on.
        unsafe { laid.place()?.unpack(packed) }?;
        Ok(laid)
    }

    fn place(&self) -> MpiResult<Place> {
        Place::new(self.base as *const c_void, self.count, self.datatype)
    }

    fn packed(&self) -> MpiResult<Vec<u8>> {
        // SAFETY: the elements lie in `memory`.
        Ok(unsafe { self.place()?.outgoing() }?.into_owned())
    }
}

/// Combines the `n` contributions of `each` bytes in `all` in rank order: the result packed.
fn combine(
    all: &[u8],
    each: usize,
    count: c_int,
    datatype: c_int,
    op: c_int,
) -> MpiResult<Vec<u8>> {
    let parts: Vec<&[u8]> = all.chunks(each.max(1)).collect();
    let Some((last, rest)) = parts.split_last() else { return Ok(Vec::new()) };
    let acc = Laid::new(last, count, datatype)?;
    for part in rest.iter().rev() {
        let input = Laid::new(part, count, datatype)?;
        let (mut n, mut dt) = (count, datatype);
        // SAFETY: both lay out `count` elements of `datatype` in memory of their own.
        unsafe {
            crate::ops::call(
                op,
                input.base as *mut c_void,
                acc.base as *mut c_void,
                &mut n,
                &mut dt,
            )
        }?;
    }
    acc.packed()
}

/// `MPI_Reduce` (root `Some`) or `MPI_Allreduce` (`None`) on an intra-communicator:
/// `send` is this rank's contribution, packed; the result, packed, where it goes.
pub(crate) fn reduce(
    c: &Comm,
    send: &[u8],
    count: c_int,
    datatype: c_int,
    op: c_int,
    root: Option<usize>,
) -> MpiResult<Option<Vec<u8>>> {
    intra(c)?;
    let here = root.map_or(true, |r| r == c.rank());
    let mut all = vec![0u8; if here { send.len() * c.size() } else { 0 }];
    let args =
        CollArgs::new(send.len(), Datatype::U8).with_root(Root::Rank(root.unwrap_or(0) as u32));
    let gather = if root.is_some() { CollOp::Gather } else { CollOp::Allgather };
    c.collective(gather, &args, send, &mut all)?;
    if !here {
        return Ok(None);
    }
    combine(&all, send.len(), count, datatype, op).map(Some)
}

/// Every contribution gathered here, then the first `upto` combined (`MPI_Scan`: this
/// rank's and those before; `MPI_Exscan`: those before): the result, packed.
pub(crate) fn prefix(
    c: &Comm,
    send: &[u8],
    count: c_int,
    datatype: c_int,
    op: c_int,
    upto: usize,
) -> MpiResult<Vec<u8>> {
    intra(c)?;
    let mut all = vec![0u8; send.len() * c.size()];
    let args = CollArgs::new(send.len(), Datatype::U8);
    c.collective(CollOp::Allgather, &args, send, &mut all)?;
    combine(&all[..send.len() * upto], send.len(), count, datatype, op)
}

/// `MPI_Reduce_scatter` on an intra-communicator: of the whole vector (`send`, this rank's,
/// packed), this rank's `counts[rank]` elements, unpacked at `recvbuf`.
///
/// # Safety
/// `recvbuf` has room for them.
pub(crate) unsafe fn scatter(
    c: &Comm,
    send: &[u8],
    counts: &[usize],
    recvbuf: *mut c_void,
    datatype: c_int,
    op: c_int,
) -> MpiResult {
    let total: usize = counts.iter().sum();
    let whole = prefix(c, send, total as c_int, datatype, op, c.size())?;
    let per = whole.len().checked_div(total).unwrap_or(0);
    let from = counts[..c.rank()].iter().sum::<usize>() * per;
    let mine = &whole[from..from + counts[c.rank()] * per];
    // SAFETY: the caller's contract.
    unsafe { Place::new(recvbuf, counts[c.rank()] as c_int, datatype)?.unpack(mine) }
}

fn intra(c: &Comm) -> MpiResult {
    if c.is_inter() {
        let message =
            "user operations on this datatype over inter-communicators are not provided yet";
        return fail(MPI_ERR_UNSUPPORTED_OPERATION, message);
    }
    Ok(())
}
