//! Ports (`MPI_Open_port`, `MPI_Comm_accept`, `MPI_Comm_connect`): a port is an abstract
//! Unix socket with a random 128-bit token, named in core's printable port-name format. The
//! connecting root presents the token; the accepting root checks it in constant time, makes
//! a bridge for the two groups and hands its memory file over the socket (`SCM_RIGHTS`).
//! Then each root shares the bridge with its group and both groups build the
//! inter-communicator. A forged or stale connection is refused and the acceptor keeps
//! waiting; every wait ends at the caller's timeout.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use commcore::port::{PortName, Token, PORT_NAME_MAX, TOKEN_BYTES};

use super::bridge_comm::Side;
use super::listen;
use super::tcp_meet;
use super::DpmError;
use crate::dpm::fds::{recv_fds, send_fds};
use crate::runtime::registry::LauncherTie;
use crate::runtime::{Comm, Runtime, World};
use crate::shm::bridge::{Bridge, FAILED_ABANDONED};
use crate::shm::Region;

const HELLO: &[u8; 8] = b"CCHELLO1";
const HELLO_BYTES: usize = 8 + TOKEN_BYTES + 4;
pub(super) const ACCEPTED: &[u8; 8] = b"CCACCEPT";
pub(super) const REFUSED: &[u8; 8] = b"CCREFUSE";

/// A port this process opened: its name and its listening sockets (an abstract Unix
/// socket for jobs on this host, a TCP socket for jobs on others).
pub(crate) struct Port {
    name: String,
    token: Token,
    listener: UnixListener,
    tcp: TcpListener,
}

/// How the root met the other group's root.
enum Meeting {
    /// On this host: the bridge between the groups.
    Shm(Bridge),
    /// Across hosts: the accepting root's stream from the connecting root, with the other
    /// group's size, leader and members.
    Tcp(TcpStream, (usize, usize, Vec<tcp_meet::Member>)),
    /// Across hosts: where the connecting root reaches the accepting root (once its group
    /// listens).
    TcpTo(std::net::SocketAddr),
}

/// The ports this process has open, by name.
#[derive(Default)]
pub(crate) struct OpenPorts(Mutex<Vec<Arc<Port>>>);

impl OpenPorts {
    fn find(&self, name: &str) -> Option<Arc<Port>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|p| p.name == name)
            .cloned()
    }
}

pub(super) fn random_bytes<const N: usize>() -> Result<[u8; N], DpmError> {
    let mut bytes = [0u8; N];
    // SAFETY: bytes is a writable buffer of the length passed.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), N, 0) };
    if n != N as isize {
        return Err(DpmError::Port("no randomness for a port token".into()));
    }
    Ok(bytes)
}

