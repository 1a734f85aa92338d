//! Collectives: each communicator's module per operation comes from core's component
//! framework ([`CollTable`], selected once when the communicator is made, over a node layout
//! when its ranks span several node labels), and each call runs the schedule core
//! generates over this runtime's transport.
//!
//! Execution follows the schedule's contract: a send starts at once (its bytes are copied
//! out and the engine owns them, so any number may be in flight), a receive is posted at
//! once, and a local step, a `Wait` or the end waits for every receive started before it.
//! Collective traffic travels in the communicator's collective context, so it never matches
//! point-to-point receives; per-pair order keeps consecutive collectives apart.

use std::collections::VecDeque;

use commcore::coll::component::{BUILTIN, BUILTIN_NAMES};
use commcore::coll::{
    reduce, Buf, CollArgs, CollError, CollOp, CollTable, CommInfo, Component, Control, Datatype,
    Group, Op, ReduceOp, Region, Root, Schedule, Step,
};

use super::coll_selection::{control_text, Shape};
use super::comm::Comm;
use super::engine::{Pattern, Peer, Sink};
use super::error::{CollectiveError, P2pError};
use super::layout_words::LayoutWords;
use super::shm_coll::{self, ShmColl, ShmComponent};
use super::Runtime;
use crate::shm::Ring;

/// Tag of schedule traffic in a collective context (the allgather of communicator
/// creation uses its own).
const SCHEDULE_TAG: i32 = 1 << 21;

/// Components' names in control strings: core's built-in ones and `shm`.
pub(super) const NAMES: [&str; 5] =
    [BUILTIN_NAMES[0], BUILTIN_NAMES[1], BUILTIN_NAMES[2], BUILTIN_NAMES[3], shm_coll::NAME];

/// A communicator's collectives: the table selected from core's built-in components and
/// `shm`. Where `shm` (a native module: the runtime runs the call over the communicator's
/// area) wins an operation, the table also holds the schedule of the next component, for
/// the calls `shm` declines; one selection serves both.
pub(super) struct BuiltinTable {
    table: CollTable<'static>,
    /// This member's use of the communicator's area, when `shm` won some operation.
    shm: Option<ShmColl>,
    /// The node layout's words, for a communicator over several nodes. Declared after
    /// the table that borrows them, so it is dropped after it.
    _layout_words: Option<LayoutWords>,
}

impl BuiltinTable {
    /// The table of `selection`; `shm` is the member's area, kept only when `shm` serves
    /// some operation (otherwise it goes back at once).
    fn new(
        table: CollTable<'static>,
        shm: Option<ShmColl>,
        layout_words: Option<LayoutWords>,
    ) -> Self {
        let serves = CollOp::ALL.iter().any(|&op| table.native(op).is_some());
        let shm = shm.filter(|_| serves);
        BuiltinTable { table, shm, _layout_words: layout_words }
    }

    /// The schedule of one call that `shm` does not run.
    #[inline]
    pub(super) fn schedule<'c>(
        &'c self,
        op: CollOp,
        args: &CollArgs<'c>,
    ) -> Result<Schedule<'c>, CollError> {
        self.table.schedule(op, args)
    }

    /// The area, if `shm` serves `op` here.
    #[inline]
    pub(super) fn shm_for(&self, op: CollOp) -> Option<&ShmColl> {
        self.shm.as_ref().filter(|_| self.table.native(op).is_some())
    }
}

fn control(text: &str) -> Result<Control<'_>, CollectiveError> {
    Control::parse(text, &NAMES).map_err(|_| CollectiveError::BadControl)
}

fn table(
    info: &CommInfo<'static>,
    control: &Control<'_>,
    shm: &ShmComponent,
) -> Result<CollTable<'static>, CollectiveError> {
    let components: [&dyn Component; 5] = [BUILTIN[0], BUILTIN[1], BUILTIN[2], BUILTIN[3], shm];
    CollTable::select(info, &components, control).map_err(CollectiveError::Coll)
}

