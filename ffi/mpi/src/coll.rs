//! Collectives on contiguous buffers, with predefined and user reductions and
//! with `MPI_IN_PLACE`; the data moves as bytes except where it is reduced.

use std::ffi::{c_int, c_void};

use commcore::coll::{reduce, Blocks, CollArgs, CollOp, Datatype, Op, Root};
use commcore_linux::runtime::Comm;

use crate::call::mpi_fn;
use crate::consts::*;
use crate::datatype::{reduction, span};
use crate::error::{fail, MpiResult};
use crate::p2p::on_comm;
use crate::ptr::{array, bytes, bytes_mut, in_place};

/// The root's rank, checked against the communicator.
fn root_of(c: &Comm, root: c_int) -> MpiResult<usize> {
    match usize::try_from(root).ok().filter(|&r| r < c.size()) {
        Some(r) => Ok(r),
        None => fail(MPI_ERR_ROOT, format!("root {root} is not a rank of the communicator")),
    }
}

/// Per-rank counts and displacements in bytes (elements of `extent` bytes given), and the
/// bytes the layout spans.
fn byte_layout(
    counts: &[c_int],
    displs: &[c_int],
    extent: usize,
) -> MpiResult<(Vec<usize>, Vec<usize>, usize)> {
    let mut c = Vec::with_capacity(counts.len());
    let mut d = Vec::with_capacity(counts.len());
    let mut end = 0;
    for (&n, &at) in counts.iter().zip(displs) {
        let (n, at) = (crate::ptr::count(n)? * extent, crate::ptr::count(at)? * extent);
        end = end.max(if n > 0 { at + n } else { 0 });
        c.push(n);
        d.push(at);
    }
    Ok((c, d, end))
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
    on_comm(comm, |c| reducing(c, op, dtype, rop, len / dtype.size(), &send, recv))
}

