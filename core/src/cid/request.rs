//! One member's side of a CID allocation: a sans-IO state machine.

use core::hash::{Hash, Hasher};

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
    /// MAX of the highest used CID plus one; confirmation only when threaded (over a
    /// 32-CID window from the maximum, so one taken CID does not fail the round); a mask
    /// round when the width would be exceeded.
    Highest,
    /// The mask algorithm *without* its synchronising first allreduce: a request may hold
    /// the mask while members have not arrived. It can deadlock (two processes, two
    /// threads each); kept only so tests can show that it does.
    MaskWithoutSync,
}

/// CIDs the highest algorithm's confirmation round offers above the agreed maximum.
const HIGHEST_WINDOW: u32 = 32;
/// Past its first CID, the window takes every `LANES`-th CID on the lane of the request's
/// priority, so the windows of concurrent requests rarely overlap when their maxima meet.
const LANES: u32 = 128;

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
    /// Highest, threaded: reserve the confirmation window once this request has the
    /// process's priority, then confirm.
    Reserve {
        agreed: Cid,
    },
    /// Lowest/highest: BAND of which CIDs from the agreed one up this member reserved.
    Confirm {
        agreed: Cid,
    },
    Done(Cid),
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Hold {
    None,
    /// The eager lane of this index.
    Eager(u32),
    Mask,
}

/// One member's request for a new CID, driven by its host:
///
/// 1. [`poll`](Self::poll) returns [`Step::Allreduce`]: reduce the words over the members.
/// 2. [`handle_allreduce`](Self::handle_allreduce) takes the reduced words back.
/// 3. Repeat until `poll` returns [`Step::Done`] or an error; on [`Step::Wait`] poll again
///    later, after letting this process's other threads run.
///
/// All members of one allocation create their requests with the same algorithm, parent
/// CID and tag; every process's requests share that process's [`CidSpace`]. A request
/// never blocks: when another request of the process has priority, a mask request
/// contributes zeros (the round is void and repeats) and a lowest or highest request
/// waits without an allreduce, which it does only once a first allreduce has shown that
/// every member arrived. A request dropped before it finishes must be
/// [`abort`](Self::abort)ed, or the space keeps its holds.
///
/// The request holds its words inline (`4 * W` bytes: 8 KiB for 65,536 CIDs); hosts with
/// small stacks keep it in static or heap storage.
///
/// `W` is the word capacity, at least the space's ([`words_for`](super::words_for)).
/// Equality and hashing cover the protocol state, not the statistics, so a simulator can
/// recognise a state it has seen.
#[derive(Clone, Debug)]
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
    /// What this member proposed in the last MAX round.
    proposed: Cid,
    /// CIDs `agreed + i` this member reserved for the confirmation round (bit `i`).
    window: (Cid, u32),
    /// Proposals start here: lowest moves it above each failed candidate, highest above a
    /// failed window.
    start: Cid,
    /// Lowest: the search restarted from 0 once. Highest: a window failed once.
    wrapped: bool,
    allreduces: u32,
    bytes: u64,
}

