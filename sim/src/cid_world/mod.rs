//! A simulated world of ranks and threads allocating context IDs.
//!
//! Every rank owns a [`CidSpace`]; every thread runs its program of a [`Script`], driving
//! one [`CidRequest`] at a time. An allreduce completes when every member has posted it.
//! A deterministic scheduler, seeded, picks which runnable thread moves next; one step
//! hands a thread its completed allreduce (if any) and asks its request for the next step.
//!
//! After every allocation the world checks that all members agree, that no live CID
//! repeats on a rank, and after every free that the CID is free again in the rank's space.
//! A run where no thread can move, or where no allocation completes for `stall_limit`
//! steps while threads keep spinning, fails with [`SimFailure::Deadlock`] and the step
//! count; it never hangs.

mod explore;
mod script;
mod workload;

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use commcore::cid::{Algorithm, Cid, CidError, CidRequest, CidSpace, SpaceConfig, Step};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub use explore::{explore, Exploration};
pub use script::{Action, Allocation, CommId, OpId, Predefined, Script};
pub use workload::{deadlock_scenario, stress, Participation, StressConfig};

/// Why a run failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimFailure {
    /// No allocation can complete: no thread can move (`spinning` false), or threads kept
    /// retrying for the stall limit without one allocation completing (`spinning` true).
    Deadlock {
        /// Scheduler steps taken when the deadlock was declared.
        steps: u64,
        /// Threads kept retrying (a livelock) rather than all waiting.
        spinning: bool,
        /// (rank, thread) of every unfinished thread.
        stuck: Vec<(usize, usize)>,
    },
    /// Two members of one allocation finished with different results.
    Disagreement {
        /// The allocation.
        op: OpId,
        /// The first member's result.
        first: Result<Cid, CidError>,
        /// This member's result.
        other: Result<Cid, CidError>,
    },
    /// A CID was handed to a second live communicator on one rank.
    Duplicate {
        /// The rank.
        rank: usize,
        /// The CID.
        cid: Cid,
    },
    /// A freed CID is not free again in the rank's space.
    NotReusable {
        /// The rank.
        rank: usize,
        /// The CID.
        cid: Cid,
    },
    /// A request failed for a reason other than exhaustion.
    Protocol {
        /// The rank.
        rank: usize,
        /// The allocation.
        op: OpId,
        /// The error.
        error: CidError,
    },
    /// After the run a space still holds a mask, eager segment or priority, or its live
    /// count differs from the communicators the rank holds.
    Leftover {
        /// The rank.
        rank: usize,
    },
}

impl std::fmt::Display for SimFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

/// One CID event on one rank, for replaying into storage structures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreEvent {
    /// A communicator with this CID was created here.
    Insert(Cid),
    /// A communicator with this CID was freed here.
    Remove(Cid),
}

/// What one allocation cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpOutcome {
    /// The agreed CID, or the error every member got; `None` if it never ran.
    pub result: Option<Result<Cid, CidError>>,
    /// Allreduces one member took part in.
    pub allreduces: u32,
    /// Bytes one member contributed over those allreduces.
    pub bytes: u64,
    members_done: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ThreadState<const W: usize> {
    rank: usize,
    thread: usize,
    pc: usize,
    op: Option<OpId>,
    request: Option<CidRequest<W>>,
    /// Parity of the next allreduce of the current request: rounds k and k+2 of one
    /// allocation never coexist, so the parity tells a member's rounds apart.
    round: u8,
    waiting: Option<(OpId, u8)>,
    finished: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Pending {
    acc: Vec<u32>,
    posted: usize,
    expected: usize,
    unread: usize,
    waiters: Vec<usize>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct RankState {
    comms: BTreeMap<CommId, Cid>,
    live: BTreeMap<Cid, CommId>,
}

/// The world. `W` is the CID capacity in words ([`commcore::cid::words_for`]).
#[derive(Clone)]
pub struct World<const W: usize> {
    script: Arc<Script>,
    algorithm: Algorithm,
    spaces: Vec<CidSpace<W>>,
    ranks: Vec<RankState>,
    threads: Vec<ThreadState<W>>,
    pending: BTreeMap<(OpId, u8), Pending>,
    outcomes: Vec<OpOutcome>,
    runnable: Vec<usize>,
    /// Where each thread sits in `runnable` (`usize::MAX` when absent).
    slot: Vec<usize>,
    steps: u64,
    last_progress: u64,
    stall_limit: u64,
    traces: Option<Vec<Vec<StoreEvent>>>,
}

/// Protocol state only (no counters, no statistics): two worlds equal under it behave alike.
impl<const W: usize> Hash for World<W> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.spaces.hash(state);
        self.ranks.hash(state);
        self.threads.hash(state);
        self.pending.hash(state);
        for outcome in &self.outcomes {
            outcome.result.hash(state);
            outcome.members_done.hash(state);
        }
    }
}

