//! Where the rings to and from a shared-memory peer live: in this job's region (a home peer,
//! named by its slot, below the job's size) or in a bridge to another process group on this
//! host (a guest peer, named from the job's size up). The home path costs what it always
//! did; a guest costs one comparison and one table load more. The engine lends its guest
//! table to the code that moves cells ([`Engine::with_guests`]), so a link borrows its
//! bridge without a reference count while the engine's other state changes.

use std::sync::Arc;

use super::Engine;
use crate::runtime::error::P2pError;
use crate::shm::bridge::{Bridge, LEFT};
use crate::shm::Ring;
use crate::transport::shm::ShmTransport;

/// A process of another group, reached through a bridge.
pub(crate) struct GuestPeer {
    bridge: Arc<Bridge>,
    /// Our slot in the bridge.
    me: usize,
    /// Its slot in the bridge.
    slot: usize,
    pid: u32,
    /// The control blocks of the rings to and from it.
    outbox: usize,
    inbox: usize,
    /// Its sleeping count and doorbell in the bridge.
    sleeping: usize,
    doorbell: usize,
}

impl GuestPeer {
    /// Why the guest cannot be waited on: its bridge failed, or it ended while connected.
    fn failure(&self) -> Option<u32> {
        self.bridge.failure().or_else(|| self.bridge.has_left(self.slot).then_some(LEFT))
    }
}

/// One guest's inbound ring, for waiters that look without the engine's lock.
pub(crate) struct GuestInbox {
    bridge: Arc<Bridge>,
    inbox: usize,
}

impl GuestInbox {
    /// Whether a cell waits in the ring.
    pub(crate) fn has_cell(&self) -> bool {
        !Ring::at(&self.bridge.region, self.inbox).is_empty()
    }
}

/// The guest peers, by index from the job's size.
#[derive(Default)]
pub(super) struct Guests {
    table: Vec<Option<GuestPeer>>,
    /// Every guest's inbound ring, rebuilt when guests come or go (`None`: no guest).
    inboxes: Option<Arc<Vec<GuestInbox>>>,
}

impl Guests {
    /// The rings of shared-memory peer `p`; an error when `p` names a guest that is gone.
    #[inline]
    pub(super) fn link<'f>(
        &'f self,
        fabric: &'f ShmTransport,
        p: usize,
    ) -> Result<Link<'f>, P2pError> {
        if p < fabric.size {
            return Ok(Link::Home { fabric, slot: p });
        }
        match self.table.get(p - fabric.size) {
            Some(Some(g)) => Ok(Link::Guest {
                bridge: &g.bridge,
                slot: g.slot,
                outbox: g.outbox,
                inbox: g.inbox,
            }),
            _ => Err(P2pError::PeerGone { peer: p }),
        }
    }

    /// Pushes one cell to guest `p` and wakes it: [`Engine::try_send_home`]'s path to a
    /// guest, with no [`Link`] made. `false` when the ring is full or `p` is gone.
    #[inline]
    pub(super) fn try_push(
        &self,
        fabric: &ShmTransport,
        p: usize,
        cell: &crate::shm::CellHeader,
        payload: &[u8],
    ) -> bool {
        let Some(Some(g)) = self.table.get(p.wrapping_sub(fabric.size)) else { return false };
        let region = &g.bridge.region;
        if !Ring::at(region, g.outbox).try_push(cell, payload) {
            return false;
        }
        fabric.waker_fence();
        crate::transport::shm::ring_bell(region, g.sleeping, g.doorbell);
        true
    }

    /// The process id of shared-memory peer `p`.
    pub(super) fn pid_of(&self, fabric: &ShmTransport, p: usize) -> Option<u32> {
        if p < fabric.size {
            return fabric.pids.get(p).copied();
        }
        self.table.get(p - fabric.size)?.as_ref().map(|g| g.pid)
    }

    /// Peers the engine drains: the job's slots, then the guests' indices.
    pub(super) fn shm_peers(&self, fabric: &ShmTransport) -> std::ops::Range<usize> {
        0..fabric.size + self.table.len()
    }

    /// Whether peer `p` is a guest that is gone (its index is free).
    pub(super) fn vacant(&self, fabric: &ShmTransport, p: usize) -> bool {
        p >= fabric.size && !matches!(self.table.get(p - fabric.size), Some(Some(_)))
    }
}

