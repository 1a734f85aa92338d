//! Nonblocking operations: a [`Request`] borrows its buffer until it completes.

use std::sync::Arc;

use super::engine::{
    Direct, Envelope, Feed, Lend, Lent, LentRun, Sink, Window, WindowSlot, LENT_FROM,
};

use super::error::P2pError;
use super::Runtime;

/// What a completed operation reports (`MPI_Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The sender's rank in the communicator (for a send: the destination).
    pub source: usize,
    /// The message's tag.
    pub tag: i32,
    /// The message's length in bytes.
    pub len: usize,
}

/// A request's state. Only one in flight holds the runtime: a request done when it started
/// (a small send, a message already here) costs no reference count, whose two locked
/// instructions would each wait for the cell just written to reach this core.
pub(super) enum State<'a> {
    Done(Result<Status, P2pError>),
    /// A single-copy send: the receiver reads `_buf` until it tells us it finished.
    Send {
        runtime: Arc<Runtime>,
        id: u64,
        status: Status,
        _buf: &'a [u8],
    },
    Recv {
        runtime: Arc<Runtime>,
        id: u64,
        buf: &'a mut [u8],
    },
}

/// A nonblocking send or receive in flight (`MPI_Request`). Complete it with
/// [`Request::wait`] or [`Request::test`]; dropping an incomplete send waits for it (its
/// buffer may be being read), dropping an incomplete receive cancels it.
#[must_use = "a request must be completed with wait or test"]
pub struct Request<'a> {
    pub(super) state: State<'a>,
}

