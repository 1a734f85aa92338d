//! The collectives that move blocks of bytes between ranks: gather, scatter, allgather,
//! alltoall and their `v` forms, with `MPI_IN_PLACE`; the regular forms on
//! inter-communicators too.

use std::borrow::Cow;
use std::ffi::{c_int, c_void};

use commcore::coll::{Blocks, CollArgs, CollOp, Datatype, Root};
use commcore_linux::runtime::Comm;

use crate::arguments::{apart, distinct_at_root, distinct_intra, span};
use crate::call::mpi_fn;
use crate::coll::on_coll;
use crate::coll::{blocks, is_root, root_of, takes_part};
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::pack::{copy, element, Incoming, Place};
use crate::ptr::{array, bytes, bytes_mut, count, in_place};

/// The blocks of a `v` call's receive side, in bytes: the program's buffer where the
/// datatype lies contiguous, else a packed copy (blocks end to end) unpacked at the end.
struct BlocksIn<'a> {
    counts: Vec<usize>,
    displs: Vec<usize>,
    area: Area<'a>,
    places: Vec<Place>,
}

enum Area<'a> {
    Direct(&'a mut [u8]),
    Packed(Vec<u8>),
}

impl Area<'_> {
    fn bytes(&mut self) -> &mut [u8] {
        match self {
            Area::Direct(buf) => buf,
            Area::Packed(data) => data,
        }
    }
}

impl BlocksIn<'_> {
    /// Unpacks the blocks, if they came packed.
    ///
    /// # Safety
    /// The blocks' elements are writable.
    unsafe fn finish(self) -> MpiResult {
        let Area::Packed(data) = self.area else { return Ok(()) };
        for ((place, &at), &len) in self.places.iter().zip(&self.displs).zip(&self.counts) {
            // SAFETY: the caller's contract.
            unsafe { place.unpack(&data[at..at + len]) }?;
        }
        Ok(())
    }
}

/// Blocks of `counts[i]` elements at `displs[i]` extents of `datatype` from `buf`, packed
/// end to end (the packed bytes, per-block byte counts and offsets).
fn packed_blocks(
    buf: *const c_void,
    counts: &[c_int],
    displs: &[c_int],
    datatype: c_int,
) -> MpiResult<(Vec<Place>, Vec<usize>, Vec<usize>)> {
    let (mut places, mut sizes, mut offsets, mut at) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for (&n, &d) in counts.iter().zip(displs) {
        let start = element(buf, count(d)?, datatype)?;
        let place = Place::new(start, n, datatype)?;
        offsets.push(at);
        sizes.push(place.packed_len());
        at += place.packed_len();
        places.push(place);
    }
    Ok((places, sizes, offsets))
}

/// Blocks of `counts[i]` elements of `types[i]` at `displs[i]` bytes from `buf` (the `w`
/// calls): their places, packed byte counts and offsets end to end.
fn typed_blocks(
    buf: *const c_void,
    counts: &[c_int],
    displs: &[c_int],
    types: &[c_int],
) -> MpiResult<(Vec<Place>, Vec<usize>, Vec<usize>)> {
    let (mut places, mut sizes, mut offsets, mut at) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for ((&n, &d), &t) in counts.iter().zip(displs).zip(types) {
        let start = (buf as usize).wrapping_add(d as isize as usize) as *const c_void;
        let place = Place::new(start, n, t)?;
        offsets.push(at);
        sizes.push(place.packed_len());
        at += place.packed_len();
        places.push(place);
    }
    Ok((places, sizes, offsets))
}

/// The receive side of a `v` call.
///
/// # Safety
/// `buf` has room for the blocks.
unsafe fn blocks_in<'a>(
    buf: *mut c_void,
    counts: &[c_int],
    displs: &[c_int],
    datatype: c_int,
) -> MpiResult<BlocksIn<'a>> {
    let info = crate::typemap::layout(datatype)?.0;
    if info.contiguous {
        // Contiguous: the extent is the data's size, never negative.
        let (counts, displs, end) = byte_layout(counts, displs, info.extent.unsigned_abs())?;
        // SAFETY: the caller's contract.
        let area = Area::Direct(unsafe { bytes_mut(buf, end) }?);
        return Ok(BlocksIn { counts, displs, area, places: Vec::new() });
    }
    let (places, counts, displs) = packed_blocks(buf, counts, displs, datatype)?;
    let total = counts.iter().sum();
    Ok(BlocksIn { counts, displs, area: Area::Packed(vec![0; total]), places })
}

