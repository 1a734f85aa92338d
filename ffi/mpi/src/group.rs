//! Groups: ordered sets of processes, named by their world ranks.

use std::ffi::c_int;

use commcore_linux::runtime::Comm;

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::ptr::{array, array_mut, count, get, put};
use crate::state;

/// The world ranks of `comm`'s (local) group, in rank order.
pub(crate) fn members(comm: &Comm) -> MpiResult<Vec<usize>> {
    (0..comm.size())
        .map(|r| {
            let world = if comm.is_inter() { comm.local_world_rank(r) } else { comm.world_rank(r) };
            world.ok_or_else(|| {
                crate::error::MpiError::new(
                    MPI_ERR_UNSUPPORTED_OPERATION,
                    "the communicator has processes outside this job's world",
                )
            })
        })
        .collect()
}

/// Ranks `ranks` of a group of `size` members, checked.
fn checked(ranks: &[c_int], size: usize) -> MpiResult<Vec<usize>> {
    let mut seen = vec![false; size];
    ranks
        .iter()
        .map(|&r| match usize::try_from(r).ok().filter(|&r| r < size) {
            Some(r) if !seen[r] => {
                seen[r] = true;
                Ok(r)
            }
            _ => fail(MPI_ERR_RANK, format!("rank {r} is out of range or repeated")),
        })
        .collect()
}

/// The ranks that triplets (first, last, stride) name.
fn expand(ranges: &[[c_int; 3]]) -> MpiResult<Vec<c_int>> {
    let mut ranks = Vec::new();
    for &[first, last, stride] in ranges {
        if stride == 0 || (last - first).signum() * stride.signum() < 0 {
            return fail(MPI_ERR_ARG, format!("range ({first}, {last}, {stride}) is malformed"));
        }
        let mut r = first;
        while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
            ranks.push(r);
            let Some(next) = r.checked_add(stride) else { break };
            r = next;
        }
    }
    Ok(ranks)
}

/// # Safety
/// `newgroup` is valid for a write, or NULL.
unsafe fn new_group(members: Vec<usize>, newgroup: *mut c_int) -> MpiResult {
    let handle = state::with(|s| Ok(s.add_group(members)))?;
    // SAFETY: the caller's contract.
    unsafe { put(newgroup, handle) }
}

