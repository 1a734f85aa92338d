//! Children spawned onto another host meet their parents over TCP, as groups that connect
//! across hosts do (no memory is shared between hosts): the parents' root listens on a
//! socket of its own with a fresh token and hands both to the children in their
//! environment ([`ENV_PARENT_TCP`]); the children's root connects as to a port, and the two
//! groups build the inter-communicator over a TCP link of their own.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use commcore::port::{Token, TOKEN_BYTES};

use super::listen;
use super::ports::{random_bytes, REFUSED};
use super::tcp_meet::{self, Member};
use super::DpmError;
use crate::runtime::error::P2pError;
use crate::runtime::Comm;
use crate::runtime::Runtime;
use crate::shm::bridge::Bridge;

/// The children's variable: `IP:PORT/TOKEN` (the token in hex) of their parents' root.
pub const ENV_PARENT_TCP: &str = "COMMCORE_PARENT_TCP";

/// How long the parents' root waits for a hello once a connection came.
const HELLO_WAIT: Duration = Duration::from_secs(1);

/// The parents' root's socket for its children, and the token they must present.
pub(super) struct Rendezvous {
    listener: TcpListener,
    pub(super) token: Token,
}

/// What the children's root said: its stream, its group's size and leader and members.
pub(super) type Hello = (TcpStream, usize, usize, Vec<Member>);

impl Rendezvous {
    /// Listens on this host's address with a fresh token.
    pub(super) fn open() -> Result<Rendezvous, DpmError> {
        let listener = crate::tcp::socket::listen(tcp_meet::host_ip())
            .map_err(|e| DpmError::Port(format!("cannot listen for the children: {e}")))?;
        Ok(Rendezvous { listener, token: Token(random_bytes::<TOKEN_BYTES>()?) })
    }

    /// The value of [`ENV_PARENT_TCP`] for the children.
    pub(super) fn child_env(&self) -> Result<(String, String), DpmError> {
        let addr = self.listener.local_addr().map_err(|e| DpmError::Port(e.to_string()))?;
        let token: String = self.token.0.iter().map(|b| format!("{b:02x}")).collect();
        Ok((ENV_PARENT_TCP.into(), format!("{addr}/{token}")))
    }

    /// Waits until the children's root says hello with the token; fails when a child died
    /// first (the launcher marks the job's `bridge` failed, where there is one) or at
    /// `deadline`. Connections without the token are refused and the wait goes on.
    pub(super) fn wait(
        &self,
        runtime: &Runtime,
        bridge: Option<&Bridge>,
        deadline: Instant,
    ) -> Result<Hello, DpmError> {
        loop {
            runtime.progress_once();
            if let Some(reason) = bridge.and_then(Bridge::failure) {
                return Err(DpmError::Comm(P2pError::GroupFailed { reason }.into()));
            }
            if let Some(stream) = listen::accepted(self.listener.accept())? {
                if let Some(hello) = self.hello(stream, deadline) {
                    return Ok(hello);
                }
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(DpmError::TimedOut("the children did not reach their parents".into()));
            }
            listen::nap(&[self.listener.as_raw_fd()], left);
        }
    }

    /// A connection's hello, when it carries the token (else refused: `None`).
    fn hello(&self, mut stream: TcpStream, deadline: Instant) -> Option<Hello> {
        stream.set_nonblocking(false).ok()?;
        let _ = stream.set_nodelay(true);
        let wait = deadline.min(Instant::now() + HELLO_WAIT);
        let magic = tcp_meet::read_all(&mut stream, 8, wait).ok()?;
        if magic != tcp_meet::HELLO_TCP[..] {
            return None;
        }
        let (token, size, leader, members) = tcp_meet::read_hello(&mut stream, wait).ok()?;
        if !self.token.matches(&token) {
            let _ = stream.write_all(REFUSED);
            return None;
        }
        Some((stream, size, leader, members))
    }
}

/// The children's side: reaches the parents named by `value` (of [`ENV_PARENT_TCP`]) and
/// builds the inter-communicator to them (collective over the children's world); `watch`
/// is the launcher's bridge, whose failure word says when a parent dies (none when another
/// launcher started the children).
pub(super) fn meet_parents(
    world: &Comm,
    value: &str,
    watch: Option<Arc<Bridge>>,
    deadline: Instant,
) -> Result<Comm, DpmError> {
    let malformed = || DpmError::Launcher(format!("{ENV_PARENT_TCP}={value:?} is malformed"));
    let (addr, hex) = value.split_once('/').ok_or_else(malformed)?;
    let addr: SocketAddr = addr.parse().map_err(|_| malformed())?;
    if hex.len() != 2 * TOKEN_BYTES {
        return Err(malformed());
    }
    let mut token = [0u8; TOKEN_BYTES];
    for (i, byte) in token.iter_mut().enumerate() {
        let digits = hex.get(2 * i..2 * i + 2).ok_or_else(malformed)?;
        *byte = u8::from_str_radix(digits, 16).map_err(|_| malformed())?;
    }
    world.connect_tcp(0, Some(addr), (Token(token), deadline), watch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_childrens_variable_names_an_address_and_a_token() {
        let rendezvous = Rendezvous::open().unwrap();
        let (name, value) = rendezvous.child_env().unwrap();
        assert_eq!(name, ENV_PARENT_TCP);
        let (addr, hex) = value.split_once('/').unwrap();
        assert_eq!(addr.parse::<SocketAddr>().unwrap(), rendezvous.listener.local_addr().unwrap());
        assert_eq!(hex.len(), 2 * TOKEN_BYTES);
        let other = Rendezvous::open().unwrap();
        assert!(!rendezvous.token.matches(&other.token), "every spawn has a token of its own");
    }
}
