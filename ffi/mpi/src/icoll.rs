//! The nonblocking collectives (`MPI_I...`): each runs its blocking form on the
//! communicator's worker thread (see `progress`); the request completes with it.

use std::ffi::{c_int, c_long, c_void};

use crate::arguments::{distinct, distinct_at_root, distinct_intra};
use crate::call::mpi_fn;
use crate::coll::*;
use crate::coll_blocks::*;
use crate::error::MpiResult;
use crate::large_count::*;
use crate::large_count_arrays::*;
use crate::neighbor::*;
use crate::p2p::on_comm;
use crate::progress;
use crate::state;

/// An argument carried to the worker thread: pointers travel as addresses (the program
/// keeps the buffers valid until the request completes, as MPI requires).
trait Carry: Copy {
    type Sent: Send + 'static;
    fn carry(self) -> Self::Sent;
    fn back(sent: &Self::Sent) -> Self;
}

/// An integer argument; a derived datatype or user operation travels as the call's own
/// copy, which goes when the call ends: the program may free its handle before the
/// request completes (MPI lets it).
struct Held {
    handle: c_int,
    own: Option<fn(c_int)>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(free) = self.own {
            free(self.handle);
        }
    }
}

impl Carry for c_int {
    type Sent = Held;
    fn carry(self) -> Held {
        if crate::typemap::is_derived(self) {
            if let Some((info, segments)) = crate::typemap::lookup(self) {
                let copy = crate::typemap::add(info, segments);
                return Held {
                    handle: copy,
                    own: Some(|h| {
                        crate::typemap::remove(h);
                    }),
                };
            }
        }
        if let Some(copy) = crate::ops::copy(self) {
            return Held { handle: copy, own: Some(crate::ops::remove) };
        }
        Held { handle: self, own: None }
    }
    fn back(sent: &Held) -> c_int {
        sent.handle
    }
}

/// A large-count call's `MPI_Count`.
impl Carry for i64 {
    type Sent = i64;
    fn carry(self) -> i64 {
        self
    }
    fn back(sent: &i64) -> i64 {
        *sent
    }
}

impl<T> Carry for *const T {
    type Sent = usize;
    fn carry(self) -> usize {
        self as usize
    }
    fn back(sent: &usize) -> Self {
        *sent as *const T
    }
}

impl<T> Carry for *mut T {
    type Sent = usize;
    fn carry(self) -> usize {
        self as usize
    }
    fn back(sent: &usize) -> Self {
        *sent as *mut T
    }
}

/// Queues `job` on `comm` and stores its request in `request`.
///
/// # Safety
/// `request` is valid for a write, or NULL.
unsafe fn start(
    comm: c_int,
    request: *mut c_int,
    job: Box<dyn FnOnce() -> c_int + Send>,
) -> MpiResult {
    if request.is_null() {
        return crate::error::fail(crate::consts::MPI_ERR_ARG, "the request argument is NULL");
    }
    state::with(|s| s.comm(comm).map(drop))?;
    let completion = progress::start(comm, job);
    // SAFETY: the caller's contract.
    unsafe { crate::request::start_collective(request, comm, completion) }
}

/// Declares `MPI_I<name>` as `PMPI_<blocking>` run on the worker, with the same arguments
/// and a request. A `check` runs first, in the call: an erroneous argument the blocking
/// form would refuse (buffers that alias) fails the call itself, not its request.
macro_rules! nonblocking {
    ($( fn $name:ident / $pname:ident => $blocking:ident ( $($arg:ident : $ty:ty),* ) on $comm:ident $(check $check:expr;)? )*) => {
        mpi_fn! { $(
            fn $name / $pname ( $($arg: $ty,)* request: *mut c_int ) {
                let comm_handle = $comm;
                $( $check?; )?
                $( let $arg = Carry::carry($arg); )*
                start(comm_handle, request, Box::new(move || {
                    // SAFETY: the arguments of the nonblocking call, which MPI keeps valid
                    // until its request completes.
                    unsafe { $blocking($( <$ty as Carry>::back(&$arg) ),*) }
                }))
            }
        )* }
    };
}

