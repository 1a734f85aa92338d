//! The job's key-value exchange: how ranks learn each other's addresses at start-up, and
//! how they ask the launcher for dynamic processes (spawn, disconnect, bridges, names).
//!
//! The launcher serves it ([`KvServer`], one thread for every job it runs); each rank holds
//! one end of a Unix socket pair inherited from the launcher (its descriptor number in
//! `COMMCORE_KV_FD`), so nothing is created in the file system and the exchange works
//! across network namespaces. A rank publishes its own entries, fences, then reads
//! anyone's ([`KvClient`]):
//!
//! | here                              | PMIx, for a server that offers it later                  |
//! |-----------------------------------|----------------------------------------------------------|
//! | `put(key, value)`                 | `PMIx_Put(PMIX_GLOBAL, key, value)`                       |
//! | `fence()`                         | `PMIx_Commit()`, then `PMIx_Fence(all ranks, COLLECT_DATA)` |
//! | `get(rank, key)`                  | `PMIx_Get({job's nspace, rank}, key)`                     |
//! | `spawn(request)`                  | `PMIx_Spawn(job_info, apps, &nspace)`                     |
//! | `disconnect(job)`                 | `PMIx_Disconnect({parent, child nspaces})`                |
//! | `register_bridge(fd, side_a)`     | `PMIx_Connect` bookkeeping (the server tracks the peers)  |
//! | `release_bridge(id)`              | `PMIx_Disconnect` for a connected job                     |
//! | `publish_name(name, port)`        | `PMIx_Publish({name: port}, PMIX_RANGE_SESSION)`          |
//! | `lookup_name(name)`               | `PMIx_Lookup({name}, PMIX_RANGE_SESSION)`                 |
//! | `unpublish_name(name)`            | `PMIx_Unpublish({name}, PMIX_RANGE_SESSION)`              |
//!
//! Keys are scoped by the rank that put them (the server knows which socket a request came
//! by), as PMIx scopes them by process, and the store by job. Protocol: one request per
//! line, one reply per line:
//!
//! ```text
//! put KEY VALUE              -> ok
//! fence                      -> ok, once every rank of the job fenced
//! get RANK KEY               -> value VALUE | missing
//! spawn ...                  -> spawned JOB SIZE (+ the bridge's descriptor)
//!                             | spawn-failed CODES MESSAGE        (see spawn_wire)
//! disconnect JOB             -> ok
//! register-bridge a|b        -> bridge ID       (the request carries the descriptor)
//! release-bridge ID          -> ok
//! publish NAME PORT          -> ok | err already-published | err full
//! lookup NAME                -> ok PORT | err not-published
//! unpublish NAME             -> ok | err not-published | err not-owner
//! ```
//!
//! Keys and values are printable ASCII without spaces, at most [`ITEM_MAX`] bytes; a rank
//! holds at most [`KEYS_MAX`] keys. Names and ports follow the name server's rules and
//! refusals ([`crate::dpm::names_wire`]); every job of one launcher sees the same names,
//! and a name goes when its job ends. Descriptors travel with `SCM_RIGHTS`
//! ([`crate::dpm::fds`]). A request holds at most [`spawn_wire::REQUEST_MAX`] bytes. A bad
//! request gets `error WHAT` and the rank's client reports it; the connection goes on.

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::serve::Service;
use super::spawn_wire;
use super::tree::Launch;
use crate::dpm::fds::{recv_fds, send_fds, FdError, MAX_FDS};
use crate::dpm::names::NameError;

pub use super::spawn_wire::{SpawnCommand, SpawnRequest, Spawned, SPAWN_ABORTED};

/// The variable naming the inherited descriptor of a rank's end of the exchange.
pub const ENV_FD: &str = "COMMCORE_KV_FD";
/// Bytes a key or value holds at most.
pub const ITEM_MAX: usize = 256;
/// Keys one rank may put.
pub const KEYS_MAX: usize = 64;
/// The requests the exchange knows, for its error message.
pub(super) const REQUESTS: &str = "put, fence, get, spawn, disconnect, register-bridge, \
                                   release-bridge, publish, lookup or unpublish";
