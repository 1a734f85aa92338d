//! Nonblocking collectives run on a worker thread per communicator, in the order the
//! program starts them (the order every rank shares); a blocking collective on the same
//! communicator waits for those started before it.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::consts::*;

/// The outcome of one nonblocking collective: its error code once finished.
#[derive(Default)]
pub(crate) struct Completion {
    code: Mutex<Option<c_int>>,
    finished: Condvar,
}

impl Completion {
    /// The error code, if finished.
    pub fn test(&self) -> Option<c_int> {
        *self.code.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until finished; the error code.
    pub fn wait(&self) -> c_int {
        let mut code = self.code.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(code) = *code {
                return code;
            }
            code = self.finished.wait(code).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn finish(&self, result: c_int) {
        *self.code.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
        self.finished.notify_all();
    }
}

type Job = Box<dyn FnOnce() -> c_int + Send>;

struct Worker {
    jobs: Sender<(Job, Arc<Completion>)>,
    thread: JoinHandle<()>,
    /// The last job queued: a blocking collective waits for it.
    last: Arc<Completion>,
}

static WORKERS: Mutex<Option<HashMap<c_int, Worker>>> = Mutex::new(None);

thread_local! {
    /// Set on worker threads: their blocking calls are the queued ones themselves.
    static ON_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Queues `job` (a blocking collective on `comm`) and returns its completion.
pub(crate) fn start(comm: c_int, job: Job) -> Arc<Completion> {
    let completion = Arc::new(Completion::default());
    let mut guard = WORKERS.lock().unwrap_or_else(PoisonError::into_inner);
    let workers = guard.get_or_insert_with(HashMap::new);
    let worker = workers.entry(comm).or_insert_with(|| {
        let (jobs, queue) = channel::<(Job, Arc<Completion>)>();
        let thread = std::thread::spawn(move || {
            ON_WORKER.with(|w| w.set(true));
            for (job, completion) in queue {
                completion.finish(job());
            }
        });
        let last = Arc::new(Completion::default());
        last.finish(MPI_SUCCESS);
        Worker { jobs, thread, last }
    });
    worker.last = completion.clone();
    if worker.jobs.send((job, completion.clone())).is_err() {
        completion.finish(MPI_ERR_INTERN);
    }
    completion
}

/// Waits for the nonblocking collectives started on `comm` (before a blocking one).
pub(crate) fn drain(comm: c_int) {
    if ON_WORKER.with(Cell::get) {
        return;
    }
    let last = {
        let guard = WORKERS.lock().unwrap_or_else(PoisonError::into_inner);
        guard.as_ref().and_then(|w| w.get(&comm)).map(|w| w.last.clone())
    };
    if let Some(last) = last {
        last.wait();
    }
}

/// Ends the workers once their queues are done (at `MPI_Finalize`).
pub(crate) fn shut_down() {
    let workers = WORKERS.lock().unwrap_or_else(PoisonError::into_inner).take();
    for (_, worker) in workers.into_iter().flatten() {
        drop(worker.jobs);
        let _ = worker.thread.join();
    }
}