/// The table selected for `info` under the process's control string, `shm` taking part
/// when `area` (the member was granted one).
fn selection(info: &CommInfo<'static>, area: bool) -> Result<CollTable<'static>, CollectiveError> {
    let control = control(control_text())?;
    table(info, &control, &ShmComponent { attached: area })
}

/// The collective table of a communicator whose members are on `nodes` (by rank, from their
/// address-vector entries); `shm` is this member's use of the shared-memory area the
/// creation granted it, if any. Communicators on one node take their tables from the
/// runtime's cache of selections.
pub(super) fn select(
    runtime: &Runtime,
    rank: usize,
    nodes: &[u32],
    shm: Option<ShmColl>,
) -> Result<BuiltinTable, CollectiveError> {
    let size = u32::try_from(nodes.len()).map_err(|_| CollectiveError::TooLarge)?;
    let info = CommInfo::intra(rank as u32, size);
    if nodes.iter().all(|&n| n == nodes[0]) {
        let shape = Shape { rank: rank as u32, size, area: shm.is_some() };
        let table = runtime.selections.get_or_select(shape, || selection(&info, shape.area))?;
        return Ok(BuiltinTable::new(table, shm, None));
    }
    let (layout, words) = LayoutWords::build(nodes).map_err(|_| CollectiveError::TooLarge)?;
    let table = selection(&info.with_layout(layout), false)?;
    Ok(BuiltinTable::new(table, None, Some(words)))
}

/// The collective table of an inter-communicator: rank `rank` of a local group of `size`,
/// facing a remote group of `remote_size`.
pub(super) fn select_inter(
    rank: usize,
    size: usize,
    remote_size: usize,
) -> Result<BuiltinTable, CollectiveError> {
    let size = u32::try_from(size).map_err(|_| CollectiveError::TooLarge)?;
    let remote_size = u32::try_from(remote_size).map_err(|_| CollectiveError::TooLarge)?;
    let info = CommInfo::inter(rank as u32, size, remote_size);
    Ok(BuiltinTable::new(selection(&info, false)?, None, None))
}

impl Comm {
    /// Runs collective `op` with `args` (`count` elements of `dtype`, the operation, the
    /// root…) over `send` and `recv`, laid out as MPI lays them out for `op`; the `v`
    /// operations' block lists need only live as long as the call.
    pub fn collective(
        &self,
        op: CollOp,
        args: &CollArgs<'_>,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<(), CollectiveError> {
        if let Some(local) = &self.inter {
            if let Some(done) = self.inter_on_node(local, op, args, send, recv) {
                return done;
            }
        }
        if let Some(shm) = self.coll.shm_for(op) {
            if let Some(done) = shm.run(op, args, send, recv) {
                return done;
            }
        }
        let schedule = self.coll.schedule(op, args).map_err(CollectiveError::Coll)?;
        self.execute(schedule, send, recv)
    }

    /// The component that serves `op` on this communicator (`shm` may still hand calls
    /// above `COMMCORE_SHM_MAX` bytes to the schedules of the next one).
    pub fn collective_provider(&self, op: CollOp) -> Option<&'static str> {
        self.coll.table.provider(op)
    }

    /// Blocks until every rank has entered (`MPI_Barrier`).
    pub fn barrier(&self) -> Result<(), CollectiveError> {
        self.collective(CollOp::Barrier, &CollArgs::new(0, Datatype::U8), &[], &mut [])
    }

    /// Broadcasts `buf` from `root` (`MPI_Bcast`).
    pub fn bcast(&self, buf: &mut [u8], root: usize) -> Result<(), CollectiveError> {
        let args = CollArgs::new(buf.len(), Datatype::U8).with_root(self.root(root)?);
        self.collective(CollOp::Bcast, &args, &[], buf)
    }

    /// Reduces `send` of every rank element-wise into `recv` of every rank
    /// (`MPI_Allreduce`); both hold elements of `dtype`.
    pub fn allreduce(
        &self,
        send: &[u8],
        recv: &mut [u8],
        dtype: Datatype,
        op: ReduceOp,
    ) -> Result<(), CollectiveError> {
        let count = elements(send, recv, dtype)?;
        let args = CollArgs::new(count, dtype).with_op(Op::Builtin(op));
        self.collective(CollOp::Allreduce, &args, send, recv)
    }

    /// Reduces into `recv` at `root` (`MPI_Reduce`).
    pub fn reduce(
        &self,
        send: &[u8],
        recv: &mut [u8],
        dtype: Datatype,
        op: ReduceOp,
        root: usize,
    ) -> Result<(), CollectiveError> {
        let count = send.len() / dtype.size().max(1);
        if send.len() % dtype.size().max(1) != 0 || (self.rank == root && recv.len() != send.len())
        {
            return Err(CollectiveError::BadBuffers);
        }
        let args = CollArgs::new(count, dtype).with_op(Op::Builtin(op)).with_root(self.root(root)?);
        self.collective(CollOp::Reduce, &args, send, recv)
    }

    /// Every rank's `send` block to every rank, concatenated in rank order (`MPI_Allgather`).
    pub fn allgather(&self, send: &[u8], recv: &mut [u8]) -> Result<(), CollectiveError> {
        if recv.len() != send.len() * self.size {
            return Err(CollectiveError::BadBuffers);
        }
        self.collective(CollOp::Allgather, &CollArgs::new(send.len(), Datatype::U8), send, recv)
    }

    /// Block `j` of `send` to rank `j`; block `i` of `recv` from rank `i` (`MPI_Alltoall`).
    pub fn alltoall(&self, send: &[u8], recv: &mut [u8]) -> Result<(), CollectiveError> {
        if send.len() != recv.len() || send.len() % self.size != 0 {
            return Err(CollectiveError::BadBuffers);
        }
        let args = CollArgs::new(send.len() / self.size, Datatype::U8);
        self.collective(CollOp::Alltoall, &args, send, recv)
    }

    /// Every rank's `send` block to `root`'s `recv`, in rank order (`MPI_Gather`).
    pub fn gather(&self, send: &[u8], recv: &mut [u8], root: usize) -> Result<(), CollectiveError> {
        if self.rank == root && recv.len() != send.len() * self.size {
            return Err(CollectiveError::BadBuffers);
        }
        let args = CollArgs::new(send.len(), Datatype::U8).with_root(self.root(root)?);
        self.collective(CollOp::Gather, &args, send, recv)
    }

    /// Block `i` of `root`'s `send` to rank `i`'s `recv` (`MPI_Scatter`).
    pub fn scatter(
        &self,
        send: &[u8],
        recv: &mut [u8],
        root: usize,
    ) -> Result<(), CollectiveError> {
        if self.rank == root && send.len() != recv.len() * self.size {
            return Err(CollectiveError::BadBuffers);
        }
        let args = CollArgs::new(recv.len(), Datatype::U8).with_root(self.root(root)?);
        self.collective(CollOp::Scatter, &args, send, recv)
    }

    fn root(&self, root: usize) -> Result<Root, CollectiveError> {
        if root < self.size {
            Ok(Root::Rank(root as u32))
        } else {
            Err(CollectiveError::P2p(P2pError::RankOutOfRange { rank: root, size: self.size }))
        }
    }

    /// Runs `schedule` over `send` and `recv`; a failed transfer is noted on the
    /// communicator ([`Comm::note_failure`]).
    pub(in crate::runtime) fn execute(
        &self,
        schedule: Schedule<'_>,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<(), CollectiveError> {
        let mut buffers = ExecBuffers::take();
        buffers.scratch.clear();
        buffers.scratch.resize(schedule.scratch_bytes(), 0);
        let result = self.run_steps(schedule, send, recv, &mut buffers);
        if result.is_err() {
            let mut engine = self.runtime.engine();
            for (id, _) in buffers.pending.drain(..) {
                engine.cancel_recv(&self.runtime.fabric, id);
            }
        }
        buffers.put_back();
        if let Err(CollectiveError::P2p(error)) = &result {
            self.note_failure(error);
        }
        result
    }

    fn run_steps(
        &self,
        schedule: Schedule<'_>,
        send: &[u8],
        recv: &mut [u8],
        buffers: &mut ExecBuffers,
    ) -> Result<(), CollectiveError> {
        let context = self.context + 1;
        let runtime = &self.runtime;
        let ExecBuffers { scratch, temp, pending } = buffers;
        // Held across a run of sends and receives, dropped before anything waits.
        let mut engine = None;
        // A message whose length differs from what this rank's arguments give: the
        // program is erroneous (the ranks' counts differ), but the rest of the schedule
        // still runs, so that the ranks served after this one get their messages rather
        // than wait for ever; the error comes at the end.
        let mut mismatch = None;
        let mut queued_large = false;
        for step in schedule {
            match step {
                Step::Send { to, region } => {
                    let dest = self.peer(to.group, to.rank)?;
                    let data = bytes(send, recv, scratch, region)?;
                    // Sends to the remote group go in its context; all receives in ours.
                    let context =
                        if to.group == Group::Remote { self.remote_context + 1 } else { context };
                    let engine = engine.get_or_insert_with(|| runtime.engine());
                    if data.len() <= Ring::PAYLOAD_BYTES {
                        // Copied into the ring or the engine's own buffer at once.
                        engine.start_send(
                            &runtime.fabric,
                            dest,
                            self.outbound(context, SCHEDULE_TAG),
                            data,
                            false,
                        )?;
                    } else {
                        queued_large = true;
                        let envelope = self.outbound(context, SCHEDULE_TAG);
                        engine.start_send_copied(&runtime.fabric, dest, envelope, data)?;
                    }
                }
                Step::Recv { from, region } => {
                    let source = self.peer(from.group, from.rank)?;
                    let pattern =
                        Pattern { context, source: Some(source), tag: Some(SCHEDULE_TAG) };
                    let engine = engine.get_or_insert_with(|| runtime.engine());
                    pending.push_back((engine.post_recv(pattern), region));
                }
                Step::Wait => {
                    engine = None;
                    self.complete(pending, recv, scratch, &mut mismatch)?;
                }
                Step::Copy { src, dst } => {
                    engine = None;
                    self.complete(pending, recv, scratch, &mut mismatch)?;
                    temp.clear();
                    temp.extend_from_slice(bytes(send, recv, scratch, src)?);
                    let out = bytes_mut(recv, scratch, dst)?;
                    if out.len() != temp.len() {
                        return Err(CollectiveError::Region(dst));
                    }
                    out.copy_from_slice(temp);
                }
                Step::Reduce { op, dtype, src, dst, src_left } => {
                    engine = None;
                    self.complete(pending, recv, scratch, &mut mismatch)?;
                    temp.clear();
                    temp.extend_from_slice(bytes(send, recv, scratch, src)?);
                    let out = bytes_mut(recv, scratch, dst)?;
                    reduce(&op, dtype, temp, out, src_left).map_err(CollectiveError::Reduce)?;
                }
            }
        }
        drop(engine);
        self.complete(pending, recv, scratch, &mut mismatch)?;
        if queued_large {
            // Return once the rings hold everything: a rank that returned with its long
            // sends still queued would run ahead by any number of calls, its queue (and
            // the pages it touches) growing while the receivers catch up.
            runtime.block(|engine, fabric| {
                engine.progress(fabric, None, None)?;
                Ok((!engine.has_outbound()).then_some(()))
            })?;
        } else {
            // Push what the sends left queued as far as the rings take it now.
            let mut engine = runtime.engine();
            if engine.has_outbound() {
                engine.progress(&runtime.fabric, None, None)?;
            }
        }
        mismatch.map_or(Ok(()), Err)
    }

    /// Waits for every posted receive, in order, straight into its region.
    /// A message of another length than its region is noted in `mismatch` (the first
    /// one), not returned: see [`Comm::run_steps`].
    fn complete(
        &self,
        pending: &mut VecDeque<(u64, Region)>,
        recv: &mut [u8],
        scratch: &mut [u8],
        mismatch: &mut Option<CollectiveError>,
    ) -> Result<(), CollectiveError> {
        while let Some(&(id, region)) = pending.front() {
            let buf = bytes_mut(recv, scratch, region)?;
            let mut sink = Sink::new(id, buf, true);
            let envelope = self.runtime.block(|engine, fabric| {
                if let Some(envelope) = engine.finish_recv(fabric, &mut sink)? {
                    return Ok(Some(envelope));
                }
                engine.progress(fabric, Some(&mut sink), None)?;
                engine.finish_recv(fabric, &mut sink)
            });
            pending.pop_front();
            let envelope = match envelope {
                Ok(envelope) => envelope,
                Err(error @ P2pError::Truncated { .. }) => {
                    mismatch.get_or_insert(CollectiveError::P2p(error));
                    continue;
                }
                Err(error) => return Err(CollectiveError::P2p(error)),
            };
            if envelope.len != region.len {
                let found =
                    CollectiveError::LengthMismatch { expected: region.len, got: envelope.len };
                mismatch.get_or_insert(found);
            }
        }
        Ok(())
    }

    fn peer(&self, group: Group, rank: u32) -> Result<Peer, CollectiveError> {
        let rank = rank as usize;
        match (group, &self.inter) {
            (Group::Local, None) | (Group::Remote, Some(_)) => Ok(self.check_rank(rank)?),
            (Group::Local, Some(local)) => Ok(local.members.peer(&self.runtime, rank)?),
            (Group::Remote, None) => Err(CollectiveError::InterNotSupported),
        }
    }
}

