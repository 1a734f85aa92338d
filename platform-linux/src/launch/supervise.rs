//! Watching a running job: reaping ranks, telling a rank that left early from one that
//! finished, forwarding signals, the timeout; and what a job's end reports.

use std::fmt;
use std::io;
use std::sync::atomic::Ordering::Acquire;
use std::time::{Duration, Instant};

use super::signals::Forwarder;
use super::tree::{Launch, Tree, FAILURES_KEPT};
use super::GRACE;
use crate::runtime::settings::{difference, Difference};
use crate::shm::layout::RANK_JOINED;
use crate::shm::{Layout, Region};

/// How a rank ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

impl Ending {
    /// The exit status a shell would show: the code, or 128 + the signal.
    pub fn status(self) -> i32 {
        match self {
            Ending::Exited(code) => code,
            Ending::Signaled(signal) => 128 + signal,
        }
    }
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

/// The name of `signal`, for messages.
pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
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
        /// The program it was to run.
        program: String,
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
    /// A rank exited before the job finished: it joined the runtime and did not finalize,
    /// or it never joined while other ranks had; the others were killed.
    LeftEarly {
        /// The rank.
        rank: usize,
        /// Its exit code.
        code: i32,
        /// Whether it had joined (and not finalized) or never joined.
        joined: bool,
    },
    /// The job ran past its timeout and was killed.
    TimedOut {
        /// The timeout.
        limit: Duration,
        /// Ranks still running when it expired.
        running: Vec<usize>,
    },
    /// The launcher received this signal, forwarded it to the job and ended it.
    Interrupted(i32),
    /// A rank failed because a setting that must be the same on every rank differs.
    SettingsDiffer {
        /// The setting and its values.
        difference: Difference,
        /// The exit status of the failure it explains.
        status: i32,
    },
    /// A rank failed because two processes claimed one rank number.
    DuplicateRank {
        /// The rank number claimed twice.
        rank: usize,
        /// The exit status of the failure it explains.
        status: i32,
    },
}

impl JobError {
    /// The launcher's exit status for this error, as mpirun's: the failing rank's code or
    /// 128 + its signal; [`EXIT_TIMEOUT`], [`EXIT_LAUNCHER`] otherwise.
    pub fn exit_status(&self) -> i32 {
        match self {
            JobError::Spec(_) | JobError::Region(_) | JobError::Spawn { .. } => EXIT_LAUNCHER,
            JobError::RankFailed { ending, .. } => ending.status(),
            JobError::LeftEarly { code, .. } => {
                if *code == 0 {
                    EXIT_LEFT_EARLY
                } else {
                    *code
                }
            }
            JobError::TimedOut { .. } => EXIT_TIMEOUT,
            JobError::Interrupted(signal) => 128 + signal,
            JobError::SettingsDiffer { status, .. } | JobError::DuplicateRank { status, .. } => {
                *status
            }
        }
    }
}

/// Exit status when a rank exited with code 0 before the job finished.
pub const EXIT_LEFT_EARLY: i32 = 1;
/// Exit status when the job ran past `--timeout`.
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit status when the launcher could not run the job (bad options or settings, no
/// region, a program that cannot be started).
pub const EXIT_LAUNCHER: i32 = 125;

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::Spec(message) => write!(f, "{message}"),
            JobError::Region(error) => write!(f, "cannot create the shared region: {error}"),
            JobError::Spawn { rank, program, error } => {
                write!(f, "cannot start rank {rank}: {program}: {error}")
            }
            JobError::RankFailed { rank, ending } => {
                write!(f, "rank {rank} {ending}; the other ranks were killed")
            }
            JobError::LeftEarly { rank, code, joined } => {
                let why = if *joined {
                    "it joined the job and did not finalize: drop its World before exiting"
                } else {
                    "it never joined the job, and other ranks wait for it"
                };
                write!(
                    f,
                    "rank {rank} exited with code {code} before the job finished ({why}); the \
                     other ranks were killed"
                )
            }
            JobError::TimedOut { limit, running } => write!(
                f,
                "the job timed out after {} s and was killed; ranks still running: {}",
                limit.as_secs_f64(),
                list(running)
            ),
            JobError::Interrupted(signal) => write!(
                f,
                "received {}; forwarded it to the job, which has ended",
                signal_name(*signal)
            ),
            JobError::SettingsDiffer { difference, .. } => {
                write!(f, "the ranks could not start: {difference}")
            }
            JobError::DuplicateRank { rank, .. } => write!(
                f,
                "the ranks could not start: two processes claimed rank {rank}; leave \
                 COMMCORE_RANK as the launcher sets it"
            ),
        }
    }
}