/// Bytes of a reply line at most (a port is the longest).
const REPLY_MAX: usize = 4096;

/// The launcher's side: a thread answering every rank.
pub struct KvServer {
    thread: Option<JoinHandle<()>>,
    /// The write end of the pipe whose closing stops a launcher's exchange.
    stop: Option<OwnedFd>,
}

fn pairs(ranks: usize) -> io::Result<(Vec<UnixStream>, Vec<OwnedFd>)> {
    let mut ours = Vec::with_capacity(ranks);
    let mut theirs = Vec::with_capacity(ranks);
    for _ in 0..ranks {
        let (a, b) = UnixStream::pair()?;
        ours.push(a);
        theirs.push(OwnedFd::from(b));
    }
    Ok((ours, theirs))
}

impl KvServer {
    /// Starts serving `ranks` ranks (`put`, `fence` and `get`); returns the server and each
    /// rank's end (to be inherited by that rank: clear its close-on-exec flag in the child).
    /// The server ends when every rank closed its end.
    pub fn start(ranks: usize) -> io::Result<(KvServer, Vec<OwnedFd>)> {
        let (ours, theirs) = pairs(ranks)?;
        let mut service = Service::new(None);
        service.add_job(0, ours)?;
        let thread = std::thread::Builder::new()
            .name("commcore-kv".into())
            .spawn(move || service.run(None))?;
        Ok((KvServer { thread: Some(thread), stop: None }, theirs))
    }

    /// A launcher's exchange for the first job's `ranks` ranks, serving every request,
    /// until [`KvServer::stop`]. Children it spawns die with its thread (their parent-death
    /// signal follows the thread that forked them), so stop it only once they are gone.
    pub(super) fn start_tree(
        ranks: usize,
        launch: Arc<Launch>,
    ) -> io::Result<(KvServer, Vec<OwnedFd>)> {
        let (ours, theirs) = pairs(ranks)?;
        let mut service = Service::new(Some(launch));
        service.add_job(0, ours)?;
        let mut ends = [0i32; 2];
        // SAFETY: ends is a valid array of two descriptors to fill.
        if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 returned two fresh descriptors that nothing else owns.
        let (read, write) =
            unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
        let thread = std::thread::Builder::new()
            .name("commcore-kv".into())
            .spawn(move || service.run(Some(read)))?;
        Ok((KvServer { thread: Some(thread), stop: Some(write) }, theirs))
    }