nonblocking! {
    fn MPI_Ibarrier / PMPI_Ibarrier => PMPI_Barrier(comm: c_int) on comm
    fn MPI_Ibcast / PMPI_Ibcast => PMPI_Bcast(buffer: *mut c_void, count: c_int, datatype: c_int, root: c_int, comm: c_int) on comm
    fn MPI_Ireduce / PMPI_Ireduce => PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, root: c_int, comm: c_int) on comm
        check distinct_at_root(comm, root, sendbuf, recvbuf, count > 0);
    fn MPI_Iallreduce / PMPI_Iallreduce => PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, comm: c_int) on comm
        check distinct(sendbuf, recvbuf, count > 0);
    fn MPI_Iscan / PMPI_Iscan => PMPI_Scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, comm: c_int) on comm
        check distinct(sendbuf, recvbuf, count > 0);
    fn MPI_Iexscan / PMPI_Iexscan => PMPI_Exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int, comm: c_int) on comm
        check distinct(sendbuf, recvbuf, count > 0);
    fn MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block => PMPI_Reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: c_int, op: c_int, comm: c_int) on comm
        check distinct(sendbuf, recvbuf, recvcount > 0);
    fn MPI_Ireduce_scatter / PMPI_Ireduce_scatter => PMPI_Reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: c_int, op: c_int, comm: c_int) on comm
        check distinct(sendbuf, recvbuf, true);
    fn MPI_Igather / PMPI_Igather => PMPI_Gather(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) on comm
        check distinct_at_root(comm, root, sendbuf, recvbuf, sendcount > 0);
    fn MPI_Iscatter / PMPI_Iscatter => PMPI_Scatter(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) on comm
        check distinct_at_root(comm, root, sendbuf, recvbuf, recvcount > 0);
    fn MPI_Iallgather / PMPI_Iallgather => PMPI_Allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) on comm
        check on_comm(comm, |c| blocks_apart(c, Sent::One, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype));
    fn MPI_Ialltoall / PMPI_Ialltoall => PMPI_Alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) on comm
        check on_comm(comm, |c| blocks_apart(c, Sent::PerRank, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype));
    fn MPI_Igatherv / PMPI_Igatherv => PMPI_Gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, root: c_int, comm: c_int) on comm
        check distinct_at_root(comm, root, sendbuf, recvbuf, sendcount > 0);
    fn MPI_Iscatterv / PMPI_Iscatterv => PMPI_Scatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int) on comm
        check distinct_at_root(comm, root, sendbuf, recvbuf, recvcount > 0);
    fn MPI_Iallgatherv / PMPI_Iallgatherv => PMPI_Allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, comm: c_int) on comm
        check on_comm(comm, |c| allgatherv_apart(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype));
    fn MPI_Ialltoallw / PMPI_Ialltoallw => PMPI_Alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const c_int, comm: c_int) on comm
        check distinct_intra(comm, sendbuf, recvbuf, true);
    fn MPI_Ialltoallv / PMPI_Ialltoallv => PMPI_Alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: c_int, comm: c_int) on comm
        check distinct_intra(comm, sendbuf, recvbuf, true);
    fn MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather => PMPI_Neighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) on comm
    fn MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv => PMPI_Neighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, comm: c_int) on comm
    fn MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall => PMPI_Neighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, comm: c_int) on comm
    fn MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv => PMPI_Neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: c_int, comm: c_int) on comm
    fn MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw => PMPI_Neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_long, sendtypes: *const c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_long, recvtypes: *const c_int, comm: c_int) on comm
}

