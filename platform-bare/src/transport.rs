//! One rank's collective schedule, run through the kernel's own send and receive
//! callbacks.
//!
//! [`RankRun`] follows the execution model of [`commcore::coll::Step`]: sends and receives
//! start transfers; `Reduce`, `Copy`, `Wait` and the end wait for this rank's receives.
//! The kernel's [`Transport`] copies or transmits a send's bytes before it returns, or
//! refuses it for now (no room). Neither callback has to block: a refused send and a
//! receive whose message has not arrived stay outstanding while the rank goes on to the
//! rest of its round (so two ranks that fill each other's queues still reach the receives
//! that drain them); [`RankRun::poll`] returns [`RunStatus::Blocked`] when nothing more can
//! happen and the kernel polls again later (or [`RankRun::run`] does, up to a bound).

use core::fmt;

use commcore::coll::{reduce, Buf, OpError, Peer, Region, Schedule, Step};

/// The kernel's point-to-point, for one rank.
pub trait Transport {
    /// What the kernel's network reports when it fails.
    type Error;

    /// Sends `bytes` to `to`, copying or transmitting them before returning (the region
    /// may change afterwards). `Ok(false)`: no room now; the same send is offered again.
    fn send(&mut self, to: Peer, bytes: &[u8]) -> Result<bool, Self::Error>;

    /// Moves the next message from `from` (messages of one sender arrive in order) into
    /// `into`, whose length is the message's. `Ok(false)`: nothing from `from` yet.
    fn recv(&mut self, from: Peer, into: &mut [u8]) -> Result<bool, Self::Error>;
}

/// One rank's buffers, as a schedule names them.
#[derive(Debug)]
pub struct RankBufs<'b> {
    /// The send buffer: read-only to a schedule.
    pub send: &'b [u8],
    /// The receive buffer.
    pub recv: &'b mut [u8],
    /// Scratch: at least [`Schedule::scratch_bytes`], contents unspecified.
    pub scratch: &'b mut [u8],
}

impl RankBufs<'_> {
    fn read(&self, region: Region) -> Option<&[u8]> {
        let buf: &[u8] = match region.buf {
            Buf::Send => self.send,
            Buf::Recv => self.recv,
            Buf::Scratch => self.scratch,
        };
        buf.get(region.offset..region.end())
    }

    fn write<E>(&mut self, region: Region) -> Result<&mut [u8], RunError<E>> {
        let buf: &mut [u8] = match region.buf {
            Buf::Send => return Err(RunError::ReadOnly { region }),
            Buf::Recv => self.recv,
            Buf::Scratch => self.scratch,
        };
        buf.get_mut(region.offset..region.end()).ok_or(RunError::OutOfBounds { region })
    }
}

/// Why a rank's schedule cannot go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunError<E> {
    /// The kernel's transport failed.
    Transport(E),
    /// A step names bytes outside its buffer.
    OutOfBounds {
        /// The region.
        region: Region,
    },
    /// A step would write the send buffer.
    ReadOnly {
        /// The region.
        region: Region,
    },
    /// The scratch buffer is smaller than the schedule needs.
    ScratchTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        given: usize,
    },
    /// The bounce buffer for `Copy` and `Reduce` is smaller than a region.
    TempTooSmall {
        /// Bytes needed.
        needed: usize,
    },
    /// A copy's regions differ in length.
    CopyLengths {
        /// Source bytes.
        src: usize,
        /// Destination bytes.
        dst: usize,
    },
    /// A reduction failed.
    Reduce(OpError),
    /// [`RankRun::run`] polled `polls` times in a row without progress.
    Stalled {
        /// Steps this rank executed.
        steps: u64,
        /// Polls without progress.
        polls: u64,
    },
}

impl<E: fmt::Display> fmt::Display for RunError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Transport(e) => write!(f, "kernel transport: {e}"),
            Self::OutOfBounds { region } => {
                write!(f, "step names {region:?}, outside its buffer: check counts and sizes")
            }
            Self::ReadOnly { region } => {
                write!(f, "step would write the send buffer at {region:?}")
            }
            Self::ScratchTooSmall { needed, given } => {
                write!(f, "scratch holds {given} bytes, the schedule needs {needed}")
            }
            Self::TempTooSmall { needed } => {
                write!(f, "bounce buffer too small: give at least {needed} bytes")
            }
            Self::CopyLengths { src, dst } => {
                write!(f, "copy from {src} bytes into {dst} bytes")
            }
            Self::Reduce(e) => write!(f, "reduction: {e}"),
            Self::Stalled { steps, polls } => {
                write!(f, "no progress in {polls} polls after {steps} steps: a peer is missing")
            }
        }
    }
}

/// Where a rank's run stands after a poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// Every step ran and every receive completed.
    Done,
    /// Waiting for a message or for room to send; poll again.
    Blocked,
}

/// One rank's schedule in progress, with at most `PENDING` sends and `PENDING` receives
/// outstanding.
#[derive(Debug)]
pub struct RankRun<'s, const PENDING: usize> {
    schedule: Schedule<'s>,
    held: Option<Step>,
    sends: heapless::Vec<(Peer, Region), PENDING>,
    pending: heapless::Vec<(Peer, Region), PENDING>,
    done: bool,
    steps: u64,
    events: u64,
}

impl<'s, const PENDING: usize> RankRun<'s, PENDING> {
    /// A run of `schedule` from its first step.
    pub fn new(schedule: Schedule<'s>) -> Self {
        Self {
            schedule,
            held: None,
            sends: heapless::Vec::new(),
            pending: heapless::Vec::new(),
            done: false,
            steps: 0,
            events: 0,
        }
    }

