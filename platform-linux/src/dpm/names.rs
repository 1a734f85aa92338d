//! The name service client: `publish_name`, `lookup_name`, `unpublish_name`.
//!
//! A job reaches a name server ([`super::nameserver`], run as `commcore nameserver`)
//! at the address in `COMMCORE_NAMESERVER`:
//!
//! - `tcp:IP:PORT`, e.g. `tcp:10.0.0.2:7100` (jobs on any host), or
//! - `unix:NAME`, an abstract Unix socket (jobs on this host and network namespace).
//!
//! Names live as long as the [`NameService`] connection that published them: dropping it,
//! or the process dying, unpublishes them. Every call is bounded by the timeout given at
//! [`NameService::connect`]: connecting, sending and waiting for the reply each give up
//! after it. A call that timed out leaves the connection unusable ([`NameError::Broken`]).

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{self, UnixStream};
use std::time::Duration;

use super::names_wire::{self, Refusal, Request, LINE_MAX, NAME_MAX, PORT_MAX};

/// The environment variable naming the name server's address.
pub const NAMESERVER_ENV: &str = "COMMCORE_NAMESERVER";

/// Where a name server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerAddr {
    /// A TCP address.
    Tcp(SocketAddr),
    /// An abstract Unix socket name (without the leading NUL).
    Unix(String),
}

impl ServerAddr {
    /// Reads `tcp:IP:PORT` or `unix:NAME`.
    pub fn parse(text: &str) -> Result<Self, NameError> {
        let bad = || NameError::BadAddress(text.to_owned());
        if let Some(addr) = text.strip_prefix("tcp:") {
            return addr.parse().map(ServerAddr::Tcp).map_err(|_| bad());
        }
        match text.strip_prefix("unix:") {
            Some(name) if names_wire::valid_field(name, 107) => Ok(ServerAddr::Unix(name.into())),
            _ => Err(bad()),
        }
    }

    /// The abstract socket address for a `unix:` name.
    pub fn abstract_socket(name: &str) -> io::Result<net::SocketAddr> {
        net::SocketAddr::from_abstract_name(name.as_bytes())
    }
}

impl fmt::Display for ServerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerAddr::Tcp(addr) => write!(f, "tcp:{addr}"),
            ServerAddr::Unix(name) => write!(f, "unix:{name}"),
        }
    }
}

/// Why a name service call failed.
#[derive(Debug)]
pub enum NameError {
    /// `COMMCORE_NAMESERVER` is not set.
    NotConfigured,
    /// The server address is not `tcp:IP:PORT` or `unix:NAME`.
    BadAddress(String),
    /// No server answered at the address.
    Unreachable(String, io::Error),
    /// The server did not answer within the timeout.
    TimedOut,
    /// The connection failed earlier (a timeout or a lost server); make a new one.
    Broken,
    /// A name that is empty, longer than 255 bytes or not printable ASCII without spaces.
    BadName,
    /// A port that is empty, longer than 1,023 bytes or not printable ASCII without spaces.
    BadPort,
    /// The name is not published.
    NotPublished(String),
    /// The name is already published.
    AlreadyPublished(String),
    /// The name was published by another job.
    NotOwner(String),
    /// The server holds as many names or connections as it accepts.
    ServerFull,
    /// The server's reply was not the protocol's, or it closed the connection.
    Protocol,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::NotConfigured => write!(
                f,
                "{NAMESERVER_ENV} is not set: start `commcore nameserver` and set it to the address it prints"
            ),
            NameError::BadAddress(text) => write!(
                f,
                "name server address {text:?} is malformed: use tcp:IP:PORT or unix:NAME"
            ),
            NameError::Unreachable(addr, e) => {
                write!(f, "no name server answers at {addr} ({e}): check that it runs")
            }
            NameError::TimedOut => f.write_str("the name server did not answer in time"),
            NameError::Broken => {
                f.write_str("the name server connection failed earlier: connect again")
            }
            NameError::BadName => write!(
                f,
                "a service name is 1 to {NAME_MAX} printable ASCII bytes without spaces"
            ),
            NameError::BadPort => write!(
                f,
                "a port name is 1 to {PORT_MAX} printable ASCII bytes without spaces"
            ),
            NameError::NotPublished(name) => write!(f, "no port is published under {name:?}"),
            NameError::AlreadyPublished(name) => {
                write!(f, "{name:?} is already published: unpublish it first or pick another name")
            }
            NameError::NotOwner(name) => {
                write!(f, "{name:?} was published by another job: only that job may unpublish it")
            }
            NameError::ServerFull => f.write_str("the name server is full: unpublish unused names"),
            NameError::Protocol => f.write_str("the name server's reply was malformed or missing"),
        }
    }
}

impl std::error::Error for NameError {}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn reader(&self) -> &dyn ReadStream {
        match self {
            Stream::Tcp(s) => s,
            Stream::Unix(s) => s,
        }
    }
}

/// The part of a socket the client uses, so TCP and Unix streams share one code path.
trait ReadStream {
    fn send(&self, bytes: &[u8]) -> io::Result<()>;
    fn receive(&self, buf: &mut [u8]) -> io::Result<usize>;
}