impl World {
    /// Opens a port (`MPI_Open_port`; local): another job on this host connects to its
    /// name. The port stays open until [`World::close_port`].
    pub fn open_port(&self) -> Result<String, DpmError> {
        let token = Token(random_bytes::<TOKEN_BYTES>()?);
        let id: [u8; 12] = random_bytes()?;
        let unix: String = format!(
            "commcore-port-{}-{}",
            std::process::id(),
            id.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        let address = SocketAddr::from_abstract_name(unix.as_bytes())
            .map_err(|e| DpmError::Port(format!("cannot name the socket: {e}")))?;
        let listener = UnixListener::bind_addr(&address)
            .map_err(|e| DpmError::Port(format!("cannot listen: {e}")))?;
        listener.set_nonblocking(true).map_err(|e| DpmError::Port(e.to_string()))?;
        let tcp = crate::tcp::socket::listen(tcp_meet::host_ip())
            .map_err(|e| DpmError::Port(format!("cannot listen on TCP: {e}")))?;
        let tcp_addr = tcp.local_addr().map_err(|e| DpmError::Port(e.to_string()))?;
        let mut buf = [0u8; PORT_NAME_MAX];
        let name = PortName { unix: Some(&unix), tcp: Some(tcp_addr), token };
        let len = name.encode(&mut buf).map_err(|e| DpmError::Port(e.to_string()))?;
        let name = String::from_utf8_lossy(&buf[..len]).into_owned();
        let port = Arc::new(Port { name: name.clone(), token, listener, tcp });
        self.comm().runtime.ports.0.lock().unwrap_or_else(PoisonError::into_inner).push(port);
        Ok(name)
    }

    /// Closes a port this process opened (`MPI_Close_port`): later connects to it fail.
    pub fn close_port(&self, name: &str) -> Result<(), DpmError> {
        let mut ports = self.comm().runtime.ports.0.lock().unwrap_or_else(PoisonError::into_inner);
        let before = ports.len();
        ports.retain(|p| p.name != name);
        if ports.len() == before {
            return Err(DpmError::Port(format!("{name:?} is not a port this process opened")));
        }
        Ok(())
    }
}

impl Comm {
    /// Accepts a connection on `port` (`MPI_Comm_accept`; collective over this
    /// communicator; `port` matters at `root` only, which must have opened it) and returns
    /// the inter-communicator to the connecting group, or an error on every rank after
    /// `timeout`. A group on this host meets over a bridge; one on another host over TCP.
    pub fn accept(&self, port: &str, root: usize, timeout: Duration) -> Result<Comm, DpmError> {
        self.check_root(root)?;
        let deadline = Instant::now() + timeout;
        let mut token = Token([0; TOKEN_BYTES]);
        let met = if self.rank() == root {
            match self.runtime.ports.find(port) {
                Some(port) => {
                    token = port.token;
                    accept_one(&self.runtime, &port, self.size(), deadline).map(Some)
                }
                None => Err(DpmError::Port(format!("{port:?} is not open in this process"))),
            }
        } else {
            Ok(None)
        };
        match self.share_route(root, met, token)? {
            Route::Shm(bridge) => self.meet(bridge, Side::A, root, deadline),
            Route::Tcp(met, token) => {
                let hello = match met {
                    Some(Meeting::Tcp(stream, (size, leader, members))) => {
                        Some((stream, size, leader, members))
                    }
                    _ => None,
                };
                self.accept_tcp(root, hello, (token, deadline), (LauncherTie::None, None))
            }
        }
    }

    /// Connects to the port named `port` (`MPI_Comm_connect`; collective; `port` matters
    /// at `root` only) and returns the inter-communicator to the accepting group, or an
    /// error on every rank: a malformed name, a closed port or a refused token at once, an
    /// acceptor that does not come after `timeout`. A port on this host is reached over
    /// its Unix socket (shared memory follows); one on another host over TCP.
    pub fn connect(&self, port: &str, root: usize, timeout: Duration) -> Result<Comm, DpmError> {
        self.check_root(root)?;
        let deadline = Instant::now() + timeout;
        let mut token = Token([0; TOKEN_BYTES]);
        let met = if self.rank() == root {
            connect_one(port, self.size(), deadline).map(|(met, t)| {
                token = t;
                Some(met)
            })
        } else {
            Ok(None)
        };
        match self.share_route(root, met, token)? {
            Route::Shm(bridge) => self.meet(bridge, Side::B, root, deadline),
            Route::Tcp(met, token) => {
                let target = match met {
                    Some(Meeting::TcpTo(target)) => Some(target),
                    _ => None,
                };
                self.connect_tcp(root, target, (token, deadline), None)
            }
        }
    }

    /// Tells the group how the root met the other root (or its error), and the port's token
    /// when it was over TCP (every process's link needs it).
    fn share_route(
        &self,
        root: usize,
        met: Result<Option<Meeting>, DpmError>,
        token: Token,
    ) -> Result<Route, DpmError> {
        let outcome = match &met {
            Ok(Some(Meeting::Tcp(..) | Meeting::TcpTo(_))) => {
                let mut bytes = vec![1u8];
                bytes.extend_from_slice(&token.0);
                Ok(bytes)
            }
            Ok(_) => Ok(vec![0u8]),
            Err(error) => Err(error.clone()),
        };
        let route = self.bcast_outcome(root, outcome)?;
        let met = met?;
        if route.first() != Some(&1) {
            let bridge = match met {
                Some(Meeting::Shm(bridge)) => Some(bridge),
                _ => None,
            };
            return Ok(Route::Shm(bridge));
        }
        let mut shared = [0u8; TOKEN_BYTES];
        if let Some(bytes) = route.get(1..1 + TOKEN_BYTES) {
            shared.copy_from_slice(bytes);
        }
        Ok(Route::Tcp(met, Token(shared)))
    }

