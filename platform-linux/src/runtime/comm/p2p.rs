//! Point-to-point operations on a communicator: blocking and nonblocking send and receive,
//! and sendrecv, with MPI's matching (context, source, tag) and errors.

use super::Comm;
use crate::runtime::engine::{Direct, Feed, Outbound, Pattern, Peer, RecvStart, SendStart, Sink};
use crate::runtime::error::P2pError;
use crate::runtime::request::{Request, State, Status};
use crate::runtime::{Source, ANY_TAG, MAX_MESSAGE_BYTES};

impl Comm {
    /// The engine's peer of rank `rank` (of the remote group, on an inter-communicator),
    /// through its address-vector entry.
    pub(in crate::runtime) fn check_rank(&self, rank: usize) -> Result<Peer, P2pError> {
        self.members.peer(&self.runtime, rank)
    }

    fn check_send(&self, buf: &[u8], dest: usize, tag: i32) -> Result<Peer, P2pError> {
        if tag < 0 {
            return Err(P2pError::InvalidTag(tag));
        }
        if buf.len() > MAX_MESSAGE_BYTES {
            return Err(P2pError::CountOutOfRange { len: buf.len(), max: MAX_MESSAGE_BYTES });
        }
        self.check_rank(dest)
    }

    /// The header fields of a message this rank sends in `context` with `tag`: the
    /// receiver learns our rank from it, with no translation.
    pub(in crate::runtime) fn outbound(&self, context: u32, tag: i32) -> Outbound {
        // Fits: communicators have at most u32::MAX ranks (rank maps count in u32).
        Outbound { context, tag, source: self.rank as u32 }
    }

    fn pattern(&self, context: u32, source: Source, tag: i32) -> Result<Pattern, P2pError> {
        if tag < 0 && tag != ANY_TAG {
            return Err(P2pError::InvalidTag(tag));
        }
        let source = match source {
            Source::Any => None,
            Source::Rank(rank) => Some(self.check_rank(rank)?),
        };
        Ok(Pattern { context, source, tag: (tag != ANY_TAG).then_some(tag) })
    }

    /// Sends `buf` to rank `dest` with `tag` (`MPI_Send`); returns once `buf` may be reused.
    pub fn send(&self, buf: &[u8], dest: usize, tag: i32) -> Result<(), P2pError> {
        self.send_on(self.remote_context, buf, dest, tag)
    }

    pub(in crate::runtime) fn send_on(
        &self,
        context: u32,
        buf: &[u8],
        dest: usize,
        tag: i32,
    ) -> Result<(), P2pError> {
        self.noted(self.send_unnoted(context, buf, dest, tag))
    }

    fn send_unnoted(
        &self,
        context: u32,
        buf: &[u8],
        dest: usize,
        tag: i32,
    ) -> Result<(), P2pError> {
        let dest = self.check_send(buf, dest, tag)?;
        let runtime = &self.runtime;
        let envelope = self.outbound(context, tag);
        let start = {
            let mut engine = runtime.engine();
            if let Peer::Shm(p) = dest {
                // One cell to a slot of this job or to a guest: no step through
                // start_send's layers for either.
                let fabric = &runtime.fabric;
                let sent = if p < fabric.size {
                    engine.try_send_home(fabric, p, envelope, buf)
                } else {
                    engine.try_send_guest(fabric, p, envelope, buf)
                };
                if sent {
                    return Ok(());
                }
            }
            engine.start_send(&runtime.fabric, dest, envelope, buf, true)?
        };
        match start {
            SendStart::Done => Ok(()),
            SendStart::Rendezvous(id) => runtime.block(|engine, fabric| {
                engine.progress(fabric, None, None)?;
                Ok(engine.send_finished(id).then_some(()))
            }),
            SendStart::Streaming(id) => runtime.block(|engine, fabric| {
                engine.progress(fabric, None, Some(&Feed { send: id, buf }))?;
                Ok((!engine.send_queued(dest, id)).then_some(()))
            }),
        }
    }

