//! Start-up: a rank of a launched job listens, publishes its address through the
//! launcher's key-value exchange, fences, and learns every other rank's address.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use super::socket;
use super::transport::{TcpSettings, TcpTransport};
use crate::launch::env;
use crate::launch::kv::{KvClient, KvError};

/// The variable naming the address a rank listens on (the launcher sets it per network
/// namespace; loopback when unset).
pub const ENV_LISTEN_IP: &str = "COMMCORE_TCP_IP";
/// How long start-up waits for the other ranks to publish their addresses.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a rank could not join the job over TCP.
#[derive(Debug)]
pub enum StartError {
    /// A launcher variable is missing or malformed.
    Environment(String),
    /// The key-value exchange failed.
    Exchange(KvError),
    /// Listening failed.
    Listen(std::io::Error),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Environment(what) => write!(f, "TCP start-up: {what}"),
            StartError::Exchange(e) => write!(f, "TCP start-up: {e}"),
            StartError::Listen(e) => write!(f, "TCP start-up: cannot listen: {e}"),
        }
    }
}

impl std::error::Error for StartError {}

fn variable<T: std::str::FromStr>(name: &str) -> Result<T, StartError> {
    let text = std::env::var(name).map_err(|_| {
        StartError::Environment(format!("{name} is unset: start with `commcore run`"))
    })?;
    text.parse().map_err(|_| StartError::Environment(format!("{name}={text:?} is malformed")))
}

impl TcpTransport {
    /// Joins the job this process was launched in: listens on `COMMCORE_TCP_IP` (default
    /// 127.0.0.1), publishes the address as key `tcp`, fences, and reads every rank's.
    /// Rank 0 also publishes the job's handshake token.
    pub fn join(settings: TcpSettings) -> Result<TcpTransport, StartError> {
        let mut kv = KvClient::from_env(EXCHANGE_TIMEOUT).map_err(StartError::Exchange)?;
        Self::join_with(&mut kv, settings)
    }

    /// [`TcpTransport::join`] over an exchange the caller holds (the runtime keeps its own
    /// for the rest of the job).
    pub fn join_with(
        kv: &mut KvClient,
        mut settings: TcpSettings,
    ) -> Result<TcpTransport, StartError> {
        let rank: usize = variable(env::RANK)?;
        let size: usize = variable(env::SIZE)?;
        let ip: IpAddr = match std::env::var(ENV_LISTEN_IP) {
            Ok(_) => variable(ENV_LISTEN_IP)?,
            Err(_) => Ipv4Addr::LOCALHOST.into(),
        };
        let listener = socket::listen(ip).map_err(StartError::Listen)?;
        let local = listener.local_addr().map_err(StartError::Listen)?;
        kv.put("tcp", &local.to_string()).map_err(StartError::Exchange)?;
        if rank == 0 {
            kv.put("token", &format!("{:032x}", random())).map_err(StartError::Exchange)?;
        }
        kv.fence().map_err(StartError::Exchange)?;
        let token = kv.get(0, "token").map_err(StartError::Exchange)?;
        settings.handshake.token = u128::from_str_radix(&token, 16).map_err(|_| {
            StartError::Environment(format!("rank 0's token {token:?} is malformed"))
        })?;
        let mut addrs = Vec::with_capacity(size);
        for peer in 0..size {
            let text = kv.get(peer, "tcp").map_err(StartError::Exchange)?;
            let addr: SocketAddr = text.parse().map_err(|_| {
                StartError::Environment(format!(
                    "rank {peer} published a malformed address {text:?}"
                ))
            })?;
            addrs.push(addr);
        }
        TcpTransport::new(rank, addrs, listener, settings, random() as u64)
            .map_err(|e| StartError::Environment(e.to_string()))
    }
}

/// 128 bits from the kernel's randomness (falls back to time and pid, which only weakens
/// the token that keeps other jobs' datagrams out).
fn random() -> u128 {
    let mut bytes = [0u8; 16];
    // SAFETY: bytes is a writable buffer of the length passed.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n == bytes.len() as isize {
        return u128::from_le_bytes(bytes);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    nanos ^ (u128::from(std::process::id()) << 64)
}
