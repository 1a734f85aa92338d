//! Matching: posted receives against arriving messages on (context, source, tag), with
//! wildcards, oldest first on both sides, so that messages of one pair match in order.

use std::collections::VecDeque;

use super::rendezvous::finished_cell;
use super::{Engine, Peer};
use crate::transport::shm::ShmTransport;

/// Which messages a receive accepts (`None` = any).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pattern {
    pub(crate) context: u32,
    pub(crate) source: Option<Peer>,
    pub(crate) tag: Option<i32>,
}

impl Pattern {
    pub(super) fn accepts(&self, arrival: &Arrival) -> bool {
        self.context == arrival.context
            && self.source.map_or(true, |s| s == arrival.source)
            && self.tag.map_or(true, |t| t == arrival.tag)
    }
}

pub(super) enum Body {
    /// Sent by copy through the ring: `pending` holds bytes `[in_sink, received)` that came
    /// while the receive's buffer was not lent.
    Copied { pending: Vec<u8>, in_sink: usize, received: usize },
    /// Announced for a single-copy read from the memory of the sender in shared-memory slot
    /// `slot`. `split` is set once the receiver asked the sender to write the bytes
    /// `start..end` of the message itself.
    Remote { slot: usize, address: u64, sender_id: u64, split: Option<(usize, usize)> },
}

pub(super) struct Arrival {
    pub(super) context: u32,
    /// The peer the message came from: the ring or the stream it arrived on.
    pub(super) source: Peer,
    /// The sender's rank in the communicator, from the header.
    pub(super) rank: u32,
    pub(super) tag: i32,
    pub(super) len: usize,
    pub(super) body: Body,
    pub(super) recv: Option<u64>,
    pub(super) discard: bool,
}

impl Arrival {
    pub(super) fn complete(&self) -> bool {
        match self.body {
            Body::Copied { received, .. } => received >= self.len,
            Body::Remote { .. } => true,
        }
    }
}

/// Receives matched with a message they have not finished taking: (receive, arrival) ids
/// in order of the receive's id, which grows as receives are posted. Found by a binary
/// search after a look at the oldest, which a window's waits take first: no hash.
#[derive(Default)]
pub(super) struct Matched(VecDeque<(u64, u64)>);

impl Matched {
    #[inline]
    fn position(&self, recv: u64) -> Result<usize, usize> {
        match self.0.front() {
            Some(&(oldest, _)) if oldest == recv => Ok(0),
            _ => self.0.binary_search_by_key(&recv, |&(r, _)| r),
        }
    }

    pub(super) fn insert(&mut self, recv: u64, arrival: u64) {
        if self.0.back().map_or(true, |&(newest, _)| newest < recv) {
            self.0.push_back((recv, arrival));
            return;
        }
        match self.position(recv) {
            Ok(i) => self.0[i].1 = arrival,
            Err(i) => self.0.insert(i, (recv, arrival)),
        }
    }

    /// The arrivals matched with a receive, oldest receive first.
    pub(super) fn arrivals(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().map(|&(_, arrival)| arrival)
    }

    /// The arrival matched with receive `recv`.
    #[inline]
    pub(super) fn get(&self, recv: u64) -> Option<u64> {
        self.position(recv).ok().map(|i| self.0[i].1)
    }

    #[inline]
    pub(super) fn remove(&mut self, recv: u64) -> Option<u64> {
        let i = self.position(recv).ok()?;
        if i == 0 {
            return self.0.pop_front().map(|(_, arrival)| arrival);
        }
        self.0.remove(i).map(|(_, arrival)| arrival)
    }
}

impl Engine {
    /// Posts a receive: matched at once against the unexpected queue, else queued.
    pub(crate) fn post_recv(&mut self, pattern: Pattern) -> u64 {
        let found = self.oldest_unexpected(&pattern).map(|(i, _)| i);
        self.post_recv_at(pattern, found)
    }