fn list(ranks: &[usize]) -> String {
    ranks.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
}

impl std::error::Error for JobError {}

/// What a successful job leaves.
#[derive(Debug, Default)]
pub struct JobOutput {
    /// Rank 0's standard output, when captured.
    pub rank0_stdout: Vec<u8>,
    /// The process group the ranks ran in (gone by now).
    pub process_group: i32,
    /// Jobs spawned from the first that failed while it went on (each was reported; the
    /// first 1,024 are kept here).
    pub spawned_failures: Vec<SpawnedJobFailure>,
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

/// A job spawned from the first that failed: its processes were killed and its bridge
/// marked; the job that spawned it went on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnedJobFailure {
    /// The failed job's number.
    pub job: u64,
    /// Its first rank seen to fail.
    pub rank: usize,
    /// The line the launcher printed.
    pub message: String,
}

/// A failure, explained by what the job's region shows: a settings difference or a rank
/// number claimed twice (every rank fails alike then; the launcher says why once).
fn explain(region: &Region, layout: &Layout, error: JobError) -> JobError {
    let status = error.exit_status();
    let duplicate = region.atomic_u32(layout.duplicate_rank()).load(Acquire);
    if let Some(rank) = duplicate.checked_sub(1) {
        return JobError::DuplicateRank { rank: rank as usize, status };
    }
    match difference(region, layout) {
        Some(difference) => JobError::SettingsDiffer { difference, status },
        None => error,
    }
}

/// The launcher's jobs as it watches them: the first job (0) and those spawned from it,
/// all in process group `pgid`.
pub(super) struct Watch<'a> {
    pub launch: &'a Launch,
    pub pgid: i32,
    pub timeout: Option<Duration>,
}

