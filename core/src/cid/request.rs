//! One member's side of a CID allocation: a sans-IO state machine.

use super::error::CidError;
use super::space::{lowest_set, CidSpace, SpaceState};
use super::step::{ReduceOp, Step};
use super::Cid;

/// Which agreement protocol a request runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Propose the lowest free CID, MAX, confirm with AND; retry above a failed candidate.
    Lowest,
    /// BAND of the free mask: eager segment first (also the synchronisation), then the
    /// base mask in ⟨parent cid, tag⟩ priority order.
    Mask,
    /// MAX of the highest used CID plus one; confirmation only when threaded; a mask round
    /// when the width would be exceeded.
    Highest,
    /// The mask algorithm *without* its synchronising first allreduce: a request may hold
    /// the mask while members have not arrived. It can deadlock (two processes, two
    /// threads each); kept only so tests can show that it does.
    MaskWithoutSync,
}

/// A MAX contribution that voids the round: this member's process gives priority to
/// another request. Above every CID and the overflow mark.
const VETO: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Mask: BAND of the eager segment; its completion proves every member arrived.
    Eager,
    /// Mask (and highest's fallback): BAND of the base mask by priority.
    MaskRound,
    /// Lowest/highest: MAX of candidates. `synced` once a first round has completed.
    Propose {
        synced: bool,
    },
    /// Lowest/highest: AND of "the agreed CID is mine here".
    Confirm {
        synced: bool,
        agreed: Cid,
        ok: bool,
    },
    Done(Cid),
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Hold {
    None,
    Eager,
    Mask,
}

/// One member's request for a new CID, driven by its host:
///
/// 1. [`poll`](Self::poll) returns [`Step::Allreduce`]: reduce the words over the members.
/// 2. [`handle_allreduce`](Self::handle_allreduce) takes the reduced words back.
/// 3. Repeat until `poll` returns [`Step::Done`] or an error.
///
/// All members of one allocation create their requests with the same algorithm, parent
/// CID and tag; every process's requests share that process's [`CidSpace`]. A request
/// never blocks: when another request of the process has priority it contributes a value
/// that voids the round (zeros, or a veto), and the round repeats. A request dropped
/// before it finishes must be [`abort`](Self::abort)ed, or the space keeps its holds.
///
/// `W` is the word capacity, at least the space's ([`words_for`](super::words_for)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CidRequest<const W: usize> {
    algorithm: Algorithm,
    priority: u64,
    phase: Phase,
    posted: bool,
    op: ReduceOp,
    len: usize,
    buf: [u32; W],
    hold: Hold,
    registered: bool,
    /// The CID this member reserved as its own proposal.
    candidate: Option<Cid>,
    /// The agreed CID this member reserved for the confirmation round.
    reserved_agreed: Option<Cid>,
    /// Lowest: proposals start here; moved above each failed candidate.
    start: Cid,
    wrapped: bool,
    allreduces: u32,
    bytes: u64,
}

impl<const W: usize> CidRequest<W> {
    /// A request for a new CID under `parent` (the parent communicator's CID) with `tag`
    /// (0 for the communicator-collective constructors; the user's tag for
    /// `comm_create_group`). ⟨parent, tag⟩ orders concurrent requests of a process.
    pub fn new(algorithm: Algorithm, parent: Cid, tag: u32) -> Self {
        let phase = match algorithm {
            Algorithm::Mask => Phase::Eager,
            Algorithm::MaskWithoutSync => Phase::MaskRound,
            Algorithm::Lowest | Algorithm::Highest => Phase::Propose { synced: false },
        };
        Self {
            algorithm,
            priority: (u64::from(parent) << 32) | u64::from(tag),
            phase,
            posted: false,
            op: ReduceOp::Max,
            len: 0,
            buf: [0; W],
            hold: Hold::None,
            registered: false,
            candidate: None,
            reserved_agreed: None,
            start: 0,
            wrapped: false,
            allreduces: 0,
            bytes: 0,
        }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Allreduces this member has been asked for so far.
    pub fn allreduces(&self) -> u32 {
        self.allreduces
    }

    /// Bytes this member has contributed to allreduces so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The agreed CID, once done.
    pub fn cid(&self) -> Option<Cid> {
        match self.phase {
            Phase::Done(cid) => Some(cid),
            _ => None,
        }
    }

    /// The next step. Asking again before handing in the result returns the same step.
    pub fn poll(&mut self, space: &CidSpace<W>) -> Result<Step<'_>, CidError> {
        match self.phase {
            Phase::Done(cid) => return Ok(Step::Done(cid)),
            Phase::Failed => return Err(CidError::Finished),
            _ => {}
        }
        if !self.posted {
            if let Err(error) = space.with(|state| self.contribute(space, state)) {
                self.phase = Phase::Failed;
                return Err(error);
            }
            self.posted = true;
            self.allreduces += 1;
            self.bytes += self.len as u64 * 4;
        }
        Ok(Step::Allreduce { op: self.op, words: &self.buf[..self.len] })
    }

