//! The launcher behind `commcore run`: starts N ranks of a program on this machine in one
//! process group, hands each its identity and the job's shared region, and ends the whole
//! job as soon as one rank fails or leaves before the job finished.
//!
//! A rank that joined the runtime ([`crate::runtime::World::init`]) marks its slot in the
//! region; its runtime marks it again when it ends (the `World` dropped: finalize). A rank
//! that exits while joined but not finalized left the job early, whatever its exit code, as
//! mpirun reports a process that exits without finalizing; so does a rank that never joined
//! while another rank has joined (the joined one would wait for it forever). A program that
//! never uses the runtime is judged by its exit code alone.
//!
//! As a dedicated launcher ([`JobSpec::dedicated_launcher`], the `commcore` command) it also
//! forwards SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 to the job's process group, sends
//! SIGKILL after a grace period of [`GRACE`], reaps everything and returns; it becomes a
//! child subreaper, so ranks' descendants that leave the process group are still its to end;
//! and a guardian process kills the job's group if the launcher itself is killed with
//! SIGKILL. Ranks also die with the launcher through the parent-death signal
//! (`PR_SET_PDEATHSIG`), which is reset for the processes ranks start, hence the guardian.
//!
//! What a rank receives (read by [`crate::runtime::World::init`]):
//! - `COMMCORE_RANK`, `COMMCORE_SIZE`, `COMMCORE_NODE`, `COMMCORE_NODES`;
//! - `COMMCORE_SHM_FD`: an inherited descriptor of the job's memory file (a memfd with
//!   owner-only permissions: nothing in `/dev/shm`, gone when the last rank exits), whose
//!   layout ([`crate::shm::Layout`]) tells it where each peer's queues and doorbell are.

mod guardian;
pub mod hosts;
pub mod kv;
mod output;
mod placement;
mod signals;
mod supervise;

pub use placement::Placement;
pub use supervise::{
    signal_name, Ending, JobError, JobFailure, JobOutput, EXIT_LAUNCHER, EXIT_LEFT_EARLY,
    EXIT_TIMEOUT,
};

/// How long ranks have between a forwarded signal (or a failure) and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(1);

use std::ffi::OsString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::time::Duration;

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
    /// The host (network namespace) of this process, with `--hosts`.
    pub const HOST: &str = "COMMCORE_HOST";
    /// The number of hosts.
    pub const HOSTS: &str = "COMMCORE_HOSTS";
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
    /// Prefix each line of a rank's output with `[rank] ` (implies forwarding by lines).
    pub tag_output: bool,
    /// This process exists to run the job (the `commcore` command): it handles signals, is
    /// a child subreaper, guards the job against its own death and forwards ranks' output
    /// by whole lines. Off for a library caller, whose process-wide state it leaves alone.
    pub dedicated_launcher: bool,
    /// Network namespaces the ranks are spread over ([`hosts`]); 1: this machine's own.
    pub hosts: usize,
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
            tag_output: false,
            dedicated_launcher: false,
            hosts: 1,
        }
    }

    /// Checks the sizes: `procs` within what the region's layout holds, `nodes` within 1..=procs.
    pub fn validate(&self) -> Result<(), String> {
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
        if self.hosts == 0 || self.hosts > self.procs.min(hosts::HOSTS_MAX) {
            return Err(format!(
                "--hosts must be between 1 and the smaller of -n ({}) and {}, not {}",
                self.procs,
                hosts::HOSTS_MAX,
                self.hosts
            ));
        }
        Ok(())
    }
}

