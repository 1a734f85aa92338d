//! Collectives on contiguous buffers, with predefined and user reductions and
//! with `MPI_IN_PLACE`, on intra- and inter-communicators (the gathering and scattering
//! ones are in `coll_blocks`).

use std::ffi::{c_int, c_void};

use commcore::coll::{reduce, Blocks, CollArgs, CollOp, Datatype, Op, Root};
use commcore_linux::runtime::Comm;

use crate::call::mpi_fn;
use crate::consts::*;
use crate::datatype::{reduction, span};
use crate::error::{fail, MpiResult};
use crate::p2p::on_comm;
use crate::ptr::{array, bytes, bytes_mut, in_place};

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

/// The send data of a reducing call: the program's, or a copy of `recv` for `MPI_IN_PLACE`.
///
/// # Safety
/// `sendbuf` is `MPI_IN_PLACE` or holds `len` bytes.
unsafe fn operand(sendbuf: *const c_void, recv: &[u8], len: usize) -> MpiResult<Vec<u8>> {
    if in_place(sendbuf) {
        return Ok(recv[..len.min(recv.len())].to_vec());
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { bytes(sendbuf, len) }?.to_vec())
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
    let (dtype, rop) = reduction(datatype, rop)?;
    let len = span(count, datatype)?;
    // SAFETY: the caller's contract.
    let recv = unsafe { bytes_mut(recvbuf, len) }?;
    // SAFETY: the caller's contract.
    let send = unsafe { operand(sendbuf, recv, len) }?;
    on_coll(comm, |c| reducing(c, op, dtype, rop, len / dtype.size(), &send, recv))
}

mpi_fn! {
    fn MPI_Barrier / PMPI_Barrier(comm: c_int) {
        on_coll(comm, |c| Ok(c.barrier()?))
    }

    fn MPI_Bcast / PMPI_Bcast(buffer: *mut c_void, count: c_int, datatype: c_int, root: c_int, comm: c_int) {
        on_coll(comm, |c| {
            let root = root_of(c, root)?;
            let data = if root == Root::Elsewhere { &mut [] } else { bytes_mut(buffer, span(count, datatype)?)? };
            Ok(c.bcast_root(data, root)?)
        })
    }

    fn MPI_Reduce / PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, root: c_int, comm: c_int) {
        let (dtype, rop) = reduction(datatype, op)?;
        let len = span(count, datatype)?;
        on_coll(comm, |c| {
            let root = root_of(c, root)?;
            let recv = if is_root(c, root) { bytes_mut(recvbuf, len)? } else { &mut [] };
            let send = if takes_part(c, root) { operand(sendbuf, recv, len)? } else { Vec::new() };
            let args = CollArgs::new(len / dtype.size(), dtype).with_op(rop).with_root(root);
            Ok(c.collective(CollOp::Reduce, &args, &send, recv)?)
        })
    }

    fn MPI_Allreduce / PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, comm: c_int) {
        let (dtype, rop) = reduction(datatype, op)?;
        let len = span(count, datatype)?;
        let recv = bytes_mut(recvbuf, len)?;
        let send = operand(sendbuf, recv, len)?;
        on_coll(comm, |c| reducing(c, CollOp::Allreduce, dtype, rop, len / dtype.size(), &send, recv))
    }

    /// `inoutbuf = inbuf op inoutbuf`, element-wise, locally.
    fn MPI_Reduce_local / PMPI_Reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int) {
        let (dtype, rop) = reduction(datatype, op)?;
        let len = span(count, datatype)?;
        let (src, dst) = (bytes(inbuf, len)?, bytes_mut(inoutbuf, len)?);
        reduce(&rop, dtype, src, dst, true)
            .or_else(|e| fail(MPI_ERR_OP, e.to_string()))
    }

    fn MPI_Scan / PMPI_Scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, comm: c_int) {
        scan(CollOp::Scan, sendbuf, recvbuf, count, datatype, op, comm)
    }

    fn MPI_Exscan / PMPI_Exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, comm: c_int) {
        scan(CollOp::Exscan, sendbuf, recvbuf, count, datatype, op, comm)
    }

    fn MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: c_int, op: c_int, comm: c_int) {
        let (dtype, rop) = reduction(datatype, op)?;
        let len = span(recvcount, datatype)?;
        on_coll(comm, |c| {
            let total = len * c.size();
            let send = if in_place(sendbuf) { bytes(recvbuf, total)?.to_vec() } else { bytes(sendbuf, total)?.to_vec() };
            let recv = bytes_mut(recvbuf, len)?;
            reducing(c, CollOp::ReduceScatterBlock, dtype, rop, len / dtype.size(), &send, recv)
        })
    }

    fn MPI_Reduce_scatter / PMPI_Reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: c_int, op: c_int, comm: c_int) {
        let (dtype, rop) = reduction(datatype, op)?;
        on_coll(comm, |c| {
            let counts: Vec<usize> = array(recvcounts, c.size())?.iter().map(|&n| crate::ptr::count(n)).collect::<MpiResult<_>>()?;
            let displs: Vec<usize> = counts.iter().scan(0, |at, &n| { let d = *at; *at += n; Some(d) }).collect();
            let total: usize = counts.iter().sum();
            // Bytes per element of `datatype` (a contiguous type holds several of `dtype`).
            let size = span(1, datatype)?;
            let send = if in_place(sendbuf) { bytes(recvbuf, total * size)?.to_vec() } else { bytes(sendbuf, total * size)?.to_vec() };
            let recv = bytes_mut(recvbuf, counts[c.rank()] * size)?;
            let per = size / dtype.size();
            let counts: Vec<usize> = counts.iter().map(|&n| n * per).collect();
            let displs: Vec<usize> = displs.iter().map(|&d| d * per).collect();
            let args = CollArgs::new(counts[c.rank()], dtype).with_op(rop).with_recv(Blocks { counts: &counts, displs: &displs });
            Ok(c.collective(CollOp::ReduceScatter, &args, &send, recv)?)
        })
    }
}
