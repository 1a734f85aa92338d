//! The launcher's side of the key-value exchange ([`super::kv`]): one thread serving every
//! rank of every job of the launcher over non-blocking sockets, so a rank that sends half a
//! line, a huge line or never reads its replies holds up no one.
//!
//! Each connection buffers what it received up to [`LINE_MAX`] and its unsent replies up to
//! [`OUTPUT_MAX`]; a longer request is answered `error` and skipped to its newline, and a
//! connection that does not read its replies is dropped. Descriptors that arrive with a
//! request (`register-bridge`) queue on their connection, at most [`FDS_MAX`].

use std::collections::{HashMap, VecDeque};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use super::spawn_wire::{self, REQUEST_MAX};
use super::tree::Launch;
use super::{kv, spawn};
use crate::dpm::fds::{recv_fds, send_fds, FdError, MAX_FDS};
use crate::dpm::names_wire;
use crate::shm::{Bridge, Region};

/// Bytes of one request line at most (a spawn's is the longest).
pub const LINE_MAX: usize = REQUEST_MAX;
/// Unsent reply bytes one connection may hold before it is dropped.
pub const OUTPUT_MAX: usize = 1 << 20;
/// Descriptors received ahead of their requests one connection may hold.
pub const FDS_MAX: usize = 4;

/// One rank's connection.
struct Conn {
    socket: UnixStream,
    job: u64,
    rank: usize,
    input: Vec<u8>,
    /// Skipping the rest of a request that was too long.
    discarding: bool,
    fds: VecDeque<OwnedFd>,
    /// Replies not yet sent, each with the descriptor that goes with its first byte.
    output: VecDeque<(Vec<u8>, Option<OwnedFd>)>,
    fenced: bool,
    open: bool,
}

impl Conn {
    fn new(socket: UnixStream, job: u64, rank: usize) -> io::Result<Conn> {
        socket.set_nonblocking(true)?;
        Ok(Conn {
            socket,
            job,
            rank,
            input: Vec::new(),
            discarding: false,
            fds: VecDeque::new(),
            output: VecDeque::new(),
            fenced: false,
            open: true,
        })
    }

    fn reply(&mut self, line: &str, fd: Option<OwnedFd>) {
        self.output.push_back((format!("{line}\n").into_bytes(), fd));
    }

    /// Sends what it can of the queued replies without blocking.
    fn flush(&mut self) {
        while let Some((bytes, fd)) = self.output.front_mut() {
            let sent = match fd {
                Some(owned) => match send_fds(&self.socket, bytes, &[owned.as_fd()]) {
                    Ok(n) => {
                        // Gone with the first byte: closed here.
                        *fd = None;
                        Ok(n)
                    }
                    Err(FdError::Io(e)) => Err(e),
                    Err(_) => Err(io::ErrorKind::InvalidData.into()),
                },
                None => (&self.socket).write(bytes),
            };
            match sent {
                Ok(n) if n >= bytes.len() => {
                    self.output.pop_front();
                }
                Ok(n) => {
                    bytes.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.open = false;
                    return;
                }
            }
        }
    }

    fn queued(&self) -> usize {
        self.output.iter().map(|(b, _)| b.len()).sum()
    }

    /// Reads what has arrived; returns the complete lines (an overlong one as `None`).
    fn receive(&mut self) -> Vec<Option<Vec<u8>>> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut lines = Vec::new();
        // A bounded number of reads per pass, so one busy rank does not starve the others.
        for _ in 0..16 {
            match recv_fds(&self.socket, &mut buf, MAX_FDS) {
                Ok((n, fds)) => {
                    self.fds.extend(fds);
                    self.take_bytes(&buf[..n], &mut lines);
                    if self.fds.len() > FDS_MAX {
                        self.fds.clear();
                        self.reply(&format!("error more than {FDS_MAX} descriptors queued"), None);
                        self.open = false;
                        break;
                    }
                }
                Err(FdError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(FdError::Io(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(FdError::Truncated) | Err(FdError::UnexpectedControl) => {
                    self.reply("error unexpected control data: the stream is out of step", None);
                    self.open = false;
                    break;
                }
                Err(_) => {
                    self.open = false;
                    break;
                }
            }
        }
        lines
    }

    /// Appends `bytes` to the input and moves complete lines to `lines`. A line longer
    /// than [`LINE_MAX`] is not kept: it is reported once and skipped to its newline.
    fn take_bytes(&mut self, mut bytes: &[u8], lines: &mut Vec<Option<Vec<u8>>>) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            if self.discarding {
                match newline {
                    Some(end) => {
                        self.discarding = false;
                        bytes = &bytes[end + 1..];
                        continue;
                    }
                    None => return,
                }
            }
            let (piece, ended) = match newline {
                Some(end) => (&bytes[..end], true),
                None => (bytes, false),
            };
            bytes = if ended { &bytes[piece.len() + 1..] } else { &[] };
            if self.input.len() + piece.len() > LINE_MAX {
                self.input.clear();
                self.discarding = !ended;
                lines.push(None);
                continue;
            }
            self.input.extend_from_slice(piece);
            if ended {
                lines.push(Some(std::mem::take(&mut self.input)));
            }
        }
    }
}

