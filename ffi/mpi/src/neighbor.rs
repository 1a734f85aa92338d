//! Neighborhood collectives (`MPI_Neighbor_allgather`, `_allgatherv`, `_alltoall`,
//! `_alltoallv`, `_alltoallw` and their nonblocking forms in `icoll`) on Cartesian and
//! graph topologies. Every rank's blocks for its out-neighbors travel in one all-to-all of
//! the communicator (blocks to the same rank end to end, in label order), and each rank
//! unpacks what came into its in-neighbor slots. `MPI_PROC_NULL` neighbors are skipped:
//! their slots are left as they are.

use std::ffi::{c_int, c_long, c_void};

use commcore::coll::{Blocks, CollArgs, CollOp, Datatype};
use commcore_linux::runtime::Comm;

use crate::call::mpi_fn;
use crate::coll::on_coll;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::graph::{graph_neighbors, Neighbors};
use crate::pack::{element, Place};
use crate::ptr::{array, count};
use crate::topo::cart_neighbors;

/// `comm`'s neighbors of this rank, or an error when it has no topology.
fn neighbors_of(comm: c_int, c: &Comm) -> MpiResult<Neighbors> {
    if c.is_inter() {
        return fail(MPI_ERR_COMM, "neighborhood collectives need an intra-communicator");
    }
    match cart_neighbors(comm, c.rank()).or_else(|| graph_neighbors(comm, c.rank())) {
        Some(n) => Ok(n),
        None => fail(MPI_ERR_TOPOLOGY, "the communicator has no topology"),
    }
}

/// The slots of `edges` grouped by rank, each group in label order then slot order.
fn by_rank(edges: &[(c_int, u32)], ranks: usize) -> MpiResult<Vec<Vec<usize>>> {
    let mut groups = vec![Vec::new(); ranks];
    let mut order: Vec<usize> = (0..edges.len()).collect();
    order.sort_by_key(|&i| (edges[i].1, i));
    for i in order {
        match edges[i].0 {
            MPI_PROC_NULL => {}
            r => match usize::try_from(r).ok().and_then(|r| groups.get_mut(r)) {
                Some(group) => group.push(i),
                None => return fail(MPI_ERR_RANK, format!("neighbor {r} is not a rank")),
            },
        }
    }
    Ok(groups)
}

/// Sends `outgoing[i]` to out-neighbor `i` and receives in-neighbor `j`'s block into
/// `slots[j]`.
///
/// # Safety
/// The slots' places are writable.
unsafe fn exchange(c: &Comm, n: &Neighbors, outgoing: &[&[u8]], slots: &[Place]) -> MpiResult {
    let size = c.size();
    let (to, from) = (by_rank(&n.outs, size)?, by_rank(&n.ins, size)?);
    let mut send = Vec::new();
    let (mut sc, mut sd) = (vec![0; size], vec![0; size]);
    for (rank, group) in to.iter().enumerate() {
        sd[rank] = send.len();
        for &i in group {
            send.extend_from_slice(outgoing[i]);
        }
        sc[rank] = send.len() - sd[rank];
    }
    let (mut rc, mut rd) = (vec![0; size], vec![0; size]);
    let mut at = 0;
    for (rank, group) in from.iter().enumerate() {
        rd[rank] = at;
        rc[rank] = group.iter().map(|&j| slots[j].packed_len()).sum();
        at += rc[rank];
    }
    let mut area = vec![0u8; at];
    let args = CollArgs::new(sc[c.rank()], Datatype::U8)
        .with_send(Blocks { counts: &sc, displs: &sd })
        .with_recv(Blocks { counts: &rc, displs: &rd });
    c.collective(CollOp::Alltoallv, &args, &send, &mut area)?;
    for (rank, group) in from.iter().enumerate() {
        let mut at = rd[rank];
        for &j in group {
            let len = slots[j].packed_len();
            // SAFETY: the caller's contract.
            unsafe { slots[j].unpack(&area[at..at + len]) }?;
            at += len;
        }
    }
    Ok(())
}

/// `count` elements of `datatype` at byte `offset` from `buf`.
fn at_bytes(buf: *const c_void, offset: c_long, count: c_int, datatype: c_int) -> MpiResult<Place> {
    Place::new((buf as isize).wrapping_add(offset as isize) as *const c_void, count, datatype)
}

