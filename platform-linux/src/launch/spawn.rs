//! Spawned jobs: what the launcher does when a rank asks it to start a child job
//! ([`super::kv::KvClient::spawn`], `MPI_Comm_spawn` and `MPI_Comm_spawn_multiple`).
//!
//! The child job has `b` ranks, the sum of the commands' `maxprocs` (1 to
//! [`MAX_RANKS`]); it gets a region of its own laid out as the first job's, one node label
//! per host, an exchange of its own (served by the same launcher, so it can spawn in turn),
//! and a bridge region ([`crate::shm::bridge`]) between the `a` parents (group A, slots
//! `0..a`) and the children (group B). Children run in the first job's process group, die
//! with the launcher, and receive the usual variables plus:
//!
//! | variable                    | value                                                   |
//! |-----------------------------|---------------------------------------------------------|
//! | `COMMCORE_PARENT_BRIDGE_FD` | an inherited descriptor of the bridge                   |
//! | `COMMCORE_PARENT_SIZE`      | `a`                                                     |
//! | `COMMCORE_JOB`              | the child job's number (the first job is 0)             |
//! | `COMMCORE_APPNUM`           | the index of the child's command in the request        |
//! | `COMMCORE_CPU_OFFSET`       | processes alive in the launcher before these children   |
//!
//! Children start in the requesting rank's host unless a command names one. If a child
//! cannot start, the children already started are killed and reaped before the reply,
//! which carries one code per child: 0, the `errno` of one that could not start, or
//! [`SPAWN_ABORTED`] for one killed because a sibling failed.
//!
//! Supervision: a child that exits before finalizing or is killed fails its own job
//! only: the launcher kills that job's processes (and those of the jobs it spawned and is
//! still connected to), marks its bridge [`FAILED_B`](crate::shm::bridge::FAILED_B),
//! prints one line naming the job and rank, and the parent job goes on. Once the parent
//! disconnects ([`super::kv::KvClient::disconnect`]) the launcher drops the bridge and the
//! two jobs end independently.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::sync::atomic::Ordering::{Relaxed, Release};

use super::command::{self, RankFds, SpawnedChild};
use super::spawn_wire::{SpawnRequest, SPAWN_ABORTED};
use super::starters;
use super::tree::{Job, Launch, ParentLink};
use crate::shm::layout::MAX_RANKS;
use crate::shm::{Bridge, Layout, Region};

/// What became of a spawn request.
pub(super) enum Outcome {
    /// Every child started.
    Started {
        job: u64,
        size: usize,
        /// The launcher's ends of the children's exchange, rank by rank.
        sockets: Vec<UnixStream>,
        /// A descriptor of the bridge for the requesting rank.
        bridge: OwnedFd,
    },
    /// A child could not start; nothing of the job is left.
    Failed { errcodes: Vec<i32>, message: String },
    /// The request is invalid or the launcher cannot serve it; nothing was started.
    Refused(String),
}

fn refuse(why: impl Into<String>) -> Outcome {
    Outcome::Refused(why.into())
}

/// Checks the request's sizes and hosts; the child job's size.
fn validate(launch: &Launch, request: &SpawnRequest) -> Result<usize, String> {
    if request.commands.iter().any(|c| c.maxprocs == 0) {
        return Err("maxprocs must be at least 1 for every command".into());
    }
    let size = request.commands.iter().fold(0usize, |sum, c| sum.saturating_add(c.maxprocs));
    if size > MAX_RANKS {
        return Err(format!("a spawn starts at most {MAX_RANKS} processes, not {size}"));
    }
    if !(1..=MAX_RANKS).contains(&request.parent_size) {
        return Err(format!(
            "the parent group has 1 to {MAX_RANKS} processes, not {}",
            request.parent_size
        ));
    }
    if !request.parent_nodes.is_empty() && request.parent_nodes.len() != request.parent_size {
        return Err(format!(
            "{} parent nodes for {} parents: give one per parent or none",
            request.parent_nodes.len(),
            request.parent_size
        ));
    }
    if let Some(host) = request.commands.iter().filter_map(|c| c.host).find(|&h| h >= launch.hosts)
    {
        return Err(format!("host {host} does not exist: the job has {} host(s)", launch.hosts));
    }
    Ok(size)
}