impl<const W: usize> World<W> {
    /// A world running `script` with `algorithm` on spaces laid out by `config`.
    pub fn new(script: Script, algorithm: Algorithm, config: SpaceConfig) -> Result<Self, String> {
        let spaces = (0..script.ranks)
            .map(|_| CidSpace::new(config).map_err(|e| format!("space: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut ranks = vec![RankState::default(); script.ranks];
        for p in &script.predefined {
            for &rank in &p.members {
                spaces[rank].claim(p.cid).map_err(|e| format!("predefined cid {}: {e}", p.cid))?;
                ranks[rank].comms.insert(p.comm, p.cid);
                ranks[rank].live.insert(p.cid, p.comm);
            }
        }
        let mut threads = Vec::new();
        for rank in 0..script.ranks {
            for thread in 0..script.threads {
                threads.push(ThreadState {
                    rank,
                    thread,
                    pc: 0,
                    op: None,
                    request: None,
                    round: 0,
                    waiting: None,
                    finished: false,
                });
            }
        }
        let runnable: Vec<usize> = (0..threads.len()).collect();
        let slot = runnable.clone();
        let outcomes = vec![OpOutcome::default(); script.allocations.len()];
        let stall_limit = 200_000 + 20_000 * (script.ranks * script.threads) as u64;
        Ok(Self {
            script: Arc::new(script),
            algorithm,
            spaces,
            ranks,
            threads,
            pending: BTreeMap::new(),
            outcomes,
            runnable,
            slot,
            steps: 0,
            last_progress: 0,
            // Waiting threads spin, so the budget grows with the number of threads.
            stall_limit,
            traces: None,
        })
    }

    /// Declares a livelock after this many steps without an allocation or free completing.
    pub fn with_stall_limit(mut self, steps: u64) -> Self {
        self.stall_limit = steps;
        self
    }

    /// Records every rank's CID inserts and removes (see [`World::traces`]).
    pub fn with_traces(mut self) -> Self {
        self.traces = Some(vec![Vec::new(); self.script.ranks]);
        self
    }

    /// Runs to the end, picking among runnable threads with a generator seeded by `seed`.
    pub fn run(&mut self, seed: u64) -> Result<(), SimFailure> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        loop {
            if let Some(result) = self.verdict() {
                return result;
            }
            let pick = rng.gen_range(0..self.runnable.len());
            self.step(self.runnable[pick])?;
        }
    }

    /// `Some` once the run is over: finished, or deadlocked.
    pub fn verdict(&self) -> Option<Result<(), SimFailure>> {
        if self.threads.iter().all(|t| t.finished) {
            return Some(self.final_check());
        }
        let spinning = self.steps - self.last_progress > self.stall_limit;
        if self.runnable.is_empty() || spinning {
            let stuck = self.unfinished();
            return Some(Err(SimFailure::Deadlock { steps: self.steps, spinning, stuck }));
        }
        None
    }

    /// Threads that can move now, in ascending order.
    pub fn runnable(&self) -> Vec<usize> {
        let mut list = self.runnable.clone();
        list.sort_unstable();
        list
    }

    /// (rank, thread) of every thread that has not finished its program.
    pub fn unfinished(&self) -> Vec<(usize, usize)> {
        self.threads.iter().filter(|t| !t.finished).map(|t| (t.rank, t.thread)).collect()
    }

    /// One line per unfinished thread: its allocation, what it waits for and its request,
    /// for diagnosing a failed run.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for t in self.threads.iter().filter(|t| !t.finished) {
            out.push_str(&format!(
                "rank {} thread {} op {:?} waiting {:?} request {:?}\n",
                t.rank, t.thread, t.op, t.waiting, t.request
            ));
        }
        out
    }