/// The rings to and from one peer.
pub(super) enum Link<'f> {
    Home { fabric: &'f ShmTransport, slot: usize },
    Guest { bridge: &'f Bridge, slot: usize, outbox: usize, inbox: usize },
}

impl<'f> Link<'f> {
    /// The ring we write to reach the peer.
    pub(super) fn outbox(&self) -> Ring<'f> {
        match self {
            Link::Home { fabric, slot } => fabric.outbox(*slot),
            Link::Guest { bridge, outbox, .. } => Ring::at(&bridge.region, *outbox),
        }
    }

    /// The ring we read for the peer's cells.
    pub(super) fn inbox(&self) -> Ring<'f> {
        match self {
            Link::Home { fabric, slot } => fabric.inbox(*slot),
            Link::Guest { bridge, inbox, .. } => Ring::at(&bridge.region, *inbox),
        }
    }

    /// Wakes the peer if it sleeps (see [`ShmTransport::notify`]; a guest sleeps on its
    /// doorbell in the bridge too).
    pub(super) fn notify(&self, fabric: &ShmTransport) {
        match self {
            Link::Home { slot, .. } => fabric.notify(*slot),
            Link::Guest { bridge, slot, .. } => {
                fabric.waker_fence();
                crate::transport::shm::ring_bell(
                    &bridge.region,
                    bridge.layout.sleeping(*slot),
                    bridge.layout.doorbell(*slot),
                );
            }
        }
    }
}

impl Engine {
    /// Runs `f` with the guest table lent out of the engine, so that links borrowed from it
    /// live while `f` changes the engine's other state. Inside `f`, `self.guests` is empty:
    /// use the table `f` is given.
    #[inline]
    pub(super) fn with_guests<R>(&mut self, f: impl FnOnce(&mut Engine, &Guests) -> R) -> R {
        let guests = std::mem::take(&mut self.guests);
        let result = f(self, &guests);
        self.guests = guests;
        result
    }

    /// Whether a cell waits from any shared-memory peer, guests included.
    pub(crate) fn inbound_anywhere(&self, fabric: &ShmTransport) -> bool {
        fabric.any_inbound()
            || self.guests.inboxes.as_ref().is_some_and(|g| g.iter().any(GuestInbox::has_cell))
    }

    /// Sets `held` to the guests' inbound rings, for a waiter that looks without the
    /// engine's lock, unless it holds them already (the list is made anew whenever guests
    /// come or go, so the same list means the same guests).
    #[inline]
    pub(crate) fn refresh_guest_inboxes(&self, held: &mut Option<Arc<Vec<GuestInbox>>>) {
        let same = match (&*held, &self.guests.inboxes) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same {
            held.clone_from(&self.guests.inboxes);
        }
    }

    /// Makes the processes in slots `slots` of `bridge` guests of this process, which sits
    /// in slot `me`; returns the peer index of the first (the rest follow in order). Indices
    /// of guests that went are reused. `None` when a slot's rings do not exist (a slot of
    /// our own group).
    pub(crate) fn add_guests(
        &mut self,
        fabric: &ShmTransport,
        bridge: &Arc<Bridge>,
        me: usize,
        slots: std::ops::Range<usize>,
    ) -> Option<usize> {
        let mut made = Vec::with_capacity(slots.len());
        for slot in slots {
            let pid =
                bridge.word(bridge.layout.pid(slot)).load(std::sync::atomic::Ordering::Acquire);
            made.push(Some(GuestPeer {
                bridge: bridge.clone(),
                me,
                slot,
                pid,
                outbox: bridge.layout.ring(me, slot)?,
                inbox: bridge.layout.ring(slot, me)?,
                sleeping: bridge.layout.sleeping(slot),
                doorbell: bridge.layout.doorbell(slot),
            }));
        }
        let table = &mut self.guests.table;
        let count = made.len();
        let start = (0..=table.len())
            .find(|&at| (at..at + count).all(|i| matches!(table.get(i), None | Some(None))))
            .unwrap_or(table.len());
        if table.len() < start + count {
            table.resize_with(start + count, || None);
        }
        for (i, guest) in made.into_iter().enumerate() {
            table[start + i] = guest;
        }
        self.rebuild_inboxes();
        Some(fabric.size + start)
    }

