//! MPI-4 sessions: `MPI_Session_init` and `_finalize`, the two process sets every process
//! has (`mpi://WORLD`, `mpi://SELF`), groups from them, and communicators made from a group
//! alone (`MPI_Comm_create_from_group`, `MPI_Intercomm_create_from_groups`).

use std::ffi::{c_char, c_int};

use commcore_linux::runtime::{Comm, MAX_GROUP_TAG};

use crate::call::{self, mpi_fn};
use crate::comm::add;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::lifecycle;
use crate::ptr::{c_str, get, put, put_text};
use crate::state;

const WORLD: &str = "mpi://WORLD";
const SELF: &str = "mpi://SELF";
const PSETS: [&str; 2] = [WORLD, SELF];

const LEVELS: [(&str, c_int); 4] = [
    ("MPI_THREAD_SINGLE", MPI_THREAD_SINGLE),
    ("MPI_THREAD_FUNNELED", MPI_THREAD_FUNNELED),
    ("MPI_THREAD_SERIALIZED", MPI_THREAD_SERIALIZED),
    ("MPI_THREAD_MULTIPLE", MPI_THREAD_MULTIPLE),
];

/// The thread level info `info` asks for (`thread_level`); without one, the highest this
/// library provides (as MPICH gives).
fn asked_level(info: c_int) -> MpiResult<c_int> {
    let pairs = crate::info::pairs(info)?;
    let Some((_, value)) = pairs.iter().find(|(k, _)| k == "thread_level") else {
        return Ok(MPI_THREAD_MULTIPLE);
    };
    match LEVELS.iter().find(|(name, _)| name == value) {
        Some(&(_, level)) => Ok(level),
        None => fail(MPI_ERR_ARG, format!("thread_level \"{value}\" is not an MPI thread level")),
    }
}

/// Checks `session` and sends the call's errors to its handler.
fn check(session: c_int) -> MpiResult {
    lifecycle::session_level(session)?;
    call::on_comm(session);
    Ok(())
}

/// The world ranks of process set `name`.
fn members(name: &str) -> MpiResult<Vec<usize>> {
    let world = state::with(|s| Ok(s.world.comm().clone()))?;
    // MPI's own process set names are matched without case, as MPICH does.
    match name {
        _ if name.eq_ignore_ascii_case(WORLD) => Ok((0..world.size()).collect()),
        _ if name.eq_ignore_ascii_case(SELF) => Ok(vec![world.rank()]),
        other => fail(
            MPI_ERR_ARG,
            format!("there is no process set \"{other}\" (there are {WORLD} and {SELF})"),
        ),
    }
}

/// A `create_group` tag for `stringtag` (FNV-1a, folded into the tags the runtime takes;
/// 0 is its own creations'). Creations with different string tags that fold alike and run
/// at once with the same members would be mistaken for one another.
fn group_tag(stringtag: &str, salt: u8) -> u32 {
    let hash = stringtag
        .bytes()
        .chain(std::iter::once(salt))
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    (hash % MAX_GROUP_TAG as u64) as u32 + 1
}

/// The communicator of the processes of world ranks `ranks`, made by them alone.
fn from_ranks(ranks: &[usize], stringtag: &str, salt: u8) -> MpiResult<Comm> {
    let world = state::with(|s| Ok(s.world.comm().clone()))?;
    if !ranks.contains(&world.rank()) {
        return fail(MPI_ERR_GROUP, "the calling process is not in the group");
    }
    Ok(world.create_group(ranks, group_tag(stringtag, salt))?)
}

/// Stores a communicator made from groups with `errhandler` as its error handler.
///
/// # Safety
/// `newcomm` is writable.
unsafe fn store(made: Comm, errhandler: c_int, newcomm: *mut c_int) -> MpiResult {
    let handle = add(MPI_COMM_WORLD, Some(made))?;
    state::with(|s| {
        s.errhandlers.insert(handle, errhandler);
        Ok(())
    })?;
    // SAFETY: the caller's contract.
    unsafe { put(newcomm, handle) }
}

mpi_fn! {
    /// Ends a session (and the runtime, if nothing else uses it).
    fn MPI_Session_finalize / PMPI_Session_finalize(session: *mut c_int) {
        let handle = get(session)?;
        lifecycle::end_session(handle)?;
        put(session, MPI_SESSION_NULL)
    }

    fn MPI_Session_get_info / PMPI_Session_get_info(session: c_int, info_used: *mut c_int) {
        check(session)?;
        let level = lifecycle::session_level(session)?;
        let name = LEVELS.iter().find(|&&(_, l)| l == level).map_or("MPI_THREAD_SINGLE", |&(n, _)| n);
        put(info_used, crate::info::add(vec![("thread_level".to_string(), name.to_string())]))
    }

    fn MPI_Session_get_num_psets / PMPI_Session_get_num_psets(session: c_int, _info: c_int, npset_names: *mut c_int) {
        check(session)?;
        put(npset_names, PSETS.len() as c_int)
    }

    /// The `n`-th process set's name; with `*pset_len` 0, only its length with the NUL.
    fn MPI_Session_get_nth_pset / PMPI_Session_get_nth_pset(session: c_int, _info: c_int, n: c_int, pset_len: *mut c_int, pset_name: *mut c_char) {
        check(session)?;
        let Some(name) = usize::try_from(n).ok().and_then(|n| PSETS.get(n)) else {
            return fail(MPI_ERR_ARG, format!("there is no process set {n} (there are {})", PSETS.len()));
        };
        let room = get(pset_len)?;
        if room > 0 {
            let mut written = 0;
            put_text(pset_name, room as usize, &mut written, name)?;
        }
        put(pset_len, name.len() as c_int + 1)
    }

    /// The process set's `mpi_size`.
    fn MPI_Session_get_pset_info / PMPI_Session_get_pset_info(session: c_int, pset_name: *const c_char, info: *mut c_int) {
        check(session)?;
        let size = members(c_str(pset_name)?)?.len();
        put(info, crate::info::add(vec![("mpi_size".to_string(), size.to_string())]))
    }

    fn MPI_Group_from_session_pset / PMPI_Group_from_session_pset(session: c_int, pset_name: *const c_char, newgroup: *mut c_int) {
        check(session)?;
        if newgroup.is_null() {
            return fail(MPI_ERR_ARG, "newgroup is NULL");
        }
        let list = members(c_str(pset_name)?)?;
        put(newgroup, state::with(|s| Ok(s.add_group(list)))?)
    }

    fn MPI_Session_set_errhandler / PMPI_Session_set_errhandler(session: c_int, errhandler: c_int) {
        check(session)?;
        if !crate::errhandler::exists(errhandler) {
            return fail(MPI_ERR_ARG, format!("{errhandler:#x} is not an error handler"));
        }
        state::with(|s| {
            s.errhandlers.insert(session, errhandler);
            Ok(())
        })
    }

    fn MPI_Session_get_errhandler / PMPI_Session_get_errhandler(session: c_int, errhandler: *mut c_int) {
        check(session)?;
        let handler = state::errhandler(session).unwrap_or(MPI_ERRORS_ARE_FATAL);
        put(errhandler, handler)
    }
}

