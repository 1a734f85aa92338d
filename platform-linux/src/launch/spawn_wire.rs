//! A spawn request and its reply on the key-value exchange's line protocol (see
//! [`super::kv`]), shared by the rank's client and the launcher.
//!
//! Programs, arguments, environment values and directories may hold spaces and any bytes
//! but NUL, so they travel as lowercase hex; everything else is decimal. One request line:
//!
//! ```text
//! spawn PARENT_SIZE NODES COMMAND [COMMAND...]
//!   NODES    `-`, or the parents' node labels in rank order, decimal, joined by `,`
//!   COMMAND  MAXPROCS:HOST:WDIR:PROGRAM:ARGS:ENV
//!     HOST     `-` (the requesting rank's host) or a host number of `--hosts`
//!     WDIR     `-` (the launcher's directory) or hex
//!     PROGRAM  hex, not empty
//!     ARGS     `-` (none), or hex items joined by `,` (an empty item is an empty argument)
//!     ENV      `-` (none), or NAME=VALUE items, both hex, joined by `,`
//! ```
//!
//! Replies: `spawned JOB SIZE` with the bridge's descriptor attached (`SCM_RIGHTS`);
//! `spawn-failed CODES MESSAGE` (one code per child over all commands, joined by `,`; then
//! a message to the end of the line) when a child could not start; `error WHAT` when the
//! request is invalid (nothing was started).

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::Duration;

/// A request line's bytes at most, newline excluded (arguments and environment count
/// twice, as hex). Longer requests are refused without being read to the end.
pub const REQUEST_MAX: usize = 256 * 1024;
/// The error code of a child that started and was killed because a sibling could not start
/// (every other code is 0 for a started child or the `errno` of one that could not).
pub const SPAWN_ABORTED: i32 = -1;

/// One program to start `maxprocs` copies of (one command of `MPI_Comm_spawn_multiple`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnCommand {
    /// The program (looked up in `PATH` when it holds no `/`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// How many copies to start (at least 1).
    pub maxprocs: usize,
    /// Variables added to the children's environment (the launcher's own come last).
    pub env: Vec<(String, String)>,
    /// The children's working directory (none: the launcher's).
    pub wdir: Option<PathBuf>,
    /// The `--hosts` host to start them in (none: the requesting rank's).
    pub host: Option<usize>,
}

impl SpawnCommand {
    /// `maxprocs` copies of `program` without arguments, environment, directory or host.
    pub fn new(program: impl Into<OsString>, maxprocs: usize) -> SpawnCommand {
        SpawnCommand {
            program: program.into(),
            args: Vec::new(),
            maxprocs,
            env: Vec::new(),
            wdir: None,
            host: None,
        }
    }
}

/// What a rank asks the launcher to start: a child job of all commands' children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnRequest {
    /// The commands, in order: child ranks are numbered through them.
    pub commands: Vec<SpawnCommand>,
    /// Processes of the parent group (the bridge's group A).
    pub parent_size: usize,
    /// The parents' node labels in their own job, in rank order (empty: not given). The
    /// launcher writes them into the bridge's parent slots.
    pub parent_nodes: Vec<u32>,
    /// How long the client waits for the launcher's reply.
    pub timeout: Duration,
}

/// A started child job.
#[derive(Debug)]
pub struct Spawned {
    /// The child job's number in the launcher (the first job is 0).
    pub job: u64,
    /// The bridge region's descriptor (map it with `Bridge::open(Region::from_owned(..))`).
    pub bridge: OwnedFd,
    /// The child job's size.
    pub size: usize,
}

/// Hex of `bytes`, lowercase.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// The bytes of hex `text`; `None` when it is not hex of whole bytes.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let bytes = text.as_bytes();
    if bytes.len() % 2 != 0 {
        return None;
    }
    bytes.chunks_exact(2).map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?)).collect()
}

fn list<T>(items: &[T], item: impl Fn(&T) -> String) -> String {
    if items.is_empty() {
        return "-".into();
    }
    items.iter().map(item).collect::<Vec<_>>().join(",")
}

/// The request's line, without the newline.
pub fn encode(request: &SpawnRequest) -> String {
    let mut line =
        format!("spawn {} {}", request.parent_size, list(&request.parent_nodes, |n| n.to_string()));
    for c in &request.commands {
        let host = c.host.map_or("-".into(), |h| h.to_string());
        let wdir = c.wdir.as_ref().map_or("-".into(), |d| hex(d.as_os_str().as_bytes()));
        let args = list(&c.args, |a| hex(a.as_bytes()));
        let env = list(&c.env, |(k, v)| format!("{}={}", hex(k.as_bytes()), hex(v.as_bytes())));
        let program = hex(c.program.as_bytes());
        line.push_str(&format!(" {}:{host}:{wdir}:{program}:{args}:{env}", c.maxprocs));
    }
    line
}

/// Bytes without NUL (a C string's), as a program, argument or value must be.
fn text_bytes(hex_text: &str, what: &str) -> Result<Vec<u8>, String> {
    let bytes = unhex(hex_text).ok_or_else(|| format!("{what} is not hex"))?;
    if bytes.contains(&0) {
        return Err(format!("{what} holds a NUL byte"));
    }
    Ok(bytes)
}