impl Watch<'_> {
    /// Waits for every process of every job. A failure of the first job, the timeout or
    /// the grace after a forwarded signal marks every bridge, kills the group and reaps it;
    /// a spawned job's failure kills that job (and what it spawned) only.
    pub(super) fn run(&self, signals: Option<&Forwarder>) -> Result<(), JobError> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(200);
        let mut interrupted: Option<(i32, Instant)> = None;
        loop {
            if let Some(signal) = signals.and_then(Forwarder::take) {
                // SAFETY: killpg only sends a signal to the job's own process group.
                unsafe { libc::killpg(self.pgid, signal) };
                interrupted.get_or_insert((signal, Instant::now() + GRACE));
            }
            let mut tree = self.launch.lock();
            if tree.live() == 0 {
                tree.closed = true;
                break;
            }
            // The grace period after a forwarded signal is over: SIGKILL for what is left.
            if interrupted.is_some_and(|(_, deadline)| Instant::now() >= deadline) {
                self.end_all(&mut tree);
                break;
            }
            // Reaped under the lock: a spawn in progress holds it until its pids are known.
            match reap_one(self.pgid, libc::WNOHANG) {
                Some((pid, ending)) => {
                    pause = Duration::from_micros(200);
                    let Some((id, rank)) = tree.find(pid) else { continue };
                    let Some(job) = tree.jobs.get_mut(&id) else { continue };
                    job.pids[rank] = 0;
                    if interrupted.is_some() || job.failed {
                        tree.retire_finished();
                        continue;
                    }
                    let joined = job.state(rank) == RANK_JOINED;
                    let error = match ending {
                        Ending::Exited(code) if joined => {
                            Some(JobError::LeftEarly { rank, code, joined })
                        }
                        Ending::Exited(0) => {
                            job.exited_cleanly(rank);
                            None
                        }
                        _ => Some(JobError::RankFailed { rank, ending }),
                    };
                    if let Some(error) = error {
                        let error = explain(&job.region, &job.layout, error);
                        if id == 0 {
                            self.end_all(&mut tree);
                            return Err(error);
                        }
                        fail_spawned(&mut tree, id, rank, &error);
                    }
                    tree.retire_finished();
                }
                None => {
                    if interrupted.is_none() {
                        // A rank that left without joining, while another has joined, leaves
                        // that one waiting for it forever.
                        let abandoned: Vec<(u64, usize)> = tree
                            .jobs
                            .iter()
                            .filter(|(_, job)| !job.failed)
                            .filter_map(|(&id, job)| job.abandoned().map(|rank| (id, rank)))
                            .collect();
                        for (id, rank) in abandoned {
                            let error = JobError::LeftEarly { rank, code: 0, joined: false };
                            if id == 0 {
                                self.end_all(&mut tree);
                                return Err(error);
                            }
                            fail_spawned(&mut tree, id, rank, &error);
                        }
                        if let Some(limit) = self.timeout.filter(|limit| start.elapsed() > *limit) {
                            let running = tree.jobs.get(&0).map_or(Vec::new(), |job| {
                                (0..job.pids.len()).filter(|&r| job.pids[r] != 0).collect()
                            });
                            self.end_all(&mut tree);
                            return Err(JobError::TimedOut { limit, running });
                        }
                    }
                    drop(tree);
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
            }
        }
        match interrupted {
            Some((signal, _)) => Err(JobError::Interrupted(signal)),
            None => Ok(()),
        }
    }

    /// Marks every bridge, kills the whole group, reaps it and closes the tree.
    fn end_all(&self, tree: &mut Tree) {
        tree.fail_all();
        kill_and_reap(self.pgid);
        for job in tree.jobs.values_mut() {
            job.pids.fill(0);
        }
        tree.closed = true;
        tree.retire_finished();
    }
}

/// Spawned job `id` failed at `rank`: kills it (and the jobs it spawned and is still
/// connected to), marks its bridge, and says so in one line.
fn fail_spawned(tree: &mut Tree, id: u64, rank: usize, error: &JobError) {
    let parent = tree.jobs.get(&id).and_then(|job| job.parent.as_ref()).map(|link| link.job);
    let with_it = tree.fail_spawned(id);
    let mut message = format!("spawned job {id}: {error}");
    if !with_it.is_empty() {
        let jobs: Vec<String> = with_it.iter().map(u64::to_string).collect();
        message.push_str(&format!("; so were the jobs it spawned ({})", jobs.join(", ")));
    }
    match parent {
        Some(parent) => message.push_str(&format!(
            "; its bridge is marked failed and job {parent}, which spawned it, goes on"
        )),
        None => message.push_str("; it had disconnected from the job that spawned it"),
    }
    eprintln!("commcore run: {message}");
    if tree.spawned_failures.len() < FAILURES_KEPT {
        tree.spawned_failures.push(SpawnedJobFailure { job: id, rank, message });
    }
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

/// Kills every process of the group (ranks and anything they started) and reaps them.
pub(super) fn kill_and_reap(pgid: i32) {
    // SAFETY: killpg only sends a signal; pgid is the group our ranks were placed in.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    while reap_one(pgid, 0).is_some() {}
}

/// For a dedicated launcher (a child subreaper): kills and reaps the descendants of ranks
/// that left the job's process group and were handed to us when their parents died.
pub(super) fn end_strays() {
    for _ in 0..50 {
        let strays = children();
        if strays.is_empty() {
            break;
        }
        for pid in strays {
            // SAFETY: kill sends a signal to a child of this process.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let mut status = 0;
        // SAFETY: status is a valid out-pointer; reaps any child of this process.
        while unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } > 0 {}
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// This process's children, from /proc (every thread's list).
fn children() -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<i32>>()
        })
        .collect()
}
