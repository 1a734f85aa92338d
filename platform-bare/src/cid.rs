//! Context ids: agreement through the kernel's own allreduce, and the CID → communicator
//! store behind a spin lock.
//!
//! A lightweight kernel usually runs one process of the job per node, but it may also host
//! several ranks in its address space (the self-test runs 64). [`agree`] drives the
//! requests of every rank this kernel hosts: it reduces their contributions in memory,
//! hands the partial result to the kernel's [`Allreduce`] (which combines it with the
//! other kernels' partial results over the kernel's network) and gives the final words
//! back to every request. MAX, MIN and AND are associative and commutative, so reducing
//! locally first gives the same words as one flat allreduce.

use core::fmt;
use core::marker::PhantomData;

use commcore::cid::store::{CidStore, StoreError};
use commcore::cid::{Cid, CidError, CidRequest, CidSpace, ReduceOp, Step};

/// The kernel's allreduce over every kernel taking part in an agreement.
pub trait Allreduce {
    /// What the kernel's network reports when it fails.
    type Error;

    /// Reduces `words` element-wise with `op` over every kernel; on return `words` holds
    /// the result. Every kernel calls it with the same `op` and length at the same point. A
    /// kernel alone in the job returns `words` unchanged.
    fn allreduce(&mut self, op: ReduceOp, words: &mut [u32]) -> Result<(), Self::Error>;
}

/// One hosted rank's side of an agreement: its process's CID space and its request.
#[derive(Debug)]
pub struct Member<'s, const W: usize> {
    /// The CID space of the rank's process.
    pub space: &'s CidSpace<W>,
    /// The rank's request, made with the same algorithm, parent CID and tag everywhere.
    pub request: CidRequest<W>,
}

/// Why an agreement failed. The spaces keep nothing of it: a member that had finished
/// gives its CID back, the others abort their requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgreeError<E> {
    /// A request refused (e.g. no CID is free on every member).
    Cid(CidError),
    /// The kernel's allreduce failed.
    Allreduce(E),
    /// No members were given.
    NoMembers,
    /// Members asked for different reductions at the same point: they were not made with
    /// the same algorithm, parent CID and tag.
    Mismatch,
    /// Members finished with different CIDs.
    Disagree {
        /// One member's CID.
        first: Cid,
        /// Another member's.
        other: Cid,
    },
    /// No CID was agreed within `rounds` passes over the members.
    Stalled {
        /// Passes made.
        rounds: u32,
    },
}

impl<E: fmt::Display> fmt::Display for AgreeError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cid(e) => write!(f, "context id request: {e}"),
            Self::Allreduce(e) => write!(f, "kernel allreduce: {e}"),
            Self::NoMembers => f.write_str("an agreement needs at least one member"),
            Self::Mismatch => f.write_str(
                "members asked for different reductions: create every request with the same \
                 algorithm, parent cid and tag",
            ),
            Self::Disagree { first, other } => {
                write!(f, "members finished with different context ids {first} and {other}")
            }
            Self::Stalled { rounds } => {
                write!(f, "no context id agreed after {rounds} rounds: raise the bound or check the members")
            }
        }
    }
}

/// Words and allreduces an agreement cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgreeStats {
    /// Calls of the kernel's allreduce.
    pub allreduces: u32,
    /// Words reduced in memory over the hosted members.
    pub words: u64,
}

/// Drives `members` (the ranks this kernel hosts in one allocation) until they agree on a
/// CID, reducing their contributions in memory and over the kernel's `net`, for at most
/// `max_rounds` passes. Returns the CID, claimed in every member's space.
pub fn agree<const W: usize, A: Allreduce>(
    members: &mut [Member<'_, W>],
    net: &mut A,
    max_rounds: u32,
    stats: &mut AgreeStats,
) -> Result<Cid, AgreeError<A::Error>> {
    let outcome = drive(members, net, max_rounds, stats);
    if outcome.is_err() {
        // Leave no trace: a member that finished gives its CID back, the others abort.
        for m in members.iter_mut() {
            match m.request.cid() {
                Some(cid) => {
                    let _ = m.space.release(cid);
                }
                None => m.request.abort(m.space),
            }
        }
    }
    outcome
}

fn drive<const W: usize, A: Allreduce>(
    members: &mut [Member<'_, W>],
    net: &mut A,
    max_rounds: u32,
    stats: &mut AgreeStats,
) -> Result<Cid, AgreeError<A::Error>> {
    if members.is_empty() {
        return Err(AgreeError::NoMembers);
    }
    let mut acc = [0u32; W];
    for round in 0..=max_rounds {
        let mut asked: Option<(ReduceOp, usize)> = None;
        let (mut done, mut waiting) = (None, false);
        for m in members.iter_mut() {
            match m.request.poll(m.space).map_err(AgreeError::Cid)? {
                Step::Allreduce { op, words } => match asked {
                    None => {
                        acc[..words.len()].copy_from_slice(words);
                        asked = Some((op, words.len()));
                    }
                    Some((o, len)) if o == op && len == words.len() => {
                        op.fold(&mut acc[..len], words);
                        stats.words += len as u64;
                    }
                    Some(_) => return Err(AgreeError::Mismatch),
                },
                Step::Wait => waiting = true,
                Step::Done(cid) => match done {
                    None => done = Some(cid),
                    Some(first) if first != cid => {
                        return Err(AgreeError::Disagree { first, other: cid })
                    }
                    Some(_) => {}
                },
            }
        }
        match (asked, done) {
            (None, Some(cid)) if !waiting => return Ok(cid),
            _ if round == max_rounds => break,
            (Some((op, len)), None) if !waiting => {
                net.allreduce(op, &mut acc[..len]).map_err(AgreeError::Allreduce)?;
                stats.allreduces += 1;
                for m in members.iter_mut() {
                    m.request.handle_allreduce(m.space, &acc[..len]).map_err(AgreeError::Cid)?;
                }
            }
            // Some members wait for another request of their process, or finished early:
            // poll again; the bound ends a pass that never completes.
            _ => {}
        }
    }
    Err(AgreeError::Stalled { rounds: max_rounds })
}

/// A CID → communicator store of handles `H`, shared by the kernel's cores behind a spin
/// lock. A lookup holds the lock for one load.
#[derive(Debug)]
pub struct SharedStore<S, H> {
    store: spin::Mutex<S>,
    handle: PhantomData<fn() -> H>,
}

impl<S: CidStore<H>, H: Copy> SharedStore<S, H> {
    /// Shares `store`.
    pub const fn new(store: S) -> Self {
        Self { store: spin::Mutex::new(store), handle: PhantomData }
    }

    /// Maps `cid` to `handle`.
    pub fn insert(&self, cid: Cid, handle: H) -> Result<(), StoreError> {
        self.store.lock().insert(cid, handle)
    }

    /// Removes `cid`'s mapping.
    pub fn remove(&self, cid: Cid) -> Option<H> {
        self.store.lock().remove(cid)
    }

    /// The communicator `cid` maps to: the lookup of every incoming message.
    #[inline]
    pub fn get(&self, cid: Cid) -> Option<H> {
        self.store.lock().get(cid)
    }

    /// Live mappings.
    pub fn len(&self) -> usize {
        self.store.lock().len()
    }

    /// True when nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
