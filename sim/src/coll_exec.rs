//! A deterministic in-memory executor of collective schedules: it runs the schedules of
//! every rank of a simulated (intra- or inter-) communicator to completion, moving bytes
//! between per-rank buffers, and counts messages, bytes and inter-node messages.
//!
//! Semantics are those documented on [`commcore::coll::Step`]: sends are buffered (eager),
//! receives match in order per ordered pair, local steps and `Wait` wait for this rank's
//! outstanding receives. Ranks are advanced round-robin in a fixed order, so a run is
//! reproducible; a run in which no rank can progress is reported as a deadlock.

use std::collections::VecDeque;
use std::fmt;

use commcore::coll::{reduce, Buf, Group, OpError, Peer, Region, Schedule, Step};

/// The buffers of one rank.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankBufs {
    /// The send buffer.
    pub send: Vec<u8>,
    /// The receive buffer.
    pub recv: Vec<u8>,
    /// Scratch (sized by the executor from the schedule).
    pub scratch: Vec<u8>,
}

/// How ranks of the simulated communicator are numbered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// An intra-communicator of `size` ranks: global index = rank.
    Intra {
        /// Ranks.
        size: usize,
    },
    /// An inter-communicator: group A is global `0..a`, group B is `a..a + b`.
    Inter {
        /// Ranks in group A.
        a: usize,
        /// Ranks in group B.
        b: usize,
    },
}

impl Topology {
    /// Total ranks.
    pub fn ranks(&self) -> usize {
        match *self {
            Self::Intra { size } => size,
            Self::Inter { a, b } => a + b,
        }
    }

    fn resolve(&self, me: usize, peer: Peer) -> Option<usize> {
        let r = peer.rank as usize;
        match (*self, peer.group) {
            (Self::Intra { size }, Group::Local) => (r < size).then_some(r),
            (Self::Intra { .. }, Group::Remote) => None,
            (Self::Inter { a, b }, group) => {
                let in_a = me < a;
                let to_a = in_a == (group == Group::Local);
                if to_a {
                    (r < a).then_some(r)
                } else {
                    (r < b).then_some(a + r)
                }
            }
        }
    }
}

/// Counters of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages sent.
    pub messages: u64,
    /// Payload bytes sent.
    pub bytes: u64,
    /// Messages between ranks on different nodes (when nodes were given).
    pub inter_node_messages: u64,
    /// Steps executed, over all ranks (`Wait` included).
    pub steps: u64,
    /// Scheduler passes over all ranks until completion (a proxy for rounds).
    pub passes: u64,
    /// The fewest ranks whose start causally precedes some rank's end (following messages):
    /// the number of ranks for a barrier, or anything that waits for everyone.
    pub min_causal: usize,
}