mpi_fn! {
    fn MPI_Barrier / PMPI_Barrier(comm: c_int) {
        on_comm(comm, |c| Ok(c.barrier()?))
    }

    fn MPI_Bcast / PMPI_Bcast(buffer: *mut c_void, count: c_int, datatype: c_int, root: c_int, comm: c_int) {
        let data = bytes_mut(buffer, span(count, datatype)?)?;
        on_comm(comm, |c| Ok(c.bcast(data, root_of(c, root)?)?))
    }

    fn MPI_Reduce / PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, root: c_int, comm: c_int) {
        let (dtype, rop) = reduction(datatype, op)?;
        let len = span(count, datatype)?;
        on_comm(comm, |c| {
            let root = root_of(c, root)?;
            let recv = if c.rank() == root { bytes_mut(recvbuf, len)? } else { &mut [] };
            let send = operand(sendbuf, recv, len)?;
            let args = CollArgs::new(send.len() / dtype.size(), dtype).with_op(rop).with_root(Root::Rank(root as u32));
            Ok(c.collective(CollOp::Reduce, &args, &send, recv)?)
        })
    }

    fn MPI_Allreduce / PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, comm: c_int) {
        let (dtype, rop) = reduction(datatype, op)?;
        let len = span(count, datatype)?;
        let recv = bytes_mut(recvbuf, len)?;
        let send = operand(sendbuf, recv, len)?;
        on_comm(comm, |c| reducing(c, CollOp::Allreduce, dtype, rop, len / dtype.size(), &send, recv))
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
        on_comm(comm, |c| {
            let total = len * c.size();
            let send = if in_place(sendbuf) { bytes(recvbuf, total)?.to_vec() } else { bytes(sendbuf, total)?.to_vec() };
            let recv = bytes_mut(recvbuf, len)?;
            reducing(c, CollOp::ReduceScatterBlock, dtype, rop, len / dtype.size(), &send, recv)
        })
    }

    fn MPI_Reduce_scatter / PMPI_Reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: c_int, op: c_int, comm: c_int) {
        let (dtype, rop) = reduction(datatype, op)?;
        on_comm(comm, |c| {
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

    fn MPI_Gather / PMPI_Gather(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) {
        on_comm(comm, |c| {
            let root = root_of(c, root)?;
            let at_root = c.rank() == root;
            let block = if at_root { span(recvcount, recvtype)? } else { 0 };
            let recv = if at_root { bytes_mut(recvbuf, block * c.size())? } else { &mut [] };
            let send = if at_root && in_place(sendbuf) {
                recv[root * block..(root + 1) * block].to_vec()
            } else {
                bytes(sendbuf, span(sendcount, sendtype)?)?.to_vec()
            };
            Ok(c.gather(&send, recv, root)?)
        })
    }

    fn MPI_Scatter / PMPI_Scatter(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) {
        on_comm(comm, |c| {
            let root = root_of(c, root)?;
            let at_root = c.rank() == root;
            let block = if at_root { span(sendcount, sendtype)? } else { span(recvcount, recvtype)? };
            let send = if at_root { bytes(sendbuf, block * c.size())? } else { &[] };
            if at_root && in_place(recvbuf) {
                let mut own = vec![0u8; block];
                return Ok(c.scatter(send, &mut own, root)?);
            }
            Ok(c.scatter(send, bytes_mut(recvbuf, block)?, root)?)
        })
    }

    fn MPI_Allgather / PMPI_Allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) {
        on_comm(comm, |c| {
            let block = span(recvcount, recvtype)?;
            let recv = bytes_mut(recvbuf, block * c.size())?;
            let me = c.rank();
            let send = if in_place(sendbuf) { recv[me * block..(me + 1) * block].to_vec() } else { bytes(sendbuf, span(sendcount, sendtype)?)?.to_vec() };
            Ok(c.allgather(&send, recv)?)
        })
    }

    fn MPI_Alltoall / PMPI_Alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) {
        on_comm(comm, |c| {
            let len = span(recvcount, recvtype)? * c.size();
            let recv = bytes_mut(recvbuf, len)?;
            let send = if in_place(sendbuf) { recv.to_vec() } else { bytes(sendbuf, span(sendcount, sendtype)? * c.size())?.to_vec() };
            Ok(c.alltoall(&send, recv)?)
        })
    }

    fn MPI_Gatherv / PMPI_Gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, root: c_int, comm: c_int) {
        on_comm(comm, |c| {
            let root = root_of(c, root)?;
            if c.rank() != root {
                let send = bytes(sendbuf, span(sendcount, sendtype)?)?;
                let args = CollArgs::new(send.len(), Datatype::U8).with_root(Root::Rank(root as u32));
                return Ok(c.collective(CollOp::Gatherv, &args, send, &mut [])?);
            }
            let extent = span(1, recvtype)?;
            let (counts, at, end) = byte_layout(array(recvcounts, c.size())?, array(displs, c.size())?, extent)?;
            let recv = bytes_mut(recvbuf, end)?;
            let send = if in_place(sendbuf) { recv[at[root]..at[root] + counts[root]].to_vec() } else { bytes(sendbuf, span(sendcount, sendtype)?)?.to_vec() };
            let args = CollArgs::new(send.len(), Datatype::U8).with_root(Root::Rank(root as u32)).with_recv(Blocks { counts: &counts, displs: &at });
            Ok(c.collective(CollOp::Gatherv, &args, &send, recv)?)
        })
    }

    fn MPI_Scatterv / PMPI_Scatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) {
        on_comm(comm, |c| {
            let root = root_of(c, root)?;
            if c.rank() != root {
                let recv = bytes_mut(recvbuf, span(recvcount, recvtype)?)?;
                let args = CollArgs::new(recv.len(), Datatype::U8).with_root(Root::Rank(root as u32));
                return Ok(c.collective(CollOp::Scatterv, &args, &[], recv)?);
            }
            let extent = span(1, sendtype)?;
            let (counts, at, end) = byte_layout(array(sendcounts, c.size())?, array(displs, c.size())?, extent)?;
            let send = bytes(sendbuf, end)?;
            let mut own = Vec::new();
            let recv = if in_place(recvbuf) { own.resize(counts[root], 0); &mut own[..] } else { bytes_mut(recvbuf, span(recvcount, recvtype)?)? };
            let args = CollArgs::new(recv.len(), Datatype::U8).with_root(Root::Rank(root as u32)).with_send(Blocks { counts: &counts, displs: &at });
            Ok(c.collective(CollOp::Scatterv, &args, send, recv)?)
        })
    }

    fn MPI_Allgatherv / PMPI_Allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, comm: c_int) {
        on_comm(comm, |c| {
            let extent = span(1, recvtype)?;
            let (counts, at, end) = byte_layout(array(recvcounts, c.size())?, array(displs, c.size())?, extent)?;
            let recv = bytes_mut(recvbuf, end)?;
            let me = c.rank();
            let send = if in_place(sendbuf) { recv[at[me]..at[me] + counts[me]].to_vec() } else { bytes(sendbuf, span(sendcount, sendtype)?)?.to_vec() };
            let args = CollArgs::new(send.len(), Datatype::U8).with_recv(Blocks { counts: &counts, displs: &at });
            Ok(c.collective(CollOp::Allgatherv, &args, &send, recv)?)
        })
    }

    fn MPI_Alltoallv / PMPI_Alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: c_int, comm: c_int) {
        on_comm(comm, |c| {
            let n = c.size();
            let (rc, rd, rend) = byte_layout(array(recvcounts, n)?, array(rdispls, n)?, span(1, recvtype)?)?;
            let recv = bytes_mut(recvbuf, rend)?;
            let (send, sc, sd) = if in_place(sendbuf) {
                (recv.to_vec(), rc.clone(), rd.clone())
            } else {
                let (sc, sd, send_end) = byte_layout(array(sendcounts, n)?, array(sdispls, n)?, span(1, sendtype)?)?;
                (bytes(sendbuf, send_end)?.to_vec(), sc, sd)
            };
            let args = CollArgs::new(sc[c.rank()], Datatype::U8)
                .with_send(Blocks { counts: &sc, displs: &sd })
                .with_recv(Blocks { counts: &rc, displs: &rd });
            Ok(c.collective(CollOp::Alltoallv, &args, &send, recv)?)
        })
    }
}
