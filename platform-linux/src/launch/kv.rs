//! The job's key-value exchange: how ranks learn each other's addresses at start-up.
//!
//! The launcher serves it ([`KvServer`]); each rank holds one end of a Unix socket pair
//! inherited from the launcher (its descriptor number in `COMMCORE_KV_FD`), so nothing is
//! created in the file system and the exchange works across network namespaces.
//! A rank publishes its own entries, fences, then reads anyone's ([`KvClient`]):
//!
//! | here                      | PMIx, for a server that offers it later                   |
//! |---------------------------|-----------------------------------------------------------|
//! | `put(key, value)`         | `PMIx_Put(PMIX_GLOBAL, key, value)`                        |
//! | `fence()`                 | `PMIx_Commit()`, then `PMIx_Fence(all ranks, COLLECT_DATA)` |
//! | `get(rank, key)`          | `PMIx_Get({job's nspace, rank}, key)`                      |
//!
//! Keys are scoped by the rank that put them (the server knows which socket a request came
//! by), as PMIx scopes them by process. Protocol: one request per line, one reply per line:
//! `put KEY VALUE` → `ok`; `fence` → `ok` once every rank fenced; `get RANK KEY` →
//! `value VALUE` or `missing`. Keys and values are printable ASCII without spaces, at most
//! [`ITEM_MAX`] bytes; a rank holds at most [`KEYS_MAX`] keys. A bad request gets `error
//! WHAT` and the rank's client reports it.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The variable naming the inherited descriptor of a rank's end of the exchange.
pub const ENV_FD: &str = "COMMCORE_KV_FD";
/// Bytes a key or value holds at most.
pub const ITEM_MAX: usize = 256;
/// Keys one rank may put.
pub const KEYS_MAX: usize = 64;

/// The launcher's side: a thread answering every rank until all ranks closed their ends.
pub struct KvServer {
    thread: Option<JoinHandle<()>>,
}

impl KvServer {
    /// Starts serving `ranks` ranks; returns the server and each rank's end (to be inherited
    /// by that rank: clear its close-on-exec flag in the child).
    pub fn start(ranks: usize) -> io::Result<(KvServer, Vec<OwnedFd>)> {
        let mut ours = Vec::with_capacity(ranks);
        let mut theirs = Vec::with_capacity(ranks);
        for _ in 0..ranks {
            let (a, b) = UnixStream::pair()?;
            ours.push(a);
            theirs.push(OwnedFd::from(b));
        }
        let thread =
            std::thread::Builder::new().name("commcore-kv".into()).spawn(move || serve(ours))?;
        Ok((KvServer { thread: Some(thread) }, theirs))
    }
}

