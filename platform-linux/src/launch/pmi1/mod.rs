//! A client of PMI-1's wire protocol, as MPICH's `mpiexec` (hydra) serves it: the launcher
//! hands each rank `PMI_FD` (its end of a socket), `PMI_RANK` and `PMI_SIZE`, and the rank
//! sends one text command a line (`cmd=NAME key=value ...`), each answered by one line. No
//! library: the protocol is these lines.
//!
//! The exchange is shaped as ours ([`super::kv`]): `put`, `fence` (PMI's barrier, after a
//! commit of what was put), `get`. Keys are namespaced by rank (`r{rank}-{key}`), since PMI-1's
//! key space is the job's; values travel as hex, since a value must not hold a space or `=`.
//! Every reply is awaited at most `timeout`: a launcher that stops answering, or a barrier some
//! rank never reaches, is an error, not a hang.

use std::io::{self, Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// Why a PMI request failed.
#[derive(Debug)]
pub enum PmiError {
    /// `PMI_FD`, `PMI_RANK` or `PMI_SIZE` is missing or not a number.
    NotLaunched(String),
    /// The socket failed or the launcher closed it.
    Io(io::Error),
    /// No reply within the timeout.
    TimedOut(Duration),
    /// The launcher answered with an error code or a line that is not the expected reply.
    Refused(String),
}

impl std::fmt::Display for PmiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PmiError::NotLaunched(why) => write!(f, "not started by a PMI launcher: {why}"),
            PmiError::Io(e) => write!(f, "the PMI launcher's socket failed: {e}"),
            PmiError::TimedOut(t) => write!(f, "the PMI launcher did not answer within {t:?}"),
            PmiError::Refused(line) => write!(f, "the PMI launcher refused: {line}"),
        }
    }
}

impl std::error::Error for PmiError {}

/// One program of a PMI-1 spawn.
pub struct PmiApp {
    /// The program (a path, or a name the launcher finds).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory (the launcher's when `None`).
    pub wdir: Option<String>,
    /// How many processes run it.
    pub maxprocs: usize,
}

/// One rank's PMI-1 connection.
pub struct Pmi1Client {
    socket: UnixStream,
    rank: usize,
    size: usize,
    kvsname: String,
    timeout: Duration,
    /// Bytes read past the last reply line.
    pending: Vec<u8>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..text.len() / 2)
        .map(|i| u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    (text.len() % 2 == 0).then_some(())?;
    String::from_utf8(bytes?).ok()
}

/// A name that can stand in a command line: printable, without spaces or `=`.
fn check_word(name: &str) -> Result<(), PmiError> {
    let fits = !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b'=');
    if fits {
        Ok(())
    } else {
        Err(PmiError::Refused(format!("{name:?} is not a PMI word (printable, no spaces or =)")))
    }
}

/// The value of `key` in a reply line of `key=value` words.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace().find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
}