    /// Shares the root's bridge with the group and builds the inter-communicator over it.
    fn meet(
        &self,
        bridge: Option<Bridge>,
        side: Side,
        root: usize,
        deadline: Instant,
    ) -> Result<Comm, DpmError> {
        let shared = self.share_fd(root, bridge.as_ref().map(|b| b.region.as_fd()));
        let mapped = shared.and_then(|fd| {
            Region::from_owned(fd)
                .map_err(|e| DpmError::Handover(format!("cannot map the bridge: {e}")))
                .and_then(|r| Bridge::open(r).map_err(|e| DpmError::Handover(e.to_string())))
        });
        let bridge = match mapped {
            Ok(bridge) => Arc::new(bridge),
            Err(error) => {
                if let Some(bridge) = &bridge {
                    bridge.fail(FAILED_ABANDONED);
                }
                return Err(error);
            }
        };
        // The root's launcher marks the bridge failed if a process of this job dies.
        let mut launcher = LauncherTie::None;
        if self.rank() == root {
            if let Some(kv) = self.runtime.kv().as_mut() {
                if let Ok(id) = kv.register_bridge(bridge.region.as_fd(), side == Side::A) {
                    launcher = LauncherTie::Registered(id);
                }
            }
        }
        self.bridge_intercomm(bridge, side, root, deadline, launcher)
    }