    /// Stops the exchange and waits for its thread.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for KvServer {
    /// Stops a launcher's exchange, or waits until every rank's end is closed (the ranks
    /// exited or were killed), then waits for the thread.
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The reply to `put` or `get` from `rank` against its job's store.
pub(super) fn answer_store(
    rank: usize,
    line: &str,
    store: &mut HashMap<(usize, String), String>,
) -> Result<String, String> {
    let words: Vec<&str> = line.split(' ').collect();
    let valid = |item: &str| {
        !item.is_empty() && item.len() <= ITEM_MAX && item.bytes().all(|b| b.is_ascii_graphic())
    };
    match words.as_slice() {
        ["put", key, value] if valid(key) && valid(value) => {
            let owned = store.keys().filter(|(r, _)| *r == rank).count();
            if owned >= KEYS_MAX && !store.contains_key(&(rank, key.to_string())) {
                Err(format!("rank {rank} put more than {KEYS_MAX} keys"))
            } else {
                store.insert((rank, key.to_string()), value.to_string());
                Ok("ok".into())
            }
        }
        ["get", owner, key] => match owner.parse::<usize>() {
            Ok(owner) => Ok(match store.get(&(owner, key.to_string())) {
                Some(value) => format!("value {value}"),
                None => "missing".into(),
            }),
            Err(_) => Err(format!("{owner:?} is not a rank")),
        },
        _ => Err(format!(
            "malformed {:?}: put KEY VALUE or get RANK KEY, with keys and values of 1 to \
             {ITEM_MAX} printable bytes",
            line.chars().take(40).collect::<String>()
        )),
    }
}

/// Why the exchange failed.
#[derive(Debug)]
pub enum KvError {
    /// This process was not started by the launcher (no `COMMCORE_KV_FD`).
    NotLaunched,
    /// The launcher's end closed or the socket failed.
    Io(io::Error),
    /// No answer before the deadline (a rank never reached the fence).
    TimedOut(Duration),
    /// The server refused the request.
    Refused(String),
    /// `get` found no such key for that rank.
    Missing {
        /// The rank asked about.
        rank: usize,
        /// The key.
        key: String,
    },
    /// A spawn's children could not all start; those that did were killed.
    Spawn {
        /// One code per child, over all commands in order: 0 (started, then killed because
        /// a sibling failed: [`SPAWN_ABORTED`] instead), or the `errno` that kept it from
        /// starting (`ENOENT`, `EACCES`, ...).
        errcodes: Vec<i32>,
        /// The first failure, in words.
        message: String,
    },
    /// The name service refused the request (the name server's refusals).
    Name(NameError),
}

impl std::fmt::Display for KvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KvError::NotLaunched => {
                write!(
                    f,
                    "no key-value exchange ({ENV_FD} unset): start the program with `commcore run`"
                )
            }
            KvError::Io(e) => write!(f, "the launcher's key-value exchange failed: {e}"),
            KvError::TimedOut(d) => {
                write!(f, "the key-value exchange did not answer within {d:?}: a rank did not start or reach the fence")
            }
            KvError::Refused(why) => write!(f, "the key-value exchange refused a request: {why}"),
            KvError::Missing { rank, key } => write!(f, "rank {rank} published no {key:?}"),
            KvError::Spawn { errcodes, message } => {
                write!(f, "the spawn failed: {message} (error codes {errcodes:?})")
            }
            KvError::Name(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for KvError {}

/// A rank's side of the exchange. One request is answered before the next is sent; a
/// request that timed out leaves the stream out of step, so later ones fail at once.
pub struct KvClient {
    socket: UnixStream,
    pub(super) timeout: Duration,
    broken: bool,
}

impl KvClient {
    /// The exchange the launcher handed this process; requests wait at most `timeout`.
    pub fn from_env(timeout: Duration) -> Result<KvClient, KvError> {
        let fd: i32 =
            std::env::var(ENV_FD).ok().and_then(|v| v.parse().ok()).ok_or(KvError::NotLaunched)?;
        // SAFETY: checked below that fd is open; the launcher gave it to this process
        // alone, and this is the only place that takes ownership of it.
        let socket = unsafe {
            if libc::fcntl(fd, libc::F_GETFD) < 0 {
                return Err(KvError::NotLaunched);
            }
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            UnixStream::from_raw_fd(fd)
        };
        Ok(KvClient::new(socket, timeout))
    }

    pub(super) fn new(socket: UnixStream, timeout: Duration) -> KvClient {
        KvClient { socket, timeout, broken: false }
    }

    /// Publishes `value` under `key` for this rank.
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), KvError> {
        self.request(&format!("put {key} {value}")).map(drop)
    }

    /// Waits until every rank fenced; what any rank put before its fence is then visible.
    pub fn fence(&mut self) -> Result<(), KvError> {
        self.request("fence").map(drop)
    }

    /// What `rank` put under `key`.
    pub fn get(&mut self, rank: usize, key: &str) -> Result<String, KvError> {
        let reply = self.request(&format!("get {rank} {key}"))?;
        match reply.strip_prefix("value ") {
            Some(value) => Ok(value.to_string()),
            None => Err(KvError::Missing { rank, key: key.to_string() }),
        }
    }

    fn request(&mut self, line: &str) -> Result<String, KvError> {
        let timeout = self.timeout;
        self.call(line, None, timeout).map(|(reply, _)| reply)
    }

    /// Sends `line` (with `fd` attached) and reads the reply line with the descriptors
    /// that came with it, within `timeout`; an `error` reply is [`KvError::Refused`].
    pub(super) fn call(
        &mut self,
        line: &str,
        fd: Option<BorrowedFd<'_>>,
        timeout: Duration,
    ) -> Result<(String, Vec<OwnedFd>), KvError> {
        if self.broken {
            return Err(KvError::Io(io::Error::other(
                "an earlier request failed half-way: the exchange is out of step",
            )));
        }
        // Anything that fails below leaves a request or reply half-done.
        self.broken = true;
        let deadline = Instant::now() + timeout;
        self.send(format!("{line}\n").as_bytes(), fd, timeout)?;
        let mut reply = Vec::new();
        let mut fds = Vec::new();
        let mut buf = [0u8; 1024];
        while !reply.ends_with(b"\n") {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(KvError::TimedOut(timeout));
            }
            self.socket.set_read_timeout(Some(left)).map_err(KvError::Io)?;
            match recv_fds(&self.socket, &mut buf, MAX_FDS) {
                Ok((n, got)) => {
                    fds.extend(got);
                    reply.extend_from_slice(&buf[..n]);
                    if reply.len() > REPLY_MAX {
                        return Err(KvError::Io(io::ErrorKind::InvalidData.into()));
                    }
                }
                Err(FdError::Io(e))
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(FdError::Closed) => {
                    return Err(KvError::Io(io::ErrorKind::UnexpectedEof.into()))
                }
                Err(FdError::Io(e)) => return Err(KvError::Io(e)),
                Err(e) => return Err(KvError::Io(io::Error::other(e.to_string()))),
            }
        }
        self.broken = false;
        reply.pop();
        let reply =
            String::from_utf8(reply).map_err(|_| KvError::Io(io::ErrorKind::InvalidData.into()))?;
        match reply.strip_prefix("error ") {
            Some(why) => Err(KvError::Refused(why.to_string())),
            None => Ok((reply, fds)),
        }
    }