/// The bytes of a `v` call's send side, its per-block byte counts and offsets.
type BlocksOut<'a> = (Cow<'a, [u8]>, Vec<usize>, Vec<usize>);

/// The send side of a `v` call.
///
/// # Safety
/// `buf` holds the blocks.
unsafe fn blocks_out<'a>(
    buf: *const c_void,
    counts: &[c_int],
    displs: &[c_int],
    datatype: c_int,
) -> MpiResult<BlocksOut<'a>> {
    let info = crate::typemap::layout(datatype)?.0;
    if info.contiguous {
        // Contiguous: the extent is the data's size, never negative.
        let (counts, displs, end) = byte_layout(counts, displs, info.extent.unsigned_abs())?;
        // SAFETY: the caller's contract.
        return Ok((Cow::Borrowed(unsafe { bytes(buf, end) }?), counts, displs));
    }
    let (places, counts, displs) = packed_blocks(buf, counts, displs, datatype)?;
    let mut data = Vec::with_capacity(counts.iter().sum());
    for place in &places {
        // SAFETY: the caller's contract.
        data.extend_from_slice(&unsafe { place.outgoing() }?);
    }
    Ok((Cow::Owned(data), counts, displs))
}

/// Block `rank` of a `v` layout at `buf`, packed (the data of `MPI_IN_PLACE`).
///
/// # Safety
/// `buf` holds the block.
unsafe fn own_block(
    buf: *const c_void,
    counts: &[c_int],
    displs: &[c_int],
    rank: usize,
    datatype: c_int,
) -> MpiResult<Vec<u8>> {
    let start = element(buf, count(displs[rank])?, datatype)?;
    // SAFETY: the caller's contract.
    unsafe { copy(start, counts[rank], datatype) }
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

/// Gather, scatter, all-gather or all-to-all `op` with the remote group of an
/// inter-communicator when the blocks each way differ in size (a one-way call included):
/// run as the `v` form with regular blocks, `send_block` and `recv_block` bytes per remote
/// rank (the send side of an all-gather is one block, to every remote rank).
fn inter_regular(
    c: &Comm,
    op: CollOp,
    send: &[u8],
    send_block: usize,
    recv: &mut [u8],
    recv_block: usize,
) -> MpiResult {
    let n = blocks(c);
    let (sc, rc) = (vec![send_block; n], vec![recv_block; n]);
    let sd: Vec<usize> = (0..n).map(|j| j * send_block).collect();
    let rd: Vec<usize> = (0..n).map(|j| j * recv_block).collect();
    let args =
        CollArgs::new(send_block, Datatype::U8).with_recv(Blocks { counts: &rc, displs: &rd });
    let (op, args) = match op {
        CollOp::Allgather => (CollOp::Allgatherv, args),
        _ => (CollOp::Alltoallv, args.with_send(Blocks { counts: &sc, displs: &sd })),
    };
    Ok(c.collective(op, &args, send, recv)?)
}

/// `MPI_Gatherv` on an inter-communicator: the root (`MPI_ROOT`) takes a block from every
/// remote rank, its group-mates (`MPI_PROC_NULL`) do nothing, the remote group sends.
///
/// # Safety
/// The buffers are valid as `MPI_Gatherv` requires.
#[allow(clippy::too_many_arguments)]
unsafe fn inter_gatherv(
    c: &Comm,
    root: Root,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: c_int,
) -> MpiResult {
    let args = CollArgs::new(0, Datatype::U8).with_root(root);
    match root {
        Root::Here => {
            // SAFETY: the caller's contract.
            let (counts, displs) =
                unsafe { (array(recvcounts, blocks(c))?, array(displs, blocks(c))?) };
            // SAFETY: the caller's contract.
            let mut recv = unsafe { blocks_in(recvbuf, counts, displs, recvtype) }?;
            let args = args.with_recv(Blocks { counts: &recv.counts, displs: &recv.displs });
            c.collective(CollOp::Gatherv, &args, &[], recv.area.bytes())?;
            // SAFETY: the caller's contract.
            unsafe { recv.finish() }
        }
        Root::Elsewhere => Ok(c.collective(CollOp::Gatherv, &args, &[], &mut [])?),
        Root::Rank(_) => {
            // SAFETY: the caller's contract.
            let send = unsafe { copy(sendbuf, sendcount, sendtype) }?;
            Ok(c.collective(
                CollOp::Gatherv,
                &CollArgs { count: send.len(), ..args },
                &send,
                &mut [],
            )?)
        }
    }
}

/// `MPI_Scatterv` on an inter-communicator: the root (`MPI_ROOT`) sends a block to every
/// remote rank, its group-mates do nothing, the remote group receives.
///
/// # Safety
/// The buffers are valid as `MPI_Scatterv` requires.
#[allow(clippy::too_many_arguments)]
unsafe fn inter_scatterv(
    c: &Comm,
    root: Root,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
) -> MpiResult {
    let args = CollArgs::new(0, Datatype::U8).with_root(root);
    match root {
        Root::Here => {
            // SAFETY: the caller's contract.
            let (counts, displs) =
                unsafe { (array(sendcounts, blocks(c))?, array(displs, blocks(c))?) };
            // SAFETY: the caller's contract.
            let (send, counts, at) = unsafe { blocks_out(sendbuf, counts, displs, sendtype) }?;
            let args = args.with_send(Blocks { counts: &counts, displs: &at });
            Ok(c.collective(CollOp::Scatterv, &args, &send, &mut [])?)
        }
        Root::Elsewhere => Ok(c.collective(CollOp::Scatterv, &args, &[], &mut [])?),
        Root::Rank(_) => {
            // SAFETY: the caller's contract.
            let mut recv = unsafe { Incoming::new(Place::new(recvbuf, recvcount, recvtype)?) }?;
            c.collective(
                CollOp::Scatterv,
                &CollArgs { count: recv.bytes().len(), ..args },
                &[],
                recv.bytes(),
            )?;
            // SAFETY: the caller's contract.
            unsafe { recv.finish(usize::MAX) }
        }
    }
}

/// How many blocks an intra-communicator collective sends from its send buffer.
#[derive(Clone, Copy)]
pub(crate) enum Sent {
    /// One (`MPI_Allgather`).
    One,
    /// One per rank (`MPI_Alltoall`).
    PerRank,
}

/// An intra-communicator `MPI_Allgather`'s or `MPI_Alltoall`'s send blocks lie apart from
/// the blocks it receives (the nonblocking forms check this when called, not on the worker).
#[allow(clippy::too_many_arguments)]
pub(crate) fn blocks_apart(
    c: &Comm,
    sent: Sent,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *const c_void,
    recvcount: c_int,
    recvtype: c_int,
) -> MpiResult {
    if !c.is_inter() && !in_place(sendbuf) {
        let n = blocks(c);
        let sent_blocks = match sent {
            Sent::One => 1,
            Sent::PerRank => n,
        };
        let (send, recv) = (count(sendcount)? * sent_blocks, count(recvcount)? * n);
        apart(sendbuf, span(send, sendtype)?, recvbuf, span(recv, recvtype)?)?;
    }
    Ok(())
}

/// As [`blocks_apart`], for `MPI_Allgatherv`: up to the farthest block received.
///
/// # Safety
/// `recvcounts` and `displs` hold an element per rank of `c`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn allgatherv_apart(
    c: &Comm,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *const c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: c_int,
) -> MpiResult {
    if !c.is_inter() && !in_place(sendbuf) {
        // SAFETY: the caller's contract.
        let (counts, displs) =
            unsafe { (array(recvcounts, blocks(c))?, array(displs, blocks(c))?) };
        let reach =
            counts.iter().zip(displs).map(|(&n, &d)| d.max(0) + n.max(0)).max().unwrap_or(0);
        let (send, recv) = (count(sendcount)?, count(reach)?);
        apart(sendbuf, span(send, sendtype)?, recvbuf, span(recv, recvtype)?)?;
    }
    Ok(())
}