    /// Hands in the reduced words of the outstanding allreduce.
    pub fn handle_allreduce(
        &mut self,
        space: &CidSpace<W>,
        reduced: &[u32],
    ) -> Result<(), CidError> {
        match self.phase {
            Phase::Done(_) | Phase::Failed => return Err(CidError::Finished),
            _ if !self.posted => return Err(CidError::NotPosted),
            _ if reduced.len() != self.len => {
                return Err(CidError::WrongLength { expected: self.len })
            }
            _ => {}
        }
        self.posted = false;
        let outcome = space.with(|state| self.absorb(space, state, reduced));
        if outcome.is_err() {
            space.with(|state| self.drop_holds(space, state));
            self.phase = Phase::Failed;
        }
        outcome
    }

    /// Gives up: releases every hold, reservation and priority this request has in the
    /// space. The request is finished afterwards.
    pub fn abort(&mut self, space: &CidSpace<W>) {
        if !matches!(self.phase, Phase::Done(_)) {
            space.with(|state| self.drop_holds(space, state));
            self.phase = Phase::Failed;
        }
    }

    fn drop_holds(&mut self, space: &CidSpace<W>, state: &mut SpaceState<W>) {
        match self.hold {
            Hold::Eager => state.eager_in_use = false,
            Hold::Mask => state.mask_in_use = false,
            Hold::None => {}
        }
        self.hold = Hold::None;
        let width = space.config().width;
        for cid in [self.candidate.take(), self.reserved_agreed.take()].into_iter().flatten() {
            state.put(cid, width);
        }
        if self.registered {
            state.unregister(self.priority);
            self.registered = false;
        }
    }

    /// Writes this member's contribution for the current phase into the buffer.
    fn contribute(
        &mut self,
        space: &CidSpace<W>,
        state: &mut SpaceState<W>,
    ) -> Result<(), CidError> {
        let config = space.config();
        let mask_words = (config.width / 32) as usize;
        match self.phase {
            Phase::Eager => {
                let eager_words = (config.eager / 32) as usize;
                self.set_len(ReduceOp::BitAnd, 1 + eager_words)?;
                if !state.eager_in_use {
                    state.eager_in_use = true;
                    self.hold = Hold::Eager;
                    self.buf[0] = u32::MAX;
                    self.buf[1..1 + eager_words].copy_from_slice(&state.free[..eager_words]);
                } else {
                    self.buf[..1 + eager_words].fill(0);
                }
            }
            Phase::MaskRound => {
                if !self.registered {
                    state.register(self.priority)?;
                    self.registered = true;
                }
                self.set_len(ReduceOp::BitAnd, 1 + mask_words)?;
                if state.is_top(self.priority) && !state.mask_in_use {
                    state.mask_in_use = true;
                    self.hold = Hold::Mask;
                    self.buf[0] = u32::MAX;
                    self.buf[1..1 + mask_words].copy_from_slice(&state.free[..mask_words]);
                    if self.algorithm == Algorithm::Mask {
                        // The eager segment belongs to the eager rounds only.
                        self.buf[1..1 + (config.eager / 32) as usize].fill(0);
                    }
                } else {
                    self.buf[..1 + mask_words].fill(0);
                }
            }
            Phase::Propose { synced } => {
                self.set_len(ReduceOp::Max, 1)?;
                self.buf[0] = if synced && !state.is_top(self.priority) {
                    VETO
                } else {
                    let pick = match self.algorithm {
                        Algorithm::Lowest => state.lowest_free(self.start, config.width),
                        _ => Some(state.highest.map_or(0, |h| h + 1)).filter(|c| *c < config.width),
                    };
                    match pick {
                        Some(cid) => {
                            state.take(cid);
                            self.candidate = Some(cid);
                            cid
                        }
                        None => config.width,
                    }
                };
            }
            Phase::Confirm { ok, .. } => {
                self.set_len(ReduceOp::BitAnd, 1)?;
                self.buf[0] = if ok { u32::MAX } else { 0 };
            }
            Phase::Done(_) | Phase::Failed => {}
        }
        Ok(())
    }

    fn set_len(&mut self, op: ReduceOp, len: usize) -> Result<(), CidError> {
        if len > W {
            return Err(CidError::WrongLength { expected: len });
        }
        self.op = op;
        self.len = len;
        Ok(())
    }