/// A schedule that cannot run to completion.
#[derive(Clone, Debug, PartialEq)]
pub enum ExecError {
    /// No rank can progress; `blocked` ranks are unfinished after `steps` steps.
    Deadlock {
        /// Unfinished ranks.
        blocked: Vec<usize>,
        /// Steps executed so far.
        steps: u64,
    },
    /// A step names a region outside its buffer.
    OutOfBounds {
        /// The rank.
        rank: usize,
        /// The region.
        region: Region,
    },
    /// A step names a peer that does not exist.
    BadPeer {
        /// The rank.
        rank: usize,
        /// The peer.
        peer: Peer,
    },
    /// A receive region's length differs from the matching message's.
    LengthMismatch {
        /// The receiving rank.
        rank: usize,
        /// The sender.
        from: usize,
        /// Bytes expected.
        expected: usize,
        /// Bytes sent.
        got: usize,
    },
    /// A reduction failed.
    Reduce {
        /// The rank.
        rank: usize,
        /// Why.
        error: OpError,
    },
    /// Messages were left unreceived at the end.
    Leftover {
        /// Messages left.
        messages: usize,
    },
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for ExecError {}

fn slice(bufs: &RankBufs, rank: usize, region: Region) -> Result<&[u8], ExecError> {
    let buf = match region.buf {
        Buf::Send => &bufs.send,
        Buf::Recv => &bufs.recv,
        Buf::Scratch => &bufs.scratch,
    };
    buf.get(region.offset..region.end()).ok_or(ExecError::OutOfBounds { rank, region })
}

fn slice_mut(bufs: &mut RankBufs, rank: usize, region: Region) -> Result<&mut [u8], ExecError> {
    let buf = match region.buf {
        Buf::Send => &mut bufs.send,
        Buf::Recv => &mut bufs.recv,
        Buf::Scratch => &mut bufs.scratch,
    };
    buf.get_mut(region.offset..region.end()).ok_or(ExecError::OutOfBounds { rank, region })
}

/// Runs `schedules[i]` on `bufs[i]` for every global rank `i` of `topology` to completion.
/// Scratch buffers are resized to what each schedule asks for. `nodes[i]`, when given, is
/// the node of global rank `i`, for counting inter-node messages.
pub fn run(
    topology: Topology,
    mut schedules: Vec<Schedule<'_>>,
    bufs: &mut [RankBufs],
    nodes: Option<&[u32]>,
) -> Result<Stats, ExecError> {
    Executor::default().run(topology, &mut schedules, bufs, nodes)
}

/// The executor's reusable state: message queues and buffers survive between runs, so a
/// benchmark that runs the same collective many times measures the collective, not the
/// allocator.
#[derive(Debug, Default)]
pub struct Executor {
    channels: Vec<VecDeque<(Vec<u8>, Vec<u64>)>>,
    pool: Vec<Vec<u8>>,
    clock_pool: Vec<Vec<u64>>,
    /// Per rank, a bit per rank whose start it has heard of (causally).
    knows: Vec<u64>,
    pending: Vec<VecDeque<(usize, Region)>>,
    held: Vec<Option<Step>>,
    state: Vec<u8>,
    temp: Vec<u8>,
}

const RUNNING: u8 = 0;
const FINISHED: u8 = 1;
const DONE: u8 = 2;

impl Executor {
    /// Runs `schedules` (advanced in place) as [`run`] does.
    pub fn run(
        &mut self,
        topology: Topology,
        schedules: &mut [Schedule<'_>],
        bufs: &mut [RankBufs],
        nodes: Option<&[u32]>,
    ) -> Result<Stats, ExecError> {
        let n = topology.ranks();
        assert_eq!(schedules.len(), n, "one schedule per rank");
        assert_eq!(bufs.len(), n, "one set of buffers per rank");
        for (schedule, b) in schedules.iter().zip(bufs.iter_mut()) {
            if b.scratch.len() != schedule.scratch_bytes() {
                b.scratch.clear();
                b.scratch.resize(schedule.scratch_bytes(), 0);
            }
        }
        for q in self.channels.iter_mut() {
            while let Some((m, k)) = q.pop_front() {
                self.pool.push(m);
                self.clock_pool.push(k);
            }
        }
        let words = n.div_ceil(64);
        self.knows.clear();
        self.knows.resize(n * words, 0);
        for r in 0..n {
            self.knows[r * words + r / 64] |= 1 << (r % 64);
        }
        self.channels.resize_with(n * n, VecDeque::new);
        self.pending.resize_with(n, VecDeque::new);
        self.pending.iter_mut().for_each(VecDeque::clear);
        self.held.clear();
        self.held.resize(n, None);
        self.state.clear();
        self.state.resize(n, RUNNING);
        let result = self.drive(topology, schedules, bufs, nodes);
        let leftover: usize = self.channels.iter().take(n * n).map(VecDeque::len).sum();
        match result {
            Ok(_) if leftover > 0 => Err(ExecError::Leftover { messages: leftover }),
            other => other,
        }
    }

    fn drive(
        &mut self,
        topology: Topology,
        schedules: &mut [Schedule<'_>],
        bufs: &mut [RankBufs],
        nodes: Option<&[u32]>,
    ) -> Result<Stats, ExecError> {
        let n = topology.ranks();
        let mut stats = Stats::default();
        let words = n.div_ceil(64);
        let mut remaining = n;
        while remaining > 0 {
            stats.passes += 1;
            let mut progress = false;
            for me in 0..n {
                if self.state[me] == DONE {
                    continue;
                }
                loop {
                    // Match what has arrived, in order per sender.
                    let pending = &mut self.pending[me];
                    let mut i = 0;
                    while i < pending.len() {
                        let (from, region) = pending[i];
                        let earlier = pending.iter().take(i).any(|(f, _)| *f == from);
                        if !earlier {
                            if let Some((msg, heard)) = self.channels[from * n + me].pop_front() {
                                if msg.len() != region.len {
                                    return Err(ExecError::LengthMismatch {
                                        rank: me,
                                        from,
                                        expected: region.len,
                                        got: msg.len(),
                                    });
                                }
                                slice_mut(&mut bufs[me], me, region)?.copy_from_slice(&msg);
                                for (k, h) in
                                    self.knows[me * words..][..words].iter_mut().zip(&heard)
                                {
                                    *k |= h;
                                }
                                self.pool.push(msg);
                                self.clock_pool.push(heard);
                                pending.remove(i);
                                progress = true;
                                continue;
                            }
                        }
                        i += 1;
                    }
                    let blocked = !pending.is_empty();
                    if self.held[me].is_some() || self.state[me] == FINISHED {
                        if blocked {
                            break;
                        }
                        if self.state[me] == FINISHED {
                            self.state[me] = DONE;
                            remaining -= 1;
                            progress = true;
                            break;
                        }
                        if let Some(step) = self.held[me].take() {
                            local_step(step, me, &mut bufs[me], &mut self.temp)?;
                        }
                        progress = true;
                        continue;
                    }
                    let Some(step) = schedules[me].next() else {
                        self.state[me] = FINISHED;
                        continue;
                    };
                    stats.steps += 1;
                    progress = true;
                    match step {
                        Step::Send { to, region } => {
                            let dst = topology
                                .resolve(me, to)
                                .ok_or(ExecError::BadPeer { rank: me, peer: to })?;
                            let mut data = self.pool.pop().unwrap_or_default();
                            data.clear();
                            data.extend_from_slice(slice(&bufs[me], me, region)?);
                            stats.messages += 1;
                            stats.bytes += data.len() as u64;
                            if let Some(nodes) = nodes {
                                if nodes[me] != nodes[dst] {
                                    stats.inter_node_messages += 1;
                                }
                            }
                            let mut heard = self.clock_pool.pop().unwrap_or_default();
                            heard.clear();
                            heard.extend_from_slice(&self.knows[me * words..][..words]);
                            self.channels[me * n + dst].push_back((data, heard));
                        }
                        Step::Recv { from, region } => {
                            let src = topology
                                .resolve(me, from)
                                .ok_or(ExecError::BadPeer { rank: me, peer: from })?;
                            slice(&bufs[me], me, region)?;
                            self.pending[me].push_back((src, region));
                        }
                        other => self.held[me] = Some(other),
                    }
                }
            }
            if !progress {
                let blocked = (0..n).filter(|&r| self.state[r] != DONE).collect();
                return Err(ExecError::Deadlock { blocked, steps: stats.steps });
            }
        }
        stats.min_causal = (0..n)
            .map(|r| self.knows[r * words..][..words].iter().map(|w| w.count_ones() as usize).sum())
            .min()
            .unwrap_or(0);
        Ok(stats)
    }
}

fn local_step(
    step: Step,
    me: usize,
    bufs: &mut RankBufs,
    temp: &mut Vec<u8>,
) -> Result<(), ExecError> {
    match step {
        Step::Copy { src, dst } => {
            temp.clear();
            temp.extend_from_slice(slice(bufs, me, src)?);
            let out = slice_mut(bufs, me, dst)?;
            if out.len() != temp.len() {
                return Err(ExecError::OutOfBounds { rank: me, region: dst });
            }
            out.copy_from_slice(temp);
        }
        Step::Reduce { op, dtype, src, dst, src_left } => {
            temp.clear();
            temp.extend_from_slice(slice(bufs, me, src)?);
            let out = slice_mut(bufs, me, dst)?;
            reduce(&op, dtype, temp, out, src_left)
                .map_err(|error| ExecError::Reduce { rank: me, error })?;
        }
        Step::Wait | Step::Send { .. } | Step::Recv { .. } => {}
    }
    Ok(())
}

/// Buffers for regular (non-`v`) intra-communicator `op` on `size` ranks with `count`
/// elements of `elem` bytes (per block for the gather family), inputs filled with a
/// pattern; for benchmarks and smoke tests that do not check results.
pub fn intra_buffers(
    op: commcore::coll::CollOp,
    size: usize,
    count: usize,
    elem: usize,
) -> Vec<RankBufs> {
    use commcore::coll::CollOp as C;
    let n = count * elem;
    let (send, recv) = match op {
        C::Barrier => (0, 0),
        C::Bcast => (0, n),
        C::Reduce | C::Allreduce | C::Scan | C::Exscan => (n, n),
        C::Allgather | C::Gather | C::Allgatherv | C::Gatherv => (n, size * n),
        C::Scatter | C::Scatterv => (size * n, n),
        C::Alltoall | C::Alltoallv => (size * n, size * n),
        C::ReduceScatter | C::ReduceScatterBlock => (size * n, n),
    };
    (0..size)
        .map(|r| RankBufs {
            send: (0..send).map(|i| (i + r) as u8 & 0x3f).collect(),
            recv: vec![0; recv],
            scratch: Vec::new(),
        })
        .collect()
}
