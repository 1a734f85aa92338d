//! A window of posted receives completed in one run, as a message-rate window's wait finds
//! it: while each receive is the oldest posted and its message is the next cell of the
//! ring of the source it names, the cells are taken one after another. The source's link
//! is found once per run, the ring's `head` is released once, and the writer is woken
//! once, not once per message.

use super::{Engine, Envelope, Peer};
use crate::runtime::error::P2pError;
use crate::shm::{CellHeader, CellKind, Take, TakeRun};
use crate::transport::shm::ShmTransport;

/// One entry of a window, as [`Engine::take_window`] sees it.
pub(crate) enum WindowSlot<'b> {
    /// Completed already: passed over.
    Done,
    /// A posted receive whose buffer is short enough for the ring's fast path.
    Posted { recv: u64, buf: &'b mut [u8] },
    /// Anything else (past the end too): the run stops there.
    Other,
}

/// The requests of a wait on many.
pub(crate) trait Window {
    fn slot(&mut self, i: usize) -> WindowSlot<'_>;
    /// Receive `i` (a [`WindowSlot::Posted`]) completed with `result`.
    fn complete(&mut self, i: usize, result: Result<Envelope, P2pError>);
}

impl Engine {
    /// Completes the window's receives from its start, in order, while each is the oldest
    /// posted (so matching order holds) and its message, one whole cell its pattern
    /// accepts, is next in the ring of the shared-memory peer the pattern names. Returns
    /// the index of the first entry it did not complete, for the general path.
    pub(crate) fn take_window(&mut self, fabric: &ShmTransport, window: &mut impl Window) -> usize {
        // Lent out, as in `with_guests`, so that a guest's ring stays borrowed while
        // receives are unposted.
        let guests = std::mem::take(&mut self.guests);
        let mut run: Option<(usize, super::links::Link<'_>, TakeRun<'_>)> = None;
        let mut i = 0;
        loop {
            let (recv, buf) = match window.slot(i) {
                WindowSlot::Done => {
                    i += 1;
                    continue;
                }
                WindowSlot::Posted { recv, buf } => (recv, buf),
                WindowSlot::Other => break,
            };
            let pattern = match self.posted.front() {
                Some(&(oldest, pattern)) if oldest == recv => pattern,
                _ => break,
            };
            let Some(Peer::Shm(source)) = pattern.source else { break };
            if run.as_ref().map_or(true, |&(from, ..)| from != source) {
                end_run(fabric, run.take());
                // Behind a message partly received from the source, the next cell is not
                // a message of its own.
                if self.peers.inbound(source).is_some() {
                    break;
                }
                let Ok(link) = guests.link(fabric, source) else { break };
                let cells = link.inbox().take_run();
                run = Some((source, link, cells));
            }
            let Some((_, _, cells)) = run.as_mut() else { break };
            let accept = |header: &CellHeader| {
                header.kind == CellKind::Message
                    && header.fragment_len == header.total_len
                    && header.context == pattern.context
                    && pattern.tag.map_or(true, |t| t == header.tag)
            };
            let header = match cells.take_if(buf, accept) {
                Ok(Take::Taken(header)) => header,
                Ok(Take::Empty | Take::Left) | Err(_) => break,
            };
            let (len, room) = (header.total_len as usize, buf.len());
            self.posted.pop_front();
            let result = if len > room {
                Err(P2pError::Truncated {
                    message_len: len,
                    buffer_len: room,
                    source: header.source,
                    tag: header.tag,
                })
            } else {
                Ok(Envelope { source: header.source as usize, tag: header.tag, len })
            };
            window.complete(i, result);
            i += 1;
        }
        end_run(fabric, run);
        self.guests = guests;
        i
    }
}

/// Releases the run's cells to the ring's writer and wakes it if it took any (the writer
/// may sleep waiting for room).
fn end_run(fabric: &ShmTransport, run: Option<(usize, super::links::Link<'_>, TakeRun<'_>)>) {
    if let Some((_, link, cells)) = run {
        let took = cells.took_any();
        drop(cells);
        if took {
            link.notify(fabric);
        }
    }
}
