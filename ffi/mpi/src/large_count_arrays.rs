//! The large-count forms whose counts come in arrays (the v collectives, indexed and
//! structured datatypes) or go out through pointers (`MPI_Get_count_c`, `MPI_Pack_c`):
//! each array is narrowed into a copy of int form's type, and each result widened.

use std::ffi::{c_int, c_long, c_void};

use crate::call;
use crate::coll_blocks::*;
use crate::consts::*;
use crate::darray::*;
use crate::derived::*;
use crate::error::{fail, MpiResult};
use crate::large_count::MpiCount;
use crate::p2p::*;
use crate::pack::*;
use crate::ptr::{array, get, in_place, put};
use crate::state;
use crate::subarray::*;

/// Runs `narrow`; its error is this call's (`name`), else `call` runs on what it made and
/// returns the int form's code (which reported its own errors).
fn narrowed<T>(
    name: &str,
    narrow: impl FnOnce() -> MpiResult<T>,
    call: impl FnOnce(T) -> c_int,
) -> c_int {
    match narrow() {
        Ok(value) => call(value),
        Err(error) => call::run(name, || Err(error)),
    }
}

fn to_int<T: Copy + TryInto<c_int> + std::fmt::Display>(value: T, what: &str) -> MpiResult<c_int> {
    match value.try_into() {
        Ok(v) => Ok(v),
        Err(_) => fail(MPI_ERR_UNSUPPORTED_OPERATION, format!("{what} {value} does not fit 32 bits: counts and displacements from 2^31 on are not provided yet")),
    }
}

/// `n` values of `values` narrowed to int; an empty copy for NULL (an argument the call
/// ignores).
///
/// # Safety
/// `values` is NULL or holds `n` values.
unsafe fn ints<T: Copy + TryInto<c_int> + std::fmt::Display>(
    values: *const T,
    n: usize,
    what: &str,
) -> MpiResult<Vec<c_int>> {
    if values.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: the caller's contract.
    unsafe { array(values, n) }?.iter().map(|&v| to_int(v, what)).collect()
}

/// A narrowed copy's address for the int form (NULL for an empty copy of a NULL array).
fn ptr_of(values: &[c_int]) -> *const c_int {
    if values.is_empty() {
        std::ptr::null()
    } else {
        values.as_ptr()
    }
}

/// `comm`'s process counts: (its group, the group its v arrays count: the remote one on
/// an inter-communicator), its rank, and whether it is an inter-communicator.
fn sizes(comm: c_int) -> MpiResult<(usize, usize, usize, bool)> {
    state::with(|s| {
        let c = s.comm(comm)?;
        Ok((c.size(), c.remote_size().unwrap_or(c.size()), c.rank(), c.remote_size().is_some()))
    })
}

/// Whether this process is the root of a rooted collective on `comm` (where the v
/// arrays are read).
fn at_root(comm: c_int, root: c_int) -> MpiResult<(bool, usize)> {
    let (_, n, rank, inter) = sizes(comm)?;
    Ok((if inter { root == MPI_ROOT } else { root >= 0 && root as usize == rank }, n))
}