    /// Forgets the `count` guests from peer index `first` (their group disconnected); any
    /// per-peer state for them goes too.
    pub(crate) fn remove_guests(&mut self, fabric: &ShmTransport, first: usize, count: usize) {
        for p in first..first + count {
            if let Some(entry) =
                p.checked_sub(fabric.size).and_then(|i| self.guests.table.get_mut(i))
            {
                *entry = None;
            }
            self.peers.forget(p);
        }
        while matches!(self.guests.table.last(), Some(None)) {
            self.guests.table.pop();
        }
        self.rebuild_inboxes();
    }

    /// Processes of other groups reached through bridges now.
    pub(crate) fn guest_count(&self) -> usize {
        self.guests.table.iter().flatten().count()
    }

    /// The bridges this process sits in, with its slot there (for sleeping on them).
    pub(crate) fn bridges(&self) -> Vec<(Arc<Bridge>, usize)> {
        let mut out: Vec<(Arc<Bridge>, usize)> = Vec::new();
        for g in self.guests.table.iter().flatten() {
            if !out.iter().any(|(b, _)| Arc::ptr_eq(b, &g.bridge)) {
                out.push((g.bridge.clone(), g.me));
            }
        }
        out
    }

    /// Why a bridge this process sits in failed, or that a process of another group
    /// ended while still connected, if one did.
    pub(crate) fn failed_bridge(&self) -> Option<u32> {
        let watched = || self.message_links.iter().flatten().find_map(super::MessageLink::failure);
        self.guests.table.iter().flatten().find_map(GuestPeer::failure).or_else(watched)
    }

    /// Whether a wait must watch for other groups' failures: guests through bridges, or a
    /// message link whose group the launcher watches.
    pub(crate) fn watches_groups(&self) -> bool {
        self.guests.inboxes.is_some()
            || self.message_links.iter().flatten().any(super::MessageLink::watched)
    }

    /// Why a bridge failed whose processes this process waits on: a posted receive from
    /// one of them (or from any source), or a send to one of them still queued or not yet
    /// read. `None` while every wait is on processes that are still there.
    pub(crate) fn waits_on_failed_group(&self, fabric: &ShmTransport) -> Option<u32> {
        let failure_of = |p: usize| -> Option<u32> {
            self.guests.table.get(p.checked_sub(fabric.size)?)?.as_ref()?.failure()
        };
        let any = self.failed_bridge()?;
        for (_, pattern) in &self.posted {
            match pattern.source {
                None => return Some(any),
                Some(super::Peer::Shm(p)) => {
                    if let Some(reason) = failure_of(p) {
                        return Some(reason);
                    }
                }
                Some(super::Peer::Message(_)) => {}
            }
        }
        let sending = self.rendezvous.values().map(|&(dest, _, _)| dest);
        sending.chain(self.peers.with_outbound()).find_map(failure_of)
    }

    fn rebuild_inboxes(&mut self) {
        let inboxes: Vec<GuestInbox> = self
            .guests
            .table
            .iter()
            .flatten()
            .map(|g| GuestInbox { bridge: g.bridge.clone(), inbox: g.inbox })
            .collect();
        self.guests.inboxes = (!inboxes.is_empty()).then(|| Arc::new(inboxes));
    }
}
