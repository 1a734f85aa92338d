//! Inter-communicators: made from two groups' leaders, merged, their remote group, and the
//! parent of a spawned job.

use std::ffi::c_int;

use crate::call::mpi_fn;
use crate::comm::add;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::ptr::put;
use crate::state;

mpi_fn! {
    /// Joins `local_comm`'s group with the group whose leader is `remote_leader` of
    /// `peer_comm` (which only the local leader reads).
    fn MPI_Intercomm_create / PMPI_Intercomm_create(local_comm: c_int, local_leader: c_int, peer_comm: c_int, remote_leader: c_int, tag: c_int, newintercomm: *mut c_int) {
        if newintercomm.is_null() {
            return fail(MPI_ERR_ARG, "newintercomm is NULL");
        }
        let (local, peer) = state::with(|s| {
            let local = s.comm(local_comm)?.clone();
            let leader = usize::try_from(local_leader).ok().filter(|&l| l < local.size());
            let Some(leader) = leader else {
                return fail(MPI_ERR_RANK, format!("local leader {local_leader} is not a rank of the communicator"));
            };
            let peer = if local.rank() == leader { s.comm(peer_comm)?.clone() } else { local.clone() };
            crate::call::on_comm(local_comm);
            Ok((local, peer))
        })?;
        let remote = usize::try_from(remote_leader).unwrap_or(usize::MAX);
        let made = local.intercomm_create(local_leader as usize, &peer, remote, tag)?;
        put(newintercomm, add(local_comm, Some(made))?)
    }

    /// The intra-communicator of both groups; the group passing `high = 0` comes first.
    fn MPI_Intercomm_merge / PMPI_Intercomm_merge(intercomm: c_int, high: c_int, newintracomm: *mut c_int) {
        if newintracomm.is_null() {
            return fail(MPI_ERR_ARG, "newintracomm is NULL");
        }
        let inter = state::with(|s| Ok(s.comm(intercomm)?.clone()))?;
        let merged = inter.intercomm_merge(high != 0)?;
        put(newintracomm, add(intercomm, Some(merged))?)
    }

    fn MPI_Comm_remote_group / PMPI_Comm_remote_group(comm: c_int, group: *mut c_int) {
        if group.is_null() {
            return fail(MPI_ERR_ARG, "group is NULL");
        }
        let handle = state::with(|s| {
            let c = s.comm(comm)?;
            let Some(n) = c.remote_size() else {
                return fail(MPI_ERR_COMM, "not an inter-communicator");
            };
            let members = (0..n).map(|r| match c.world_rank(r) {
                Some(w) => Ok(w),
                None => fail(MPI_ERR_UNSUPPORTED_OPERATION, "the remote group is outside this job's world"),
            }).collect::<MpiResult<Vec<usize>>>()?;
            Ok(s.add_group(members))
        })?;
        put(group, handle)
    }

    /// The inter-communicator to the job that spawned this one, or `MPI_COMM_NULL`.
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut c_int) {
        let handle = state::with(|s| Ok(s.parent))?;
        put(parent, handle)
    }
}
