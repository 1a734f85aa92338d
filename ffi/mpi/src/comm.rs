//! Communicators: size and rank, dup, split, create, free, compare, inter-communicator
//! queries.

use std::ffi::c_int;

use commcore_linux::runtime::{Comm, MAX_GROUP_TAG, UNDEFINED};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::group::members;
use crate::p2p::on_comm;
use crate::ptr::{get, put};
use crate::state::{self, COMM_KIND};

/// Stores a communicator made from `parent` (it inherits its error handler) and returns
/// its handle, `MPI_COMM_NULL` for none.
pub(crate) fn add(parent: c_int, comm: Option<Comm>) -> MpiResult<c_int> {
    let Some(comm) = comm else { return Ok(MPI_COMM_NULL) };
    state::with(|s| {
        let handle = s.new_handle(COMM_KIND);
        crate::comms::insert(handle, comm);
        if let Some(&handler) = s.errhandlers.get(&parent) {
            s.errhandlers.insert(handle, handler);
        }
        Ok(handle)
    })
}

/// Stores `dup`, a duplicate of `comm`, with `comm`'s attributes and topology. When a copy
/// callback fails, the duplicate is freed and the call fails with the callback's code.
fn add_dup(comm: c_int, dup: Comm) -> MpiResult<c_int> {
    let handle = add(comm, Some(dup))?;
    if let Err(error) = crate::keyval::copy_all(comm, handle) {
        let _ = crate::keyval::delete_all(handle);
        state::with(|s| {
            crate::comms::remove(handle);
            s.errhandlers.remove(&handle);
            Ok(())
        })?;
        return Err(error);
    }
    crate::topo::copy(comm, handle);
    Ok(handle)
}

/// `MPI_Comm_idup`.
///
/// # Safety
/// `newcomm` stays valid for a write until the request completes; `request` is valid.
unsafe fn idup(comm: c_int, newcomm: *mut c_int, request: *mut c_int) -> MpiResult {
    if newcomm.is_null() || request.is_null() {
        return fail(MPI_ERR_ARG, "newcomm or request is NULL");
    }
    state::with(|s| s.comm(comm).map(drop))?;
    let out = newcomm as usize;
    // The program keeps `newcomm` valid until the request completes, as MPI requires.
    // SAFETY: `newcomm`, valid until the request completes (the caller's contract).
    let job = Box::new(move || unsafe { PMPI_Comm_dup(comm, out as *mut c_int) });
    // SAFETY: the caller's contract.
    unsafe { crate::request::start_collective(request, comm, crate::progress::start(comm, job)) }
}

/// Runs communicator creation `f` on `comm` after the nonblocking collectives (and
/// `MPI_Comm_idup`s) started on it before.
fn on_parent<T>(comm: c_int, f: impl FnOnce(&Comm) -> MpiResult<T>) -> MpiResult<T> {
    crate::progress::drain(comm);
    on_comm(comm, f)
}

/// Communicator `comm` and the ranks in it of `group`'s members, in group order.
fn group_ranks(comm: c_int, group: c_int) -> MpiResult<(Comm, Vec<usize>)> {
    crate::progress::drain(comm);
    group_ranks_now(comm, group)
}