    fn send(
        &mut self,
        bytes: &[u8],
        fd: Option<BorrowedFd<'_>>,
        timeout: Duration,
    ) -> Result<(), KvError> {
        self.socket
            .set_write_timeout(Some(timeout.max(Duration::from_millis(1))))
            .map_err(KvError::Io)?;
        let mut rest = bytes;
        if let Some(fd) = fd {
            let sent = send_fds(&self.socket, rest, &[fd.as_fd()])
                .map_err(|e| KvError::Io(io::Error::other(e.to_string())))?;
            rest = &rest[sent..];
        }
        self.socket.write_all(rest).map_err(KvError::Io)
    }

    /// The request line of a spawn, checked against the size the launcher accepts.
    pub(super) fn spawn_line(request: &SpawnRequest) -> Result<String, KvError> {
        let line = spawn_wire::encode(request);
        if line.len() > spawn_wire::REQUEST_MAX {
            return Err(KvError::Refused(format!(
                "the spawn request takes {} bytes encoded; at most {} are accepted",
                line.len(),
                spawn_wire::REQUEST_MAX
            )));
        }
        Ok(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(fd: OwnedFd) -> KvClient {
        KvClient::new(UnixStream::from(fd), Duration::from_secs(5))
    }

    #[test]
    fn three_ranks_put_fence_and_read_each_others_entries() {
        let (server, ends) = KvServer::start(3).unwrap();
        let threads: Vec<_> = ends
            .into_iter()
            .enumerate()
            .map(|(rank, fd)| {
                std::thread::spawn(move || {
                    let mut kv = client(fd);
                    kv.put("addr", &format!("10.0.0.{rank}:99")).unwrap();
                    kv.fence().unwrap();
                    let all: Vec<String> = (0..3).map(|r| kv.get(r, "addr").unwrap()).collect();
                    assert!(matches!(kv.get(0, "other"), Err(KvError::Missing { rank: 0, .. })));
                    assert!(matches!(kv.put("bad key", "v"), Err(KvError::Refused(_))));
                    all
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), ["10.0.0.0:99", "10.0.0.1:99", "10.0.0.2:99"]);
        }
        drop(server);
    }

    #[test]
    fn a_fence_without_the_other_ranks_times_out() {
        let (_server, mut ends) = KvServer::start(2).unwrap();
        let mut kv = client(ends.remove(0));
        kv.timeout = Duration::from_millis(100);
        assert!(matches!(kv.fence(), Err(KvError::TimedOut(_))));
        drop(ends);
    }
}