/// A schedule run's working buffers, kept per thread between calls so that a call does not
/// allocate once they have grown to its size.
#[derive(Default)]
struct ExecBuffers {
    scratch: Vec<u8>,
    temp: Vec<u8>,
    pending: VecDeque<(u64, Region)>,
}

thread_local! {
    static EXEC_BUFFERS: std::cell::Cell<Option<ExecBuffers>> = const { std::cell::Cell::new(None) };
}

impl ExecBuffers {
    /// This thread's buffers (fresh ones if a run on this thread holds them already).
    fn take() -> ExecBuffers {
        EXEC_BUFFERS.with(|cell| cell.take()).unwrap_or_default()
    }

    fn put_back(mut self) {
        self.pending.clear();
        EXEC_BUFFERS.with(|cell| cell.set(Some(self)));
    }
}

fn elements(send: &[u8], recv: &[u8], dtype: Datatype) -> Result<usize, CollectiveError> {
    let size = dtype.size().max(1);
    if send.len() != recv.len() || send.len() % size != 0 {
        return Err(CollectiveError::BadBuffers);
    }
    Ok(send.len() / size)
}

fn bytes<'b>(
    send: &'b [u8],
    recv: &'b [u8],
    scratch: &'b [u8],
    region: Region,
) -> Result<&'b [u8], CollectiveError> {
    let buf = match region.buf {
        Buf::Send => send,
        Buf::Recv => recv,
        Buf::Scratch => scratch,
    };
    buf.get(region.offset..region.end()).ok_or(CollectiveError::Region(region))
}

fn bytes_mut<'b>(
    recv: &'b mut [u8],
    scratch: &'b mut [u8],
    region: Region,
) -> Result<&'b mut [u8], CollectiveError> {
    let buf = match region.buf {
        Buf::Recv => recv,
        Buf::Scratch => scratch,
        Buf::Send => return Err(CollectiveError::Region(region)),
    };
    buf.get_mut(region.offset..region.end()).ok_or(CollectiveError::Region(region))
}