    /// [`Engine::post_recv`] once the unexpected queue was scanned: `found` is the place of
    /// the oldest unexpected message `pattern` accepts.
    pub(super) fn post_recv_at(&mut self, pattern: Pattern, found: Option<usize>) -> u64 {
        let recv = self.fresh_id();
        match found.and_then(|i| self.take_unexpected_at(i)) {
            Some(arrival) => {
                if let Some(a) = self.arrivals.get_mut(arrival) {
                    a.recv = Some(recv);
                }
                self.matched.insert(recv, arrival);
            }
            None => self.posted.push_back((recv, pattern)),
        }
        recv
    }

    /// The oldest unexpected arrival `pattern` accepts: its place in the queue and its id.
    #[inline]
    pub(super) fn oldest_unexpected(&self, pattern: &Pattern) -> Option<(usize, u64)> {
        let accepted = |&id: &u64| self.arrivals.get(id).is_some_and(|a| pattern.accepts(a));
        // Two plain slices scan faster than the deque's iterator.
        let (older, newer) = self.unexpected.as_slices();
        let i = older
            .iter()
            .position(accepted)
            .or_else(|| newer.iter().position(accepted).map(|i| older.len() + i))?;
        self.unexpected.get(i).map(|&id| (i, id))
    }

    /// Takes the `i`-th unexpected arrival's id out of the queue.
    #[inline]
    pub(super) fn take_unexpected_at(&mut self, i: usize) -> Option<u64> {
        if i == 0 {
            return self.unexpected.pop_front();
        }
        self.unexpected.remove(i)
    }

    /// The oldest unexpected message that `pattern` accepts, as (sender's rank, tag,
    /// length), left queued (`MPI_Iprobe`).
    pub(crate) fn probe(&self, pattern: &Pattern) -> Option<(usize, i32, usize)> {
        self.unexpected.iter().find_map(|&id| {
            let a = self.arrivals.get(id)?;
            (pattern.accepts(a) && !a.discard).then_some((a.rank as usize, a.tag, a.len))
        })
    }

    /// Matches arrival `id` with the oldest posted receive that accepts it, or queues it as
    /// unexpected; the caller stores it in `arrivals`.
    pub(super) fn arrive(&mut self, id: u64, arrival: &mut Arrival) {
        let found = self.posted.iter().position(|(_, p)| p.accepts(arrival));
        match found.and_then(|i| self.posted.remove(i)) {
            Some((recv, _)) => {
                self.news = true;
                arrival.recv = Some(recv);
                self.matched.insert(recv, id);
            }
            None => self.unexpected.push_back(id),
        }
    }

    /// Abandons receive `recv`: unposted if unmatched, its message dropped if matched.
    pub(crate) fn cancel_recv(&mut self, fabric: &ShmTransport, recv: u64) {
        if let Some(i) = self.posted.iter().position(|(id, _)| *id == recv) {
            self.posted.remove(i);
            return;
        }
        let Some(arrival_id) = self.matched.remove(recv) else { return };
        let Some(arrival) = self.arrivals.get_mut(arrival_id) else { return };
        let remote = match arrival.body {
            Body::Remote { slot, sender_id, .. } => Some((slot, finished_cell(sender_id))),
            Body::Copied { .. } => None,
        };
        if arrival.complete() {
            if let Some(arrival) = self.arrivals.remove(arrival_id) {
                self.recycle_arrival(arrival);
            }
        } else {
            arrival.recv = None;
            arrival.discard = true;
        }
        if let Some((source, cell)) = remote {
            self.with_guests(|engine, guests| engine.send_control(fabric, guests, source, cell));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Matched;

    #[test]
    fn matched_receives_are_found_in_any_order_of_matching() {
        let mut matched = Matched::default();
        for (recv, arrival) in [(5, 50), (3, 30), (9, 90), (7, 70)] {
            matched.insert(recv, arrival);
        }
        let found = [3, 5, 7, 9, 4].map(|recv| matched.get(recv));
        assert_eq!(found, [Some(30), Some(50), Some(70), Some(90), None]);
        assert_eq!(
            (matched.remove(3), matched.remove(7), matched.remove(7)),
            (Some(30), Some(70), None)
        );
        assert_eq!((matched.get(5), matched.get(9), matched.get(3)), (Some(50), Some(90), None));
    }
}
