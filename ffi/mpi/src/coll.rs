//! Collectives on contiguous buffers, with predefined and user reductions and
//! with `MPI_IN_PLACE`, on intra- and inter-communicators (the gathering and scattering
//! ones are in `coll_blocks`).

use std::ffi::{c_int, c_void};

use commcore::coll::{reduce, Blocks, CollArgs, CollOp, Datatype, Op, Root};
use commcore_linux::runtime::Comm;

use crate::arguments::{distinct, distinct_at_root};
use crate::call::mpi_fn;
use crate::consts::*;
use crate::datatype::reduction;
use crate::error::{fail, MpiResult};
use crate::p2p::on_comm;
use crate::pack::{copy, Incoming, Place};
use crate::pair::{padded, widened, Padded};
use crate::ptr::{array, in_place};

/// Runs blocking collective `f` on `comm` after the nonblocking ones started before it.
pub(crate) fn on_coll<T>(comm: c_int, f: impl FnOnce(&Comm) -> MpiResult<T>) -> MpiResult<T> {
    crate::progress::drain(comm);
    on_comm(comm, f)
}

/// The root as core takes it: a rank (of the remote group, on an inter-communicator),
/// or on an inter-communicator `MPI_ROOT` (this process) or `MPI_PROC_NULL` (another
/// process of its group).
pub(crate) fn root_of(c: &Comm, root: c_int) -> MpiResult<Root> {
    let ranks = c.remote_size().unwrap_or(c.size());
    match root {
        MPI_ROOT if c.is_inter() => Ok(Root::Here),
        MPI_PROC_NULL if c.is_inter() => Ok(Root::Elsewhere),
        r if usize::try_from(r).is_ok_and(|r| r < ranks) => Ok(Root::Rank(r as u32)),
        r => fail(MPI_ERR_ROOT, format!("root {r} is not a rank of the communicator")),
    }
}

/// Whether this process is the root (it holds the gathered or scattered side).
pub(crate) fn is_root(c: &Comm, root: Root) -> bool {
    match root {
        Root::Here => true,
        Root::Rank(r) => !c.is_inter() && r as usize == c.rank(),
        Root::Elsewhere => false,
    }
}

/// Whether this process contributes or takes data (all but the root's idle group-mates
/// and, on an inter-communicator, the root itself).
pub(crate) fn takes_part(c: &Comm, root: Root) -> bool {
    match root {
        Root::Rank(_) => true,
        Root::Here | Root::Elsewhere => !c.is_inter(),
    }
}

/// The number of blocks of a gathered buffer: the remote group's size on an
/// inter-communicator.
pub(crate) fn blocks(c: &Comm) -> usize {
    c.remote_size().unwrap_or(c.size())
}

/// Runs reducing collective `op` of `count` elements.
fn reducing(
    c: &Comm,
    op: CollOp,
    dtype: Datatype,
    rop: Op,
    count: usize,
    send: &[u8],
    recv: &mut [u8],
) -> MpiResult {
    let args = CollArgs::new(count, dtype).with_op(rop);
    Ok(c.collective(op, &args, send, recv)?)
}

/// The operand of a reducing call, packed: the program's, or for `MPI_IN_PLACE` the
/// receive buffer's.
///
/// # Safety
/// The buffer read holds `count` elements of `datatype`.
unsafe fn operand(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: c_int,
) -> MpiResult<Vec<u8>> {
    let from = if in_place(sendbuf) { recvbuf as *const c_void } else { sendbuf };
    // SAFETY: the caller's contract.
    unsafe { copy(from, count, datatype) }
}

/// The receive side of a reducing call: `count` elements at `recvbuf`.
///
/// # Safety
/// `recvbuf` has room for them.
unsafe fn result<'a>(
    recvbuf: *mut c_void,
    count: c_int,
    datatype: c_int,
    pair: Option<Padded>,
) -> MpiResult<Incoming<'a>> {
    // SAFETY: the caller's contract.
    unsafe { Incoming::reduced(Place::new(recvbuf, count, datatype)?, datatype, pair, false) }
}

/// The operand of a reduction, as core's elements (`pair`: padded pairs).
///
/// # Safety
/// As for [`operand`].
unsafe fn reduced_operand(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: c_int,
    pair: Option<Padded>,
) -> MpiResult<Vec<u8>> {
    // SAFETY: the caller's contract.
    Ok(widened(unsafe { operand(sendbuf, recvbuf, count, datatype) }?, pair))
}