    /// Scheduler steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// What each allocation cost, by [`OpId`].
    pub fn outcomes(&self) -> &[OpOutcome] {
        &self.outcomes
    }

    /// Each rank's space.
    pub fn spaces(&self) -> &[CidSpace<W>] {
        &self.spaces
    }

    /// Each rank's CID inserts and removes, if recorded.
    pub fn traces(&self) -> Option<&[Vec<StoreEvent>]> {
        self.traces.as_deref()
    }

    /// The CID `comm` has on `rank`, if it is live there.
    pub fn cid_of(&self, rank: usize, comm: CommId) -> Option<Cid> {
        self.ranks[rank].comms.get(&comm).copied()
    }

    fn final_check(&self) -> Result<(), SimFailure> {
        for (rank, space) in self.spaces.iter().enumerate() {
            if !space.is_quiescent() || space.live() as usize != self.ranks[rank].live.len() {
                return Err(SimFailure::Leftover { rank });
            }
        }
        Ok(())
    }

    fn unrunnable(&mut self, index: usize) {
        let at = std::mem::replace(&mut self.slot[index], usize::MAX);
        if at != usize::MAX {
            self.runnable.swap_remove(at);
            if let Some(&moved) = self.runnable.get(at) {
                self.slot[moved] = at;
            }
        }
    }

    fn make_runnable(&mut self, index: usize) {
        if self.slot[index] == usize::MAX {
            self.slot[index] = self.runnable.len();
            self.runnable.push(index);
        }
    }

    fn progress(&mut self) {
        self.last_progress = self.steps;
    }

    /// Moves thread `index` one step.
    pub fn step(&mut self, index: usize) -> Result<(), SimFailure> {
        self.steps += 1;
        let rank = self.threads[index].rank;
        if let Some(key) = self.threads[index].waiting.take() {
            let pending = self.pending.get_mut(&key).expect("waited-on allreduce exists");
            let words = pending.acc.clone();
            pending.unread -= 1;
            if pending.unread == 0 {
                self.pending.remove(&key);
            }
            let thread = &mut self.threads[index];
            let request = thread.request.as_mut().expect("a waiting thread has a request");
            if let Err(error) = request.handle_allreduce(&self.spaces[rank], &words) {
                return self.finish_op(index, Err(error));
            }
        }
        if self.threads[index].request.is_none() {
            return self.next_action(index);
        }
        self.poll(index)
    }

    fn next_action(&mut self, index: usize) -> Result<(), SimFailure> {
        let (rank, thread, pc) = {
            let t = &self.threads[index];
            (t.rank, t.thread, t.pc)
        };
        let Some(&action) = self.script.programs[rank][thread].get(pc) else {
            self.threads[index].finished = true;
            self.unrunnable(index);
            return Ok(());
        };
        self.threads[index].pc += 1;
        match action {
            Action::Free(comm) => {
                // A communicator whose allocation failed does not exist: nothing to free.
                if let Some(cid) = self.ranks[rank].comms.remove(&comm) {
                    self.ranks[rank].live.remove(&cid);
                    let space = &self.spaces[rank];
                    if space.release(cid).is_err() || !space.is_free(cid) {
                        return Err(SimFailure::NotReusable { rank, cid });
                    }
                    if let Some(traces) = &mut self.traces {
                        traces[rank].push(StoreEvent::Remove(cid));
                    }
                }
                self.progress();
            }
            Action::Allocate(op) => {
                let allocation = &self.script.allocations[op];
                // Every member lacks the parent alike when its allocation failed.
                let Some(&parent) = self.ranks[rank].comms.get(&allocation.parent) else {
                    self.record(op, Err(CidError::Exhausted), 0, 0)?;
                    return Ok(());
                };
                let t = &mut self.threads[index];
                t.request = Some(CidRequest::new(self.algorithm, parent, allocation.tag));
                t.op = Some(op);
                t.round = 0;
                return self.poll(index);
            }
        }
        Ok(())
    }