mpi_fn! {
    fn MPI_Comm_group / PMPI_Comm_group(comm: c_int, group: *mut c_int) {
        let list = state::with(|s| members(&*s.comm(comm)?))?;
        new_group(list, group)
    }

    fn MPI_Group_size / PMPI_Group_size(group: c_int, size: *mut c_int) {
        let n = state::with(|s| Ok(s.group(group)?.len()))?;
        put(size, n as c_int)
    }

    /// This process's rank in the group, or `MPI_UNDEFINED`.
    fn MPI_Group_rank / PMPI_Group_rank(group: c_int, rank: *mut c_int) {
        let r = state::with(|s| {
            let me = s.world.rank();
            Ok(s.group(group)?.iter().position(|&m| m == me))
        })?;
        put(rank, r.map_or(MPI_UNDEFINED, |r| r as c_int))
    }

    fn MPI_Group_incl / PMPI_Group_incl(group: c_int, n: c_int, ranks: *const c_int, newgroup: *mut c_int) {
        let ranks = array(ranks, count(n)?)?;
        let list = state::with(|s| {
            let all = s.group(group)?;
            Ok(checked(ranks, all.len())?.into_iter().map(|r| all[r]).collect())
        })?;
        new_group(list, newgroup)
    }

    fn MPI_Group_excl / PMPI_Group_excl(group: c_int, n: c_int, ranks: *const c_int, newgroup: *mut c_int) {
        let ranks = array(ranks, count(n)?)?;
        let list = state::with(|s| {
            let all = s.group(group)?;
            let out = checked(ranks, all.len())?;
            Ok(all.iter().enumerate().filter(|(r, _)| !out.contains(r)).map(|(_, &m)| m).collect())
        })?;
        new_group(list, newgroup)
    }

    /// The ranks of `n` triplets (first, last, stride), in order.
    fn MPI_Group_range_incl / PMPI_Group_range_incl(group: c_int, n: c_int, ranges: *const [c_int; 3], newgroup: *mut c_int) {
        let ranks = expand(array(ranges, count(n)?)?)?;
        let list = state::with(|s| {
            let all = s.group(group)?;
            Ok(checked(&ranks, all.len())?.into_iter().map(|r| all[r]).collect())
        })?;
        new_group(list, newgroup)
    }

    fn MPI_Group_range_excl / PMPI_Group_range_excl(group: c_int, n: c_int, ranges: *const [c_int; 3], newgroup: *mut c_int) {
        let ranks = expand(array(ranges, count(n)?)?)?;
        let list = state::with(|s| {
            let all = s.group(group)?;
            let out = checked(&ranks, all.len())?;
            Ok(all.iter().enumerate().filter(|(r, _)| !out.contains(r)).map(|(_, &m)| m).collect())
        })?;
        new_group(list, newgroup)
    }

    fn MPI_Group_union / PMPI_Group_union(group1: c_int, group2: c_int, newgroup: *mut c_int) {
        let list = state::with(|s| {
            let mut list = s.group(group1)?.to_vec();
            list.extend(s.group(group2)?.iter().filter(|m| !list.contains(m)).collect::<Vec<_>>());
            Ok(list)
        })?;
        new_group(list, newgroup)
    }

    fn MPI_Group_intersection / PMPI_Group_intersection(group1: c_int, group2: c_int, newgroup: *mut c_int) {
        let list = state::with(|s| {
            let other = s.group(group2)?;
            Ok(s.group(group1)?.iter().copied().filter(|m| other.contains(m)).collect())
        })?;
        new_group(list, newgroup)
    }

    fn MPI_Group_difference / PMPI_Group_difference(group1: c_int, group2: c_int, newgroup: *mut c_int) {
        let list = state::with(|s| {
            let other = s.group(group2)?;
            Ok(s.group(group1)?.iter().copied().filter(|m| !other.contains(m)).collect())
        })?;
        new_group(list, newgroup)
    }

    fn MPI_Group_free / PMPI_Group_free(group: *mut c_int) {
        let handle = get(group)?;
        state::with(|s| {
            s.group(handle)?;
            s.groups.remove(&handle);
            Ok(())
        })?;
        put(group, MPI_GROUP_NULL)
    }

    /// Each rank of `group1` in `group2`, or `MPI_UNDEFINED`.
    fn MPI_Group_translate_ranks / PMPI_Group_translate_ranks(group1: c_int, n: c_int, ranks1: *const c_int, group2: c_int, ranks2: *mut c_int) {
        let n = count(n)?;
        let (ranks1, ranks2) = (array(ranks1, n)?, array_mut(ranks2, n)?);
        state::with(|s| {
            let (a, b) = (s.group(group1)?, s.group(group2)?);
            for (i, &r) in ranks1.iter().enumerate() {
                ranks2[i] = if r == MPI_PROC_NULL {
                    MPI_PROC_NULL
                } else {
                    let Some(&member) = usize::try_from(r).ok().and_then(|r| a.get(r)) else {
                        return fail(MPI_ERR_RANK, format!("rank {r} is not in the group"));
                    };
                    b.iter().position(|&m| m == member).map_or(MPI_UNDEFINED, |p| p as c_int)
                };
            }
            Ok(())
        })
    }

    fn MPI_Group_compare / PMPI_Group_compare(group1: c_int, group2: c_int, result: *mut c_int) {
        let verdict = state::with(|s| {
            let (a, b) = (s.group(group1)?.to_vec(), s.group(group2)?.to_vec());
            if a == b {
                return Ok(MPI_IDENT);
            }
            let (mut a, mut b) = (a, b);
            a.sort_unstable();
            b.sort_unstable();
            Ok(if a == b { MPI_SIMILAR } else { MPI_UNEQUAL })
        })?;
        put(result, verdict)
    }
}