/// `MPI_Scan` and `MPI_Exscan`.
///
/// # Safety
/// The buffers hold `count` elements of `datatype`.
unsafe fn scan(
    op: CollOp,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: c_int,
    rop: c_int,
    comm: c_int,
) -> MpiResult {
    distinct(sendbuf, recvbuf, count > 0)?;
    let rop = crate::wide_ops::op_for(datatype, rop)?;
    if crate::user_reduce::needed(datatype, rop) {
        // SAFETY: the caller's contract.
        let send = unsafe { operand(sendbuf, recvbuf, count, datatype) }?;
        return on_coll(comm, |c| {
            let upto = if op == CollOp::Scan { c.rank() + 1 } else { c.rank() };
            // Every rank takes part; rank 0 of an exclusive scan gets nothing.
            let result = crate::user_reduce::prefix(c, &send, count, datatype, rop, upto)?;
            if upto == 0 {
                return Ok(());
            }
            // SAFETY: the caller's contract.
            unsafe { Place::new(recvbuf, count, datatype)?.unpack(&result) }
        });
    }
    let (dtype, rop) = reduction(datatype, rop)?;
    let pair = padded(dtype, &rop);
    // SAFETY: the caller's contract.
    let (send, mut recv) = unsafe {
        (
            reduced_operand(sendbuf, recvbuf, count, datatype, pair)?,
            result(recvbuf, count, datatype, pair)?,
        )
    };
    on_coll(comm, |c| reducing(c, op, dtype, rop, send.len() / dtype.size(), &send, recv.bytes()))?;
    // SAFETY: the caller's contract.
    unsafe { recv.finish(usize::MAX) }
}

