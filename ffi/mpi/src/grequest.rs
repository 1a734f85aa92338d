//! Generalized requests (`MPI_Grequest_start`, `MPI_Grequest_complete`): operations the
//! program runs itself and completes from any thread. The program's query function runs in
//! `MPI_Grequest_complete`, outside this library's locks (a wait or test may hold the
//! request table, and the function may call MPI); the wait or test that finds the request
//! complete returns that status and calls the free function. `MPI_Cancel` calls the cancel
//! function. A request freed before it completes is freed when it completes.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::request::{hand_out, stored, Pending, Work};
use crate::state;
use crate::status;

pub(crate) type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MpiStatus) -> c_int;
pub(crate) type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
pub(crate) type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// What `MPI_Grequest_complete` reaches while a wait may hold the request.
struct Shared {
    query: QueryFn,
    free: FreeFn,
    extra: usize,
    complete: AtomicBool,
    /// The query function's status and code, set before `complete`.
    queried: Mutex<Option<(MpiStatus, c_int)>>,
    /// The program freed the request before it completed.
    freed: AtomicBool,
}

/// A generalized request in the request table.
pub(crate) struct Generalized {
    shared: Arc<Shared>,
    cancel: CancelFn,
    handle: c_int,
}

/// The requests not yet complete, by handle.
static OPEN: Mutex<Option<HashMap<c_int, Arc<Shared>>>> = Mutex::new(None);

fn open<T>(f: impl FnOnce(&mut HashMap<c_int, Arc<Shared>>) -> T) -> T {
    f(OPEN.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert_with(HashMap::new))
}

impl Shared {
    fn free(&self) -> MpiResult {
        // SAFETY: the program's free function, given its state, once.
        checked(unsafe { (self.free)(self.extra as *mut c_void) }, "free")
    }
}

/// A program's function's error code as this library's error.
fn checked(code: c_int, what: &str) -> MpiResult {
    if code == MPI_SUCCESS {
        return Ok(());
    }
    fail(code, format!("the generalized request's {what} function returned {code}"))
}

impl Generalized {
    /// The status once complete (the query function's, then the free function called).
    pub(crate) fn test(&mut self) -> MpiResult<Option<MpiStatus>> {
        if !self.shared.complete.load(Ordering::Acquire) {
            return Ok(None);
        }
        open(|o| o.remove(&self.handle));
        let queried = self.shared.queried.lock().unwrap_or_else(PoisonError::into_inner).take();
        let (found, code) = queried.unwrap_or((status::empty(), MPI_SUCCESS));
        let freed = self.shared.free();
        checked(code, "query")?;
        freed?;
        Ok(Some(found))
    }

    /// Blocks until complete.
    pub(crate) fn wait(mut self) -> MpiResult<MpiStatus> {
        loop {
            if let Some(found) = self.test()? {
                return Ok(found);
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// `MPI_Cancel`: the cancel function, told whether the request has completed.
    pub(crate) fn cancel(&self) -> MpiResult {
        let complete = self.shared.complete.load(Ordering::Acquire) as c_int;
        let extra = self.shared.extra as *mut c_void;
        // SAFETY: the program's cancel function, given its state.
        checked(unsafe { (self.cancel)(extra, complete) }, "cancel")
    }

    /// `MPI_Request_free`: freed now if complete, else when it completes.
    pub(crate) fn detach(self) {
        let now = open(|o| {
            self.shared.freed.store(true, Ordering::Release);
            let complete = self.shared.complete.load(Ordering::Acquire);
            if complete {
                o.remove(&self.handle);
            }
            complete
        });
        if now {
            // The program gave the request up; its free function's code has nowhere to go.
            let _ = self.shared.free();
        }
    }
}

mpi_fn! {
    fn MPI_Grequest_start / PMPI_Grequest_start(query_fn: Option<QueryFn>, free_fn: Option<FreeFn>, cancel_fn: Option<CancelFn>, extra_state: *mut c_void, request: *mut c_int) {
        let (Some(query), Some(free), Some(cancel)) = (query_fn, free_fn, cancel_fn) else {
            return fail(MPI_ERR_ARG, "the query, free and cancel functions must not be NULL");
        };
        let shared = Arc::new(Shared {
            query,
            free,
            extra: extra_state as usize,
            complete: AtomicBool::new(false),
            queried: Mutex::new(None),
            freed: AtomicBool::new(false),
        });
        hand_out(request, || {
            state::with(|s| {
                let made = Generalized { shared: shared.clone(), cancel, handle: MPI_REQUEST_NULL };
                let handle = stored(s, Pending::generalized(Box::new(made)))?;
                // The request learns its handle once the table gives it one.
                if let Some(Work::Generalized(g)) = s.requests.get_mut(&handle).map(|p| &mut p.work) {
                    g.handle = handle;
                }
                open(|o| o.insert(handle, shared.clone()));
                Ok(handle)
            })
        })
    }

    /// Marks the request complete (its query function run here); a wait on it returns.
    /// Callable from any thread.
    fn MPI_Grequest_complete / PMPI_Grequest_complete(request: c_int) {
        let Some(shared) = open(|o| o.get(&request).cloned()) else {
            return fail(MPI_ERR_REQUEST, format!("{request:#x} is not an open generalized request"));
        };
        let mut found = status::empty();
        // SAFETY: the program's query function, given its state and a status to fill.
        let code = unsafe { (shared.query)(shared.extra as *mut c_void, &mut found) };
        *shared.queried.lock().unwrap_or_else(PoisonError::into_inner) = Some((found, code));
        let freed = open(|o| {
            shared.complete.store(true, Ordering::Release);
            let freed = shared.freed.load(Ordering::Acquire);
            if freed {
                o.remove(&request);
            }
            freed
        });
        if freed {
            return shared.free();
        }
        Ok(())
    }
}
