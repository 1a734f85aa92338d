//! TCP behind the message-transport boundary ([`MessageTransport`]).

use std::time::Instant;

use commcore::wire::Header;

use super::{TcpError, TcpTransport};
use crate::transport::message::{Message, MessageTransport};

impl MessageTransport for TcpTransport {
    type Error = TcpError;

    #[inline]
    fn send(&mut self, peer: usize, header: &Header, payload: &[u8]) -> Result<(), TcpError> {
        TcpTransport::send(self, peer, header, payload)
    }

    #[inline]
    unsafe fn send_lent(
        &mut self,
        peer: usize,
        header: &Header,
        payload: &[u8],
        id: u64,
    ) -> Result<bool, TcpError> {
        TcpTransport::send_lent(self, peer, header, payload, id)
    }

    #[inline]
    fn poll(&mut self) -> Result<Option<Message>, TcpError> {
        let arrival = TcpTransport::poll(self)?;
        Ok(arrival.map(|a| Message {
            from: a.from,
            header: a.header,
            payload: a.payload,
            rest: a.rest,
        }))
    }

    #[inline]
    fn read_rest(&mut self, peer: usize, dest: &mut [u8]) -> Result<usize, TcpError> {
        TcpTransport::read_rest(self, peer, dest)
    }

    #[inline]
    fn take_written(&mut self, into: &mut Vec<u64>) {
        TcpTransport::take_written(self, into);
    }

    #[inline]
    fn has_queued(&self) -> bool {
        TcpTransport::has_queued(self)
    }

    fn wait(&mut self, deadline: Instant) -> Result<bool, TcpError> {
        TcpTransport::wait(self, deadline)
    }

    fn finish(&mut self, deadline: Instant) -> Result<(), TcpError> {
        TcpTransport::finish(self, deadline)
    }
}
