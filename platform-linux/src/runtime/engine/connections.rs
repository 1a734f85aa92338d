//! The engine's per-peer state, kept only for the peers this process has talked to: a
//! connection table instead of one queue per rank of the job.
//!
//! A peer is found in two array loads (a page of the index, then the table), so the hot
//! path pays no hash. The index is paged: a job of `n` ranks costs 8 bytes per
//! [`PAGE`] ranks for the page pointers, plus one page for each stretch of [`PAGE`] ranks
//! that holds a peer, plus one table entry per peer.

use std::collections::VecDeque;

use super::rendezvous::Control;
use super::send::Outgoing;

/// Peer slots per index page.
pub(super) const PAGE: usize = 64;
/// An index word that names no connection.
const NONE: u32 = u32::MAX;

/// What the engine keeps about one peer.
#[derive(Default)]
pub(super) struct Connection {
    /// The arrival whose next fragments come from this peer.
    pub(super) inbound: Option<u64>,
    /// Messages waiting for room in the peer's queue, oldest first.
    pub(super) outbound: VecDeque<Outgoing>,
    /// Control cells waiting for room; they go before messages.
    pub(super) control: VecDeque<Control>,
}

impl Connection {
    /// Whether anything waits to go to the peer.
    pub(super) fn has_outbound(&self) -> bool {
        !self.outbound.is_empty() || !self.control.is_empty()
    }
}

/// The connection table.
#[derive(Default)]
pub(super) struct Connections {
    /// Pages of table positions by peer slot, allocated when a slot of the page is used.
    pages: Vec<Option<Box<[u32; PAGE]>>>,
    /// (peer slot, state), in order of first contact.
    table: Vec<(usize, Connection)>,
    /// Whether some queue may hold something: set when one is given a message or a control
    /// cell, cleared when [`Connections::settle`] finds them all empty, so that an idle
    /// waiter's poll does not walk the table.
    maybe_outbound: bool,
}

impl Connections {
    #[inline]
    fn position(&self, peer: usize) -> Option<usize> {
        let page = self.pages.get(peer / PAGE)?.as_ref()?;
        let at = page[peer % PAGE];
        (at != NONE).then_some(at as usize)
    }

    /// The state of `peer`, if this process has talked to it.
    #[inline]
    pub(super) fn get(&self, peer: usize) -> Option<&Connection> {
        let at = self.position(peer)?;
        self.table.get(at).map(|(_, c)| c)
    }

    /// The arrival whose fragments come next from `peer`.
    #[inline]
    pub(super) fn inbound(&self, peer: usize) -> Option<u64> {
        self.get(peer).and_then(|c| c.inbound)
    }

    /// The state of `peer`, created at the first contact.
    pub(super) fn open(&mut self, peer: usize) -> &mut Connection {
        let at = match self.position(peer) {
            Some(at) => at,
            None => {
                let page = peer / PAGE;
                if page >= self.pages.len() {
                    self.pages.resize_with(page + 1, || None);
                }
                let index = self.pages[page].get_or_insert_with(|| Box::new([NONE; PAGE]));
                let at = self.table.len();
                // Fits: a table holds fewer peers than u32::MAX.
                index[peer % PAGE] = at as u32;
                self.table.push((peer, Connection::default()));
                at
            }
        };
        &mut self.table[at].1
    }

    /// The state of `peer`, to queue a message or a control cell for it.
    pub(super) fn queue(&mut self, peer: usize) -> &mut Connection {
        self.maybe_outbound = true;
        self.open(peer)
    }

    /// Whether some queue may hold something (never `false` while one does).
    #[inline]
    pub(super) fn maybe_outbound(&self) -> bool {
        self.maybe_outbound
    }

    /// Clears the note that a queue may hold something once none does (after progress).
    pub(super) fn settle(&mut self) {
        if self.maybe_outbound {
            self.maybe_outbound = self.any_queued();
        }
    }

    fn any_queued(&self) -> bool {
        self.table.iter().any(|(_, c)| c.has_outbound())
    }