mpi_fn! {
    fn MPI_Gather / PMPI_Gather(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) {
        distinct_at_root(comm, root, sendbuf, recvbuf, sendcount > 0)?;
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
        distinct_at_root(comm, root, sendbuf, recvbuf, recvcount > 0)?;
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
            blocks_apart(c, Sent::One, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype)?;
            let send = if in_place(sendbuf) && !c.is_inter() {
                copy(element(recvbuf, c.rank() * count(recvcount)?, recvtype)?, recvcount, recvtype)?
            } else {
                copy(sendbuf, sendcount, sendtype)?
            };
            let mut recv = Incoming::new(Place::new(recvbuf, times(recvcount, blocks(c))?, recvtype)?)?;
            let recv_block = recv.bytes().len() / blocks(c).max(1);
            if c.is_inter() && send.len() != recv_block {
                inter_regular(c, CollOp::Allgather, &send, send.len(), recv.bytes(), recv_block)?;
            } else {
                run(c, CollOp::Allgather, send.len(), Root::Rank(0), &send, recv.bytes())?;
            }
            recv.finish(usize::MAX)
        })
    }

    fn MPI_Alltoall / PMPI_Alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) {
        on_coll(comm, |c| {
            blocks_apart(c, Sent::PerRank, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype)?;
            let n = blocks(c);
            let send = if in_place(sendbuf) && !c.is_inter() {
                copy(recvbuf, times(recvcount, n)?, recvtype)?
            } else {
                copy(sendbuf, times(sendcount, n)?, sendtype)?
            };
            let mut recv = Incoming::new(Place::new(recvbuf, times(recvcount, n)?, recvtype)?)?;
            let (block, send_block) = (recv.bytes().len() / n.max(1), send.len() / n.max(1));
            if c.is_inter() && send_block != block {
                inter_regular(c, CollOp::Alltoall, &send, send_block, recv.bytes(), block)?;
            } else {
                run(c, CollOp::Alltoall, block, Root::Rank(0), &send, recv.bytes())?;
            }
            recv.finish(usize::MAX)
        })
    }

    fn MPI_Gatherv / PMPI_Gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, root: c_int, comm: c_int) {
        distinct_at_root(comm, root, sendbuf, recvbuf, sendcount > 0)?;
        on_coll(comm, |c| {
            let root = root_of(c, root)?;
            if c.is_inter() {
                return inter_gatherv(c, root, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype);
            }
            let Root::Rank(root) = root else { return fail(MPI_ERR_ROOT, "an intra-communicator has no MPI_ROOT"); };
            let args = CollArgs::new(0, Datatype::U8).with_root(Root::Rank(root));
            let root = root as usize;
            if c.rank() != root {
                let send = copy(sendbuf, sendcount, sendtype)?;
                return Ok(c.collective(CollOp::Gatherv, &CollArgs { count: send.len(), ..args }, &send, &mut [])?);
            }
            let (counts, displs) = (array(recvcounts, c.size())?, array(displs, c.size())?);
            let send = if in_place(sendbuf) { own_block(recvbuf, counts, displs, root, recvtype)? } else { copy(sendbuf, sendcount, sendtype)? };
            let mut recv = blocks_in(recvbuf, counts, displs, recvtype)?;
            let args = CollArgs { count: send.len(), ..args }.with_recv(Blocks { counts: &recv.counts, displs: &recv.displs });
            c.collective(CollOp::Gatherv, &args, &send, recv.area.bytes())?;
            recv.finish()
        })
    }

    fn MPI_Scatterv / PMPI_Scatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) {
        distinct_at_root(comm, root, sendbuf, recvbuf, recvcount > 0)?;
        on_coll(comm, |c| {
            let root = root_of(c, root)?;
            if c.is_inter() {
                return inter_scatterv(c, root, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype);
            }
            let Root::Rank(root) = root else { return fail(MPI_ERR_ROOT, "an intra-communicator has no MPI_ROOT"); };
            let args = CollArgs::new(0, Datatype::U8).with_root(Root::Rank(root));
            let root = root as usize;
            if c.rank() != root {
                let mut recv = Incoming::new(Place::new(recvbuf, recvcount, recvtype)?)?;
                c.collective(CollOp::Scatterv, &CollArgs { count: recv.bytes().len(), ..args }, &[], recv.bytes())?;
                return recv.finish(usize::MAX);
            }
            let (send, counts, at) = blocks_out(sendbuf, array(sendcounts, c.size())?, array(displs, c.size())?, sendtype)?;
            let args = CollArgs { count: counts[root], ..args }.with_send(Blocks { counts: &counts, displs: &at });
            if in_place(recvbuf) {
                let mut own = vec![0u8; counts[root]];
                return Ok(c.collective(CollOp::Scatterv, &args, &send, &mut own)?);
            }
            let mut recv = Incoming::new(Place::new(recvbuf, recvcount, recvtype)?)?;
            c.collective(CollOp::Scatterv, &args, &send, recv.bytes())?;
            recv.finish(usize::MAX)
        })
    }

    fn MPI_Allgatherv / PMPI_Allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, comm: c_int) {
        on_coll(comm, |c| {
            allgatherv_apart(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype)?;
            let (counts, displs) = (array(recvcounts, blocks(c))?, array(displs, blocks(c))?);
            let send = if in_place(sendbuf) && !c.is_inter() { own_block(recvbuf, counts, displs, c.rank(), recvtype)? } else { copy(sendbuf, sendcount, sendtype)? };
            let mut recv = blocks_in(recvbuf, counts, displs, recvtype)?;
            let args = CollArgs::new(send.len(), Datatype::U8).with_recv(Blocks { counts: &recv.counts, displs: &recv.displs });
            c.collective(CollOp::Allgatherv, &args, &send, recv.area.bytes())?;
            recv.finish()
        })
    }

    fn MPI_Alltoallv / PMPI_Alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: c_int, comm: c_int) {
        distinct_intra(comm, sendbuf, recvbuf, true)?;
        on_coll(comm, |c| {
            let n = blocks(c);
            let (rcounts, rdispls) = (array(recvcounts, n)?, array(rdispls, n)?);
            let (send, sc, sd) = if in_place(sendbuf) && !c.is_inter() {
                let (data, sc, sd) = blocks_out(recvbuf, rcounts, rdispls, recvtype)?;
                (data.into_owned(), sc, sd)
            } else {
                let (data, sc, sd) = blocks_out(sendbuf, array(sendcounts, n)?, array(sdispls, n)?, sendtype)?;
                (data.into_owned(), sc, sd)
            };
            let mut recv = blocks_in(recvbuf, rcounts, rdispls, recvtype)?;
            let args = CollArgs::new(sc.get(c.rank()).copied().unwrap_or(0), Datatype::U8)
                .with_send(Blocks { counts: &sc, displs: &sd })
                .with_recv(Blocks { counts: &recv.counts, displs: &recv.displs });
            c.collective(CollOp::Alltoallv, &args, &send, recv.area.bytes())?;
            recv.finish()
        })
    }

    /// `MPI_Alltoallv` with a datatype per block and displacements in bytes: each side's
    /// blocks travel packed end to end.
    fn MPI_Alltoallw / PMPI_Alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const c_int, comm: c_int) {
        distinct_intra(comm, sendbuf, recvbuf, true)?;
        on_coll(comm, |c| {
            let n = blocks(c);
            let recv_side = (array(recvcounts, n)?, array(rdispls, n)?, array(recvtypes, n)?);
            let (places, rc, rd) = typed_blocks(recvbuf, recv_side.0, recv_side.1, recv_side.2)?;
            let (send_places, sc, sd) = if in_place(sendbuf) && !c.is_inter() {
                typed_blocks(recvbuf, recv_side.0, recv_side.1, recv_side.2)?
            } else {
                let send_side = (array(sendcounts, n)?, array(sdispls, n)?, array(sendtypes, n)?);
                typed_blocks(sendbuf, send_side.0, send_side.1, send_side.2)?
            };
            let mut send = Vec::with_capacity(sc.iter().sum());
            for place in &send_places {
                send.extend_from_slice(&place.outgoing()?);
            }
            let mut area = vec![0u8; rc.iter().sum()];
            let args = CollArgs::new(sc.get(c.rank()).copied().unwrap_or(0), Datatype::U8)
                .with_send(Blocks { counts: &sc, displs: &sd })
                .with_recv(Blocks { counts: &rc, displs: &rd });
            c.collective(CollOp::Alltoallv, &args, &send, &mut area)?;
            for ((place, &at), &len) in places.iter().zip(&rd).zip(&rc) {
                place.unpack(&area[at..at + len])?;
            }
            Ok(())
        })
    }
}