    /// Sends `buf` to rank `dest` with `tag` and returns once a receive has taken it
    /// (`MPI_Ssend`): so between processes of this job on one node with single-copy
    /// transfers; elsewhere it returns as [`Comm::send`] does.
    pub fn ssend(&self, buf: &[u8], dest: usize, tag: i32) -> Result<(), P2pError> {
        self.noted(self.ssend_unnoted(buf, dest, tag))
    }

    fn ssend_unnoted(&self, buf: &[u8], dest: usize, tag: i32) -> Result<(), P2pError> {
        let peer = self.check_send(buf, dest, tag)?;
        let runtime = &self.runtime;
        let envelope = self.outbound(self.remote_context, tag);
        let start = runtime.engine().start_send_sync(&runtime.fabric, peer, envelope, buf)?;
        match start {
            SendStart::Done => Ok(()),
            SendStart::Rendezvous(id) => runtime.block(|engine, fabric| {
                engine.progress(fabric, None, None)?;
                Ok(engine.send_finished(id).then_some(()))
            }),
            SendStart::Streaming(id) => runtime.block(|engine, fabric| {
                engine.progress(fabric, None, Some(&Feed { send: id, buf }))?;
                Ok((!engine.send_queued(peer, id)).then_some(()))
            }),
        }
    }

    /// Receives into `buf` a message from `source` (a rank or [`crate::runtime::ANY_SOURCE`]) with
    /// `tag` (or [`ANY_TAG`]) (`MPI_Recv`). A longer message is an error
    /// ([`P2pError::Truncated`]) that still consumes it.
    pub fn recv(
        &self,
        buf: &mut [u8],
        source: impl Into<Source>,
        tag: i32,
    ) -> Result<Status, P2pError> {
        self.recv_on(self.context, buf, source.into(), tag)
    }

    pub(in crate::runtime) fn recv_on(
        &self,
        context: u32,
        buf: &mut [u8],
        source: Source,
        tag: i32,
    ) -> Result<Status, P2pError> {
        self.noted(self.recv_unnoted(context, buf, source, tag))
    }

    fn recv_unnoted(
        &self,
        context: u32,
        buf: &mut [u8],
        source: Source,
        tag: i32,
    ) -> Result<Status, P2pError> {
        let pattern = self.pattern(context, source, tag)?;
        let runtime = &self.runtime;
        let mut posted = false;
        let mut sink = Sink::new(0, buf, true);
        {
            // A message that is here already: taken before any of the waiting loop's setup.
            let mut engine = runtime.engine();
            match engine.try_direct_recv(&runtime.fabric, &pattern, sink.buf) {
                Direct::Done(result) => {
                    return result.map(|e| Status { source: e.source, tag: e.tag, len: e.len })
                }
                Direct::Empty => {}
                Direct::Slow => {
                    sink.recv = engine.post_recv(pattern);
                    posted = true;
                }
            }
        }
        let envelope = runtime.block(|engine, fabric| {
            if !posted {
                match engine.try_direct_recv(fabric, &pattern, sink.buf) {
                    Direct::Done(result) => return result.map(Some),
                    Direct::Empty => {
                        // Keep other peers' traffic and our queued sends moving meanwhile.
                        if engine.has_outbound() || engine.inbound_anywhere(fabric) {
                            engine.progress(fabric, None, None)?;
                        }
                        return Ok(None);
                    }
                    Direct::Slow => {
                        sink.recv = engine.post_recv(pattern);
                        posted = true;
                    }
                }
            }
            if let Some(envelope) = engine.finish_recv(fabric, &mut sink)? {
                return Ok(Some(envelope));
            }
            engine.progress(fabric, Some(&mut sink), None)?;
            engine.finish_recv(fabric, &mut sink)
        })?;
        Ok(Status { source: envelope.source, tag: envelope.tag, len: envelope.len })
    }