crate::large_count::large_by_hand! {
    fn MPI_Gatherv_c / PMPI_Gatherv_c(sendbuf: *const c_void, sendcount: MpiCount, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const MpiCount, displs: *const c_long, recvtype: c_int, root: c_int, comm: c_int) {
        narrowed("MPI_Gatherv_c", || {
            let (root_here, n) = at_root(comm, root)?;
            let send = if root_here && in_place(sendbuf) { 0 } else { to_int(sendcount, "sendcount")? };
            if !root_here {
                return Ok((send, Vec::new(), Vec::new()));
            }
            Ok((send, ints(recvcounts, n, "recvcount")?, ints(displs, n, "displacement")?))
        }, |(send, counts, displs)| PMPI_Gatherv(sendbuf, send, sendtype, recvbuf, ptr_of(&counts), ptr_of(&displs), recvtype, root, comm))
    }

    fn MPI_Scatterv_c / PMPI_Scatterv_c(sendbuf: *const c_void, sendcounts: *const MpiCount, displs: *const c_long, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount, recvtype: c_int, root: c_int, comm: c_int) {
        narrowed("MPI_Scatterv_c", || {
            let (root_here, n) = at_root(comm, root)?;
            let recv = if root_here && in_place(recvbuf) { 0 } else { to_int(recvcount, "recvcount")? };
            if !root_here {
                return Ok((Vec::new(), Vec::new(), recv));
            }
            Ok((ints(sendcounts, n, "sendcount")?, ints(displs, n, "displacement")?, recv))
        }, |(counts, displs, recv)| PMPI_Scatterv(sendbuf, ptr_of(&counts), ptr_of(&displs), sendtype, recvbuf, recv, recvtype, root, comm))
    }

    fn MPI_Allgatherv_c / PMPI_Allgatherv_c(sendbuf: *const c_void, sendcount: MpiCount, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const MpiCount, displs: *const c_long, recvtype: c_int, comm: c_int) {
        narrowed("MPI_Allgatherv_c", || {
            let (_, n, _, _) = sizes(comm)?;
            let send = if in_place(sendbuf) { 0 } else { to_int(sendcount, "sendcount")? };
            Ok((send, ints(recvcounts, n, "recvcount")?, ints(displs, n, "displacement")?))
        }, |(send, counts, displs)| PMPI_Allgatherv(sendbuf, send, sendtype, recvbuf, ptr_of(&counts), ptr_of(&displs), recvtype, comm))
    }

    fn MPI_Alltoallv_c / PMPI_Alltoallv_c(sendbuf: *const c_void, sendcounts: *const MpiCount, sdispls: *const c_long, sendtype: c_int, recvbuf: *mut c_void, recvcounts: *const MpiCount, rdispls: *const c_long, recvtype: c_int, comm: c_int) {
        narrowed("MPI_Alltoallv_c", || {
            let (_, n, _, _) = sizes(comm)?;
            let send = if in_place(sendbuf) { (Vec::new(), Vec::new()) } else { (ints(sendcounts, n, "sendcount")?, ints(sdispls, n, "displacement")?) };
            Ok((send, ints(recvcounts, n, "recvcount")?, ints(rdispls, n, "displacement")?))
        }, |((sc, sd), rc, rd)| PMPI_Alltoallv(sendbuf, ptr_of(&sc), ptr_of(&sd), sendtype, recvbuf, ptr_of(&rc), ptr_of(&rd), recvtype, comm))
    }

    fn MPI_Alltoallw_c / PMPI_Alltoallw_c(sendbuf: *const c_void, sendcounts: *const MpiCount, sdispls: *const c_long, sendtypes: *const c_int, recvbuf: *mut c_void, recvcounts: *const MpiCount, rdispls: *const c_long, recvtypes: *const c_int, comm: c_int) {
        narrowed("MPI_Alltoallw_c", || {
            let (_, n, _, _) = sizes(comm)?;
            let send = if in_place(sendbuf) { (Vec::new(), Vec::new()) } else { (ints(sendcounts, n, "sendcount")?, ints(sdispls, n, "displacement")?) };
            Ok((send, ints(recvcounts, n, "recvcount")?, ints(rdispls, n, "displacement")?))
        }, |((sc, sd), rc, rd)| PMPI_Alltoallw(sendbuf, ptr_of(&sc), ptr_of(&sd), sendtypes, recvbuf, ptr_of(&rc), ptr_of(&rd), recvtypes, comm))
    }

    fn MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const MpiCount, datatype: c_int, op: c_int, comm: c_int) {
        narrowed("MPI_Reduce_scatter_c", || {
            let (n, _, _, _) = sizes(comm)?;
            ints(recvcounts, n, "recvcount")
        }, |counts| crate::coll::PMPI_Reduce_scatter(sendbuf, recvbuf, ptr_of(&counts), datatype, op, comm))
    }

    fn MPI_Type_create_subarray_c / PMPI_Type_create_subarray_c(ndims: c_int, sizes: *const MpiCount, subsizes: *const MpiCount, starts: *const MpiCount, order: c_int, oldtype: c_int, newtype: *mut c_int) {
        narrowed("MPI_Type_create_subarray_c", || {
            let n = ndims.max(0) as usize;
            Ok((ints(sizes, n, "size")?, ints(subsizes, n, "subsize")?, ints(starts, n, "start")?))
        }, |(a, b, c)| PMPI_Type_create_subarray(ndims, ptr_of(&a), ptr_of(&b), ptr_of(&c), order, oldtype, newtype))
    }

    fn MPI_Type_create_darray_c / PMPI_Type_create_darray_c(size: c_int, rank: c_int, ndims: c_int, gsizes: *const MpiCount, distribs: *const c_int, dargs: *const c_int, psizes: *const c_int, order: c_int, oldtype: c_int, newtype: *mut c_int) {
        narrowed("MPI_Type_create_darray_c", || ints(gsizes, ndims.max(0) as usize, "global size"),
            |g| PMPI_Type_create_darray(size, rank, ndims, ptr_of(&g), distribs, dargs, psizes, order, oldtype, newtype))
    }

    fn MPI_Get_count_c / PMPI_Get_count_c(status: *const MpiStatus, datatype: c_int, count: *mut MpiCount) {
        widened("MPI_Get_count_c", count, |n| PMPI_Get_count(status, datatype, n))
    }

    fn MPI_Get_elements_c / PMPI_Get_elements_c(status: *const MpiStatus, datatype: c_int, count: *mut MpiCount) {
        widened("MPI_Get_elements_c", count, |n| PMPI_Get_elements(status, datatype, n))
    }

    // MPI_Type_size_x's value: a size from 2^31 on too.
    fn MPI_Type_size_c / PMPI_Type_size_c(datatype: c_int, size: *mut MpiCount) {
        PMPI_Type_size_x(datatype, size)
    }

    fn MPI_Pack_size_c / PMPI_Pack_size_c(incount: MpiCount, datatype: c_int, comm: c_int, size: *mut MpiCount) {
        narrowed("MPI_Pack_size_c", || to_int(incount, "incount"),
            |n| widened("MPI_Pack_size_c", size, |s| PMPI_Pack_size(n, datatype, comm, s)))
    }

    fn MPI_Pack_c / PMPI_Pack_c(inbuf: *const c_void, incount: MpiCount, datatype: c_int, outbuf: *mut c_void, outsize: MpiCount, position: *mut MpiCount, comm: c_int) {
        narrowed("MPI_Pack_c", || Ok((to_int(incount, "incount")?, to_int(outsize, "outsize")?)),
            |(n, room)| through("MPI_Pack_c", position, |p| PMPI_Pack(inbuf, n, datatype, outbuf, room, p, comm)))
    }

    fn MPI_Unpack_c / PMPI_Unpack_c(inbuf: *const c_void, insize: MpiCount, position: *mut MpiCount, outbuf: *mut c_void, outcount: MpiCount, datatype: c_int, comm: c_int) {
        narrowed("MPI_Unpack_c", || Ok((to_int(insize, "insize")?, to_int(outcount, "outcount")?)),
            |(size, n)| through("MPI_Unpack_c", position, |p| PMPI_Unpack(inbuf, size, p, outbuf, n, datatype, comm)))
    }
}

/// Runs the int form `call` with an int result, then widens it into `out`.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn widened(name: &str, out: *mut MpiCount, call: impl FnOnce(*mut c_int) -> c_int) -> c_int {
    if out.is_null() {
        return call::run(name, || fail(MPI_ERR_ARG, "the result argument is NULL"));
    }
    let mut value: c_int = 0;
    let code = call(&mut value);
    if code == MPI_SUCCESS {
        // SAFETY: the caller's contract.
        let _ = unsafe { put(out, value as MpiCount) };
    }
    code
}

/// Runs the int form `call` with an in-out int position narrowed from `position`, then
/// widens it back.
///
/// # Safety
/// `position` is NULL or readable and writable.
unsafe fn through(
    name: &str,
    position: *mut MpiCount,
    call: impl FnOnce(*mut c_int) -> c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    let start = match unsafe { get(position) }.and_then(|p| to_int(p, "position")) {
        Ok(p) => p,
        Err(error) => return call::run(name, || Err(error)),
    };
    let mut at = start;
    let code = call(&mut at);
    if code == MPI_SUCCESS {
        // SAFETY: the caller's contract.
        let _ = unsafe { put(position, at as MpiCount) };
    }
    code
}