fn decode_command(text: &str) -> Result<SpawnCommand, String> {
    let fields: Vec<&str> = text.split(':').collect();
    let [maxprocs, host, wdir, program, args, env] = fields[..] else {
        return Err("a command is MAXPROCS:HOST:WDIR:PROGRAM:ARGS:ENV".into());
    };
    let maxprocs = maxprocs.parse().map_err(|_| format!("maxprocs {maxprocs:?} is not a count"))?;
    let host = match host {
        "-" => None,
        h => Some(h.parse().map_err(|_| format!("host {h:?} is not a number"))?),
    };
    let wdir = match wdir {
        "-" => None,
        d => Some(PathBuf::from(OsString::from_vec(text_bytes(d, "the directory")?))),
    };
    let program = text_bytes(program, "the program")?;
    if program.is_empty() {
        return Err("the program is empty".into());
    }
    let args = match args {
        "-" => Vec::new(),
        a => a
            .split(',')
            .map(|item| text_bytes(item, "an argument").map(OsString::from_vec))
            .collect::<Result<_, _>>()?,
    };
    let env = match env {
        "-" => Vec::new(),
        e => e.split(',').map(decode_variable).collect::<Result<_, _>>()?,
    };
    Ok(SpawnCommand { program: OsString::from_vec(program), args, maxprocs, env, wdir, host })
}

fn decode_variable(item: &str) -> Result<(String, String), String> {
    let (name, value) = item.split_once('=').ok_or("an environment item is NAME=VALUE")?;
    let text = |hex_text, what| {
        String::from_utf8(text_bytes(hex_text, what)?).map_err(|_| format!("{what} is not UTF-8"))
    };
    let (name, value) = (text(name, "a variable name")?, text(value, "a variable value")?);
    if name.is_empty() || name.contains('=') {
        return Err(format!("{name:?} is not a variable name"));
    }
    Ok((name, value))
}

/// Reads a request line (after `spawn `); the timeout is the client's and is not sent.
pub fn decode(rest: &str) -> Result<SpawnRequest, String> {
    let mut words = rest.split(' ');
    let size = words.next().unwrap_or_default();
    let parent_size = size.parse().map_err(|_| format!("parent size {size:?} is not a count"))?;
    let parent_nodes = match words.next() {
        Some("-") => Vec::new(),
        Some(n) => n
            .split(',')
            .map(|n| n.parse().map_err(|_| format!("node {n:?} is not a number")))
            .collect::<Result<_, _>>()?,
        None => return Err("spawn PARENT_SIZE NODES COMMAND...: NODES is missing".into()),
    };
    let commands: Vec<SpawnCommand> = words.map(decode_command).collect::<Result<_, _>>()?;
    if commands.is_empty() {
        return Err("a spawn needs at least one command".into());
    }
    Ok(SpawnRequest { commands, parent_size, parent_nodes, timeout: Duration::ZERO })
}

/// The failure reply's line, without the newline.
pub fn failure_line(errcodes: &[i32], message: &str) -> String {
    let message: String = message.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    format!("spawn-failed {} {message}", list(errcodes, |c| c.to_string()))
}

/// Reads a failure reply (after `spawn-failed `): the codes and the message.
pub fn decode_failure(rest: &str) -> Option<(Vec<i32>, String)> {
    let (codes, message) = rest.split_once(' ').unwrap_or((rest, ""));
    let codes = match codes {
        "-" => Vec::new(),
        c => c.split(',').map(|c| c.parse().ok()).collect::<Option<_>>()?,
    };
    Some((codes, message.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> SpawnRequest {
        let mut odd = SpawnCommand::new("/bin/with space/ü", 2);
        odd.args = vec!["a b".into(), "".into(), OsString::from_vec(vec![0xff, b',', b':'])];
        odd.env = vec![("X".into(), "1 2=3,4".into()), ("EMPTY".into(), String::new())];
        odd.wdir = Some("/tmp/x y".into());
        odd.host = Some(3);
        let mut single_empty = SpawnCommand::new("p", 1);
        single_empty.args = vec!["".into()];
        SpawnRequest {
            commands: vec![odd, SpawnCommand::new("true", 1), single_empty],
            parent_size: 2,
            parent_nodes: vec![0, 1],
            timeout: Duration::ZERO,
        }
    }

    #[test]
    fn requests_round_trip_whatever_their_bytes() {
        let request = request();
        let line = encode(&request);
        assert!(line.bytes().all(|b| b.is_ascii_graphic() || b == b' '), "{line}");
        assert_eq!(decode(line.strip_prefix("spawn ").unwrap()), Ok(request));
        assert_eq!(unhex(&hex(&[0, 1, 0xab, 0xff])), Some(vec![0, 1, 0xab, 0xff]));
    }

    #[test]
    fn malformed_requests_are_errors() {
        let p = hex(b"p");
        let bad = [
            String::new(),
            "1".into(),
            "1 -".into(),
            "x - 1:-:-:70:-:-".into(),
            "1 0,x 1:-:-:70:-:-".into(),
            "1 - 1:-:-:70:-".into(),
            "1 - 1:-:-:7:-:-".into(),
            "1 - 1:-:-:zz:-:-".into(),
            "1 - 1:-:-::-:-".into(),
            "1 - -1:-:-:70:-:-".into(),
            "1 - 1:h:-:70:-:-".into(),
            format!("1 - 1:-:-:{}:-:-", hex(b"a\0b")),
            format!("1 - 1:-:-:{p}:-:{}", hex(b"NOVALUE")),
            format!("1 - 1:-:-:{p}:-:={}", hex(b"v")),
            format!("1 - 1:-:-:{p}:-:{}={}", hex(b"A=B"), hex(b"v")),
            format!("1 - 1:-:-:{p}:-:{}={}", hex(b"A"), hex(&[0xff])),
        ];
        for rest in bad {
            assert!(decode(&rest).is_err(), "{rest:?}");
        }
    }

    #[test]
    fn failures_round_trip() {
        let line = failure_line(&[0, -1, 2], "cannot start\nrank 2");
        let rest = line.strip_prefix("spawn-failed ").unwrap();
        assert_eq!(decode_failure(rest), Some((vec![0, -1, 2], "cannot start rank 2".into())));
        assert_eq!(decode_failure("1,x m"), None);
    }
}