    /// Number of peers talked to.
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// The peer of the `i`-th connection and whether anything waits to go to it.
    pub(super) fn waiting(&self, i: usize) -> Option<usize> {
        self.table.get(i).and_then(|(peer, c)| c.has_outbound().then_some(*peer))
    }

    /// Forgets `peer` and anything queued for it (its group is gone).
    pub(super) fn forget(&mut self, peer: usize) {
        let Some(at) = self.position(peer) else { return };
        if let Some(page) = self.pages.get_mut(peer / PAGE).and_then(Option::as_mut) {
            page[peer % PAGE] = NONE;
        }
        self.table.swap_remove(at);
        if let Some(&(moved, _)) = self.table.get(at) {
            if let Some(page) = self.pages.get_mut(moved / PAGE).and_then(Option::as_mut) {
                // Fits: a table holds fewer peers than u32::MAX.
                page[moved % PAGE] = at as u32;
            }
        }
    }

    /// The peers something waits to go to.
    pub(super) fn with_outbound(&self) -> impl Iterator<Item = usize> + '_ {
        self.table.iter().filter(|(_, c)| c.has_outbound()).map(|(peer, _)| *peer)
    }

    /// Whether anything waits to go to any peer.
    pub(super) fn any_outbound(&self) -> bool {
        self.maybe_outbound && self.any_queued()
    }

    /// Bytes the table holds (not counting queued messages): what per-peer state costs.
    #[cfg(test)]
    pub(super) fn footprint(&self) -> usize {
        let pages = self.pages.iter().flatten().count();
        self.pages.capacity() * std::mem::size_of::<Option<Box<[u32; PAGE]>>>()
            + pages * std::mem::size_of::<[u32; PAGE]>()
            + self.table.capacity() * std::mem::size_of::<(usize, Connection)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::engine::rendezvous::finished_cell;

    #[test]
    fn a_peer_is_created_once_and_found_again() {
        let mut peers = Connections::default();
        assert!(peers.get(5).is_none());
        peers.open(5).inbound = Some(9);
        peers.open(700).inbound = Some(1);
        assert_eq!(peers.inbound(5), Some(9));
        assert_eq!(peers.inbound(700), Some(1));
        assert_eq!(peers.inbound(6), None);
        assert_eq!(peers.inbound(100_000), None);
        peers.open(5);
        assert_eq!(peers.len(), 2);
        assert_eq!(peers.waiting(0), None);
        assert!(!peers.any_outbound());
        peers.forget(5);
        assert_eq!((peers.len(), peers.inbound(5), peers.inbound(700)), (1, None, Some(1)));
        peers.forget(5);
        peers.open(5).inbound = Some(4);
        peers.queue(700).control.push_back(finished_cell(1));
        assert!(peers.any_outbound());
        peers.settle();
        assert!(peers.any_outbound(), "a queued cell keeps the note");
        peers.open(700).control.clear();
        peers.settle();
        assert!(!peers.any_outbound());
        assert_eq!((peers.inbound(5), peers.inbound(700)), (Some(4), Some(1)));
    }

    /// Memory for connection state at 8, 64, 512 and 786,432 ranks, each rank talking to
    /// its two neighbours (the last rank, whose neighbours have the highest slots, is the
    /// worst case): it grows with the peers talked to, plus 8 bytes per 64 ranks.
    #[test]
    fn memory_grows_with_the_peers_talked_to() {
        let mut printed = Vec::new();
        for size in [8usize, 64, 512, 786_432] {
            let me = size - 1;
            let mut peers = Connections::default();
            peers.open(me - 1);
            peers.open((me + 1) % size);
            let bytes = peers.footprint();
            printed.push(format!("{size} ranks: {bytes} bytes"));
            let pointers = size.div_ceil(PAGE) * 8;
            assert!(bytes <= pointers + 2 * 256 + 4 * 128, "{size} ranks: {bytes} bytes");
        }
        println!("connection table, 2 peers: {}", printed.join(", "));
    }
}
