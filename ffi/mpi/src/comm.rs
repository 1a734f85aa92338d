//! Communicators: size and rank, dup, split, create, free, compare, inter-communicator
//! queries.

use std::ffi::c_int;

use commcore_linux::runtime::{Comm, UNDEFINED};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::group::members;
use crate::p2p::on_comm;
use crate::ptr::{get, put};
use crate::state::{self, COMM_KIND};

/// Stores a communicator made from `parent` (it inherits its error handler) and returns
/// its handle, `MPI_COMM_NULL` for none.
fn add(parent: c_int, comm: Option<Comm>) -> MpiResult<c_int> {
    let Some(comm) = comm else { return Ok(MPI_COMM_NULL) };
    state::with(|s| {
        let handle = s.new_handle(COMM_KIND);
        s.comms.insert(handle, comm);
        if let Some(&handler) = s.errhandlers.get(&parent) {
            s.errhandlers.insert(handle, handler);
        }
        Ok(handle)
    })
}

mpi_fn! {
    fn MPI_Comm_size / PMPI_Comm_size(comm: c_int, size: *mut c_int) {
        let n = state::with(|s| Ok(s.comm(comm)?.size()))?;
        put(size, n as c_int)
    }

    fn MPI_Comm_rank / PMPI_Comm_rank(comm: c_int, rank: *mut c_int) {
        let r = state::with(|s| Ok(s.comm(comm)?.rank()))?;
        put(rank, r as c_int)
    }

    fn MPI_Comm_dup / PMPI_Comm_dup(comm: c_int, newcomm: *mut c_int) {
        if newcomm.is_null() {
            return fail(MPI_ERR_ARG, "newcomm is NULL");
        }
        let dup = on_comm(comm, |c| Ok(c.dup()?))?;
        put(newcomm, add(comm, Some(dup))?)
    }

    fn MPI_Comm_split / PMPI_Comm_split(comm: c_int, color: c_int, key: c_int, newcomm: *mut c_int) {
        if newcomm.is_null() {
            return fail(MPI_ERR_ARG, "newcomm is NULL");
        }
        let color = match color {
            MPI_UNDEFINED => UNDEFINED,
            c if c >= 0 => c,
            c => return fail(MPI_ERR_ARG, format!("color {c} is negative")),
        };
        let part = on_comm(comm, |c| Ok(c.split(color, key)?))?;
        put(newcomm, add(comm, part)?)
    }

    /// The communicator of `group`'s members, in group order (`MPI_COMM_NULL` elsewhere).
    fn MPI_Comm_create / PMPI_Comm_create(comm: c_int, group: c_int, newcomm: *mut c_int) {
        if newcomm.is_null() {
            return fail(MPI_ERR_ARG, "newcomm is NULL");
        }
        let (c, ranks) = state::with(|s| {
            let c = s.comm(comm)?.clone();
            let world = members(&c)?;
            let ranks = s.group(group)?.iter().map(|member| {
                world.iter().position(|w| w == member).ok_or_else(|| {
                    crate::error::MpiError::new(MPI_ERR_GROUP, "the group has a process outside the communicator")
                })
            }).collect::<MpiResult<Vec<usize>>>()?;
            Ok((c, ranks))
        })?;
        let made = c.create(&ranks)?;
        put(newcomm, add(comm, made)?)
    }

    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut c_int) {
        let handle = get(comm)?;
        if handle == MPI_COMM_WORLD || handle == MPI_COMM_SELF {
            return fail(MPI_ERR_COMM, "the world and self communicators cannot be freed");
        }
        state::with(|s| {
            s.comm(handle)?;
            s.comms.remove(&handle);
            s.errhandlers.remove(&handle);
            s.names.remove(&handle);
            Ok(())
        })?;
        put(comm, MPI_COMM_NULL)
    }

    fn MPI_Comm_compare / PMPI_Comm_compare(comm1: c_int, comm2: c_int, result: *mut c_int) {
        let verdict = state::with(|s| {
            let (a, b) = (s.comm(comm1)?, s.comm(comm2)?);
            if comm1 == comm2 {
                return Ok(MPI_IDENT);
            }
            if a.is_inter() != b.is_inter() {
                return Ok(MPI_UNEQUAL);
            }
            let (mut a, mut b) = (members(a)?, members(b)?);
            if a == b {
                return Ok(MPI_CONGRUENT);
            }
            a.sort_unstable();
            b.sort_unstable();
            Ok(if a == b { MPI_SIMILAR } else { MPI_UNEQUAL })
        })?;
        put(result, verdict)
    }

    fn MPI_Comm_test_inter / PMPI_Comm_test_inter(comm: c_int, flag: *mut c_int) {
        let inter = state::with(|s| Ok(s.comm(comm)?.is_inter()))?;
        put(flag, inter as c_int)
    }

    fn MPI_Comm_remote_size / PMPI_Comm_remote_size(comm: c_int, size: *mut c_int) {
        let remote = state::with(|s| Ok(s.comm(comm)?.remote_size()))?;
        match remote {
            Some(n) => put(size, n as c_int),
            None => fail(MPI_ERR_COMM, "not an inter-communicator"),
        }
    }
}