    /// Starts sending `buf` (`MPI_Isend`). A long message that goes by single copy keeps
    /// `buf` borrowed until the request completes; others are copied out at once.
    pub fn isend<'a>(&self, buf: &'a [u8], dest: usize, tag: i32) -> Result<Request<'a>, P2pError> {
        let peer = self.check_send(buf, dest, tag)?;
        let runtime = &self.runtime;
        let envelope = self.outbound(self.remote_context, tag);
        let start = {
            let mut engine = runtime.engine();
            match peer {
                // One cell to a slot of this job or a guest, as the blocking send's hot path.
                Peer::Shm(p)
                    if engine.try_send_home(&runtime.fabric, p, envelope, buf)
                        || engine.try_send_guest(&runtime.fabric, p, envelope, buf) =>
                {
                    SendStart::Done
                }
                _ => engine.start_send(&runtime.fabric, peer, envelope, buf, false)?,
            }
        };
        Ok(self.send_request(start, buf, dest, tag))
    }

    /// Starts a synchronous send (`MPI_Issend`): the request completes once a receive has
    /// taken the message, under the conditions of [`Comm::ssend`].
    pub fn issend<'a>(
        &self,
        buf: &'a [u8],
        dest: usize,
        tag: i32,
    ) -> Result<Request<'a>, P2pError> {
        let peer = self.check_send(buf, dest, tag)?;
        let runtime = &self.runtime;
        let envelope = self.outbound(self.remote_context, tag);
        let start = runtime.engine().start_send_sync(&runtime.fabric, peer, envelope, buf)?;
        Ok(self.send_request(start, buf, dest, tag))
    }

    /// The request of a send the engine started.
    fn send_request<'a>(
        &self,
        start: SendStart,
        buf: &'a [u8],
        dest: usize,
        tag: i32,
    ) -> Request<'a> {
        let status = Status { source: dest, tag, len: buf.len() };
        let state = match start {
            SendStart::Rendezvous(id) => {
                State::Send { runtime: self.runtime.clone(), id, status, _buf: buf }
            }
            SendStart::Done | SendStart::Streaming(_) => State::Done(Ok(status)),
        };
        Request { state }
    }

    /// Starts receiving into `buf` (`MPI_Irecv`); matching follows posting order.
    pub fn irecv<'a>(
        &self,
        buf: &'a mut [u8],
        source: impl Into<Source>,
        tag: i32,
    ) -> Result<Request<'a>, P2pError> {
        let pattern = self.pattern(self.context, source.into(), tag)?;
        let runtime = &self.runtime;
        let mut engine = runtime.engine();
        // A message that is here already completes the receive now, as the blocking one's
        // fast path would: nothing posted, matched or waited for.
        let state = match engine.start_recv(&runtime.fabric, pattern, buf) {
            RecvStart::Done(result) => {
                State::Done(result.map(|e| Status { source: e.source, tag: e.tag, len: e.len }))
            }
            RecvStart::Posted(id) => State::Recv { runtime: runtime.clone(), id, buf },
        };
        drop(engine);
        Ok(Request { state })
    }

    /// The status of the oldest message a receive from `source` with `tag` would take, if
    /// one has come, without receiving it (`MPI_Iprobe`).
    pub fn iprobe(&self, source: impl Into<Source>, tag: i32) -> Result<Option<Status>, P2pError> {
        let pattern = self.pattern(self.context, source.into(), tag)?;
        let runtime = &self.runtime;
        let mut engine = runtime.engine();
        engine.progress(&runtime.fabric, None, None)?;
        Ok(engine.probe(&pattern).map(|(source, tag, len)| Status { source, tag, len }))
    }

    /// Blocks until a message a receive from `source` with `tag` would take has come, and
    /// returns its status without receiving it (`MPI_Probe`).
    pub fn probe(&self, source: impl Into<Source>, tag: i32) -> Result<Status, P2pError> {
        let pattern = self.pattern(self.context, source.into(), tag)?;
        let found = self.runtime.block(|engine, fabric| {
            engine.progress(fabric, None, None)?;
            Ok(engine.probe(&pattern))
        })?;
        let (source, tag, len) = found;
        Ok(Status { source, tag, len })
    }

    /// Sends to `dest` and receives from `source` at once (`MPI_Sendrecv`).
    pub fn sendrecv(
        &self,
        send: &[u8],
        dest: usize,
        send_tag: i32,
        recv: &mut [u8],
        source: impl Into<Source>,
        recv_tag: i32,
    ) -> Result<Status, P2pError> {
        let incoming = self.irecv(recv, source, recv_tag)?;
        let outgoing = self.isend(send, dest, send_tag)?;
        let status = incoming.wait()?;
        outgoing.wait()?;
        Ok(status)
    }
}
