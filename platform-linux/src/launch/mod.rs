//! The launcher behind `commcore run`: starts N ranks of a program on this machine in one
//! process group, hands each its identity and the job's shared region, and ends the whole
//! job as soon as one rank fails.
//!
//! What a rank receives (read by [`crate::runtime::World::init`]):
//! - `COMMCORE_RANK`, `COMMCORE_SIZE`, `COMMCORE_NODE`, `COMMCORE_NODES`;
//! - `COMMCORE_SHM_FD`: an inherited descriptor of the job's memory file (a memfd with
//!   owner-only permissions: nothing in `/dev/shm`, gone when the last rank exits), whose
//!   layout ([`crate::shm::Layout`]) tells it where each peer's queues and doorbell are.

mod placement;

pub use placement::Placement;

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::shm::{Layout, Region};

/// Environment variable names the launcher sets for each rank.
pub mod env {
    /// The rank of this process in the world.
    pub const RANK: &str = "COMMCORE_RANK";
    /// The number of ranks.
    pub const SIZE: &str = "COMMCORE_SIZE";
    /// The node label of this process.
    pub const NODE: &str = "COMMCORE_NODE";
    /// The number of node labels.
    pub const NODES: &str = "COMMCORE_NODES";
    /// The inherited descriptor of the job's shared region.
    pub const SHM_FD: &str = "COMMCORE_SHM_FD";
}

/// What to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSpec {
    /// Number of ranks.
    pub procs: usize,
    /// Number of node labels the ranks are spread over.
    pub nodes: usize,
    /// How ranks are spread over node labels.
    pub placement: Placement,
    /// The program each rank runs.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment for every rank.
    pub env: Vec<(String, String)>,
    /// Kill the job after this long (none: wait forever).
    pub timeout: Option<Duration>,
    /// Capture rank 0's standard output instead of inheriting it.
    pub capture_rank0_stdout: bool,
}

impl JobSpec {
    /// A job of `procs` ranks of `program` on one node.
    pub fn new(procs: usize, program: impl Into<OsString>) -> JobSpec {
        JobSpec {
            procs,
            nodes: 1,
            placement: Placement::Block,
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            timeout: None,
            capture_rank0_stdout: false,
        }
    }

    /// Parses `-n N [--nodes K] [--placement block|cyclic] [--timeout SECS] -- PROGRAM ARGS…`.
    pub fn parse(args: &[String]) -> Result<JobSpec, String> {
        let split = args.iter().position(|a| a == "--");
        let (options, command) = match split {
            Some(i) => (&args[..i], &args[i + 1..]),
            None => (args, &[][..]),
        };
        let program = command.first().ok_or("run needs `-- PROGRAM [ARGS…]`")?;
        let mut spec = JobSpec::new(0, program);
        spec.args = command[1..].iter().map(OsString::from).collect();
        let mut procs = None;
        let mut i = 0;
        while i < options.len() {
            let value = options.get(i + 1).ok_or_else(|| format!("{} needs a value", options[i]));
            match options[i].as_str() {
                "-n" | "--procs" => procs = Some(parse_count(value?, "-n")?),
                "--nodes" => spec.nodes = parse_count(value?, "--nodes")?,
                "--placement" => spec.placement = value?.parse()?,
                "--timeout" => {
                    let secs: f64 = value?.parse().map_err(|_| "--timeout: not a number")?;
                    if !(secs > 0.0 && secs.is_finite()) {
                        return Err("--timeout must be positive".into());
                    }
                    spec.timeout = Some(Duration::from_secs_f64(secs));
                }
                other => return Err(format!("unknown run option {other:?}")),
            }
            i += 2;
        }
        spec.procs = procs.ok_or("run needs -n N")?;
        spec.validate()?;
        Ok(spec)
    }

    fn validate(&self) -> Result<(), String> {
        if Layout::new(self.procs).is_none() {
            return Err(format!(
                "-n must be between 1 and {}, not {}",
                crate::shm::layout::MAX_RANKS,
                self.procs
            ));
        }
        if self.nodes == 0 || self.nodes > self.procs {
            return Err(format!(
                "--nodes must be between 1 and -n ({}), not {}",
                self.procs, self.nodes
            ));
        }
        Ok(())
    }
}

fn parse_count(text: &str, flag: &str) -> Result<usize, String> {
    text.parse().map_err(|_| format!("{flag}: not a count: {text:?}"))
}

/// How a rank ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Ending::Exited(code) => write!(f, "exited with code {code}"),
            Ending::Signaled(signal) => {
                write!(f, "was killed by signal {signal} ({})", signal_name(signal))
            }
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}

/// Why a job failed.
#[derive(Debug)]
pub enum JobError {
    /// The job description is invalid.
    Spec(String),
    /// The shared region could not be created.
    Region(io::Error),
    /// A rank could not be started.
    Spawn {
        /// The rank.
        rank: usize,
        /// Why.
        error: io::Error,
    },
    /// A rank ended badly; the others were killed.
    RankFailed {
        /// The first rank seen to fail.
        rank: usize,
        /// How it ended.
        ending: Ending,
    },
    /// The job ran past its timeout and was killed.
    TimedOut(Duration),
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::Spec(message) => write!(f, "{message}"),
            JobError::Region(error) => write!(f, "cannot create the shared region: {error}"),
            JobError::Spawn { rank, error } => write!(f, "cannot start rank {rank}: {error}"),
            JobError::RankFailed { rank, ending } => {
                write!(f, "rank {rank} {ending}; the other ranks were killed")
            }
            JobError::TimedOut(limit) => write!(f, "job timed out after {limit:?} and was killed"),
        }
    }
}

impl std::error::Error for JobError {}