impl ReadStream for TcpStream {
    fn send(&self, bytes: &[u8]) -> io::Result<()> {
        (&mut &*self).write_all(bytes)
    }
    fn receive(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&mut &*self).read(buf)
    }
}

impl ReadStream for UnixStream {
    fn send(&self, bytes: &[u8]) -> io::Result<()> {
        (&mut &*self).write_all(bytes)
    }
    fn receive(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&mut &*self).read(buf)
    }
}

struct Receiver<'s>(&'s dyn ReadStream);

impl Read for Receiver<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.receive(buf)
    }
}

/// A connection to a name server; the names it publishes live as long as it does.
pub struct NameService {
    stream: Stream,
    broken: bool,
}

impl NameService {
    /// Connects to the server in `COMMCORE_NAMESERVER`.
    pub fn from_env(timeout: Duration) -> Result<Self, NameError> {
        let text = std::env::var(NAMESERVER_ENV).map_err(|_| NameError::NotConfigured)?;
        Self::connect(&ServerAddr::parse(&text)?, timeout)
    }

    /// Connects to the server at `addr`; each later step waits at most `timeout`
    /// (a zero timeout is taken as one millisecond).
    pub fn connect(addr: &ServerAddr, timeout: Duration) -> Result<Self, NameError> {
        let timeout = timeout.max(Duration::from_millis(1));
        let unreachable = |e| NameError::Unreachable(addr.to_string(), e);
        let stream = match addr {
            ServerAddr::Tcp(a) => {
                let s = TcpStream::connect_timeout(a, timeout).map_err(unreachable)?;
                s.set_nodelay(true).map_err(unreachable)?;
                s.set_read_timeout(Some(timeout)).map_err(unreachable)?;
                s.set_write_timeout(Some(timeout)).map_err(unreachable)?;
                Stream::Tcp(s)
            }
            ServerAddr::Unix(name) => {
                // A Unix connect does not block on a listening socket (it fails at once
                // when the backlog is full), so the timeouts below bound the rest.
                let a = ServerAddr::abstract_socket(name).map_err(unreachable)?;
                let s = UnixStream::connect_addr(&a).map_err(unreachable)?;
                s.set_read_timeout(Some(timeout)).map_err(unreachable)?;
                s.set_write_timeout(Some(timeout)).map_err(unreachable)?;
                Stream::Unix(s)
            }
        };
        Ok(NameService { stream, broken: false })
    }

    /// Publishes `port` under `name` until [`unpublish_name`](Self::unpublish_name) or
    /// until this connection is dropped.
    pub fn publish_name(&mut self, name: &str, port: &str) -> Result<(), NameError> {
        check_name(name)?;
        if !names_wire::valid_field(port, PORT_MAX) {
            return Err(NameError::BadPort);
        }
        self.call(name, Request::Publish { name, port }).map(drop)
    }

    /// The port published under `name`.
    pub fn lookup_name(&mut self, name: &str) -> Result<String, NameError> {
        check_name(name)?;
        self.call(name, Request::Lookup(name))?.ok_or(NameError::Protocol)
    }

    /// Removes `name`, which this connection published.
    pub fn unpublish_name(&mut self, name: &str) -> Result<(), NameError> {
        check_name(name)?;
        self.call(name, Request::Unpublish(name)).map(drop)
    }

    fn call(&mut self, name: &str, request: Request<'_>) -> Result<Option<String>, NameError> {
        if self.broken {
            return Err(NameError::Broken);
        }
        // Any failure below leaves a request or reply half-done: the stream is out of step.
        self.broken = true;
        let stream = self.stream.reader();
        stream.send(request.to_line().as_bytes()).map_err(io_error)?;
        let mut line = Vec::with_capacity(64);
        let mut reader = BufReader::new(Receiver(stream).take(LINE_MAX as u64));
        reader.read_until(b'\n', &mut line).map_err(io_error)?;
        let line = line.strip_suffix(b"\n").ok_or(NameError::Protocol)?;
        let line = std::str::from_utf8(line).map_err(|_| NameError::Protocol)?;
        let reply = names_wire::parse_reply(line).ok_or(NameError::Protocol)?;
        self.broken = false;
        match reply {
            Ok(port) => Ok(port.map(str::to_owned)),
            Err(Refusal::NotPublished) => Err(NameError::NotPublished(name.into())),
            Err(Refusal::AlreadyPublished) => Err(NameError::AlreadyPublished(name.into())),
            Err(Refusal::NotOwner) => Err(NameError::NotOwner(name.into())),
            Err(Refusal::Full) => Err(NameError::ServerFull),
            Err(Refusal::BadRequest) => {
                self.broken = true;
                Err(NameError::Protocol)
            }
        }
    }
}

fn check_name(name: &str) -> Result<(), NameError> {
    if names_wire::valid_field(name, NAME_MAX) {
        Ok(())
    } else {
        Err(NameError::BadName)
    }
}

fn io_error(e: io::Error) -> NameError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => NameError::TimedOut,
        _ => NameError::Protocol,
    }
}