impl Drop for KvServer {
    /// Waits for the server thread, which ends when every rank's end is closed (the ranks
    /// exited or were killed).
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Served {
    reader: BufReader<UnixStream>,
    open: bool,
    fenced: bool,
}

fn serve(ranks: Vec<UnixStream>) {
    let mut served: Vec<Served> = ranks
        .into_iter()
        .map(|s| Served { reader: BufReader::new(s), open: true, fenced: false })
        .collect();
    let mut store: HashMap<(usize, String), String> = HashMap::new();
    while served.iter().any(|s| s.open) {
        let mut fds: Vec<libc::pollfd> = served
            .iter()
            .map(|s| libc::pollfd {
                fd: if s.open { s.reader.get_ref().as_raw_fd() } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: fds is a valid array of fds.len() pollfd structures.
        if unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1000) } < 0 {
            continue;
        }
        for (rank, fd) in fds.iter().enumerate() {
            if fd.revents == 0 {
                continue;
            }
            let mut line = String::new();
            let n = served[rank].reader.read_line(&mut line).unwrap_or(0);
            if n == 0 {
                served[rank].open = false;
                continue;
            }
            let reply = answer(rank, line.trim_end(), &mut store, &mut served);
            if let Some(reply) = reply {
                let _ = writeln!(served[rank].reader.get_mut(), "{reply}");
            }
        }
        // The fence completes for everyone once every rank still there fenced.
        let live: Vec<usize> = (0..served.len()).filter(|&r| served[r].open).collect();
        if !live.is_empty() && live.iter().all(|&r| served[r].fenced) {
            for r in live {
                served[r].fenced = false;
                let _ = writeln!(served[r].reader.get_mut(), "ok");
            }
        }
    }
}

fn answer(
    rank: usize,
    line: &str,
    store: &mut HashMap<(usize, String), String>,
    served: &mut [Served],
) -> Option<String> {
    let words: Vec<&str> = line.split(' ').collect();
    let valid = |item: &str| {
        !item.is_empty() && item.len() <= ITEM_MAX && item.bytes().all(|b| b.is_ascii_graphic())
    };
    Some(match words.as_slice() {
        ["put", key, value] if valid(key) && valid(value) => {
            let owned = store.keys().filter(|(r, _)| *r == rank).count();
            if owned >= KEYS_MAX && !store.contains_key(&(rank, key.to_string())) {
                format!("error rank {rank} put more than {KEYS_MAX} keys")
            } else {
                store.insert((rank, key.to_string()), value.to_string());
                "ok".into()
            }
        }
        ["fence"] => {
            served[rank].fenced = true;
            return None;
        }
        ["get", owner, key] => match owner.parse::<usize>() {
            Ok(owner) => match store.get(&(owner, key.to_string())) {
                Some(value) => format!("value {value}"),
                None => "missing".into(),
            },
            Err(_) => format!("error {owner:?} is not a rank"),
        },
        _ => format!("error unknown request {line:?}: expected put, fence or get"),
    })
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
        }
    }
}

impl std::error::Error for KvError {}

/// A rank's side of the exchange.
pub struct KvClient {
    reader: BufReader<UnixStream>,
    timeout: Duration,
}

impl KvClient {
    /// The exchange the launcher handed this process; requests wait at most `timeout`.
    pub fn from_env(timeout: Duration) -> Result<KvClient, KvError> {
        let fd: i32 =
            std::env::var(ENV_FD).ok().and_then(|v| v.parse().ok()).ok_or(KvError::NotLaunched)?;
        // SAFETY: checked below that fd is a socket; the launcher gave it to this process
        // alone, and this is the only place that takes ownership of it.
        let socket = unsafe {
            use std::os::fd::FromRawFd;
            if libc::fcntl(fd, libc::F_GETFD) < 0 {
                return Err(KvError::NotLaunched);
            }
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            UnixStream::from_raw_fd(fd)
        };
        Ok(KvClient { reader: BufReader::new(socket), timeout })
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
        writeln!(self.reader.get_mut(), "{line}").map_err(KvError::Io)?;
        let deadline = Instant::now() + self.timeout;
        let mut reply = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(KvError::TimedOut(self.timeout));
            }
            self.reader.get_ref().set_read_timeout(Some(left)).map_err(KvError::Io)?;
            match self.reader.read_line(&mut reply) {
                Ok(0) => return Err(KvError::Io(io::ErrorKind::UnexpectedEof.into())),
                Ok(_) if reply.ends_with('\n') => break,
                Ok(_) => {}
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(KvError::Io(e)),
            }
        }
        let reply = reply.trim_end().to_string();
        match reply.strip_prefix("error ") {
            Some(why) => Err(KvError::Refused(why.to_string())),
            None => Ok(reply),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{FromRawFd, IntoRawFd};

    fn client(fd: OwnedFd) -> KvClient {
        // SAFETY: fd is a socket end we own; ownership moves into the stream.
        let socket = unsafe { UnixStream::from_raw_fd(fd.into_raw_fd()) };
        KvClient { reader: BufReader::new(socket), timeout: Duration::from_secs(5) }
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