/// Runs a job to its end: every rank ends well → `Ok`; a rank fails or leaves early → every
/// other rank is killed (SIGKILL to the process group), all are reaped, and the failure
/// names the rank.
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
        let host = hosts::host_of(rank, spec.procs, spec.hosts);
        region.atomic_u32(layout.host(rank)).store(host as u32, Relaxed);
    }
    region.atomic_u64(layout.magic()).store(Layout::MAGIC, Release);

    let dedicated = spec.dedicated_launcher;
    let forwarder = dedicated.then(signals::Forwarder::install);
    let mut guardian = None;
    if dedicated {
        // SAFETY: prctl with an integer argument only changes this process's attribute.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
        // Started before any thread of the job, as fork wants.
        guardian = guardian::Guardian::start().ok();
    }
    let lines = output::Lines::new(spec.tag_output);
    let network = match spec.hosts {
        1 => None,
        h => {
            Some(hosts::Network::create(h).map_err(|e| fail(JobError::Spec(e.to_string()), None))?)
        }
    };
    let (kv_server, kv_ends) = kv::KvServer::start(spec.procs).map_err(|e| {
        fail(JobError::Spec(format!("cannot start the key-value exchange: {e}")), None)
    })?;
    let mut pids = Vec::with_capacity(spec.procs);
    let mut group: Option<i32> = None;
    let mut readers = Vec::new();
    let mut capture = None;
    for (rank, kv_end) in kv_ends.iter().enumerate() {
        let host = hosts::host_of(rank, spec.procs, spec.hosts);
        let net = network.as_ref().and_then(|n| n.namespace(host)).map(|fd| (fd, host));
        let fds = RankFds { region: region.fd(), kv: kv_end.as_raw_fd(), net };
        let mut command = rank_command(spec, rank, fds, group.unwrap_or(0));
        let capture_this = rank == 0 && spec.capture_rank0_stdout;
        let by_lines = dedicated || spec.tag_output;
        if capture_this || by_lines {
            command.stdout(Stdio::piped());
        }
        if by_lines {
            command.stderr(Stdio::piped());
        }
        match command.spawn() {
            Ok(mut child) => {
                let pid = child.id() as i32;
                if group.is_none() {
                    group = Some(pid);
                    if let Some(guardian) = &mut guardian {
                        guardian.watch(pid);
                    }
                }
                if capture_this {
                    capture = child.stdout.take().map(output::capture);
                }
                if by_lines {
                    readers.extend(lines.forward(rank, &mut child));
                }
                drop(child);
                pids.push(pid);
            }
            Err(error) => {
                let pgid = group.unwrap_or(0);
                if pgid != 0 {
                    supervise::kill_and_reap(pgid, &mut pids);
                }
                if let Some(guardian) = guardian {
                    guardian.release();
                }
                let program = spec.program.to_string_lossy().into_owned();
                return Err(fail(JobError::Spawn { rank, program, error }, group));
            }
        }
    }
    // The ranks hold their ends; the exchange ends when they all closed them.
    drop(kv_ends);
    let pgid = group.unwrap_or(0);
    let watch = supervise::Watch { region: &region, layout: &layout, pgid, timeout: spec.timeout };
    let outcome = watch.run(&mut pids, forwarder.as_ref());
    // Anything a rank started in its group goes with the job.
    // SAFETY: killpg only sends a signal to the job's own process group.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    if let Some(guardian) = guardian {
        guardian.release();
    }
    if dedicated {
        supervise::end_strays();
    }
    drop(region);
    drop(kv_server);
    // The ranks are gone: the kernel removes the hosts' namespaces with the last descriptor.
    drop(network);
    output::finish(readers);
    let rank0_stdout = capture.map(output::captured).unwrap_or_default();
    match outcome {
        Ok(()) => Ok(JobOutput { rank0_stdout, process_group: pgid }),
        Err(error) => Err(fail(error, Some(pgid))),
    }
}

/// The descriptors a rank inherits: the job's region, its end of the key-value exchange,
/// and with `--hosts` its host's network namespace (and the host's number).
struct RankFds {
    region: i32,
    kv: i32,
    net: Option<(i32, usize)>,
}

/// The command that starts `rank`, in process group `pgid` (0: a new one).
fn rank_command(spec: &JobSpec, rank: usize, fds: RankFds, pgid: i32) -> Command {
    let RankFds { region: fd, kv: kv_fd, net } = fds;
    let node = spec.placement.node_of(rank, spec.procs, spec.nodes);
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(env::RANK, rank.to_string())
        .env(env::SIZE, spec.procs.to_string())
        .env(env::NODE, node.to_string())
        .env(env::NODES, spec.nodes.to_string())
        .env(env::SHM_FD, fd.to_string())
        .env(kv::ENV_FD, kv_fd.to_string())
        .env(env::HOST, hosts::host_of(rank, spec.procs, spec.hosts).to_string())
        .env(env::HOSTS, spec.hosts.to_string())
        .stdin(Stdio::null())
        .process_group(pgid);
    if let Some((_, host)) = net {
        command.env(crate::tcp::ENV_LISTEN_IP, hosts::Network::address(host).to_string());
    }
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (fcntl, setns, prctl, signal) on values copied in.
    unsafe {
        command.pre_exec(move || {
            // Keep the region's descriptor across exec (it is close-on-exec in the launcher;
            // the rank makes it close-on-exec again once it has mapped it).
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 || libc::fcntl(kv_fd, libc::F_SETFD, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some((namespace, _)) = net {
                hosts::enter(namespace)?;
            }
            // Die with the launcher, so a killed launcher leaves no ranks behind.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // A launcher started with `&` by a script inherits SIGINT ignored, and an
            // ignored signal stays ignored across exec: give ranks the defaults.
            for signal in signals::FORWARDED {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        })
    };
    command
}
