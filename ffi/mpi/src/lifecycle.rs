//! Who keeps the runtime up: the world model (`MPI_Init` to `MPI_Finalize`) and each
//! session (`MPI_Session_init` to `MPI_Session_finalize`). The first of them brings it up,
//! the last to end takes it down, and it does not come back in the same process (the
//! launcher's connection is spent).

use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard, PoisonError};

use commcore_linux::runtime::World;

use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::state::{self, State, SESSION_KIND};

const NEVER: u8 = 0;
const ACTIVE: u8 = 1;
const ENDED: u8 = 2;

struct Users {
    world: u8,
    /// The sessions not finalized, with the thread level each was given.
    sessions: Vec<(c_int, c_int)>,
    next_session: u32,
}

/// Held across each start and end, so that two of them never cross.
static USERS: Mutex<Users> =
    Mutex::new(Users { world: NEVER, sessions: Vec::new(), next_session: 0 });

fn users() -> MutexGuard<'static, Users> {
    USERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The runtime, brought up if nothing has yet; the thread level provided for `required`
/// (up to `MPI_THREAD_MULTIPLE`: no call holds a lock while it waits, and the runtime
/// agrees context ids across threads).
fn up(required: c_int) -> MpiResult<c_int> {
    let provided = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE);
    match state::phase() {
        state::RUNNING => Ok(provided),
        state::FINALIZED => {
            fail(MPI_ERR_OTHER, "MPI has ended in this process and cannot start again")
        }
        _ => {
            // Threaded at every level: nonblocking collectives and MPI_Comm_idup run on
            // worker threads, so communicator creations overlap even in a single-threaded
            // program.
            let world = World::init_thread_multiple()
                .or_else(|e| fail(MPI_ERR_OTHER, format!("cannot start: {e}")))?;
            crate::env::epoch();
            state::start(State::new(world, provided));
            Ok(provided)
        }
    }
}

/// `MPI_Init`: the world model begins; the thread level provided.
pub(crate) fn begin_world(required: c_int) -> MpiResult<c_int> {
    let mut users = users();
    if users.world != NEVER {
        return fail(MPI_ERR_OTHER, "MPI was initialized before");
    }
    let provided = up(required)?;
    state::with(|s| {
        s.thread_level = provided;
        s.main_thread = std::thread::current().id();
        Ok(())
    })?;
    users.world = ACTIVE;
    Ok(provided)
}

/// `MPI_Finalize`: runs `exit_hooks` (attribute callbacks, which may call MPI), then ends
/// the world model, and the runtime unless a session still uses it. The hooks' error is
/// returned after the end.
pub(crate) fn end_world(exit_hooks: impl FnOnce() -> MpiResult) -> MpiResult {
    let active = || match users().world {
        ACTIVE => Ok(()),
        ENDED => fail(MPI_ERR_OTHER, "MPI has been finalized"),
        _ => fail(MPI_ERR_OTHER, "MPI has not been initialized"),
    };
    active()?;
    let hooks = exit_hooks();
    let mut users = users();
    if users.world != ACTIVE {
        return fail(MPI_ERR_OTHER, "MPI has been finalized");
    }
    users.world = ENDED;
    if users.sessions.is_empty() {
        state::finish()?;
    }
    hooks
}

pub(crate) fn world_initialized() -> bool {
    users().world != NEVER
}

pub(crate) fn world_finalized() -> bool {
    users().world == ENDED
}

/// `MPI_Session_init`: a new session at thread level `required`; its handle and the level
/// provided.
pub(crate) fn begin_session(required: c_int) -> MpiResult<(c_int, c_int)> {
    let mut users = users();
    let provided = up(required)?;
    users.next_session = (users.next_session + 1) & 0x03ff_ffff;
    let handle = (SESSION_KIND | users.next_session) as c_int;
    users.sessions.push((handle, provided));
    Ok((handle, provided))
}

/// The thread level of session `handle`, if it is one not finalized.
pub(crate) fn session_level(handle: c_int) -> MpiResult<c_int> {
    match users().sessions.iter().find(|&&(h, _)| h == handle) {
        Some(&(_, level)) => Ok(level),
        None => fail(MPI_ERR_SESSION, format!("{handle:#x} is not a session")),
    }
}

/// `MPI_Session_finalize`: ends session `handle`, and the runtime if nothing else uses it.
pub(crate) fn end_session(handle: c_int) -> MpiResult {
    let mut users = users();
    let Some(i) = users.sessions.iter().position(|&(h, _)| h == handle) else {
        return fail(MPI_ERR_SESSION, format!("{handle:#x} is not a session"));
    };
    users.sessions.remove(i);
    state::with(|s| {
        s.errhandlers.remove(&handle);
        Ok(())
    })?;
    if users.sessions.is_empty() && users.world != ACTIVE {
        state::finish()?;
    }
    Ok(())
}