/// One job's entries (`put`) and its connections' fence.
#[derive(Default)]
struct Store {
    entries: HashMap<(usize, String), String>,
}

/// The service: every connection, each job's store, and the tree it spawns into (none for
/// a stand-alone exchange, which serves `put`, `fence` and `get` only).
pub(super) struct Service {
    conns: Vec<Conn>,
    stores: HashMap<u64, Store>,
    launch: Option<Arc<Launch>>,
}

impl Service {
    pub(super) fn new(launch: Option<Arc<Launch>>) -> Service {
        Service { conns: Vec::new(), stores: HashMap::new(), launch }
    }

    /// Serves job `job`'s ranks on these sockets (rank = index).
    pub(super) fn add_job(&mut self, job: u64, sockets: Vec<UnixStream>) -> io::Result<()> {
        for (rank, socket) in sockets.into_iter().enumerate() {
            self.conns.push(Conn::new(socket, job, rank)?);
        }
        self.stores.entry(job).or_default();
        Ok(())
    }

    /// Serves until `stop` becomes readable (with a tree) or, stand-alone, until every
    /// connection closed.
    pub(super) fn run(mut self, stop: Option<OwnedFd>) {
        loop {
            if stop.is_none() && self.conns.is_empty() {
                return;
            }
            let mut fds: Vec<libc::pollfd> = stop
                .iter()
                .map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 })
                .collect();
            let first_conn = fds.len();
            fds.extend(self.conns.iter().map(|c| libc::pollfd {
                fd: c.socket.as_raw_fd(),
                events: libc::POLLIN | if c.output.is_empty() { 0 } else { libc::POLLOUT },
                revents: 0,
            }));
            // SAFETY: fds is a valid array of fds.len() pollfd structures.
            if unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1000) } < 0 {
                continue;
            }
            if stop.is_some() && fds[0].revents != 0 {
                return;
            }
            let ready = self.conns.len();
            for (index, fd) in fds[first_conn..].iter().enumerate().take(ready) {
                if fd.revents == 0 {
                    continue;
                }
                for line in self.conns[index].receive() {
                    self.answer(index, line.as_deref());
                }
            }
            self.fences();
            for conn in &mut self.conns {
                conn.flush();
                if conn.queued() > OUTPUT_MAX {
                    conn.open = false;
                }
            }
            self.conns.retain(|c| c.open);
            let conns = &self.conns;
            self.stores.retain(|job, _| conns.iter().any(|c| c.job == *job));
        }
    }

    /// A fence completes for a job once every rank of it still connected fenced.
    fn fences(&mut self) {
        let jobs: Vec<u64> = self.stores.keys().copied().collect();
        for job in jobs {
            let mut live = self.conns.iter_mut().filter(|c| c.job == job && c.open).peekable();
            if live.peek().is_none() {
                continue;
            }
            let conns: Vec<&mut Conn> = live.collect();
            if conns.iter().all(|c| c.fenced) {
                for conn in conns {
                    conn.fenced = false;
                    conn.reply("ok", None);
                }
            }
        }
    }

    fn answer(&mut self, index: usize, line: Option<&[u8]>) {
        let reply = match line.map(std::str::from_utf8) {
            None => Err(format!("a request holds at most {LINE_MAX} bytes")),
            Some(Ok(text)) => self.dispatch(index, text),
            Some(Err(_)) => Err("a request is ASCII text".to_string()),
        };
        let conn = &mut self.conns[index];
        match reply {
            Ok(Some((line, fd))) => conn.reply(&line, fd),
            Ok(None) => {}
            Err(why) => conn.reply(&format!("error {why}"), None),
        }
    }

    /// The reply to one request (`None`: a fence, answered when complete).
    fn dispatch(&mut self, index: usize, line: &str) -> Result<Option<Reply>, String> {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let (job, rank) = (self.conns[index].job, self.conns[index].rank);
        let plain = |text: &str| Ok(Some((text.to_string(), None)));
        match word {
            "put" | "get" => {
                let store = self.stores.entry(job).or_default();
                plain(&kv::answer_store(rank, line, &mut store.entries)?)
            }
            "fence" if rest.is_empty() => {
                self.conns[index].fenced = true;
                Ok(None)
            }
            "spawn" => self.spawn(index, rest),
            "publish" | "lookup" | "unpublish" => {
                let launch = self.tree()?;
                let request = names_wire::parse_request(line)
                    .ok_or("a name is 1 to 255 and a port 1 to 1023 printable bytes")?;
                let outcome = launch.lock().names(job, request);
                let line =
                    names_wire::reply_line(outcome.as_ref().map(|p| p.as_deref()).map_err(|r| *r));
                plain(line.trim_end())
            }
            "disconnect" => {
                let child = rest.parse().map_err(|_| format!("job {rest:?} is not a number"))?;
                self.tree()?.lock().disconnect(job, child)?;
                plain("ok")
            }
            "register-bridge" => {
                let side_a = match rest {
                    "a" => true,
                    "b" => false,
                    _ => return Err("register-bridge a|b".into()),
                };
                let launch = self.tree()?;
                let fd = self.conns[index]
                    .fds
                    .pop_front()
                    .ok_or("no descriptor came with register-bridge")?;
                let region =
                    Region::from_owned(fd).map_err(|e| format!("cannot map the bridge: {e}"))?;
                let bridge = Bridge::open(region).map_err(|e| e.to_string())?;
                let id = launch.lock().register(job, bridge, side_a)?;
                plain(&format!("bridge {id}"))
            }
            "release-bridge" => {
                let id = rest.parse().map_err(|_| format!("bridge {rest:?} is not a number"))?;
                self.tree()?.lock().release(job, id)?;
                plain("ok")
            }
            _ => Err(format!("unknown request {:?}: expected {}", truncated(line), kv::REQUESTS)),
        }
    }

    fn tree(&self) -> Result<Arc<Launch>, String> {
        self.launch.clone().ok_or_else(|| "this exchange serves put, fence and get only".into())
    }

    fn spawn(&mut self, index: usize, rest: &str) -> Result<Option<Reply>, String> {
        let launch = self.tree()?;
        let request = spawn_wire::decode(rest)?;
        let requester = (self.conns[index].job, self.conns[index].rank);
        match spawn::start(&launch, requester, &request) {
            spawn::Outcome::Started { job, size, sockets, bridge } => {
                self.add_job(job, sockets).map_err(|e| format!("cannot serve job {job}: {e}"))?;
                Ok(Some((format!("spawned {job} {size}"), Some(bridge))))
            }
            spawn::Outcome::Failed { errcodes, message } => {
                Ok(Some((spawn_wire::failure_line(&errcodes, &message), None)))
            }
            spawn::Outcome::Refused(why) => Err(why),
        }
    }
}

