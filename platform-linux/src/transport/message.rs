//! The boundary of message-oriented transports (TCP, verbs): a transport that moves whole
//! messages, each a wire header and its payload, with its own framing, queues and waiting.
//!
//! The engine sends a message whole ([`MessageTransport::send`]) or lends its buffer
//! ([`MessageTransport::send_lent`], reported by [`MessageTransport::take_written`]), and
//! takes arrivals one at a time ([`MessageTransport::poll`]). A long arrival may come with
//! only its first bytes: the rest is read later, straight into its receive's buffer when
//! that is lent ([`MessageTransport::read_rest`]: a socket read, or an RDMA read of the
//! sender's announced buffer). Nothing else comes from that peer before the rest is read.
//!
//! The engine calls these through a `match` on its link (static dispatch), never through a
//! trait object.

use std::time::Instant;

use commcore::wire::Header;

/// A message as a message transport hands it over.
#[derive(Debug, PartialEq, Eq)]
pub struct Message {
    /// The sender's index in the transport.
    pub from: usize,
    /// Its wire header.
    pub header: Header,
    /// Its payload, or its first bytes when `rest` is not 0.
    pub payload: Vec<u8>,
    /// Payload bytes still to read with [`MessageTransport::read_rest`].
    pub rest: usize,
}

/// A transport of whole messages to peers named by their index.
pub trait MessageTransport {
    /// Why a call failed (naming the peer).
    type Error;

    /// Sends `payload` whole to `peer`; the buffer is free on return. May wait (moving
    /// traffic) while the peer's queue is full.
    fn send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), Self::Error>;

    /// Sends `payload` to `peer` from the caller's memory, reported under `id` by
    /// [`MessageTransport::take_written`] once the peer has it; `Ok(false)`, and nothing
    /// sent, when the transport cannot lend now (the caller sends by copy).
    ///
    /// # Safety
    /// `payload` must stay valid and unchanged until `id` is reported written, the peer
    /// fails, or the transport is finished or dropped.
    unsafe fn send_lent(
        &mut self,
        peer: usize,
        header: &Header,
        payload: &[u8],
        id: u64,
    ) -> Result<bool, Self::Error>;

    /// The next message that arrived, after moving what is here now.
    fn poll(&mut self) -> Result<Option<Message>, Self::Error>;

    /// Reads the next bytes of `peer`'s long message into `dest` (at most what is left of
    /// it); the count, 0 while none are here.
    fn read_rest(&mut self, peer: usize, dest: &mut [u8]) -> Result<usize, Self::Error>;

    /// Moves the ids of lent sends the peers have whole into `into`.
    fn take_written(&mut self, into: &mut Vec<u64>);

    /// Whether anything waits to be sent.
    fn has_queued(&self) -> bool;

    /// Waits until something arrived or a lent send was written (`Ok(true)`), or `deadline`
    /// passed (`Ok(false)`).
    fn wait(&mut self, deadline: Instant) -> Result<bool, Self::Error>;

    /// Delivers what is queued (until `deadline`) and says goodbye to every peer.
    fn finish(&mut self, deadline: Instant) -> Result<(), Self::Error>;
}