mpi_fn! {
    fn MPI_Barrier / PMPI_Barrier(comm: c_int) {
        on_coll(comm, |c| Ok(c.barrier()?))
    }

    fn MPI_Bcast / PMPI_Bcast(buffer: *mut c_void, count: c_int, datatype: c_int, root: c_int, comm: c_int) {
        on_coll(comm, |c| {
            let root = root_of(c, root)?;
            if root == Root::Elsewhere {
                return Ok(c.bcast_root(&mut [], root)?);
            }
            let mut data = Incoming::inout(Place::new(buffer, count, datatype)?)?;
            c.bcast_root(data.bytes(), root)?;
            data.finish(usize::MAX)
        })
    }

    fn MPI_Reduce / PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, root: c_int, comm: c_int) {
        distinct_at_root(comm, root, sendbuf, recvbuf, count > 0)?;
        let op = crate::wide_ops::op_for(datatype, op)?;
        if crate::user_reduce::needed(datatype, op) {
            return on_coll(comm, |c| {
                let root = match root_of(c, root)? {
                    Root::Rank(r) if !c.is_inter() => r as usize,
                    _ => return fail(MPI_ERR_UNSUPPORTED_OPERATION, "user operations on this datatype over inter-communicators are not provided yet"),
                };
                let send = if c.rank() == root { operand(sendbuf, recvbuf, count, datatype)? } else { copy(sendbuf, count, datatype)? };
                match crate::user_reduce::reduce(c, &send, count, datatype, op, Some(root))? {
                    Some(result) => Place::new(recvbuf, count, datatype)?.unpack(&result),
                    None => Ok(()),
                }
            });
        }
        let (dtype, rop) = reduction(datatype, op)?;
        let pair = padded(dtype, &rop);
        on_coll(comm, |c| {
            let root = root_of(c, root)?;
            let at_root = is_root(c, root);
            let send = match (takes_part(c, root), at_root) {
                (false, _) => Vec::new(),
                (true, true) => reduced_operand(sendbuf, recvbuf, count, datatype, pair)?,
                (true, false) => widened(copy(sendbuf, count, datatype)?, pair),
            };
            let mut recv = if at_root { Some(result(recvbuf, count, datatype, pair)?) } else { None };
            let len = recv.as_mut().map_or(send.len(), |r| r.bytes().len());
            let args = CollArgs::new(len / dtype.size(), dtype).with_op(rop).with_root(root);
            c.collective(CollOp::Reduce, &args, &send, recv.as_mut().map_or(&mut [][..], |r| r.bytes()))?;
            recv.map_or(Ok(()), |r| r.finish(usize::MAX))
        })
    }

    fn MPI_Allreduce / PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, comm: c_int) {
        distinct(sendbuf, recvbuf, count > 0)?;
        let op = crate::wide_ops::op_for(datatype, op)?;
        if crate::user_reduce::needed(datatype, op) {
            let send = operand(sendbuf, recvbuf, count, datatype)?;
            return on_coll(comm, |c| {
                if c.is_inter() {
                    return fail(MPI_ERR_UNSUPPORTED_OPERATION, "user operations on this datatype over inter-communicators are not provided yet");
                }
                match crate::user_reduce::reduce(c, &send, count, datatype, op, None)? {
                    Some(result) => Place::new(recvbuf, count, datatype)?.unpack(&result),
                    None => Ok(()),
                }
            });
        }
        let (dtype, rop) = reduction(datatype, op)?;
        let pair = padded(dtype, &rop);
        let (send, mut recv) = (reduced_operand(sendbuf, recvbuf, count, datatype, pair)?, result(recvbuf, count, datatype, pair)?);
        on_coll(comm, |c| reducing(c, CollOp::Allreduce, dtype, rop, send.len() / dtype.size(), &send, recv.bytes()))?;
        recv.finish(usize::MAX)
    }

    /// `inoutbuf = inbuf op inoutbuf`, element-wise, locally.
    fn MPI_Reduce_local / PMPI_Reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int) {
        if in_place(inbuf) || in_place(inoutbuf) {
            return fail(MPI_ERR_BUFFER, "MPI_IN_PLACE is not a buffer of MPI_Reduce_local");
        }
        distinct(inbuf, inoutbuf, count > 0)?;
        let op = crate::wide_ops::op_for(datatype, op)?;
        let (dtype, rop) = reduction(datatype, op)?;
        let pair = padded(dtype, &rop);
        let src = widened(copy(inbuf, count, datatype)?, pair);
        let mut dst = Incoming::reduced(Place::new(inoutbuf, count, datatype)?, datatype, pair, true)?;
        reduce(&rop, dtype, &src, dst.bytes(), true).or_else(|e| fail(MPI_ERR_OP, e.to_string()))?;
        dst.finish(usize::MAX)
    }

    fn MPI_Scan / PMPI_Scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, comm: c_int) {
        scan(CollOp::Scan, sendbuf, recvbuf, count, datatype, op, comm)
    }

    fn MPI_Exscan / PMPI_Exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, comm: c_int) {
        scan(CollOp::Exscan, sendbuf, recvbuf, count, datatype, op, comm)
    }

    fn MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: c_int, op: c_int, comm: c_int) {
        distinct(sendbuf, recvbuf, recvcount > 0)?;
        let op = crate::wide_ops::op_for(datatype, op)?;
        if crate::user_reduce::needed(datatype, op) {
            return on_coll(comm, |c| {
                let counts = vec![crate::ptr::count(recvcount)?; c.size()];
                let send = operand(sendbuf, recvbuf, (counts[0] * c.size()) as c_int, datatype)?;
                crate::user_reduce::scatter(c, &send, &counts, recvbuf, datatype, op)
            });
        }
        let (dtype, rop) = reduction(datatype, op)?;
        let pair = padded(dtype, &rop);
        on_coll(comm, |c| {
            let total = c_int::try_from(crate::ptr::count(recvcount)? * c.size()).unwrap_or(c_int::MAX);
            let send = reduced_operand(sendbuf, recvbuf, total, datatype, pair)?;
            let mut recv = result(recvbuf, recvcount, datatype, pair)?;
            let n = recv.bytes().len() / dtype.size();
            reducing(c, CollOp::ReduceScatterBlock, dtype, rop, n, &send, recv.bytes())?;
            recv.finish(usize::MAX)
        })
    }

    fn MPI_Reduce_scatter / PMPI_Reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: c_int, op: c_int, comm: c_int) {
        distinct(sendbuf, recvbuf, true)?;
        let op = crate::wide_ops::op_for(datatype, op)?;
        if crate::user_reduce::needed(datatype, op) {
            return on_coll(comm, |c| {
                let counts = array(recvcounts, c.size())?.iter().map(|&n| crate::ptr::count(n)).collect::<MpiResult<Vec<usize>>>()?;
                let send = operand(sendbuf, recvbuf, counts.iter().sum::<usize>() as c_int, datatype)?;
                crate::user_reduce::scatter(c, &send, &counts, recvbuf, datatype, op)
            });
        }
        let (dtype, rop) = reduction(datatype, op)?;
        let pair = padded(dtype, &rop);
        on_coll(comm, |c| {
            let counts = array(recvcounts, c.size())?;
            let total: c_int = counts.iter().map(|&n| crate::ptr::count(n).map(|n| n as c_int)).sum::<MpiResult<c_int>>()?;
            let send = reduced_operand(sendbuf, recvbuf, total, datatype, pair)?;
            let mut recv = result(recvbuf, counts[c.rank()], datatype, pair)?;
            // Elements of `dtype` per element of `datatype`.
            let packed = Place::new(recvbuf, 1, datatype)?.packed_len();
            let per = pair.map_or(packed, |pair| pair.widened_len(packed)) / dtype.size();
            let counts: Vec<usize> = counts.iter().map(|&n| n as usize * per).collect();
            let displs: Vec<usize> = counts.iter().scan(0, |at, &n| { let d = *at; *at += n; Some(d) }).collect();
            // An inter-communicator's vector is the whole of this group's blocks.
            let n = if c.is_inter() { counts.iter().sum() } else { counts[c.rank()] };
            let args = CollArgs::new(n, dtype).with_op(rop).with_recv(Blocks { counts: &counts, displs: &displs });
            c.collective(CollOp::ReduceScatter, &args, &send, recv.bytes())?;
            recv.finish(usize::MAX)
        })
    }
}