/// What a successful job leaves.
#[derive(Debug, Default)]
pub struct JobOutput {
    /// Rank 0's standard output, when captured.
    pub rank0_stdout: Vec<u8>,
    /// The process group the ranks ran in (gone by now).
    pub process_group: i32,
}

/// A failed job's error, with the process group it ran in (for checking that nothing is left).
#[derive(Debug)]
pub struct JobFailure {
    /// What went wrong.
    pub error: JobError,
    /// The process group, if any rank was started.
    pub process_group: Option<i32>,
}

impl fmt::Display for JobFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

/// Runs a job to its end: every rank exits 0 → `Ok`; a rank fails → every other rank is
/// killed (SIGKILL to the process group), all are reaped, and the failure names the rank.
pub fn run_job(spec: &JobSpec) -> Result<JobOutput, JobFailure> {
    let fail = |error, process_group| JobFailure { error, process_group };
    spec.validate().map_err(|m| fail(JobError::Spec(m), None))?;
    let layout =
        Layout::new(spec.procs).ok_or_else(|| fail(JobError::Spec("bad size".into()), None))?;
    let region =
        Region::create(layout.region_bytes()).map_err(|e| fail(JobError::Region(e), None))?;
    region.atomic_u32(layout.job_size()).store(spec.procs as u32, Relaxed);
    region.atomic_u32(layout.nodes()).store(spec.nodes as u32, Relaxed);
    for rank in 0..spec.procs {
        let node = spec.placement.node_of(rank, spec.procs, spec.nodes);
        region.atomic_u32(layout.node(rank)).store(node as u32, Relaxed);
    }
    region.atomic_u64(layout.magic()).store(Layout::MAGIC, std::sync::atomic::Ordering::Release);

    let mut pids = Vec::with_capacity(spec.procs);
    let mut group: Option<i32> = None;
    let mut capture = None;
    for rank in 0..spec.procs {
        let node = spec.placement.node_of(rank, spec.procs, spec.nodes);
        let mut command = Command::new(&spec.program);
        command
            .args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .env(env::RANK, rank.to_string())
            .env(env::SIZE, spec.procs.to_string())
            .env(env::NODE, node.to_string())
            .env(env::NODES, spec.nodes.to_string())
            .env(env::SHM_FD, region.fd().to_string())
            .stdin(Stdio::null())
            .process_group(group.unwrap_or(0));
        if rank == 0 && spec.capture_rank0_stdout {
            command.stdout(Stdio::piped());
        }
        let fd = region.fd();
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (fcntl, prctl, getppid, _exit) on values copied in.
        unsafe {
            command.pre_exec(move || {
                // Keep the region's descriptor across exec (it is close-on-exec in the launcher).
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // Die with the launcher, so a killed launcher leaves no ranks behind.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            })
        };
        match command.spawn() {
            Ok(mut child) => {
                let pid = child.id() as i32;
                group.get_or_insert(pid);
                if let Some(stdout) = child.stdout.take() {
                    capture = Some(std::thread::spawn(move || {
                        let mut bytes = Vec::new();
                        let mut stdout = stdout;
                        let _ = stdout.read_to_end(&mut bytes);
                        bytes
                    }));
                }
                pids.push(pid);
            }
            Err(error) => {
                if let Some(pgid) = group {
                    kill_and_reap(pgid, &mut pids);
                }
                return Err(fail(JobError::Spawn { rank, error }, group));
            }
        }
    }
    let pgid = group.unwrap_or(0);
    let outcome = supervise(pgid, &mut pids, spec.timeout);
    // Anything a rank started in its group goes with the job.
    // SAFETY: killpg only sends a signal to the job's own process group.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    drop(region);
    let rank0_stdout = capture.and_then(|t| t.join().ok()).unwrap_or_default();
    match outcome {
        Ok(()) => Ok(JobOutput { rank0_stdout, process_group: pgid }),
        Err(error) => Err(fail(error, Some(pgid))),
    }
}

/// Waits for every rank; on the first failure kills the group and reaps the rest.
fn supervise(pgid: i32, pids: &mut Vec<i32>, timeout: Option<Duration>) -> Result<(), JobError> {
    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    while !pids.is_empty() {
        match reap_one(pgid, libc::WNOHANG) {
            Some((pid, ending)) => {
                let Some(rank) = pids.iter().position(|&p| p == pid) else { continue };
                pids[rank] = 0;
                if ending != Ending::Exited(0) {
                    kill_and_reap(pgid, pids);
                    return Err(JobError::RankFailed { rank, ending });
                }
                if pids.iter().all(|&p| p == 0) {
                    pids.clear();
                }
                pause = Duration::from_micros(200);
            }
            None => {
                if let Some(limit) = timeout.filter(|limit| start.elapsed() > *limit) {
                    kill_and_reap(pgid, pids);
                    return Err(JobError::TimedOut(limit));
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
        }
    }
    Ok(())
}

/// Reaps one child of process group `pgid`: its pid and how it ended.
fn reap_one(pgid: i32, flags: i32) -> Option<(i32, Ending)> {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer; waitpid only reaps our children in group pgid.
    let pid = unsafe { libc::waitpid(-pgid, &mut status, flags) };
    if pid <= 0 {
        return None;
    }
    let ending = if libc::WIFSIGNALED(status) {
        Ending::Signaled(libc::WTERMSIG(status))
    } else {
        Ending::Exited(libc::WEXITSTATUS(status))
    };
    Some((pid, ending))
}

/// Kills every process of the group (ranks and anything they started) and reaps our ranks.
fn kill_and_reap(pgid: i32, pids: &mut Vec<i32>) {
    // SAFETY: killpg only sends a signal; pgid is the group our ranks were placed in.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    while reap_one(pgid, 0).is_some() {}
    pids.clear();
}
