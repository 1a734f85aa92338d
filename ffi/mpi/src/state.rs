//! The library's state while MPI runs: the world, and the tables that turn the program's
//! integer handles into communicators, groups and requests.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use commcore_linux::runtime::{Comm, Request, World};

use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::request_table::RequestTable;

/// Kind bits of the handles this library makes (as MPICH's indirect handles).
pub(crate) const COMM_KIND: u32 = 0x8400_0000;
pub(crate) const GROUP_KIND: u32 = 0x8800_0000;
pub(crate) const REQUEST_KIND: u32 = 0xac00_0000;
pub(crate) const SESSION_KIND: u32 = 0xb800_0000;
const INDEX_MASK: u32 = 0x03ff_ffff;

/// Where the library is in its life (`MPI_Initialized`, `MPI_Finalized`).
static PHASE: AtomicU8 = AtomicU8::new(BEFORE_INIT);
pub(crate) const BEFORE_INIT: u8 = 0;
pub(crate) const RUNNING: u8 = 1;
pub(crate) const FINALIZED: u8 = 2;

static STATE: Mutex<Option<State>> = Mutex::new(None);

pub(crate) struct State {
    pub world: World,
    /// Error handlers set on communicators; the rest have `MPI_ERRORS_ARE_FATAL`.
    pub errhandlers: HashMap<c_int, c_int>,
    /// Groups: the members' world ranks, in group order.
    pub groups: HashMap<c_int, Vec<usize>>,
    /// Names given to communicators (`MPI_Comm_set_name`).
    pub names: HashMap<c_int, String>,
    pub requests: RequestTable,
    /// Requests the program freed before they completed, each with the packed copy its
    /// runtime request reads or writes (kept until it ends; dropped after it).
    pub detached: Vec<(Request<'static>, Option<Box<[u8]>>)>,
    /// The inter-communicator to the spawning job (`MPI_COMM_NULL` if none).
    pub parent: c_int,
    pub thread_level: c_int,
    pub main_thread: ThreadId,
    next_index: u32,
}

impl State {
    pub fn new(world: World, thread_level: c_int) -> Self {
        let parent = world.parent().is_some();
        let mut state = State {
            world,
            errhandlers: HashMap::new(),
            groups: HashMap::new(),
            names: HashMap::new(),
            requests: RequestTable::default(),
            detached: Vec::new(),
            thread_level,
            main_thread: std::thread::current().id(),
            next_index: 0,
            parent: MPI_COMM_NULL,
        };
        if parent {
            state.parent = state.new_handle(COMM_KIND);
        }
        state
    }

    /// The communicator behind `handle` (see [`crate::comms::get`]).
    pub fn comm(&self, handle: c_int) -> MpiResult<Arc<Comm>> {
        crate::comms::get(handle)
    }

    /// A fresh handle of `kind`.
    pub fn new_handle(&mut self, kind: u32) -> c_int {
        self.next_index = (self.next_index + 1) & INDEX_MASK;
        (kind | self.next_index) as c_int
    }

    /// The members of `group` (world ranks).
    pub fn group(&self, group: c_int) -> MpiResult<&[usize]> {
        if group == MPI_GROUP_EMPTY {
            return Ok(&[]);
        }
        match self.groups.get(&group) {
            Some(members) => Ok(members),
            None => fail(MPI_ERR_GROUP, format!("{group:#x} is not a group")),
        }
    }

    /// A new group handle for `members` (the empty group's handle when there are none).
    pub fn add_group(&mut self, members: Vec<usize>) -> c_int {
        if members.is_empty() {
            return MPI_GROUP_EMPTY;
        }
        let handle = self.new_handle(GROUP_KIND);
        self.groups.insert(handle, members);
        handle
    }
}

fn lock() -> MutexGuard<'static, Option<State>> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on the state; an error if MPI is not running.
pub(crate) fn with<T>(f: impl FnOnce(&mut State) -> MpiResult<T>) -> MpiResult<T> {
    let mut guard = lock();
    match guard.as_mut() {
        Some(state) => f(state),
        None => not_running(),
    }
}

/// The error of a call made while MPI is not running.
#[cold]
pub(crate) fn not_running<T>() -> MpiResult<T> {
    if phase() == FINALIZED {
        return fail(MPI_ERR_OTHER, "MPI has been finalized");
    }
    fail(MPI_ERR_OTHER, "MPI has not been initialized")
}

pub(crate) fn phase() -> u8 {
    PHASE.load(Ordering::Acquire)
}

/// Installs the state at `MPI_Init`.
pub(crate) fn start(state: State) {
    let mut guard = lock();
    crate::comms::install(&state.world);
    if let Some(parent) = state.world.parent() {
        crate::comms::insert(state.parent, parent.clone());
    }
    *guard = Some(state);
    drop(guard);
    PHASE.store(RUNNING, Ordering::Release);
}

/// Ends MPI: the world goes (the runtime finishes its traffic) at `MPI_Finalize`.
pub(crate) fn finish() -> MpiResult {
    crate::bsend::drain();
    crate::progress::shut_down();
    let state = lock().take();
    match state {
        Some(mut state) => {
            PHASE.store(FINALIZED, Ordering::Release);
            crate::comms::clear();
            // Freed sends finish; freed receives still unmatched are withdrawn.
            for (mut request, _packed) in state.detached.drain(..) {
                let _ = request.test();
            }
            drop(state);
            Ok(())
        }
        None => fail(MPI_ERR_OTHER, "MPI is not running"),
    }
}

/// The error handler of communicator `comm`, if MPI runs and `comm` exists.
pub(crate) fn errhandler(comm: c_int) -> Option<c_int> {
    let guard = lock();
    let state = guard.as_ref()?;
    Some(state.errhandlers.get(&comm).copied().unwrap_or(MPI_ERRORS_ARE_FATAL))
}

/// Ends the job with exit code `code` (`MPI_Abort`, fatal errors).
pub(crate) fn abort(code: c_int, message: &str) -> ! {
    let mut guard = lock();
    match guard.as_mut() {
        Some(state) => state.world.abort(code, message),
        None => std::process::exit(code),
    }
}