type Reply = (String, Option<OwnedFd>);

/// The start of a long line, for a message.
fn truncated(line: &str) -> String {
    line.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;
    use std::sync::Arc;
    use std::time::Duration;

    use super::LINE_MAX;
    use crate::launch::kv::{KvClient, KvError, KvServer, SpawnCommand, SpawnRequest};
    use crate::launch::tree::Launch;
    use crate::launch::JobSpec;

    /// A launcher's exchange for two ranks of a job the tree does not run.
    fn exchange() -> (KvServer, Vec<UnixStream>) {
        let (server, ends, _) = exchange_with_tree();
        (server, ends)
    }

    fn exchange_with_tree() -> (KvServer, Vec<UnixStream>, Arc<Launch>) {
        let launch = Arc::new(Launch::new(&JobSpec::new(2, "true"), None));
        let (server, ends) = KvServer::start_tree(2, Arc::clone(&launch)).unwrap();
        (server, ends.into_iter().map(UnixStream::from).collect(), launch)
    }

    fn reply(reader: &mut BufReader<UnixStream>) -> String {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        line
    }

    #[test]
    fn malformed_requests_get_errors_and_the_connection_goes_on() {
        let (server, mut ends) = exchange();
        let mut other = KvClient::new(ends.pop().unwrap(), Duration::from_secs(10));
        let raw = ends.pop().unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut writer = raw.try_clone().unwrap();
        let mut reader = BufReader::new(raw);
        // Half a line holds up no one.
        writer.write_all(b"put half").unwrap();
        other.put("k", "v").unwrap();
        assert_eq!(other.get(1, "k").unwrap(), "v");
        writer.write_all(b"-way x\n").unwrap();
        assert_eq!(reply(&mut reader), "ok\n");
        let long = vec![b'x'; LINE_MAX + 100];
        let p = super::spawn_wire::hex(b"p");
        let cases: Vec<Vec<u8>> = vec![
            long.clone(),
            b"\xff\xfe".to_vec(),
            b"hello".to_vec(),
            b"spawn zz".to_vec(),
            format!("spawn 1 - 0:-:-:{p}:-:-").into_bytes(),
            format!("spawn 1 - 2000:-:-:{p}:-:-").into_bytes(),
            format!("spawn 1 - 1:7:-:{p}:-:-").into_bytes(),
            format!("spawn 1 - 1:-:-:{p}:-:-").into_bytes(),
            b"disconnect x".to_vec(),
            b"release-bridge 3".to_vec(),
            b"register-bridge a".to_vec(),
            b"lookup bad name".to_vec(),
            b"put".to_vec(),
        ];
        for case in &cases {
            writer.write_all(case).unwrap();
            writer.write_all(b"\n").unwrap();
            let line = reply(&mut reader);
            let shown = String::from_utf8_lossy(&case[..case.len().min(30)]).into_owned();
            assert!(line.starts_with("error "), "{shown:?} got {line:?}");
        }
        // An overlong request whose end comes later is answered at once, then skipped.
        writer.write_all(&long).unwrap();
        assert!(reply(&mut reader).starts_with("error "));
        writer.write_all(b"yyy\nput k2 v2\n").unwrap();
        assert_eq!(reply(&mut reader), "ok\n");
        let names = other.lookup_name("nothing");
        assert!(matches!(names, Err(KvError::Name(_))), "{names:?}");
        drop((reader, writer, other));
        drop(server);
    }

    #[test]
    fn a_client_checks_what_it_can_before_sending() {
        let (_server, mut ends) = exchange();
        let mut kv = KvClient::new(ends.pop().unwrap(), Duration::from_secs(10));
        let mut huge = SpawnCommand::new("p", 1);
        huge.args = vec!["a".repeat(super::LINE_MAX).into()];
        let request = SpawnRequest {
            commands: vec![huge],
            parent_size: 1,
            parent_nodes: Vec::new(),
            timeout: Duration::from_secs(10),
        };
        assert!(matches!(kv.spawn(&request), Err(KvError::Refused(_))));
        assert!(matches!(kv.publish_name("a b", "p"), Err(KvError::Name(_))));
        assert!(matches!(kv.publish_name("a", ""), Err(KvError::Name(_))));
        kv.publish_name("svc", "port-1").unwrap();
        assert_eq!(kv.lookup_name("svc").unwrap(), "port-1");
        assert!(matches!(kv.publish_name("svc", "port-2"), Err(KvError::Name(_))));
        kv.unpublish_name("svc").unwrap();
        assert!(matches!(kv.unpublish_name("svc"), Err(KvError::Name(_))));
        // The connection still serves after every refusal.
        kv.put("k", "v").unwrap();
    }

    #[test]
    fn registered_bridges_travel_as_descriptors_and_are_marked_until_released() {
        use crate::shm::bridge::FAILED_A;
        use crate::shm::{Bridge, Region};
        use std::os::fd::BorrowedFd;

        let (_server, mut ends, launch) = exchange_with_tree();
        let mut kv = KvClient::new(ends.pop().unwrap(), Duration::from_secs(10));
        let (kept, released) = (Bridge::create(2, 1).unwrap(), Bridge::create(1, 3).unwrap());
        // SAFETY: each bridge's region owns its descriptor for the length of the borrow.
        let fd = |b: &Bridge| unsafe { BorrowedFd::borrow_raw(b.region.fd()) };
        let id = kv.register_bridge(fd(&kept), true).unwrap();
        let other = kv.register_bridge(fd(&released), false).unwrap();
        assert_ne!(id, other);
        kv.release_bridge(other).unwrap();
        assert!(matches!(kv.release_bridge(other), Err(KvError::Refused(_))));
        // A region that is not a bridge is refused, and the connection goes on.
        let job = Region::create(8192).unwrap();
        // SAFETY: as above, for the job region.
        let not_bridge = unsafe { BorrowedFd::borrow_raw(job.fd()) };
        assert!(matches!(kv.register_bridge(not_bridge, true), Err(KvError::Refused(_))));
        assert!(kv.disconnect(5).is_err(), "no job 5 was spawned");
        launch.lock().fail_all();
        assert_eq!(kept.failure(), Some(FAILED_A));
        assert_eq!(released.failure(), None);
    }
}