// The large-count forms: their blocking forms narrow the counts on the worker. The
// all-to-all ones check the buffers by address only (the same start with data to move).
nonblocking! {
    fn MPI_Ibcast_c / PMPI_Ibcast_c => PMPI_Bcast_c(buffer: *mut c_void, count: MpiCount, datatype: c_int, root: c_int, comm: c_int) on comm
    fn MPI_Ireduce_c / PMPI_Ireduce_c => PMPI_Reduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: c_int, op: c_int, root: c_int, comm: c_int) on comm
        check distinct_at_root(comm, root, sendbuf, recvbuf, count > 0);
    fn MPI_Iallreduce_c / PMPI_Iallreduce_c => PMPI_Allreduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: c_int, op: c_int, comm: c_int) on comm
        check distinct(sendbuf, recvbuf, count > 0);
    fn MPI_Iscan_c / PMPI_Iscan_c => PMPI_Scan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: c_int, op: c_int, comm: c_int) on comm
        check distinct(sendbuf, recvbuf, count > 0);
    fn MPI_Iexscan_c / PMPI_Iexscan_c => PMPI_Exscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount, datatype: c_int, op: c_int, comm: c_int) on comm
        check distinct(sendbuf, recvbuf, count > 0);
    fn MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c => PMPI_Reduce_scatter_block_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: MpiCount, datatype: c_int, op: c_int, comm: c_int) on comm
        check distinct(sendbuf, recvbuf, recvcount > 0);
    fn MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c => PMPI_Reduce_scatter_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const MpiCount, datatype: c_int, op: c_int, comm: c_int) on comm
        check distinct(sendbuf, recvbuf, true);
    fn MPI_Igather_c / PMPI_Igather_c => PMPI_Gather_c(sendbuf: *const c_void, sendcount: MpiCount, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount, recvtype: c_int, root: c_int, comm: c_int) on comm
        check distinct_at_root(comm, root, sendbuf, recvbuf, sendcount > 0);
    fn MPI_Iscatter_c / PMPI_Iscatter_c => PMPI_Scatter_c(sendbuf: *const c_void, sendcount: MpiCount, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount, recvtype: c_int, root: c_int, comm: c_int) on comm
        check distinct_at_root(comm, root, sendbuf, recvbuf, recvcount > 0);
    fn MPI_Iallgather_c / PMPI_Iallgather_c => PMPI_Allgather_c(sendbuf: *const c_void, sendcount: MpiCount, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount, recvtype: c_int, comm: c_int) on comm
        check distinct_intra(comm, sendbuf, recvbuf, sendcount > 0);
    fn MPI_Ialltoall_c / PMPI_Ialltoall_c => PMPI_Alltoall_c(sendbuf: *const c_void, sendcount: MpiCount, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount, recvtype: c_int, comm: c_int) on comm
        check distinct_intra(comm, sendbuf, recvbuf, sendcount > 0);
    fn MPI_Igatherv_c / PMPI_Igatherv_c => PMPI_Gatherv_c(sendbuf: *const c_void, sendcount: MpiCount, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const MpiCount, displs: *const c_long, recvtype: c_int, root: c_int, comm: c_int) on comm
        check distinct_at_root(comm, root, sendbuf, recvbuf, sendcount > 0);
    fn MPI_Iscatterv_c / PMPI_Iscatterv_c => PMPI_Scatterv_c(sendbuf: *const c_void, sendcounts: *const MpiCount, displs: *const c_long, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount, recvtype: c_int, root: c_int, comm: c_int) on comm
        check distinct_at_root(comm, root, sendbuf, recvbuf, recvcount > 0);
    fn MPI_Iallgatherv_c / PMPI_Iallgatherv_c => PMPI_Allgatherv_c(sendbuf: *const c_void, sendcount: MpiCount, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const MpiCount, displs: *const c_long, recvtype: c_int, comm: c_int) on comm
        check distinct_intra(comm, sendbuf, recvbuf, sendcount > 0);
    fn MPI_Ialltoallv_c / PMPI_Ialltoallv_c => PMPI_Alltoallv_c(sendbuf: *const c_void, sendcounts: *const MpiCount, sdispls: *const c_long, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const MpiCount, rdispls: *const c_long, recvtype: c_int, comm: c_int) on comm
        check distinct_intra(comm, sendbuf, recvbuf, true);
    fn MPI_Ialltoallw_c / PMPI_Ialltoallw_c => PMPI_Alltoallw_c(sendbuf: *const c_void, sendcounts: *const MpiCount, sdispls: *const c_long, sendtypes: *const c_int, recvbuf: *mut c_void, recvcounts: *const MpiCount, rdispls: *const c_long, recvtypes: *const c_int, comm: c_int) on comm
        check distinct_intra(comm, sendbuf, recvbuf, true);
    fn MPI_Ineighbor_allgather_c / PMPI_Ineighbor_allgather_c => PMPI_Neighbor_allgather_c(sendbuf: *const c_void, sendcount: MpiCount, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount, recvtype: c_int, comm: c_int) on comm
    fn MPI_Ineighbor_alltoall_c / PMPI_Ineighbor_alltoall_c => PMPI_Neighbor_alltoall_c(sendbuf: *const c_void, sendcount: MpiCount, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount, recvtype: c_int, comm: c_int) on comm
}
