//! The communicators the program's handles name, in a table of their own: a call takes
//! its communicator (one `Arc`) under a read lock, so that threads look communicators up
//! at once, and without the state's lock, and a blocking call runs outside every lock.
//!
//! Lock order: the state's lock, then this one; nothing here takes the state's lock.

use std::ffi::c_int;
use std::sync::{Arc, PoisonError, RwLock};

use commcore_linux::runtime::{Comm, World};

use crate::call;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::handles::HandleMap;

static COMMS: RwLock<Option<Table>> = RwLock::new(None);

struct Table {
    world: Arc<Comm>,
    own: Arc<Comm>,
    /// Communicators made by the program, and the parent.
    made: HandleMap<Arc<Comm>>,
}

/// Holds the world's and self's communicators from `MPI_Init`.
pub(crate) fn install(world: &World) {
    let table = Table {
        world: Arc::new(world.comm().clone()),
        own: Arc::new(world.self_comm().clone()),
        made: HandleMap::default(),
    };
    *COMMS.write().unwrap_or_else(PoisonError::into_inner) = Some(table);
}

/// Drops every communicator (at `MPI_Finalize`, before the world: the runtime ends with
/// its last communicator).
pub(crate) fn clear() {
    let table = COMMS.write().unwrap_or_else(PoisonError::into_inner).take();
    drop(table);
}

/// The communicator behind `handle`; the call's errors now go to its handler.
#[inline]
pub(crate) fn get(handle: c_int) -> MpiResult<Arc<Comm>> {
    with(handle, |comm| Ok(comm.clone()))
}

/// Runs `f` on the communicator behind `handle` under the table's read lock (the state's
/// lock may be held: it comes first); the call's errors now go to its handler. `f` must
/// not block: a thread making a communicator waits for it.
#[inline]
pub(crate) fn with<T>(handle: c_int, f: impl FnOnce(&Arc<Comm>) -> MpiResult<T>) -> MpiResult<T> {
    let guard = COMMS.read().unwrap_or_else(PoisonError::into_inner);
    let Some(table) = guard.as_ref() else {
        drop(guard);
        return crate::state::not_running();
    };
    let found = match handle {
        MPI_COMM_WORLD => Some(&table.world),
        MPI_COMM_SELF => Some(&table.own),
        other => table.made.get(&other),
    };
    match found {
        Some(comm) => {
            call::on_comm(handle);
            f(comm)
        }
        None => {
            drop(guard);
            not_a_comm(handle)
        }
    }
}

/// The error of a handle that names no communicator (out of line: the message path only
/// looks up).
#[cold]
fn not_a_comm<T>(handle: c_int) -> MpiResult<T> {
    fail(MPI_ERR_COMM, format!("{handle:#x} is not a communicator"))
}

/// Names `comm` by `handle` (a fresh handle).
pub(crate) fn insert(handle: c_int, comm: Comm) {
    if let Some(table) = COMMS.write().unwrap_or_else(PoisonError::into_inner).as_mut() {
        table.made.insert(handle, Arc::new(comm));
    }
}

/// Forgets `handle`; its communicator, which goes once no call holds it.
pub(crate) fn remove(handle: c_int) -> Option<Arc<Comm>> {
    COMMS.write().unwrap_or_else(PoisonError::into_inner).as_mut()?.made.remove(&handle)
}
