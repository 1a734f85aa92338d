//! Single copy: a long message is announced and read by the receiver straight from the
//! sender's memory; above a threshold the copy is split, the receiver reading one half while
//! the sender writes the other. The control cells (clear-to-send, written, finished) carry
//! their data as payload, so header fields keep one meaning.

use super::links::Guests;
use super::matching::{Arrival, Body};
use super::{Engine, Sink};
use crate::runtime::error::P2pError;
use crate::shm::{cma, CellHeader, CellKind};
use crate::transport::shm::ShmTransport;

/// A single-copy message being received.
/// A single-copy message being received.
#[derive(Clone, Copy)]
pub(super) struct Remote {
    pub(super) source: usize,
    pub(super) len: usize,
    pub(super) address: u64,
    pub(super) sender_id: u64,
}

impl Engine {
    /// Moves a single-copy message into `sink`: one read, or, in a blocking call above the
    /// split threshold, one half read here while the sender writes the other. `None` while
    /// the sender's part is outstanding.
    pub(super) fn finish_remote(
        &mut self,
        fabric: &ShmTransport,
        guests: &Guests,
        sink: &mut Sink<'_>,
        arrival_id: u64,
        remote: Remote,
        split: Option<(usize, usize)>,
    ) -> Option<Result<(), P2pError>> {
        let Remote { source, len, address, sender_id } = remote;
        let n = len.min(sink.buf.len());
        let pid = guests.pid_of(fabric, source).unwrap_or(0);
        let failed = |e: std::io::Error| P2pError::SingleCopyFailed {
            peer: source,
            errno: e.raw_os_error().unwrap_or(0),
        };
        let mut result = Ok(());
        let mut read = |buf: &mut [u8], from: usize| {
            if let Err(e) = cma::read(pid, address + from as u64, buf) {
                result = Err(failed(e));
            }
        };
        let split = match split {
            None if sink.blocking && self.split_above.is_some_and(|limit| n > limit) => {
                let (mine, theirs) = halves(std::process::id(), pid, n);
                let cell = ClearToSend::cell(sender_id, theirs, sink.buf[theirs.0..].as_ptr());
                self.send_control(fabric, guests, source, cell);
                if let Some(Arrival { body: Body::Remote { split, .. }, .. }) =
                    self.arrivals.get_mut(arrival_id)
                {
                    *split = Some(theirs);
                }
                read(&mut sink.buf[mine.0..mine.1], mine.0);
                Some(theirs)
            }
            None => {
                read(&mut sink.buf[..n], 0);
                None
            }
            Some(theirs) => Some(theirs),
        };
        if let Some((start, end)) = split {
            // Until the sender's word comes, it may still be writing into the buffer.
            let errno = self.written.remove(&(source, sender_id))?;
            if errno != 0 {
                // The sender could not write its part: read it after all.
                read(&mut sink.buf[start..end], start);
            }
        }
        self.send_control(fabric, guests, source, finished_cell(sender_id));
        Some(result)
    }

    /// Reads every single-copy message matched with a posted receive into the engine's
    /// memory and tells its sender it is done. A rank that blocks in something else (a
    /// collective, a send to itself) would otherwise leave a peer's synchronous or long
    /// send waiting on a receive the rank posted, against MPI's progress rule. It costs a
    /// copy more than reading into the receive's buffer, so waits call it only once they
    /// go to sleep. A message whose sender writes part of it into a lent buffer (a split
    /// copy) is left alone, and so is one whose read fails (the receive reports it).
    pub(crate) fn pull_matched_remotes(&mut self, fabric: &ShmTransport) {
        let unsplit = |a: Option<&Arrival>| {
            matches!(a, Some(Arrival { body: Body::Remote { split: None, .. }, .. }))
        };
        let stalled: Vec<u64> =
            self.matched.arrivals().filter(|&id| unsplit(self.arrivals.get(id))).collect();
        for id in stalled {
            let Some(&Arrival { len, body: Body::Remote { slot, address, sender_id, .. }, .. }) =
                self.arrivals.get(id)
            else {
                continue;
            };
            let mut pending = vec![0u8; len];
            let read = self.with_guests(|engine, guests| {
                let pid = guests.pid_of(fabric, slot).unwrap_or(0);
                let read = cma::read(pid, address, &mut pending);
                if read.is_ok() {
                    engine.send_control(fabric, guests, slot, finished_cell(sender_id));
                }
                read
            });
            if let (Ok(()), Some(arrival)) = (read, self.arrivals.get_mut(id)) {
                arrival.body = Body::Copied { pending, in_sink: 0, received: len };
            }
        }
    }

