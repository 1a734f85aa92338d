//! The name server for unrelated jobs (`commcore nameserver`).
//!
//! It listens on a TCP address and/or an abstract Unix socket, serves each connection on
//! its own thread with the protocol of [`super::names_wire`], and removes a connection's
//! names when it closes, so a job that crashed leaves nothing published. It bounds what
//! clients can make it hold: [`MAX_CONNECTIONS`] connections and [`MAX_NAMES`] names.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

use super::names::ServerAddr;
use super::names_wire::{self, Refusal, Request, LINE_MAX};

/// Connections served at once; more are answered `err full` and closed.
pub const MAX_CONNECTIONS: usize = 1024;
/// Names published at once.
pub const MAX_NAMES: usize = 65_536;

/// The published names: name → (owning connection, port).
#[derive(Default)]
struct Registry {
    names: Mutex<HashMap<String, (u64, String)>>,
    connections: AtomicUsize,
}

impl Registry {
    fn handle(&self, owner: u64, request: Request<'_>) -> Result<Option<String>, Refusal> {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        match request {
            Request::Publish { name, port } => {
                if names.contains_key(name) {
                    return Err(Refusal::AlreadyPublished);
                }
                if names.len() >= MAX_NAMES {
                    return Err(Refusal::Full);
                }
                names.insert(name.into(), (owner, port.into()));
                Ok(None)
            }
            Request::Lookup(name) => {
                names.get(name).map(|(_, port)| Some(port.clone())).ok_or(Refusal::NotPublished)
            }
            Request::Unpublish(name) => match names.get(name) {
                None => Err(Refusal::NotPublished),
                Some((o, _)) if *o != owner => Err(Refusal::NotOwner),
                Some(_) => {
                    names.remove(name);
                    Ok(None)
                }
            },
        }
    }

    fn forget(&self, owner: u64) {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        names.retain(|_, (o, _)| *o != owner);
    }
}

/// A bound name server, not yet serving.
pub struct NameServer {
    tcp: Option<TcpListener>,
    unix: Option<(UnixListener, String)>,
    registry: Arc<Registry>,
}

impl NameServer {
    /// Binds the listeners: a TCP address (port 0 picks one) and/or an abstract Unix name.
    pub fn bind(tcp: Option<SocketAddr>, unix: Option<&str>) -> io::Result<NameServer> {
        if tcp.is_none() && unix.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "give the name server a TCP address, a Unix name or both",
            ));
        }
        let tcp = tcp.map(TcpListener::bind).transpose()?;
        let unix = match unix {
            Some(name) => {
                let addr = ServerAddr::abstract_socket(name)?;
                Some((UnixListener::bind_addr(&addr)?, name.to_owned()))
            }
            None => None,
        };
        Ok(NameServer { tcp, unix, registry: Arc::default() })
    }

    /// The addresses clients put in `COMMCORE_NAMESERVER`, one per listener.
    pub fn addresses(&self) -> io::Result<Vec<ServerAddr>> {
        let mut addresses = Vec::new();
        if let Some(listener) = &self.tcp {
            addresses.push(ServerAddr::Tcp(listener.local_addr()?));
        }
        if let Some((_, name)) = &self.unix {
            addresses.push(ServerAddr::Unix(name.clone()));
        }
        Ok(addresses)
    }

    /// Serves until the process ends (an accept error on a listener ends its thread).
    pub fn serve(self) -> io::Result<()> {
        let mut listeners = Vec::new();
        let mut next_owner = 0u64;
        let mut owners = move || {
            next_owner += 1;
            next_owner
        };
        if let Some((unix, _)) = self.unix {
            let registry = Arc::clone(&self.registry);
            let first = owners() << 32;
            listeners.push(thread::spawn(move || {
                accept_loop(first, &registry, || unix.accept().map(|(s, _)| (s.try_clone(), s)))
            }));
        }
        if let Some(tcp) = self.tcp {
            let registry = Arc::clone(&self.registry);
            let first = owners() << 32;
            listeners.push(thread::spawn(move || {
                accept_loop(first, &registry, || tcp.accept().map(|(s, _)| (s.try_clone(), s)))
            }));
        }
        for listener in listeners {
            listener.join().map_err(|_| io::Error::other("a listener thread panicked"))??;
        }
        Ok(())
    }
}

/// Accepts connections for one listener; owners are numbered from `first` up.
fn accept_loop<S>(
    first: u64,
    registry: &Arc<Registry>,
    mut accept: impl FnMut() -> io::Result<(io::Result<S>, S)>,
) -> io::Result<()>
where
    S: Read + Write + Send + 'static,
{
    let mut owner = first;
    loop {
        let (reader, mut writer) = accept()?;
        owner += 1;
        if registry.connections.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            registry.connections.fetch_sub(1, Ordering::AcqRel);
            let _ = writer.write_all(names_wire::reply_line(Err(Refusal::Full)).as_bytes());
            continue;
        }
        let Ok(reader) = reader else {
            registry.connections.fetch_sub(1, Ordering::AcqRel);
            continue;
        };
        let spawned = thread::Builder::new().name("nameserver-conn".into()).spawn({
            let registry = Arc::clone(registry);
            move || {
                serve_connection(owner, &registry, reader, writer);
                registry.forget(owner);
                registry.connections.fetch_sub(1, Ordering::AcqRel);
            }
        });
        if spawned.is_err() {
            registry.connections.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Answers one connection's requests until it closes or breaks the protocol.
fn serve_connection(owner: u64, registry: &Registry, reader: impl Read, mut writer: impl Write) {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::with_capacity(128);
    loop {
        line.clear();
        match (&mut reader).take(LINE_MAX as u64).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let request = line
            .strip_suffix(b"\n")
            .and_then(|l| std::str::from_utf8(l).ok())
            .and_then(names_wire::parse_request);
        let Some(request) = request else {
            let _ = writer.write_all(names_wire::reply_line(Err(Refusal::BadRequest)).as_bytes());
            return;
        };
        let outcome = registry.handle(owner, request);
        let reply = names_wire::reply_line(outcome.as_ref().map(|p| p.as_deref()).map_err(|r| *r));
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