impl<'a> Request<'a> {
    /// Blocks until the operation completes.
    pub fn wait(mut self) -> Result<Status, P2pError> {
        let mut none: [Lent<'_>; 0] = [];
        self.wait_lending(&mut none)
    }

    /// Blocks until the operation completes, with the buffers of receives still in flight
    /// lent beside its own.
    fn wait_lending(&mut self, also: &mut dyn Lend) -> Result<Status, P2pError> {
        loop {
            if let Some(result) = self.poll(true, &mut *also) {
                return result;
            }
        }
    }

    /// Completes the operation if it can without blocking: `Ok(None)` while in flight.
    pub fn test(&mut self) -> Result<Option<Status>, P2pError> {
        let mut none: [Lent<'_>; 0] = [];
        self.poll(false, &mut none).transpose()
    }

    /// The outcome if the operation has completed already (when it started: a small send, a
    /// message already here; or at an earlier test), without polling.
    #[inline]
    pub fn completed(&self) -> Option<Result<Status, P2pError>> {
        match self.state {
            State::Done(result) => Some(result),
            _ => None,
        }
    }

    /// Waits for every request in turn; the statuses in order, or the first error. While
    /// one is waited for, the buffers of the receives after it that may take a long message
    /// are lent too, so such a message for any of them is read straight into its buffer
    /// (over TCP: no copy).
    pub fn wait_all(
        requests: impl IntoIterator<Item = Request<'a>>,
    ) -> Result<Vec<Status>, P2pError> {
        let mut requests: Vec<Request<'a>> = requests.into_iter().collect();
        // Those buffers leave their requests, in order, and each goes back before its own
        // request is waited for: lent[next..] are the ones after the request waited for.
        let mut lent_at = Vec::new();
        let mut lent = Vec::new();
        for (i, request) in requests.iter_mut().enumerate() {
            if let State::Recv { id, buf, .. } = &mut request.state {
                if buf.len() >= LENT_FROM {
                    lent_at.push(i);
                    lent.push(Lent { recv: *id, buf: std::mem::take(buf) });
                }
            }
        }
        let mut next = 0;
        let mut statuses = Vec::with_capacity(requests.len());
        let mut first_error = None;
        for i in 0..requests.len() {
            if lent_at.get(next) == Some(&i) {
                if let State::Recv { buf, .. } = &mut requests[i].state {
                    *buf = std::mem::take(&mut lent[next].buf);
                }
                next += 1;
            }
            if !matches!(requests[i].state, State::Done(_)) {
                // Up to the next receive whose buffer is still lent out.
                let end = lent_at.get(next).copied().unwrap_or(requests.len());
                take_ready(&mut requests[i..end]);
            }
            let request = &mut requests[i];
            // Done when it started (a small send, a message already here), or just taken.
            if let State::Done(result) = request.state {
                match result {
                    Ok(status) => statuses.push(status),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
                continue;
            }
            match request.wait_lending(&mut LentRun(&mut lent[next..])) {
                Ok(status) => statuses.push(status),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(statuses), Err)
    }

    fn poll(&mut self, block: bool, also: &mut dyn Lend) -> Option<Result<Status, P2pError>> {
        let result = match &mut self.state {
            State::Done(result) => return Some(*result),
            State::Send { runtime, id, status, .. } => {
                let (id, status) = (*id, *status);
                let step = |engine: &mut super::Engine, fabric: &super::ShmTransport| {
                    engine.progress(fabric, None, None::<&Feed<'_>>)?;
                    Ok(engine.send_finished(id).then_some(status))
                };
                if block {
                    runtime.block(step).map(Some)
                } else {
                    let mut engine = runtime.engine();
                    step(&mut engine, &runtime.fabric)
                }
            }
            State::Recv { runtime, id, buf } => {
                let mut sink = Sink { recv: *id, buf, blocking: block, also };
                let mut step = |engine: &mut super::Engine, fabric: &super::ShmTransport| {
                    if let Direct::Done(envelope) =
                        engine.try_direct_posted(fabric, sink.recv, sink.buf)
                    {
                        return envelope.map(Some);
                    }
                    if let Some(envelope) = engine.finish_recv(fabric, &mut sink)? {
                        return Ok(Some(envelope));
                    }
                    engine.progress(fabric, Some(&mut sink), None)?;
                    engine.finish_recv(fabric, &mut sink)
                };
                let envelope = if block {
                    runtime.block(step).map(Some)
                } else {
                    let mut engine = runtime.engine();
                    step(&mut engine, &runtime.fabric)
                };
                envelope.map(|e| e.map(|e| Status { source: e.source, tag: e.tag, len: e.len }))
            }
        };
        match result {
            Ok(None) => None,
            Ok(Some(status)) => {
                self.state = State::Done(Ok(status));
                Some(Ok(status))
            }
            Err(error) => {
                self.state = State::Done(Err(error));
                Some(Err(error))
            }
        }
    }
}

/// Requests reached by index: a slice of them, or a table that holds them among other
/// things (an MPI library's requests, by handle).
pub trait RequestSet<'a> {
    /// Entries in the set.
    fn len(&self) -> usize;
    /// Whether the set has no entries.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The request of entry `i`, or `None` for an entry that holds none (passed over, as a
    /// request done already is).
    fn request(&mut self, i: usize) -> Option<&mut Request<'a>>;
}

impl<'a> RequestSet<'a> for [Request<'a>] {
    #[inline]
    fn len(&self) -> usize {
        <[Request<'a>]>::len(self)
    }
    #[inline]
    fn request(&mut self, i: usize) -> Option<&mut Request<'a>> {
        self.get_mut(i)
    }
}

impl<'a> Request<'a> {
    /// Completes the receives at the start of `set` whose messages are here, as a wait on
    /// many does first (see [`take_ready`]); the others are left as they were. For a
    /// library's wait on a window of its own requests: the run finds each source's ring
    /// once and wakes each writer once, not once per message.
    pub fn complete_ready(set: &mut (impl RequestSet<'a> + ?Sized)) {
        take_ready(set);
    }
}

/// Completes the receives at the start of `requests` whose messages are here (at the head
/// of their rings, or whole in the engine), in order, under one lock of the engine: a
/// window's wait whose messages are here costs one lock, not a lock, a waiting loop and a
/// poll per message. Stops at the first request that is neither done nor so completed.
fn take_ready<'a>(requests: &mut (impl RequestSet<'a> + ?Sized)) {
    // The runtime of the first receive in flight.
    let runtime = (0..requests.len()).find_map(|i| match requests.request(i).map(|r| &r.state) {
        Some(State::Recv { runtime, .. }) => Some(Some(Arc::clone(runtime))),
        Some(State::Send { .. }) => Some(None),
        Some(State::Done(_)) | None => None,
    });
    let Some(Some(runtime)) = runtime else { return };
    let mut engine = runtime.engine();
    // First the run of receives whose messages sit in order in their sources' rings.
    let start = engine.take_window(&runtime.fabric, &mut Ready { runtime: &runtime, requests });
    for i in start..requests.len() {
        let Some(request) = requests.request(i) else { continue };
        let State::Recv { runtime: own, id, buf } = &mut request.state else {
            if matches!(request.state, State::Done(_)) {
                continue;
            }
            break;
        };
        // A long message keeps the waiting path (a split single copy needs a blocking wait).
        if !Arc::ptr_eq(own, &runtime) || buf.len() >= LENT_FROM {
            break;
        }
        // Taken from the ring only while it is the oldest receive posted, so matching order
        // holds; else its message may be matched and whole already (progress drained it).
        let result = match engine.try_direct_posted(&runtime.fabric, *id, buf) {
            Direct::Done(result) => result,
            Direct::Empty | Direct::Slow => {
                let mut sink = Sink::new(*id, &mut buf[..], false);
                match engine.finish_recv(&runtime.fabric, &mut sink) {
                    Ok(Some(envelope)) => Ok(envelope),
                    Ok(None) => break,
                    Err(error) => Err(error),
                }
            }
        };
        request.state = State::Done(result.map(status_of));
    }
}

fn status_of(e: Envelope) -> Status {
    Status { source: e.source, tag: e.tag, len: e.len }
}

/// The requests of [`take_ready`], as the engine's window run sees them: receives of this
/// runtime with short buffers (a long message keeps the waiting path, as above).
struct Ready<'r, 'q, S: ?Sized> {
    runtime: &'r Arc<Runtime>,
    requests: &'q mut S,
}

impl<'q, 'a: 'q, S: RequestSet<'a> + ?Sized> Window for Ready<'_, 'q, S> {
    #[inline]
    fn slot(&mut self, i: usize) -> WindowSlot<'_> {
        if i >= self.requests.len() {
            return WindowSlot::Other;
        }
        match self.requests.request(i).map(|r| &mut r.state) {
            Some(State::Done(_)) | None => WindowSlot::Done,
            Some(State::Recv { runtime, id, buf })
                if Arc::ptr_eq(runtime, self.runtime) && buf.len() < LENT_FROM =>
            {
                WindowSlot::Posted { recv: *id, buf: &mut buf[..] }
            }
            _ => WindowSlot::Other,
        }
    }

    #[inline]
    fn complete(&mut self, i: usize, result: Result<Envelope, P2pError>) {
        if let Some(request) = self.requests.request(i) {
            request.state = State::Done(result.map(status_of));
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        match &self.state {
            State::Done(_) => {}
            State::Send { .. } => {
                let mut none: [Lent<'_>; 0] = [];
                while self.poll(true, &mut none).is_none() {}
            }
            State::Recv { runtime, id, .. } => runtime.engine().cancel_recv(&runtime.fabric, *id),
        }
    }
}