    fn poll(&mut self, index: usize) -> Result<(), SimFailure> {
        let rank = self.threads[index].rank;
        let op = self.threads[index].op.expect("a polling thread has an allocation");
        let request = self.threads[index].request.as_mut().expect("a polling thread has a request");
        let (reduce, words) = match request.poll(&self.spaces[rank]) {
            Ok(Step::Done(cid)) => return self.finish_op(index, Ok(cid)),
            // Another request of this rank has priority: the thread stays runnable.
            Ok(Step::Wait) => return Ok(()),
            Ok(Step::Allreduce { op, words }) => (op, words.to_vec()),
            Err(error) => return self.finish_op(index, Err(error)),
        };
        let key = (op, self.threads[index].round);
        self.threads[index].round ^= 1;
        self.threads[index].waiting = Some(key);
        let expected = self.script.allocations[op].members.len();
        let pending = self.pending.entry(key).or_insert_with(|| Pending {
            acc: words.clone(),
            posted: 0,
            expected,
            unread: expected,
            waiters: Vec::new(),
        });
        if pending.posted > 0 {
            if pending.acc.len() != words.len() {
                return Err(SimFailure::Protocol {
                    rank,
                    op,
                    error: CidError::WrongLength { expected: pending.acc.len() },
                });
            }
            reduce.fold(&mut pending.acc, &words);
        }
        pending.posted += 1;
        pending.waiters.push(index);
        let waiters = if pending.posted == pending.expected {
            std::mem::take(&mut pending.waiters)
        } else {
            Vec::new()
        };
        self.unrunnable(index);
        for waiter in waiters {
            self.make_runnable(waiter);
        }
        Ok(())
    }

    fn finish_op(&mut self, index: usize, result: Result<Cid, CidError>) -> Result<(), SimFailure> {
        let thread = &mut self.threads[index];
        let rank = thread.rank;
        let op = thread.op.take().expect("finishing thread has an allocation");
        let request = thread.request.take().expect("finishing thread has a request");
        if let Err(error) = result {
            if error != CidError::Exhausted {
                return Err(SimFailure::Protocol { rank, op, error });
            }
        }
        self.record(op, result, request.allreduces(), request.bytes())?;
        if let Ok(cid) = result {
            let allocation = &self.script.allocations[op];
            if allocation.keep.contains(&rank) {
                let state = &mut self.ranks[rank];
                if state.live.insert(cid, allocation.comm).is_some() {
                    return Err(SimFailure::Duplicate { rank, cid });
                }
                state.comms.insert(allocation.comm, cid);
                if let Some(traces) = &mut self.traces {
                    traces[rank].push(StoreEvent::Insert(cid));
                }
            } else if self.spaces[rank].release(cid).is_err() {
                return Err(SimFailure::NotReusable { rank, cid });
            }
        }
        Ok(())
    }

    fn record(
        &mut self,
        op: OpId,
        result: Result<Cid, CidError>,
        allreduces: u32,
        bytes: u64,
    ) -> Result<(), SimFailure> {
        self.progress();
        let outcome = &mut self.outcomes[op];
        match outcome.result {
            None => {
                outcome.result = Some(result);
                outcome.allreduces = allreduces;
                outcome.bytes = bytes;
            }
            Some(first) if first != result => {
                return Err(SimFailure::Disagreement { op, first, other: result });
            }
            Some(_) => {}
        }
        outcome.members_done += 1;
        Ok(())
    }
}