/// Starts the child job `request` describes for rank `rank` of job `parent`.
pub(super) fn start(
    launch: &Launch,
    (parent, rank): (u64, usize),
    request: &SpawnRequest,
) -> Outcome {
    let size = match validate(launch, request) {
        Ok(size) => size,
        Err(why) => return refuse(why),
    };
    let Some(layout) = Layout::new(size) else { return refuse("bad size") };
    // Held until the children's pids are in the tree: the supervisor reaps under it.
    let mut tree = launch.lock();
    if tree.closed {
        return refuse("the launcher is ending its jobs");
    }
    // Readers of children a failed spawn killed end without a reap to join them.
    tree.join_finished_readers();
    let home = match tree.jobs.get(&parent) {
        Some(job) if !job.failed => job.host(rank),
        _ => return refuse(format!("job {parent} is not running")),
    };
    let hosts: Vec<usize> = request
        .commands
        .iter()
        .flat_map(|c| std::iter::repeat(c.host.unwrap_or(home)).take(c.maxprocs))
        .collect();
    let region = match Region::create(layout.region_bytes()) {
        Ok(region) => region,
        Err(e) => return refuse(format!("cannot create the child job's region: {e}")),
    };
    region.atomic_u32(layout.job_size()).store(size as u32, Relaxed);
    region.atomic_u32(layout.nodes()).store(1, Relaxed);
    for (child, &host) in hosts.iter().enumerate() {
        region.atomic_u32(layout.host(child)).store(host as u32, Relaxed);
    }
    region.atomic_u64(layout.magic()).store(Layout::MAGIC, Release);
    let bridge = match Bridge::create(request.parent_size, size) {
        Ok(bridge) => bridge,
        Err(e) => return refuse(format!("cannot create the bridge: {e}")),
    };
    for (slot, &node) in request.parent_nodes.iter().enumerate() {
        bridge.word(bridge.layout.node(slot)).store(node, Relaxed);
    }
    // SAFETY: the bridge's region owns this descriptor and outlives the borrow.
    let reply_fd = match unsafe { BorrowedFd::borrow_raw(bridge.region.fd()) }.try_clone_to_owned()
    {
        Ok(fd) => fd,
        Err(e) => return refuse(format!("cannot copy the bridge's descriptor: {e}")),
    };
    let mut ours = Vec::with_capacity(size);
    let mut theirs = Vec::with_capacity(size);
    for _ in 0..size {
        match UnixStream::pair() {
            Ok((a, b)) => {
                ours.push(a);
                theirs.push(b);
            }
            Err(e) => return refuse(format!("cannot make the child job's exchange: {e}")),
        }
    }
    let job = tree.next_job;
    tree.next_job += 1;
    let offset = tree.live();
    let pgid = tree.pgid;

    let mut commands = Vec::with_capacity(size);
    let mut programs = Vec::with_capacity(size);
    let mut child_rank = 0;
    for (appnum, c) in request.commands.iter().enumerate() {
        for _ in 0..c.maxprocs {
            let host = hosts[child_rank];
            let net = launch.network.as_ref().and_then(|n| n.namespace(host)).map(|fd| (fd, host));
            let start = command::Start {
                program: &c.program,
                args: &c.args,
                env: [&launch.env, &c.env],
                wdir: c.wdir.as_deref(),
                rank: child_rank,
                size,
                node: 0,
                nodes: 1,
                host,
                hosts: launch.hosts,
                job,
                fds: RankFds { region: region.fd(), kv: theirs[child_rank].as_raw_fd(), net },
                spawned: Some(SpawnedChild {
                    bridge: bridge.region.fd(),
                    parent_size: request.parent_size,
                    appnum,
                    cpu_offset: offset,
                }),
            };
            let mut command = command::command(&start, pgid);
            if launch.by_lines {
                command.stdout(Stdio::piped()).stderr(Stdio::piped());
            }
            commands.push(command);
            programs.push(&c.program);
            child_rank += 1;
        }
    }
    let outcomes = starters::start_all(commands);
    let mut pids = Vec::with_capacity(size);
    let mut errcodes = Vec::with_capacity(size);
    let mut message = None;
    for (child_rank, (outcome, program)) in outcomes.into_iter().zip(programs).enumerate() {
        match outcome {
            Ok(mut child) => {
                pids.push(child.id() as i32);
                errcodes.push(0);
                if launch.by_lines {
                    let label = format!("{job}.{child_rank}");
                    let readers = launch.lines.forward(&label, &mut child);
                    tree.readers.extend(readers);
                }
            }
            Err(e) => {
                pids.push(0);
                errcodes.push(e.raw_os_error().unwrap_or(libc::EINVAL));
                message.get_or_insert_with(|| {
                    let program = program.to_string_lossy();
                    format!("cannot start rank {child_rank} of job {job} ({program}): {e}")
                });
            }
        }
    }
    // The children hold their ends now.
    drop(theirs);
    if let Some(message) = message {
        for (pid, code) in pids.iter().zip(errcodes.iter_mut()).filter(|(&p, _)| p != 0) {
            // SAFETY: kill and waitpid on a child this launcher just started and nobody else
            // reaps while the tree is locked.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
                libc::waitpid(*pid, std::ptr::null_mut(), 0);
            }
            *code = SPAWN_ABORTED;
        }
        return Outcome::Failed { errcodes, message };
    }
    let mut entry = Job::new(region, layout, Some(ParentLink { job: parent, bridge }));
    entry.pids = pids;
    tree.jobs.insert(job, entry);
    Outcome::Started { job, size, sockets: ours, bridge: reply_fd }
}