    pub(super) fn check_root(&self, root: usize) -> Result<(), DpmError> {
        if root >= self.size() || self.is_inter() {
            return Err(DpmError::InvalidArgument(format!(
                "root {root} of an intra-communicator of {} ranks",
                self.size()
            )));
        }
        Ok(())
    }
}

/// The accepting root's side: waits for a connection that presents the port's token; a
/// connector on this host gets a new bridge between our `size` processes (group A) and
/// its group (B); one on another host is answered over TCP later, by the group.
fn accept_one(
    runtime: &Runtime,
    port: &Port,
    size: usize,
    deadline: Instant,
) -> Result<Meeting, DpmError> {
    loop {
        match wait_for_connection(runtime, port, deadline)? {
            Incoming::Unix(stream) => {
                if let Some(bridge) = accept_unix(port, &stream, size, deadline)? {
                    return Ok(Meeting::Shm(bridge));
                }
            }
            Incoming::Tcp(mut stream) => {
                let magic =
                    tcp_meet::read_all(&mut stream, 8, deadline.min(Instant::now() + HELLO_WAIT));
                if magic.as_deref() != Ok(&tcp_meet::HELLO_TCP[..]) {
                    continue;
                }
                let hello =
                    tcp_meet::read_hello(&mut stream, deadline.min(Instant::now() + HELLO_WAIT));
                let Ok((token, theirs, leader, addrs)) = hello else { continue };
                if !port.token.matches(&token) {
                    // A forged or stale connection: refuse it and wait for the real one.
                    let _ = stream.write_all(REFUSED);
                    continue;
                }
                return Ok(Meeting::Tcp(stream, (theirs, leader, addrs)));
            }
        }
    }
}

/// A connector on this host: its hello checked, a bridge made and handed over; `None` when
/// the connection was forged, stale or went away (the acceptor waits for another).
fn accept_unix(
    port: &Port,
    stream: &UnixStream,
    size: usize,
    deadline: Instant,
) -> Result<Option<Bridge>, DpmError> {
    let Ok(hello) = read_exact(stream, HELLO_BYTES, deadline) else { return Ok(None) };
    let mut token = [0u8; TOKEN_BYTES];
    token.copy_from_slice(&hello[8..8 + TOKEN_BYTES]);
    let theirs = u32::from_le_bytes([hello[24], hello[25], hello[26], hello[27]]) as usize;
    if &hello[..8] != HELLO || !port.token.matches(&Token(token)) {
        let _ = (&*stream).write_all(REFUSED);
        return Ok(None);
    }
    let bridge = match Bridge::create(size, theirs) {
        Ok(bridge) => bridge,
        Err(error) => {
            let _ = (&*stream).write_all(REFUSED);
            return Err(DpmError::Handover(error.to_string()));
        }
    };
    let mut reply = [0u8; 12];
    reply[..8].copy_from_slice(ACCEPTED);
    reply[8..].copy_from_slice(&(size as u32).to_le_bytes());
    match send_fds(stream, &reply, &[bridge.region.as_fd()]) {
        Ok(12) => Ok(Some(bridge)),
        _ => Ok(None),
    }
}

/// The connecting root's side: on this host, presents the token over the Unix socket and
/// takes the bridge; else reaches the port's TCP address. Returns the port's token too.
fn connect_one(name: &str, size: usize, deadline: Instant) -> Result<(Meeting, Token), DpmError> {
    let port = PortName::parse(name.as_bytes()).map_err(|e| DpmError::Port(e.to_string()))?;
    let unix = port.unix.map(|unix| {
        SocketAddr::from_abstract_name(unix.as_bytes())
            .and_then(|address| UnixStream::connect_addr(&address))
    });
    let refused = |e: &dyn std::fmt::Display| {
        DpmError::Port(format!("cannot reach the port ({e}): it is closed or unreachable"))
    };
    match (unix, port.tcp) {
        (Some(Ok(stream)), _) => {
            connect_unix(&stream, port.token, size, deadline).map(|b| (Meeting::Shm(b), port.token))
        }
        (_, Some(addr)) => Ok((Meeting::TcpTo(addr), port.token)),
        (Some(Err(error)), None) => Err(refused(&error)),
        (None, None) => Err(DpmError::Port("the port names no address".into())),
    }
}

/// Presents the token over the Unix socket and takes the bridge.
fn connect_unix(
    stream: &UnixStream,
    token: Token,
    size: usize,
    deadline: Instant,
) -> Result<Bridge, DpmError> {
    let mut hello = [0u8; HELLO_BYTES];
    hello[..8].copy_from_slice(HELLO);
    hello[8..8 + TOKEN_BYTES].copy_from_slice(&token.0);
    hello[24..28].copy_from_slice(&(size as u32).to_le_bytes());
    (&*stream).write_all(&hello).map_err(|e| DpmError::Port(format!("the port went away: {e}")))?;
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    stream.set_read_timeout(Some(left)).map_err(|e| DpmError::Port(e.to_string()))?;
    let mut reply = [0u8; 12];
    let (read, fds) = recv_fds(stream, &mut reply, 1)
        .map_err(|e| DpmError::TimedOut(format!("no acceptor answered on the port ({e})")))?;
    if read >= 8 && &reply[..8] == REFUSED {
        return Err(DpmError::Port("the port refused the connection (its token differs)".into()));
    }
    let Some(fd) = fds.into_iter().next().filter(|_| read == 12 && &reply[..8] == ACCEPTED) else {
        return Err(DpmError::Port("the port answered with something else than a bridge".into()));
    };
    let region = Region::from_owned(fd).map_err(|e| DpmError::Handover(e.to_string()))?;
    Bridge::open(region).map_err(|e| DpmError::Handover(e.to_string()))
}

/// How long a connector has to say hello, so a silent one cannot stall accept.
const HELLO_WAIT: Duration = Duration::from_secs(1);

/// A connection that came to a port.
enum Incoming {
    Unix(UnixStream),
    Tcp(TcpStream),
}

/// How a group meets the other, as its root found out: the bridge (the root's), or TCP
/// with the port's token (and the root's stream and what it heard).
enum Route {
    Shm(Option<Bridge>),
    Tcp(Option<Meeting>, Token),
}

/// Waits for a connection to `port` until `deadline`, moving the process's other traffic
/// on meanwhile.
fn wait_for_connection(
    runtime: &Runtime,
    port: &Port,
    deadline: Instant,
) -> Result<Incoming, DpmError> {
    loop {
        runtime.progress_once();
        if let Some(stream) = listen::accepted(port.listener.accept())? {
            stream.set_nonblocking(false).map_err(|e| DpmError::Port(e.to_string()))?;
            return Ok(Incoming::Unix(stream));
        }
        if let Some(stream) = listen::accepted(port.tcp.accept())? {
            stream.set_nonblocking(false).map_err(|e| DpmError::Port(e.to_string()))?;
            let _ = stream.set_nodelay(true);
            return Ok(Incoming::Tcp(stream));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(DpmError::TimedOut("no job connected to the port".into()));
        }
        listen::nap(&[port.listener.as_raw_fd(), port.tcp.as_raw_fd()], left);
    }
}

fn read_exact(stream: &UnixStream, len: usize, deadline: Instant) -> std::io::Result<Vec<u8>> {
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    // A connector gets a second at most to say hello, so a silent one cannot stall accept.
    stream.set_read_timeout(Some(left.min(Duration::from_secs(1))))?;
    let mut buf = vec![0u8; len];
    (&*stream).read_exact(&mut buf)?;
    Ok(buf)
}
