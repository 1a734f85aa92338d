//! Start-up: a rank of a launched job listens, publishes its address through the
//! launcher's key-value exchange, fences, and learns every other rank's address.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::OnceLock;
use std::time::Duration;

use super::socket;
use super::transport::{TcpSettings, TcpTransport};
use crate::launch::env;
use crate::launch::exchange::{Exchange, ExchangeError};
use crate::launch::kv::KvClient;

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
    Exchange(ExchangeError),
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

/// The address this process listens on when `COMMCORE_TCP_IP` does not say, set once at
/// start-up (a rank that another launcher started listens on its interface).
static DEFAULT_LISTEN_IP: OnceLock<IpAddr> = OnceLock::new();

/// Makes `ip` the address this process listens on when `COMMCORE_TCP_IP` is unset (the
/// first call wins).
pub fn set_default_listen_ip(ip: IpAddr) {
    let _ = DEFAULT_LISTEN_IP.set(ip);
}

/// The address `COMMCORE_TCP_IP` asks ranks to listen on, else the default set at start-up,
/// if any.
pub fn listen_ip() -> Result<Option<IpAddr>, StartError> {
    match std::env::var(ENV_LISTEN_IP) {
        Ok(_) => variable(ENV_LISTEN_IP).map(Some),
        Err(_) => Ok(DEFAULT_LISTEN_IP.get().copied()),
    }
}

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
        let mut kv = KvClient::from_env(EXCHANGE_TIMEOUT).map_err(|e| {
            StartError::Exchange(ExchangeError { launcher: "commcore run", message: e.to_string() })
        })?;
        let rank: usize = variable(env::RANK)?;
        let size: usize = variable(env::SIZE)?;
        let ip = listen_ip()?.unwrap_or(Ipv4Addr::LOCALHOST.into());
        Self::join_with(&mut kv, rank, size, ip, settings)
    }

    /// [`TcpTransport::join`] for `rank` of `size`, listening on `ip`, over an exchange the
    /// caller holds (the runtime keeps its own for the rest of the job). Collective: every
    /// rank puts, fences once and reads.
    pub fn join_with(
        kv: &mut dyn Exchange,
        rank: usize,
        size: usize,
        ip: IpAddr,
        mut settings: TcpSettings,
    ) -> Result<TcpTransport, StartError> {
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
pub(crate) fn random() -> u128 {
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

/// The first IPv4 address of an interface that is up and not loopback: what a rank listens
/// on when its peers are on other machines (or in other network namespaces) and
/// `COMMCORE_TCP_IP` does not say. `None` when there is none.
pub fn interface_ip() -> Option<IpAddr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a list this function frees below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let mut found = None;
    let mut entry = list;
    while !entry.is_null() && found.is_none() {
        // SAFETY: `entry` is a node of the list getifaddrs returned, not yet freed.
        let interface = unsafe { &*entry };
        let wanted = libc::IFF_UP as u32 | libc::IFF_RUNNING as u32;
        let usable = interface.ifa_flags & wanted == wanted
            && interface.ifa_flags & libc::IFF_LOOPBACK as u32 == 0;
        // SAFETY: a non-null ifa_addr points at a sockaddr whose family says its type; an
        // AF_INET one is a sockaddr_in.
        let ipv4 = unsafe {
            (!interface.ifa_addr.is_null()
                && i32::from((*interface.ifa_addr).sa_family) == libc::AF_INET)
                .then(|| &*interface.ifa_addr.cast::<libc::sockaddr_in>())
        };
        if let (true, Some(address)) = (usable, ipv4) {
            found = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(address.sin_addr.s_addr))));
        }
        entry = interface.ifa_next;
    }
    // SAFETY: `list` came from getifaddrs and is freed once; no reference outlives it.
    unsafe { libc::freeifaddrs(list) };
    found
}