    /// Steps taken from the schedule so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// A count that grows whenever the run moves (a step taken or finished, a receive
    /// completed): a poll that leaves it unchanged made no progress.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Advances as far as the transport allows. `temp` is a bounce buffer for `Copy` and
    /// `Reduce` (as long as their longest region).
    pub fn poll<T: Transport>(
        &mut self,
        bufs: &mut RankBufs<'_>,
        net: &mut T,
        temp: &mut [u8],
    ) -> Result<RunStatus, RunError<T::Error>> {
        if self.done {
            return Ok(RunStatus::Done);
        }
        let needed = self.schedule.scratch_bytes();
        if bufs.scratch.len() < needed {
            return Err(RunError::ScratchTooSmall { needed, given: bufs.scratch.len() });
        }
        loop {
            let step = match self.held.take() {
                Some(step) => step,
                None => match self.schedule.next() {
                    Some(step) => {
                        self.steps += 1;
                        self.events += 1;
                        step
                    }
                    None => {
                        if !self.transfer(bufs, net)? {
                            return Ok(RunStatus::Blocked);
                        }
                        self.done = true;
                        self.events += 1;
                        return Ok(RunStatus::Done);
                    }
                },
            };
            match step {
                Step::Send { to, region } => {
                    bufs.read(region).ok_or(RunError::OutOfBounds { region })?;
                    if self.sends.is_full() {
                        self.transfer(bufs, net)?;
                    }
                    if self.sends.push((to, region)).is_err() {
                        self.held = Some(step);
                        return Ok(RunStatus::Blocked);
                    }
                    self.transfer(bufs, net)?;
                }
                Step::Recv { from, region } => {
                    bufs.write::<T::Error>(region)?;
                    if self.pending.is_full() {
                        self.transfer(bufs, net)?;
                    }
                    if self.pending.push((from, region)).is_err() {
                        self.held = Some(step);
                        return Ok(RunStatus::Blocked);
                    }
                }
                Step::Reduce { .. } | Step::Copy { .. } | Step::Wait => {
                    if !self.transfer(bufs, net)? {
                        self.held = Some(step);
                        return Ok(RunStatus::Blocked);
                    }
                    apply(step, bufs, temp)?;
                }
            }
        }
    }

    /// Polls until the schedule is done, giving up after `max_idle` polls in a row without
    /// progress: for a kernel whose callbacks block or spin on the network themselves.
    pub fn run<T: Transport>(
        &mut self,
        bufs: &mut RankBufs<'_>,
        net: &mut T,
        temp: &mut [u8],
        max_idle: u64,
    ) -> Result<u64, RunError<T::Error>> {
        let mut idle = 0;
        loop {
            let before = self.events;
            if self.poll(bufs, net, temp)? == RunStatus::Done {
                return Ok(self.steps);
            }
            idle = if self.events == before { idle + 1 } else { 0 };
            if idle >= max_idle {
                return Err(RunError::Stalled { steps: self.steps, polls: idle });
            }
        }
    }

    /// Moves what it can of the outstanding transfers: sends the transport accepts, then
    /// receives whose message has arrived. Per peer only the oldest send and the oldest
    /// receive may go (a pair's messages match in order). True when none is left.
    fn transfer<T: Transport>(
        &mut self,
        bufs: &mut RankBufs<'_>,
        net: &mut T,
    ) -> Result<bool, RunError<T::Error>> {
        let mut i = 0;
        while i < self.sends.len() {
            let (to, region) = self.sends[i];
            if !self.sends[..i].iter().any(|(t, _)| *t == to) {
                let bytes = bufs.read(region).ok_or(RunError::OutOfBounds { region })?;
                if net.send(to, bytes).map_err(RunError::Transport)? {
                    self.sends.remove(i);
                    self.events += 1;
                    continue;
                }
            }
            i += 1;
        }
        let mut i = 0;
        while i < self.pending.len() {
            let (from, region) = self.pending[i];
            if !self.pending[..i].iter().any(|(f, _)| *f == from) {
                let into = bufs.write::<T::Error>(region)?;
                if net.recv(from, into).map_err(RunError::Transport)? {
                    self.pending.remove(i);
                    self.events += 1;
                    continue;
                }
            }
            i += 1;
        }
        Ok(self.sends.is_empty() && self.pending.is_empty())
    }
}

/// Runs a local step; its receives are complete.
fn apply<E>(step: Step, bufs: &mut RankBufs<'_>, temp: &mut [u8]) -> Result<(), RunError<E>> {
    let (src, dst) = match step {
        Step::Copy { src, dst } | Step::Reduce { src, dst, .. } => (src, dst),
        Step::Wait | Step::Send { .. } | Step::Recv { .. } => return Ok(()),
    };
    let bytes = bufs.read(src).ok_or(RunError::OutOfBounds { region: src })?;
    let held = temp.get_mut(..bytes.len()).ok_or(RunError::TempTooSmall { needed: bytes.len() })?;
    held.copy_from_slice(bytes);
    let out = bufs.write(dst)?;
    match step {
        Step::Reduce { op, dtype, src_left, .. } => {
            reduce(&op, dtype, held, out, src_left).map_err(RunError::Reduce)
        }
        _ if out.len() != held.len() => {
            Err(RunError::CopyLengths { src: held.len(), dst: out.len() })
        }
        _ => {
            out.copy_from_slice(held);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