    /// Takes the reduced words in and moves to the next phase.
    fn absorb(
        &mut self,
        space: &CidSpace<W>,
        state: &mut SpaceState<W>,
        reduced: &[u32],
    ) -> Result<(), CidError> {
        let width = space.config().width;
        match self.phase {
            Phase::Eager => {
                let held = self.hold == Hold::Eager;
                if held {
                    state.eager_in_use = false;
                    self.hold = Hold::None;
                }
                if reduced[0] != 0 {
                    if !held {
                        return Err(CidError::InconsistentResult);
                    }
                    if let Some(cid) = lowest_set(&reduced[1..], 0, space.config().eager) {
                        if !state.take(cid) {
                            return Err(CidError::Conflict);
                        }
                        self.phase = Phase::Done(cid);
                        return Ok(());
                    }
                }
                self.phase = Phase::MaskRound;
            }
            Phase::MaskRound => {
                if self.hold != Hold::Mask {
                    return if reduced[0] != 0 {
                        Err(CidError::InconsistentResult)
                    } else {
                        Ok(())
                    };
                }
                state.mask_in_use = false;
                self.hold = Hold::None;
                if reduced[0] != 0 {
                    let cid = lowest_set(&reduced[1..], 0, width).ok_or(CidError::Exhausted)?;
                    if !state.take(cid) {
                        return Err(CidError::Conflict);
                    }
                    self.finish(state, cid);
                }
            }
            Phase::Propose { synced } => self.absorb_proposal(space, state, synced, reduced[0])?,
            Phase::Confirm { synced, agreed, .. } => {
                if reduced[0] != 0 {
                    if let Some(own) = self.candidate.take() {
                        if own != agreed {
                            state.put(own, width);
                        }
                    }
                    self.reserved_agreed = None;
                    self.finish(state, agreed);
                } else {
                    for cid in
                        [self.candidate.take(), self.reserved_agreed.take()].into_iter().flatten()
                    {
                        state.put(cid, width);
                    }
                    if self.algorithm == Algorithm::Lowest {
                        self.start = agreed.saturating_add(1);
                    }
                    self.enter_loop(state, synced)?;
                }
            }
            Phase::Done(_) | Phase::Failed => {}
        }
        Ok(())
    }

    fn absorb_proposal(
        &mut self,
        space: &CidSpace<W>,
        state: &mut SpaceState<W>,
        synced: bool,
        agreed: u32,
    ) -> Result<(), CidError> {
        let config = space.config();
        let own = self.candidate;
        if own.is_some_and(|c| agreed < c) || (own.is_none() && agreed < config.width) {
            return Err(CidError::InconsistentResult);
        }
        if agreed == VETO {
            if !synced {
                return Err(CidError::InconsistentResult);
            }
            if let Some(cid) = self.candidate.take() {
                state.put(cid, config.width);
            }
            return Ok(());
        }
        if agreed >= config.width {
            // Some member has no CID left to propose from where it searched.
            if let Some(cid) = self.candidate.take() {
                state.put(cid, config.width);
            }
            if self.algorithm == Algorithm::Highest {
                self.ensure_registered(state)?;
                self.phase = Phase::MaskRound;
                return Ok(());
            }
            if self.start == 0 || self.wrapped {
                return Err(CidError::Exhausted);
            }
            self.start = 0;
            self.wrapped = true;
            return self.enter_loop(state, synced);
        }
        if self.algorithm == Algorithm::Highest && !config.threaded {
            // Every member proposed above everything it uses: the maximum is free everywhere.
            if own != Some(agreed) {
                if let Some(cid) = self.candidate.take() {
                    state.put(cid, config.width);
                }
                if !state.take(agreed) {
                    return Err(CidError::Conflict);
                }
            }
            self.candidate = None;
            self.finish(state, agreed);
            return Ok(());
        }
        let ok = own == Some(agreed) || {
            let taken = state.take(agreed);
            if taken {
                self.reserved_agreed = Some(agreed);
            }
            taken
        };
        self.phase = Phase::Confirm { synced, agreed, ok };
        Ok(())
    }

    /// After a failed first round every member has arrived: from now on only the
    /// process's priority request proposes.
    fn enter_loop(&mut self, state: &mut SpaceState<W>, _synced: bool) -> Result<(), CidError> {
        self.ensure_registered(state)?;
        self.phase = Phase::Propose { synced: true };
        Ok(())
    }

    fn ensure_registered(&mut self, state: &mut SpaceState<W>) -> Result<(), CidError> {
        if !self.registered {
            state.register(self.priority)?;
            self.registered = true;
        }
        Ok(())
    }

    fn finish(&mut self, state: &mut SpaceState<W>, cid: Cid) {
        if self.registered {
            state.unregister(self.priority);
            self.registered = false;
        }
        self.phase = Phase::Done(cid);
    }
}