impl Pmi1Client {
    /// The connection `PMI_FD`, `PMI_RANK` and `PMI_SIZE` describe, initialized (`init`,
    /// `get_my_kvsname`); `None` when `PMI_FD` is not set.
    pub fn from_env(timeout: Duration) -> Result<Option<Self>, PmiError> {
        let Ok(fd_text) = std::env::var("PMI_FD") else { return Ok(None) };
        let number = |name: &str| -> Result<usize, PmiError> {
            let text = std::env::var(name)
                .map_err(|_| PmiError::NotLaunched(format!("{name} is not set")))?;
            text.parse()
                .map_err(|_| PmiError::NotLaunched(format!("{name}={text:?} is not a number")))
        };
        let fd: i32 = fd_text.parse().map_err(|_| {
            PmiError::NotLaunched(format!("PMI_FD={fd_text:?} is not a descriptor"))
        })?;
        let (rank, size) = (number("PMI_RANK")?, number("PMI_SIZE")?);
        // The descriptor has one owner per process, ever: a second client would close it
        // under the first (and PMI-1 does not start again after finalize).
        static TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if TAKEN.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return Err(PmiError::NotLaunched(format!(
                "PMI_FD={fd} belongs to this process's earlier PMI client"
            )));
        }
        // SAFETY: the descriptor is checked open first; the launcher handed it to this
        // process for PMI alone, and this is the one place that takes ownership of it (once:
        // `TAKEN` above).
        let socket = unsafe {
            if libc::fcntl(fd, libc::F_GETFD) < 0 {
                return Err(PmiError::NotLaunched(format!("PMI_FD={fd} is not open")));
            }
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            UnixStream::from_raw_fd(fd)
        };
        Self::connect(socket, rank, size, timeout).map(Some)
    }

    /// Initializes the protocol over `socket` for `rank` of `size`.
    pub fn connect(
        socket: UnixStream,
        rank: usize,
        size: usize,
        timeout: Duration,
    ) -> Result<Self, PmiError> {
        if rank >= size {
            return Err(PmiError::NotLaunched(format!(
                "PMI_RANK {rank} is not below PMI_SIZE {size}"
            )));
        }
        let mut client =
            Pmi1Client { socket, rank, size, kvsname: String::new(), timeout, pending: Vec::new() };
        let reply = client.call("cmd=init pmi_version=1 pmi_subversion=1", "response_to_init")?;
        if field(&reply, "rc") != Some("0") {
            return Err(PmiError::Refused(reply));
        }
        let reply = client.call("cmd=get_my_kvsname", "my_kvsname")?;
        client.kvsname =
            field(&reply, "kvsname").ok_or(PmiError::Refused(reply.clone()))?.to_string();
        Ok(client)
    }

    /// The socket's descriptor (for a last `abort` line from an exit handler).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.socket)
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The job's size.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Publishes `value` under `key` for this rank.
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        let line = format!(
            "cmd=put kvsname={} key=r{}-{key} value={}",
            self.kvsname,
            self.rank,
            hex(value.as_bytes())
        );
        let reply = self.call(&line, "put_result")?;
        match field(&reply, "rc") {
            Some("0") => Ok(()),
            _ => Err(PmiError::Refused(reply)),
        }
    }

    /// Waits until every rank reached its fence; what any rank put before is then visible.
    pub fn fence(&mut self) -> Result<(), PmiError> {
        self.call("cmd=barrier_in", "barrier_out").map(drop)
    }

    /// What `rank` put under `key`.
    pub fn get(&mut self, rank: usize, key: &str) -> Result<String, PmiError> {
        let line = format!("cmd=get kvsname={} key=r{rank}-{key}", self.kvsname);
        let reply = self.call(&line, "get_result")?;
        match (field(&reply, "rc"), field(&reply, "value").and_then(unhex)) {
            (Some("0"), Some(value)) => Ok(value),
            _ => Err(PmiError::Refused(reply)),
        }
    }

    /// What the job's spawner put for it under `key` before it started (a spawn's preput
    /// value, hex as [`Pmi1Client::spawn`] puts it); `None` when nothing is there, as in a
    /// job that was not spawned.
    pub fn spawner_value(&mut self, key: &str) -> Result<Option<String>, PmiError> {
        let line = format!("cmd=get kvsname={} key={key}", self.kvsname);
        let reply = self.call(&line, "get_result")?;
        match field(&reply, "rc") {
            Some("0") => {
                field(&reply, "value").and_then(unhex).map(Some).ok_or(PmiError::Refused(reply))
            }
            _ => Ok(None),
        }
    }

    /// Starts `apps` as one new job (`mcmd=spawn`, one segment per app), giving it
    /// `preput` (key and value, the value hex-encoded) in its key space before it starts.
    /// Arguments and values must not hold a line break.
    pub fn spawn(&mut self, apps: &[PmiApp], preput: &[(&str, &str)]) -> Result<(), PmiError> {
        let refuse = |what: String| Err(PmiError::Refused(what));
        let broken = |t: &str| t.contains(['\n', '\r']);
        if apps.is_empty() || apps.iter().any(|a| a.maxprocs == 0) {
            return refuse("every app needs at least one process".into());
        }
        let mut message = String::new();
        for (index, app) in apps.iter().enumerate() {
            if broken(&app.program)
                || app.args.iter().any(|a| broken(a))
                || app.wdir.as_deref().is_some_and(broken)
            {
                return refuse(format!("{}: an argument holds a line break", app.program));
            }
            message += &format!(
                "mcmd=spawn\nnprocs={}\nexecname={}\ntotspawns={}\nspawnssofar={}\nargcnt={}\n",
                app.maxprocs,
                app.program,
                apps.len(),
                index + 1,
                app.args.len()
            );
            for (i, arg) in app.args.iter().enumerate() {
                message += &format!("arg{}={arg}\n", i + 1);
            }
            message += &format!("preput_num={}\n", preput.len());
            for (i, (key, value)) in preput.iter().enumerate() {
                message +=
                    &format!("preput_key_{i}={key}\npreput_val_{i}={}\n", hex(value.as_bytes()));
            }
            match &app.wdir {
                Some(dir) => message += &format!("info_num=1\ninfo_key_0=wdir\ninfo_val_0={dir}\n"),
                None => message += "info_num=0\n",
            }
            message += "endcmd";
            if index + 1 < apps.len() {
                message += "\n";
            }
        }
        let reply = self.call(&message, "spawn_result")?;
        match field(&reply, "rc") {
            Some("0") => Ok(()),
            _ => Err(PmiError::Refused(reply)),
        }
    }

    /// Publishes `port` under the job-wide service `name` (`publish_name`; the port
    /// travels hex-encoded, as values do).
    pub fn publish(&mut self, name: &str, port: &str) -> Result<(), PmiError> {
        check_word(name)?;
        let line = format!("cmd=publish_name service={name} port={}", hex(port.as_bytes()));
        let reply = self.call(&line, "publish_result")?;
        match field(&reply, "rc") {
            Some("0") => Ok(()),
            _ => Err(PmiError::Refused(reply)),
        }
    }

    /// The port published under `name`, `None` when none is (`lookup_name`).
    pub fn lookup(&mut self, name: &str) -> Result<Option<String>, PmiError> {
        check_word(name)?;
        let reply = self.call(&format!("cmd=lookup_name service={name}"), "lookup_result")?;
        match field(&reply, "rc") {
            Some("0") => {
                field(&reply, "port").and_then(unhex).map(Some).ok_or(PmiError::Refused(reply))
            }
            _ => Ok(None),
        }
    }

    /// Withdraws the service `name` (`unpublish_name`).
    pub fn unpublish(&mut self, name: &str) -> Result<(), PmiError> {
        check_word(name)?;
        let reply = self.call(&format!("cmd=unpublish_name service={name}"), "unpublish_result")?;
        match field(&reply, "rc") {
            Some("0") => Ok(()),
            _ => Err(PmiError::Refused(reply)),
        }
    }

    /// Tells the launcher this rank is done.
    pub fn finalize(&mut self) -> Result<(), PmiError> {
        self.call("cmd=finalize", "finalize_ack").map(drop)
    }

    /// Asks the launcher to end the whole job with `code` (no reply is awaited).
    pub fn abort(&mut self, code: i32, message: &str) -> Result<(), PmiError> {
        let line =
            format!("cmd=abort exitcode={code} error_msg={}\n", message.replace([' ', '='], "_"));
        self.socket.write_all(line.as_bytes()).map_err(PmiError::Io)
    }

    /// Sends `line` and reads the reply, which must be `cmd={expect}`.
    fn call(&mut self, line: &str, expect: &str) -> Result<String, PmiError> {
        self.socket.write_all(format!("{line}\n").as_bytes()).map_err(PmiError::Io)?;
        let reply = self.read_line()?;
        if field(&reply, "cmd") == Some(expect) {
            Ok(reply)
        } else {
            Err(PmiError::Refused(reply))
        }
    }

    fn read_line(&mut self) -> Result<String, PmiError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return Ok(String::from_utf8_lossy(&line[..end]).trim().to_string());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(PmiError::TimedOut(self.timeout));
            }
            self.socket.set_read_timeout(Some(left)).map_err(PmiError::Io)?;
            let mut chunk = [0u8; 4096];
            match self.socket.read(&mut chunk) {
                Ok(0) => return Err(PmiError::Io(io::ErrorKind::UnexpectedEof.into())),
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) =>
                {
                    return Err(PmiError::TimedOut(self.timeout))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(PmiError::Io(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests;