impl<const W: usize> CidRequest<W> {
    /// The protocol state, without statistics and without buffer words past `len`.
    #[allow(clippy::type_complexity)]
    fn identity(
        &self,
    ) -> (
        Algorithm,
        u64,
        Phase,
        bool,
        ReduceOp,
        &[u32],
        Hold,
        bool,
        (Option<Cid>, Cid),
        (Cid, u32),
        Cid,
        bool,
    ) {
        (
            self.algorithm,
            self.priority,
            self.phase,
            self.posted,
            self.op,
            &self.buf[..self.len],
            self.hold,
            self.registered,
            (self.candidate, self.proposed),
            self.window,
            self.start,
            self.wrapped,
        )
    }

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
            proposed: 0,
            window: (0, 0),
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
            match space.with(|state| self.contribute(space, state)) {
                Ok(true) => {}
                Ok(false) => return Ok(Step::Wait),
                Err(error) => {
                    self.phase = Phase::Failed;
                    return Err(error);
                }
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
            Hold::Eager(lane) => state.eager_held &= !(1u64 << lane),
            Hold::Mask => state.mask_in_use = false,
            Hold::None => {}
        }
        self.hold = Hold::None;
        let width = space.config().width;
        if let Some(cid) = self.candidate.take() {
            state.put(cid, width);
        }
        self.release_window(state, width, None);
        if self.registered {
            state.unregister(self.priority);
            self.registered = false;
        }
    }

    /// Writes this member's contribution for the current phase into the buffer; false when
    /// the request must wait for a request of higher priority in this process.
    fn contribute(
        &mut self,
        space: &CidSpace<W>,
        state: &mut SpaceState<W>,
    ) -> Result<bool, CidError> {
        let config = space.config();
        let mask_words = (config.width / 32) as usize;
        match self.phase {
            Phase::Eager => {
                // Only this request's lane: requests on other lanes hold theirs at once.
                let (lane, cids) = space.eager_lane(self.priority);
                let (first, words) = ((cids.start / 32) as usize, cids.len() / 32);
                self.set_len(ReduceOp::BitAnd, 1 + words)?;
                if state.eager_held & (1u64 << lane) == 0 {
                    state.eager_held |= 1u64 << lane;
                    self.hold = Hold::Eager(lane);
                    self.buf[0] = u32::MAX;
                    self.buf[1..1 + words].copy_from_slice(&state.free[first..first + words]);
                } else {
                    self.buf[..1 + words].fill(0);
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
                if synced && !state.is_top(self.priority) {
                    // Only the process's priority request searches; the others wait
                    // without an allreduce, as they all arrived already.
                    return Ok(false);
                }
                if state.mask_in_use {
                    // A fallback mask round lent every free CID to its holder. That holder
                    // has passed its synchronisation, so its round ends without us.
                    return Ok(false);
                }
                self.set_len(ReduceOp::Max, 1)?;
                let pick = match self.algorithm {
                    Algorithm::Lowest => state.lowest_free(self.start, config.width),
                    // Above everything in use here, and above a window that failed:
                    // windows other requests hold are passed, not waited for.
                    _ => state
                        .lowest_free(state.top.map_or(0, |t| t + 1).max(self.start), config.width),
                };
                // Threaded highest reserves nothing before the maximum is known: it
                // reserves its window when it has the priority (see `Phase::Reserve`).
                let reserve = !(self.algorithm == Algorithm::Highest && config.threaded);
                self.proposed = match pick {
                    Some(cid) => {
                        if reserve {
                            if !state.take(cid) {
                                return Err(CidError::Conflict);
                            }
                            self.candidate = Some(cid);
                        }
                        cid
                    }
                    None => config.width,
                };
                self.buf[0] = self.proposed;
            }
            Phase::Reserve { agreed } => {
                if !state.is_top(self.priority) || state.mask_in_use {
                    return Ok(false);
                }
                self.reserve_window(state, config.width, agreed);
                self.phase = Phase::Confirm { agreed };
                self.set_len(ReduceOp::BitAnd, 1)?;
                self.buf[0] = self.window.1;
            }
            Phase::Confirm { .. } => {
                self.set_len(ReduceOp::BitAnd, 1)?;
                self.buf[0] = self.window.1;
            }
            Phase::Done(_) | Phase::Failed => {}
        }
        Ok(true)
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
                let held = matches!(self.hold, Hold::Eager(_));
                if let Hold::Eager(lane) = self.hold {
                    state.eager_held &= !(1u64 << lane);
                    self.hold = Hold::None;
                }
                if reduced[0] != 0 {
                    if !held {
                        return Err(CidError::InconsistentResult);
                    }
                    let (_, cids) = space.eager_lane(self.priority);
                    let lane_cid = lowest_set(&reduced[1..], 0, cids.end - cids.start);
                    if let Some(cid) = lane_cid.map(|c| cids.start + c) {
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
            Phase::Propose { .. } => self.absorb_proposal(space, state, reduced[0])?,
            Phase::Confirm { agreed } => {
                let offered = reduced[0] & self.window.1;
                if reduced[0] != offered {
                    return Err(CidError::InconsistentResult);
                }
                // A candidate inside the window was moved into it; any other is not needed.
                if let Some(own) = self.candidate.take() {
                    state.put(own, width);
                }
                if offered != 0 {
                    let index = offered.trailing_zeros();
                    let chosen = self.window_cid(agreed, index);
                    self.release_window(state, width, Some(chosen));
                    // A CID off the agreed one stays out of `top`: later proposals fill the
                    // gap below it rather than climb past it.
                    state.commit(chosen, index == 0);
                    self.finish(state, chosen);
                } else {
                    self.release_window(state, width, None);
                    self.start = match self.algorithm {
                        Algorithm::Lowest => agreed.saturating_add(1),
                        // Past the agreed CID once; past the whole window after that, as
                        // a request of the same lane may hold it.
                        _ if !self.wrapped => agreed.saturating_add(1),
                        _ => self.window_cid(agreed, self.window_size() - 1).saturating_add(1),
                    };
                    self.wrapped = true;
                    self.ensure_registered(state)?;
                    self.phase = Phase::Propose { synced: true };
                }
            }
            // Nothing was posted in these phases: `handle_allreduce` refused the result.
            Phase::Reserve { .. } | Phase::Done(_) | Phase::Failed => {}
        }
        Ok(())
    }

    fn absorb_proposal(
        &mut self,
        space: &CidSpace<W>,
        state: &mut SpaceState<W>,
        agreed: u32,
    ) -> Result<(), CidError> {
        let config = space.config();
        let own = self.candidate;
        if agreed < self.proposed {
            return Err(CidError::InconsistentResult);
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
            self.ensure_registered(state)?;
            self.phase = Phase::Propose { synced: true };
            return Ok(());
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
        if self.algorithm == Algorithm::Highest {
            self.ensure_registered(state)?;
            self.phase = Phase::Reserve { agreed };
            return Ok(());
        }
        self.reserve_window(state, config.width, agreed);
        self.phase = Phase::Confirm { agreed };
        Ok(())
    }

    /// Reserves what this member can of the confirmation window above `agreed`; a
    /// reserved candidate inside it moves into the window.
    fn reserve_window(&mut self, state: &mut SpaceState<W>, width: u32, agreed: Cid) {
        let mut bits = 0u32;
        for i in 0..self.window_size() {
            let cid = self.window_cid(agreed, i);
            if cid >= width || state.mask_in_use {
                continue;
            }
            if self.candidate == Some(cid) {
                self.candidate = None;
                bits |= 1 << i;
            } else if state.take_for_window(cid) {
                bits |= 1 << i;
            }
        }
        self.window = (agreed, bits);
    }

    fn window_size(&self) -> u32 {
        if self.algorithm == Algorithm::Highest {
            HIGHEST_WINDOW
        } else {
            1
        }
    }

    /// CID `i` of the confirmation window above `agreed`: the agreed CID itself, then (for
    /// highest) every `LANES`-th CID on this request's lane, so two concurrent requests
    /// that agreed on the same maximum share only that first CID unless their lanes meet.
    #[inline]
    fn window_cid(&self, agreed: Cid, i: u32) -> Cid {
        if i == 0 {
            return agreed;
        }
        let lane = ((self.priority.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32) % LANES;
        agreed.saturating_add(1 + lane + LANES * (i - 1))
    }

    /// Frees every CID of the confirmation window except `keep`.
    fn release_window(&mut self, state: &mut SpaceState<W>, width: u32, keep: Option<Cid>) {
        let (agreed, mut bits) = self.window;
        while bits != 0 {
            let cid = self.window_cid(agreed, bits.trailing_zeros());
            bits &= bits - 1;
            if Some(cid) != keep {
                state.put(cid, width);
            }
        }
        self.window = (0, 0);
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

impl<const W: usize> PartialEq for CidRequest<W> {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl<const W: usize> Eq for CidRequest<W> {}

impl<const W: usize> Hash for CidRequest<W> {
    fn hash<S: Hasher>(&self, state: &mut S) {
        self.identity().hash(state);
    }
}