/// The packed data of `places`.
///
/// # Safety
/// The places are readable.
unsafe fn packed(places: &[Place]) -> MpiResult<Vec<Vec<u8>>> {
    // SAFETY: the caller's contract.
    places.iter().map(|p| unsafe { p.outgoing() }.map(|d| d.into_owned())).collect()
}

/// Runs an exchange on `comm`: `sides` makes the outgoing places and the slots from this
/// rank's neighbors.
///
/// # Safety
/// The places `sides` makes are readable (outgoing) and writable (slots).
unsafe fn neighborly(
    comm: c_int,
    sides: impl FnOnce(&Neighbors) -> MpiResult<(Vec<Place>, Vec<Place>)>,
) -> MpiResult {
    on_coll(comm, |c| {
        let n = neighbors_of(comm, c)?;
        let (outgoing, slots) = sides(&n)?;
        // SAFETY: the caller's contract.
        let data = unsafe { packed(&outgoing) }?;
        let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        // SAFETY: the caller's contract.
        unsafe { exchange(c, &n, &refs, &slots) }
    })
}

/// The `i`-th run of `count` elements of `datatype` from `buf`.
fn nth(buf: *const c_void, i: usize, count_: c_int, datatype: c_int) -> MpiResult<Place> {
    Place::new(element(buf, i * count(count_)?, datatype)?, count_, datatype)
}

mpi_fn! {
    fn MPI_Neighbor_allgather / PMPI_Neighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) {
        neighborly(comm, |n| {
            let mine = Place::new(sendbuf, sendcount, sendtype)?;
            let slots = (0..n.ins.len()).map(|j| nth(recvbuf, j, recvcount, recvtype)).collect::<MpiResult<_>>()?;
            Ok((vec![mine; n.outs.len()], slots))
        })
    }

    fn MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, comm: c_int) {
        neighborly(comm, |n| {
            let mine = Place::new(sendbuf, sendcount, sendtype)?;
            let k = n.ins.len();
            let (counts, displs) = if k == 0 { (&[][..], &[][..]) } else { (array(recvcounts, k)?, array(displs, k)?) };
            let slots = (0..k)
                .map(|j| Place::new(element(recvbuf, count(displs[j])?, recvtype)?, counts[j], recvtype))
                .collect::<MpiResult<_>>()?;
            Ok((vec![mine; n.outs.len()], slots))
        })
    }

    fn MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) {
        neighborly(comm, |n| {
            let outgoing = (0..n.outs.len()).map(|i| nth(sendbuf, i, sendcount, sendtype)).collect::<MpiResult<_>>()?;
            let slots = (0..n.ins.len()).map(|j| nth(recvbuf, j, recvcount, recvtype)).collect::<MpiResult<_>>()?;
            Ok((outgoing, slots))
        })
    }

    fn MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: c_int, comm: c_int) {
        neighborly(comm, |n| {
            let side = |buf: *const c_void, counts: *const c_int, displs: *const c_int, k: usize, datatype: c_int| -> MpiResult<Vec<Place>> {
                if k == 0 {
                    return Ok(Vec::new());
                }
                let (counts, displs) = (array(counts, k)?, array(displs, k)?);
                (0..k).map(|i| Place::new(element(buf, count(displs[i])?, datatype)?, counts[i], datatype)).collect()
            };
            Ok((side(sendbuf, sendcounts, sdispls, n.outs.len(), sendtype)?, side(recvbuf, recvcounts, rdispls, n.ins.len(), recvtype)?))
        })
    }

    /// Displacements in bytes and a datatype per block.
    fn MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_long, sendtypes: *const c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_long, recvtypes: *const c_int, comm: c_int) {
        neighborly(comm, |n| {
            let side = |buf: *const c_void, counts: *const c_int, displs: *const c_long, types: *const c_int, k: usize| -> MpiResult<Vec<Place>> {
                if k == 0 {
                    return Ok(Vec::new());
                }
                let (counts, displs, types) = (array(counts, k)?, array(displs, k)?, array(types, k)?);
                (0..k).map(|i| at_bytes(buf, displs[i], counts[i], types[i])).collect()
            };
            Ok((side(sendbuf, sendcounts, sdispls, sendtypes, n.outs.len())?, side(recvbuf, recvcounts, rdispls, recvtypes, n.ins.len())?))
        })
    }
}
