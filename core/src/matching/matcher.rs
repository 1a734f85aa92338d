//! The two queues and the matching rules between them.

use heapless::Vec;

use super::{Envelope, MatchError, Pattern};

/// Names a posted receive, to cancel it. Unique within one matcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecvId(pub u64);

/// A receive and a message that matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Matched<R, M> {
    /// The receive's handle, as it was posted.
    pub recv: R,
    /// The message's handle, as it arrived.
    pub message: M,
    /// The message's envelope: what `MPI_Status` reports as source and tag.
    pub envelope: Envelope,
    /// The message's full length in bytes.
    pub len: u64,
    /// The bytes to deliver: the message's length, or the receive's capacity when smaller.
    pub received: u64,
    /// The message was longer than the receive's capacity (MPI's truncation error).
    pub truncated: bool,
}

impl<R, M> Matched<R, M> {
    fn new(recv: R, capacity: u64, message: M, envelope: Envelope, len: u64) -> Self {
        Self {
            recv,
            message,
            envelope,
            len,
            received: len.min(capacity),
            truncated: len > capacity,
        }
    }
}

/// What posting a receive did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Posting<R, M> {
    /// An unexpected message matched at once.
    Matched(Matched<R, M>),
    /// No message matched; the receive waits in the posted queue.
    Queued(RecvId),
}

/// What an arriving message did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival<R, M> {
    /// A posted receive matched.
    Matched(Matched<R, M>),
    /// No receive matched; the message waits in the unexpected queue.
    Queued,
}

#[derive(Clone, Copy, Debug)]
struct PostedRecv<R> {
    id: RecvId,
    pattern: Pattern,
    capacity: u64,
    handle: R,
}

#[derive(Clone, Copy, Debug)]
struct UnexpectedMsg<M> {
    envelope: Envelope,
    len: u64,
    handle: M,
}

/// Posted receives (at most `P`, handles `R`) and unexpected messages (at most `U`, handles
/// `M`). Handles are the caller's small `Copy` tokens, so a refused input loses nothing.
#[derive(Debug)]
pub struct Matcher<R: Copy, M: Copy, const P: usize, const U: usize> {
    posted: Vec<PostedRecv<R>, P>,
    unexpected: Vec<UnexpectedMsg<M>, U>,
    next_id: u64,
}

impl<R: Copy, M: Copy, const P: usize, const U: usize> Default for Matcher<R, M, P, U> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: Copy, M: Copy, const P: usize, const U: usize> Matcher<R, M, P, U> {
    /// Both queues empty.
    pub const fn new() -> Self {
        Self { posted: Vec::new(), unexpected: Vec::new(), next_id: 0 }
    }

    /// Posts a receive for `pattern` into a buffer of `capacity` bytes. The oldest unexpected
    /// message that matches completes it at once; otherwise it is queued behind the receives
    /// posted before it. A full posted queue refuses only a receive that would be queued.
    pub fn post_recv(
        &mut self,
        pattern: Pattern,
        capacity: u64,
        handle: R,
    ) -> Result<Posting<R, M>, MatchError> {
        if let Some(i) = self.unexpected.iter().position(|m| pattern.matches(&m.envelope)) {
            let m = self.unexpected.remove(i);
            return Ok(Posting::Matched(Matched::new(
                handle, capacity, m.handle, m.envelope, m.len,
            )));
        }
        let id = RecvId(self.next_id);
        self.posted
            .push(PostedRecv { id, pattern, capacity, handle })
            .map_err(|_| MatchError::PostedFull { capacity: P })?;
        self.next_id += 1;
        Ok(Posting::Queued(id))
    }

    /// A message with `envelope` and `len` bytes arrived. The oldest posted receive that
    /// matches takes it; otherwise it is queued behind earlier unexpected messages. The
    /// caller hands messages of one sender in the order they were sent.
    pub fn arrive(
        &mut self,
        envelope: Envelope,
        len: u64,
        handle: M,
    ) -> Result<Arrival<R, M>, MatchError> {
        if let Some(i) = self.posted.iter().position(|r| r.pattern.matches(&envelope)) {
            let r = self.posted.remove(i);
            return Ok(Arrival::Matched(Matched::new(r.handle, r.capacity, handle, envelope, len)));
        }
        self.unexpected
            .push(UnexpectedMsg { envelope, len, handle })
            .map_err(|_| MatchError::UnexpectedFull { capacity: U })?;
        Ok(Arrival::Queued)
    }

    /// Removes a posted receive that has not matched, returning its handle; `None` when it
    /// matched already or was never posted (MPI: the cancel fails, the receive completed).
    pub fn cancel(&mut self, id: RecvId) -> Option<R> {
        let i = self.posted.iter().position(|r| r.id == id)?;
        Some(self.posted.remove(i).handle)
    }

    /// The envelope and length of the oldest unexpected message that `pattern` matches,
    /// left in the queue (`MPI_Iprobe`).
    pub fn probe(&self, pattern: &Pattern) -> Option<(Envelope, u64)> {
        self.unexpected.iter().find(|m| pattern.matches(&m.envelope)).map(|m| (m.envelope, m.len))
    }

    /// Receives waiting for a message.
    pub fn posted_len(&self) -> usize {
        self.posted.len()
    }

    /// Messages waiting for a receive.
    pub fn unexpected_len(&self) -> usize {
        self.unexpected.len()
    }
}
