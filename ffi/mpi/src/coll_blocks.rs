//! The collectives that move blocks of bytes between ranks: gather, scatter, allgather,
//! alltoall and their `v` forms, with `MPI_IN_PLACE`; the regular forms on
//! inter-communicators too.

use std::ffi::{c_int, c_void};

use commcore::coll::{Blocks, CollArgs, CollOp, Datatype, Root};
use commcore_linux::runtime::Comm;

use crate::call::mpi_fn;
use crate::coll::on_coll;
use crate::coll::{blocks, is_root, root_of, takes_part};
use crate::consts::*;
use crate::datatype::span;
use crate::error::{fail, MpiResult};
use crate::pack::{copy, element, Incoming, Place};
use crate::ptr::{array, bytes, bytes_mut, count, in_place};

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

/// Runs `op` moving blocks of `block` bytes.
fn run(c: &Comm, op: CollOp, block: usize, root: Root, send: &[u8], recv: &mut [u8]) -> MpiResult {
    let args = CollArgs::new(block, Datatype::U8).with_root(root);
    Ok(c.collective(op, &args, send, recv)?)
}

/// `count` elements `n` times, as a count.
fn times(count: c_int, n: usize) -> MpiResult<c_int> {
    match c_int::try_from(crate::ptr::count(count)? * n) {
        Ok(total) => Ok(total),
        Err(_) => fail(MPI_ERR_COUNT, "the buffer holds more than an int counts"),
    }
}

/// The `v` forms run on intra-communicators only, so far.
fn intra(c: &Comm) -> MpiResult {
    if c.is_inter() {
        return fail(
            MPI_ERR_UNSUPPORTED_OPERATION,
            "the v forms on inter-communicators are not provided yet",
        );
    }
    Ok(())
}

mpi_fn! {
    fn MPI_Gather / PMPI_Gather(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) {
        on_coll(comm, |c| {
            let root = root_of(c, root)?;
            if !is_root(c, root) {
                let send = if takes_part(c, root) { copy(sendbuf, sendcount, sendtype)? } else { Vec::new() };
                return run(c, CollOp::Gather, send.len(), root, &send, &mut []);
            }
            let send = match root {
                Root::Here => Vec::new(),
                _ if in_place(sendbuf) => copy(element(recvbuf, c.rank() * count(recvcount)?, recvtype)?, recvcount, recvtype)?,
                _ => copy(sendbuf, sendcount, sendtype)?,
            };
            let mut recv = Incoming::new(Place::new(recvbuf, times(recvcount, blocks(c))?, recvtype)?)?;
            let block = recv.bytes().len() / blocks(c).max(1);
            run(c, CollOp::Gather, block, root, &send, recv.bytes())?;
            recv.finish(usize::MAX)
        })
    }

    fn MPI_Scatter / PMPI_Scatter(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) {
        on_coll(comm, |c| {
            let root = root_of(c, root)?;
            if !is_root(c, root) {
                if !takes_part(c, root) {
                    return run(c, CollOp::Scatter, 0, root, &[], &mut []);
                }
                let mut recv = Incoming::new(Place::new(recvbuf, recvcount, recvtype)?)?;
                run(c, CollOp::Scatter, recv.bytes().len(), root, &[], recv.bytes())?;
                return recv.finish(usize::MAX);
            }
            let send = copy(sendbuf, times(sendcount, blocks(c))?, sendtype)?;
            let block = send.len() / blocks(c).max(1);
            if root == Root::Here || in_place(recvbuf) {
                let mut own = vec![0u8; if root == Root::Here { 0 } else { block }];
                return run(c, CollOp::Scatter, block, root, &send, &mut own);
            }
            let mut recv = Incoming::new(Place::new(recvbuf, recvcount, recvtype)?)?;
            run(c, CollOp::Scatter, block, root, &send, recv.bytes())?;
            recv.finish(usize::MAX)
        })
    }

    fn MPI_Allgather / PMPI_Allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) {
        on_coll(comm, |c| {
            let send = if in_place(sendbuf) && !c.is_inter() {
                copy(element(recvbuf, c.rank() * count(recvcount)?, recvtype)?, recvcount, recvtype)?
            } else {
                copy(sendbuf, sendcount, sendtype)?
            };
            let mut recv = Incoming::new(Place::new(recvbuf, times(recvcount, blocks(c))?, recvtype)?)?;
            run(c, CollOp::Allgather, send.len(), Root::Rank(0), &send, recv.bytes())?;
            recv.finish(usize::MAX)
        })
    }

    fn MPI_Alltoall / PMPI_Alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) {
        on_coll(comm, |c| {
            let n = blocks(c);
            let send = if in_place(sendbuf) && !c.is_inter() {
                copy(recvbuf, times(recvcount, n)?, recvtype)?
            } else {
                copy(sendbuf, times(sendcount, n)?, sendtype)?
            };
            let mut recv = Incoming::new(Place::new(recvbuf, times(recvcount, n)?, recvtype)?)?;
            let block = recv.bytes().len() / n.max(1);
            run(c, CollOp::Alltoall, block, Root::Rank(0), &send, recv.bytes())?;
            recv.finish(usize::MAX)
        })
    }

    fn MPI_Gatherv / PMPI_Gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, root: c_int, comm: c_int) {
        on_coll(comm, |c| {
            intra(c)?;
            let Root::Rank(root) = root_of(c, root)? else { return fail(MPI_ERR_ROOT, "an intra-communicator has no MPI_ROOT"); };
            let root = root as usize;
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
        on_coll(comm, |c| {
            intra(c)?;
            let Root::Rank(root) = root_of(c, root)? else { return fail(MPI_ERR_ROOT, "an intra-communicator has no MPI_ROOT"); };
            let root = root as usize;
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
        on_coll(comm, |c| {
            intra(c)?;
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
        on_coll(comm, |c| {
            intra(c)?;
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