/// Declares calls whose errors go to the error handler they are given (`via`), which MPI
/// says of `MPI_Session_init` and of the calls that make a communicator from groups alone.
macro_rules! handled {
    ($( $(#[$doc:meta])* fn $name:ident / $pname:ident ( $($arg:ident : $ty:ty),* ) via $handler:ident $body:block )*) => { $(
        $(#[$doc])*
        ///
        /// # Safety
        /// Pointer arguments must be valid as the MPI standard requires for this call.
        #[no_mangle]
        #[allow(unused_unsafe)]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> c_int {
            let handler = if crate::errhandler::exists($handler) { $handler } else { MPI_ERRORS_ARE_FATAL };
            call::run_handled(stringify!($name), handler, || {
                if handler != $handler {
                    return fail(MPI_ERR_ARG, format!("{:#x} is not an error handler", $handler));
                }
                // SAFETY: the caller passes pointers valid as MPI requires for this call.
                unsafe { $body }
            })
        }

        $(#[$doc])*
        ///
        /// # Safety
        /// As for the profiling entry point it calls.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the same arguments under the same contract.
            unsafe { $pname($($arg),*) }
        }
    )* };
}

handled! {
    /// Starts a session (and the runtime, if neither `MPI_Init` nor another session has);
    /// its errors go to the handler it is given, which the session gets.
    fn MPI_Session_init / PMPI_Session_init(info: c_int, errhandler: c_int, session: *mut c_int) via errhandler {
        if session.is_null() {
            return fail(MPI_ERR_ARG, "session is NULL");
        }
        let (handle, _) = lifecycle::begin_session(asked_level(info)?)?;
        state::with(|s| {
            s.errhandlers.insert(handle, errhandler);
            Ok(())
        })?;
        put(session, handle)
    }

    /// The communicator of `group`'s members, made by them alone: each passes the same
    /// group and `stringtag`.
    fn MPI_Comm_create_from_group / PMPI_Comm_create_from_group(group: c_int, stringtag: *const c_char, _info: c_int, errhandler: c_int, newcomm: *mut c_int) via errhandler {
        if newcomm.is_null() {
            return fail(MPI_ERR_ARG, "newcomm is NULL");
        }
        let ranks = state::with(|s| Ok(s.group(group)?.to_vec()))?;
        let made = from_ranks(&ranks, c_str(stringtag)?, 0)?;
        store(made, errhandler, newcomm)
    }

    /// An inter-communicator between two disjoint groups, made by their members alone; the
    /// leaders meet on a communicator of the two of them, made the same way.
    fn MPI_Intercomm_create_from_groups / PMPI_Intercomm_create_from_groups(local_group: c_int, local_leader: c_int, remote_group: c_int, remote_leader: c_int, stringtag: *const c_char, _info: c_int, errhandler: c_int, newintercomm: *mut c_int) via errhandler {
        if newintercomm.is_null() {
            return fail(MPI_ERR_ARG, "newintercomm is NULL");
        }
        let tag = c_str(stringtag)?;
        let (local_ranks, remote_ranks) = state::with(|s| Ok((s.group(local_group)?.to_vec(), s.group(remote_group)?.to_vec())))?;
        let leader_of = |ranks: &[usize], leader: c_int, which: &str| match usize::try_from(leader).ok().and_then(|l| ranks.get(l)) {
            Some(&world) => Ok(world),
            None => fail(MPI_ERR_RANK, format!("{which} leader {leader} is not a rank of its group")),
        };
        let (mine, theirs) = (leader_of(&local_ranks, local_leader, "local")?, leader_of(&remote_ranks, remote_leader, "remote")?);
        if local_ranks.iter().any(|r| remote_ranks.contains(r)) {
            return fail(MPI_ERR_GROUP, "the local and remote groups overlap");
        }
        let local = from_ranks(&local_ranks, tag, 1)?;
        let (peer, remote_at) = if local.rank() == local_leader as usize {
            (from_ranks(&[mine.min(theirs), mine.max(theirs)], tag, 2)?, (theirs > mine) as usize)
        } else {
            (local.clone(), 0)
        };
        let made = local.intercomm_create(local_leader as usize, &peer, remote_at, 0)?;
        store(made, errhandler, newintercomm)
    }
}
