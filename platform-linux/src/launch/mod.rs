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
//! - `COMMCORE_RANK`, `COMMCORE_SIZE`, `COMMCORE_NODE`, `COMMCORE_NODES`, `COMMCORE_HOST`,
//!   `COMMCORE_HOSTS`, and `COMMCORE_JOB` (0 for the first job);
//! - `COMMCORE_SHM_FD`: an inherited descriptor of the job's memory file (a memfd with
//!   owner-only permissions: nothing in `/dev/shm`, gone when the last rank exits), whose
//!   layout ([`crate::shm::Layout`]) tells it where each peer's queues and doorbell are;
//! - `COMMCORE_KV_FD`: its end of the launcher's exchange ([`kv`]), through which it may
//!   also ask for child jobs ([`spawn`]: those get `COMMCORE_PARENT_BRIDGE_FD`,
//!   `COMMCORE_PARENT_SIZE`, `COMMCORE_APPNUM` and `COMMCORE_CPU_OFFSET` besides).
//!
//! Spawned jobs run in the first job's process group and are watched with it: the
//! launcher returns once every process of every job has exited. A spawned job that fails
//! is killed alone, reported in one line ([`JobOutput::spawned_failures`]) and leaves the
//! exit status alone: its parent job sees the failed bridge and decides. A failure of the
//! first job, the timeout or a forwarded signal marks every bridge failed, then ends
//! everything, as for a job without spawns.

mod command;
pub mod exchange;
mod guardian;
pub mod hosts;
pub mod kv;
mod kv_dpm;
mod output;
mod placement;
pub mod pmi1;
#[cfg(feature = "pmix")]
pub mod pmix;
mod serve;
mod signals;
pub mod spawn;
pub mod spawn_wire;
mod starters;
mod supervise;
mod tree;

pub use placement::Placement;
pub use spawn_wire::{SpawnCommand, SpawnRequest, Spawned, SPAWN_ABORTED};
pub use supervise::{
    signal_name, Ending, JobError, JobFailure, JobOutput, SpawnedJobFailure, EXIT_LAUNCHER,
    EXIT_LEFT_EARLY, EXIT_TIMEOUT,
};

/// How long ranks have between a forwarded signal (or a failure) and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(1);

use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::process::Stdio;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::sync::Arc;
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
    /// The job's number in the launcher: 0 for the first job, then one per spawn.
    pub const JOB: &str = "COMMCORE_JOB";
    /// A spawned child: the inherited descriptor of the bridge to its parents.
    pub const PARENT_BRIDGE_FD: &str = "COMMCORE_PARENT_BRIDGE_FD";
    /// A spawned child: the number of parents (the bridge's group A).
    pub const PARENT_SIZE: &str = "COMMCORE_PARENT_SIZE";
    /// A spawned child: the index of its command in the spawn request.
    pub const APPNUM: &str = "COMMCORE_APPNUM";
    /// A spawned child: how many processes the launcher ran before its job, so that the
    /// runtime binds child rank `j` to CPU `(offset + j) mod CPUs`, the CPUs its parents
    /// leave free.
    pub const CPU_OFFSET: &str = "COMMCORE_CPU_OFFSET";
    /// The variables only spawned children get.
    pub const SPAWNED: [&str; 4] = [PARENT_BRIDGE_FD, PARENT_SIZE, APPNUM, CPU_OFFSET];
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
/// names the rank. Jobs the ranks spawn ([`kv::KvClient::spawn`]) run in the same group and
/// are waited for too; one that fails is killed alone (see [`spawn`]).
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
    let network = match spec.hosts {
        1 => None,
        h => {
            Some(hosts::Network::create(h).map_err(|e| fail(JobError::Spec(e.to_string()), None))?)
        }
    };
    let launch = Arc::new(tree::Launch::new(spec, network));
    let (kv_server, kv_ends) =
        kv::KvServer::start_tree(spec.procs, Arc::clone(&launch)).map_err(|e| {
            fail(JobError::Spec(format!("cannot start the key-value exchange: {e}")), None)
        })?;
    let mut pids = Vec::with_capacity(spec.procs);
    let mut group: Option<i32> = None;
    let mut readers = Vec::new();
    let mut capture = None;
    // Ranks may ask for spawns as soon as they run: the tree learns the group and the
    // first job before the exchange may start anything.
    let mut tree = launch.lock();
    for (rank, kv_end) in kv_ends.iter().enumerate() {
        let host = hosts::host_of(rank, spec.procs, spec.hosts);
        let net = launch.network.as_ref().and_then(|n| n.namespace(host)).map(|fd| (fd, host));
        let start = command::Start {
            program: &spec.program,
            args: &spec.args,
            env: [&spec.env, &[]],
            wdir: None,
            rank,
            size: spec.procs,
            node: spec.placement.node_of(rank, spec.procs, spec.nodes),
            nodes: spec.nodes,
            host,
            hosts: spec.hosts,
            job: 0,
            fds: command::RankFds { region: region.fd(), kv: kv_end.as_raw_fd(), net },
            spawned: None,
        };
        let mut command = command::command(&start, group.unwrap_or(0));
        let capture_this = rank == 0 && spec.capture_rank0_stdout;
        if capture_this || launch.by_lines {
            command.stdout(Stdio::piped());
        }
        if launch.by_lines {
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
                if launch.by_lines {
                    readers.extend(launch.lines.forward(&rank.to_string(), &mut child));
                }
                drop(child);
                pids.push(pid);
            }
            Err(error) => {
                let pgid = group.unwrap_or(0);
                if pgid != 0 {
                    supervise::kill_and_reap(pgid);
                }
                tree.closed = true;
                drop(tree);
                if let Some(guardian) = guardian {
                    guardian.release();
                }
                kv_server.stop();
                let program = spec.program.to_string_lossy().into_owned();
                return Err(fail(JobError::Spawn { rank, program, error }, group));
            }
        }
    }
    let pgid = group.unwrap_or(0);
    let mut first = tree::Job::new(region, layout, None);
    first.pids = pids;
    tree.jobs.insert(0, first);
    tree.next_job = 1;
    tree.pgid = pgid;
    drop(tree);
    // The ranks hold their ends; the exchange serves them (and spawned jobs) until the end.
    drop(kv_ends);
    let watch = supervise::Watch { launch: &launch, pgid, timeout: spec.timeout };
    let outcome = watch.run(forwarder.as_ref());
    // Anything a rank started in its group goes with the job.
    // SAFETY: killpg only sends a signal to the job's own process group.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    if let Some(guardian) = guardian {
        guardian.release();
    }
    if dedicated {
        supervise::end_strays();
    }
    // Children were started by the exchange's thread and die with it (their parent-death
    // signal follows the thread that forked them): it stops only now that all are gone.
    kv_server.stop();
    let (spawned_failures, spawned_readers) = {
        let mut tree = launch.lock();
        tree.jobs.clear();
        (std::mem::take(&mut tree.spawned_failures), std::mem::take(&mut tree.readers))
    };
    // The ranks are gone: the kernel removes the hosts' namespaces with the last descriptor.
    drop(launch);
    readers.extend(spawned_readers);
    output::finish(readers);
    let rank0_stdout = capture.map(output::captured).unwrap_or_default();
    match outcome {
        Ok(()) => Ok(JobOutput { rank0_stdout, process_group: pgid, spawned_failures }),
        Err(error) => Err(fail(error, Some(pgid))),
    }
}