/// [`group_ranks`] without waiting for `comm`'s nonblocking collectives.
fn group_ranks_now(comm: c_int, group: c_int) -> MpiResult<(Comm, Vec<usize>)> {
    state::with(|s| {
        let c = Comm::clone(&*s.comm(comm)?);
        let world = members(&c)?;
        let ranks = s
            .group(group)?
            .iter()
            .map(|member| match world.iter().position(|w| w == member) {
                Some(rank) => Ok(rank),
                None => fail(MPI_ERR_GROUP, "the group has a process outside the communicator"),
            })
            .collect::<MpiResult<Vec<usize>>>()?;
        Ok((c, ranks))
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
        let dup = on_parent(comm, |c| Ok(c.dup()?))?;
        put(newcomm, add_dup(comm, dup)?)
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
        let part = on_parent(comm, |c| Ok(c.split(color, key)?))?;
        put(newcomm, add(comm, part)?)
    }

    /// The communicator of `group`'s members, in group order (`MPI_COMM_NULL` elsewhere).
    /// On an intra-communicator the ranks may pass disjoint groups (MPI-2.2): a split whose
    /// color is the group's lowest rank here.
    fn MPI_Comm_create / PMPI_Comm_create(comm: c_int, group: c_int, newcomm: *mut c_int) {
        if newcomm.is_null() {
            return fail(MPI_ERR_ARG, "newcomm is NULL");
        }
        let (c, ranks) = group_ranks(comm, group)?;
        let made = match ranks.iter().position(|&r| r == c.rank()) {
            _ if c.is_inter() => c.create(&ranks)?,
            Some(key) => {
                let color = ranks.iter().min().copied().unwrap_or(0) as c_int;
                c.split(color, key as c_int)?
            }
            None => c.split(UNDEFINED, 0)?,
        };
        put(newcomm, add(comm, made)?)
    }

    /// The communicator of `group`'s members, made by them alone (`tag` tells apart
    /// creations that run at once).
    fn MPI_Comm_create_group / PMPI_Comm_create_group(comm: c_int, group: c_int, tag: c_int, newcomm: *mut c_int) {
        if newcomm.is_null() {
            return fail(MPI_ERR_ARG, "newcomm is NULL");
        }
        // Tag 0 of the runtime is the one dup, split and create use.
        let wire_tag = u32::try_from(tag).ok().filter(|&t| t < MAX_GROUP_TAG).map(|t| t + 1);
        let Some(wire_tag) = wire_tag else {
            return fail(MPI_ERR_TAG, format!("tag {tag} is negative or above {}", MAX_GROUP_TAG - 1));
        };
        // Its own tag keeps it apart from the collectives on `comm`, which need not have
        // finished: waiting for them could wait for members that are in this call.
        let (c, ranks) = group_ranks_now(comm, group)?;
        if !ranks.contains(&c.rank()) {
            return fail(MPI_ERR_GROUP, "the calling process is not in the group");
        }
        let made = c.create_group(&ranks, wire_tag)?;
        put(newcomm, add(comm, Some(made))?)
    }

    /// Splits into the processes that share memory (`MPI_COMM_TYPE_SHARED`, and the
    /// hardware-guided split for `mpi_hw_resource_type` `mpi_shared_memory`, the one level
    /// known); `MPI_COMM_NULL` for `MPI_UNDEFINED`, for other resource types or none, for the
    /// unguided split (there is no finer level) and for MPICH's neighborhood split.
    fn MPI_Comm_split_type / PMPI_Comm_split_type(comm: c_int, split_type: c_int, key: c_int, info: c_int, newcomm: *mut c_int) {
        if newcomm.is_null() {
            return fail(MPI_ERR_ARG, "newcomm is NULL");
        }
        let node = state::with(|s| Ok(s.world.node()))?;
        let guided = || -> MpiResult<bool> {
            let pairs = crate::info::pairs(info)?;
            Ok(pairs.iter().any(|(k, v)| k == "mpi_hw_resource_type" && v == "mpi_shared_memory"))
        };
        let color = match split_type {
            MPI_COMM_TYPE_SHARED => node as c_int,
            MPI_COMM_TYPE_HW_GUIDED if guided()? => node as c_int,
            MPI_COMM_TYPE_HW_GUIDED | MPI_COMM_TYPE_HW_UNGUIDED | MPIX_COMM_TYPE_NEIGHBORHOOD => UNDEFINED,
            MPI_UNDEFINED => UNDEFINED,
            other => return fail(MPI_ERR_ARG, format!("split type {other} is not known")),
        };
        let part = on_parent(comm, |c| Ok(c.split(color, key)?))?;
        put(newcomm, add(comm, part)?)
    }

    fn MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(comm: c_int, _info: c_int, newcomm: *mut c_int) {
        if newcomm.is_null() {
            return fail(MPI_ERR_ARG, "newcomm is NULL");
        }
        let dup = on_parent(comm, |c| Ok(c.dup()?))?;
        put(newcomm, add_dup(comm, dup)?)
    }

    /// `MPI_Comm_dup` run on the communicator's worker, in order with its nonblocking
    /// collectives; `newcomm` is set when the request completes.
    fn MPI_Comm_idup / PMPI_Comm_idup(comm: c_int, newcomm: *mut c_int, request: *mut c_int) {
        idup(comm, newcomm, request)
    }

    /// `MPI_Comm_idup` (no hints are kept).
    fn MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(comm: c_int, _info: c_int, newcomm: *mut c_int, request: *mut c_int) {
        idup(comm, newcomm, request)
    }

    fn MPI_Comm_set_info / PMPI_Comm_set_info(comm: c_int, _info: c_int) {
        state::with(|s| s.comm(comm).map(drop))
    }

    /// No hints are kept: an empty info object.
    fn MPI_Comm_get_info / PMPI_Comm_get_info(comm: c_int, info_used: *mut c_int) {
        state::with(|s| s.comm(comm).map(drop))?;
        if info_used.is_null() {
            return fail(MPI_ERR_ARG, "info_used is NULL");
        }
        put(info_used, crate::info::add(Vec::new()))
    }

    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut c_int) {
        let handle = get(comm)?;
        if handle == MPI_COMM_WORLD || handle == MPI_COMM_SELF {
            return fail(MPI_ERR_COMM, "the world and self communicators cannot be freed");
        }
        state::with(|s| s.comm(handle).map(drop))?;
        crate::keyval::delete_all(handle)?;
        crate::topo::forget(handle);
        state::with(|s| {
            crate::comms::remove(handle);
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
            let (mut a, mut b) = (members(&a)?, members(&b)?);
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