    /// Sends a control cell now if its ring has room, else queues it for progress.
    pub(super) fn send_control(
        &mut self,
        fabric: &ShmTransport,
        guests: &Guests,
        dest: usize,
        cell: Control,
    ) {
        let Ok(link) = guests.link(fabric, dest) else { return };
        let idle = self.peers.get(dest).map_or(true, |c| c.control.is_empty());
        if idle && link.outbox().try_push(&cell.header, cell.payload()) {
            link.notify(fabric);
        } else {
            self.peers.queue(dest).control.push_back(cell);
        }
    }
}

/// How a split single copy of `n` bytes between receiver `receiver` and sender `sender`
/// (process ids) divides the message: (the receiver's part, the sender's part), as byte
/// ranges. The lower process of a pair always copies the head and the higher the tail,
/// whichever way the message
/// goes, so a buffer that a pair passes back and forth stays in the cache of the core that
/// copied each half last, and neither side reads lines the other core just wrote.
fn halves(receiver: u32, sender: u32, n: usize) -> ((usize, usize), (usize, usize)) {
    let at = (n / 2) & !63;
    let (head, tail) = ((0, at), (at, n));
    if receiver < sender {
        (head, tail)
    } else {
        (tail, head)
    }
}

/// Payload bytes a control cell carries at most (inline in the cell's first cache line).
/// Payload bytes a control cell carries at most (inline in the cell's first cache line).
pub(super) const CONTROL_BYTES: usize = 16;

/// A control cell and its payload, queued while the peer's ring is full.
#[derive(Clone, Copy, Debug)]
pub(super) struct Control {
    pub(super) header: CellHeader,
    payload: [u8; CONTROL_BYTES],
}

impl Control {
    fn new(kind: CellKind, id: u64, payload: &[u8]) -> Control {
        let mut bytes = [0u8; CONTROL_BYTES];
        bytes[..payload.len()].copy_from_slice(payload);
        let header = CellHeader {
            kind,
            context: 0,
            tag: 0,
            // Fits: at most CONTROL_BYTES.
            fragment_len: payload.len() as u32,
            total_len: 0,
            source: 0,
            address: 0,
            id,
        };
        Control { header, payload: bytes }
    }

    pub(super) fn payload(&self) -> &[u8] {
        &self.payload[..self.header.fragment_len as usize]
    }
}

/// The payload of a clear-to-send: the part of the message the sender is asked to write
/// itself (offset and length) and where it goes in the receiver's memory.
pub(super) struct ClearToSend;

impl ClearToSend {
    /// Asks the sender of message `sender_id` to write its bytes `part` to `address`.
    pub(super) fn cell(sender_id: u64, part: (usize, usize), address: *const u8) -> Control {
        let mut bytes = [0u8; CONTROL_BYTES];
        // Fit: messages are at most i32::MAX bytes.
        bytes[0..4].copy_from_slice(&(part.0 as u32).to_le_bytes());
        bytes[4..8].copy_from_slice(&((part.1 - part.0) as u32).to_le_bytes());
        bytes[8..16].copy_from_slice(&(address as usize as u64).to_le_bytes());
        Control::new(CellKind::ClearToSend, sender_id, &bytes)
    }

    /// (offset, length, receiver's address) of a clear-to-send's payload.
    pub(super) fn decode(bytes: &[u8; CONTROL_BYTES]) -> (u64, u64, u64) {
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let mut address = [0u8; 8];
        address.copy_from_slice(&bytes[8..16]);
        (u64::from(word(0)), u64::from(word(4)), u64::from_le_bytes(address))
    }
}

/// Tells the receiver of message `sender_id` that the sender wrote its part (`errno` 0) or
/// could not (the errno).
pub(super) fn written_cell(sender_id: u64, errno: i32) -> Control {
    Control::new(CellKind::Written, sender_id, &errno.to_le_bytes())
}

pub(super) fn finished_cell(sender_id: u64) -> Control {
    Control::new(CellKind::Finished, sender_id, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_cover_the_message_and_the_lower_rank_copies_the_head() {
        for n in [0, 1, 63, 64, 65, 100_000] {
            let (mine, theirs) = halves(0, 1, n);
            assert_eq!((mine.0, mine.1, theirs.1), (0, theirs.0, n), "{n} bytes");
            assert_eq!(mine.1 % 64, 0, "the split is cache-line aligned");
            assert_eq!(halves(1, 0, n), (theirs, mine));
        }
    }

    #[test]
    fn control_payloads_round_trip() {
        let buffer = [0u8; 4];
        let cell = ClearToSend::cell(77, (128, 1000), buffer.as_ptr());
        assert_eq!((cell.header.kind, cell.header.id), (CellKind::ClearToSend, 77));
        let mut bytes = [0u8; CONTROL_BYTES];
        bytes.copy_from_slice(cell.payload());
        assert_eq!(ClearToSend::decode(&bytes), (128, 872, buffer.as_ptr() as usize as u64));
        let written = written_cell(5, -3);
        assert_eq!(written.payload(), &(-3i32).to_le_bytes());
        assert!(finished_cell(5).payload().is_empty());
    }
}
