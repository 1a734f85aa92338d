//! Verbs behind the message-transport boundary ([`MessageTransport`]): arrivals handed
//! over whole; a long message's rest read by RDMA from the sender's announced buffer, in
//! as many parts as the owner asks, and the buffer released after the last.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use commcore::wire::Header;

use super::device::Device;
use super::error::VerbsError;
use super::frame::RemoteBuffer;
use super::transport::VerbsTransport;
use crate::transport::message::{Message, MessageTransport};

/// Ids of long sends made by copy (the owner's ids stay below).
const COPIED: u64 = 1 << 62;

/// A long message being read: where its payload is, how much is read, its length.
#[derive(Clone, Copy)]
struct Reading {
    remote: RemoteBuffer,
    read: usize,
    len: usize,
}

/// The boundary's state between calls.
#[derive(Default)]
pub(crate) struct Messages {
    /// Arrivals taken from the device, oldest first, with a long one's buffer.
    inbox: VecDeque<(Message, Option<RemoteBuffer>)>,
    /// The long message being read, per peer (one at a time: the owner reads its rest
    /// before it polls again).
    reading: HashMap<usize, Reading>,
    /// Long payloads sent by copy, until the receiver has read them.
    copied: HashMap<u64, Vec<u8>>,
    next_copy: u64,
    written: Vec<u64>,
}

impl<D: Device> VerbsTransport<D> {
    /// Whether a message waits for the owner.
    fn has_news(&self) -> bool {
        !self.messages.inbox.is_empty()
            || !self.held.is_empty()
            || !self.loopback.is_empty()
            || !self.written.is_empty()
    }
}

impl<D: Device> MessageTransport for VerbsTransport<D> {
    type Error = VerbsError;

    fn send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), VerbsError> {
        if payload.len() <= self.settings.eager_max || peer == self.rank {
            return VerbsTransport::send(self, peer, header, payload);
        }
        // A long payload is read from a copy, so the call does not wait for the receiver.
        let copy = payload.to_vec();
        let id = COPIED | self.messages.next_copy;
        self.messages.next_copy += 1;
        // SAFETY: the copy's bytes do not move while it is kept in `copied` (moving a `Vec`
        // keeps its heap buffer), which holds it until `id` is written or the transport is
        // dropped (after its registrations).
        unsafe { self.send_lent(peer, header, &copy, id)? };
        self.messages.copied.insert(id, copy);
        Ok(())
    }

    unsafe fn send_lent(
        &mut self,
        peer: usize,
        header: &Header,
        payload: &[u8],
        id: u64,
    ) -> Result<bool, VerbsError> {
        if peer == self.rank {
            return Ok(false);
        }
        // SAFETY: the caller's promise is this call's.
        unsafe { VerbsTransport::send_lent(self, peer, header, payload, id)? };
        Ok(true)
    }

    fn poll(&mut self) -> Result<Option<Message>, VerbsError> {
        if self.messages.inbox.is_empty() {
            let mut inbox = std::mem::take(&mut self.messages.inbox);
            let taken = VerbsTransport::poll(self, |arrival| {
                let (payload, rest) = match arrival.remote {
                    Some(_) => (Vec::new(), arrival.header.length as usize),
                    None => (arrival.payload.to_vec(), 0),
                };
                let message = Message { from: arrival.from, header: arrival.header, payload, rest };
                inbox.push_back((message, arrival.remote));
            });
            self.messages.inbox = inbox;
            taken?;
        }
        let Some((message, remote)) = self.messages.inbox.pop_front() else { return Ok(None) };
        if let Some(remote) = remote {
            let reading = Reading { remote, read: 0, len: message.rest };
            self.messages.reading.insert(message.from, reading);
        }
        Ok(Some(message))
    }

    fn read_rest(&mut self, peer: usize, dest: &mut [u8]) -> Result<usize, VerbsError> {
        let Some(&Reading { remote, read, len }) = self.messages.reading.get(&peer) else {
            return Ok(0);
        };
        let n = dest.len().min(len - read);
        if n > 0 {
            self.read_remote_part(peer, remote, read, &mut dest[..n])?;
        }
        if read + n < len {
            if let Some(reading) = self.messages.reading.get_mut(&peer) {
                reading.read += n;
            }
        } else {
            self.messages.reading.remove(&peer);
            self.release_remote(peer, remote)?;
        }
        Ok(n)
    }

    fn take_written(&mut self, into: &mut Vec<u64>) {
        let mut written = std::mem::take(&mut self.messages.written);
        written.append(&mut self.written);
        for id in written.drain(..) {
            if id & COPIED == 0 {
                into.push(id);
            } else {
                self.messages.copied.remove(&id);
            }
        }
        self.messages.written = written;
    }

    fn has_queued(&self) -> bool {
        !self.messages.copied.is_empty()
            || !self.lent.is_empty()
            || self.links.iter().any(|link| !link.queue.is_empty())
    }

    fn wait(&mut self, deadline: Instant) -> Result<bool, VerbsError> {
        let left = deadline.saturating_duration_since(Instant::now());
        let until = self.device.now_micros().saturating_add(left.as_micros() as u64);
        self.block_until(until, Self::has_news)
    }

    fn finish(&mut self, _deadline: Instant) -> Result<(), VerbsError> {
        VerbsTransport::finish(self)
    }
}
