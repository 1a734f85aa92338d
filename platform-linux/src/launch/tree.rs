//! The launcher's jobs: the first job (0) and every job spawned from it, with their
//! regions, processes and bridges, and the names they published. The exchange's thread
//! adds jobs (spawn), drops bridges (disconnect, release) and serves names; the supervisor
//! reaps processes and fails jobs. Both work under one lock, so a pid is never reaped
//! before the job that started it knows it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering::Acquire;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use super::output::Lines;
use super::supervise::SpawnedJobFailure;
use crate::dpm::names_wire::{Refusal, Request};
use crate::dpm::nameserver::MAX_NAMES;
use crate::shm::bridge::{FAILED_A, FAILED_B};
use crate::shm::layout::{RANK_FINALIZED, RANK_JOINED};
use crate::shm::{Bridge, Layout, Region};

/// Bridges registered at once (accept/connect between launchers), over all jobs.
pub const REGISTERED_MAX: usize = 4096;
/// Spawned jobs' failures kept for [`super::JobOutput`] (each is printed anyway).
pub const FAILURES_KEPT: usize = 1024;

/// A spawned job's link to the job that spawned it, until it disconnects.
pub(super) struct ParentLink {
    pub job: u64,
    pub bridge: Bridge,
}

/// One job of the tree.
pub(super) struct Job {
    pub region: Region,
    pub layout: Layout,
    /// Each rank's pid; 0 once reaped.
    pub pids: Vec<i32>,
    pub parent: Option<ParentLink>,
    /// Ranks that exited with code 0 without joining the runtime.
    pub unjoined_exits: Vec<usize>,
    /// Failed and being killed: its ranks' ends are no longer judged.
    pub failed: bool,
}

impl Job {
    pub fn new(region: Region, layout: Layout, parent: Option<ParentLink>) -> Job {
        Job { region, layout, pids: Vec::new(), parent, unjoined_exits: Vec::new(), failed: false }
    }

    /// Where `rank` is in its life ([`RANK_JOINED`], [`RANK_FINALIZED`] or 0).
    pub fn state(&self, rank: usize) -> u32 {
        self.region.atomic_u32(self.layout.state(rank)).load(Acquire)
    }

    /// The host `rank` runs in.
    pub fn host(&self, rank: usize) -> usize {
        self.region.atomic_u32(self.layout.host(rank)).load(Acquire) as usize
    }

    fn live(&self) -> usize {
        self.pids.iter().filter(|&&p| p != 0).count()
    }

    /// A rank that exited 0 without joining while another waits for it in the runtime.
    pub fn abandoned(&self) -> Option<usize> {
        let waiting =
            (0..self.pids.len()).any(|r| self.pids[r] != 0 && self.state(r) == RANK_JOINED);
        self.unjoined_exits.first().copied().filter(|_| waiting)
    }

    /// Notes that `rank`, which had not joined or had finalized, exited with code 0.
    pub fn exited_cleanly(&mut self, rank: usize) {
        if self.state(rank) != RANK_FINALIZED {
            self.unjoined_exits.push(rank);
        }
    }
}

/// A bridge a job registered after accept/connect.
struct Registered {
    job: u64,
    bridge: Bridge,
    side_a: bool,
}

/// The jobs and names of one launcher.
pub(super) struct Tree {
    pub jobs: BTreeMap<u64, Job>,
    pub next_job: u64,
    next_bridge: u64,
    registered: HashMap<u64, Registered>,
    names: HashMap<String, (u64, String)>,
    /// Set once the supervisor has decided the tree's end: no job may start after it.
    pub closed: bool,
    /// The first job's process group, where every job runs.
    pub pgid: i32,
    /// Output readers of spawned children, joined once they finish.
    pub readers: Vec<JoinHandle<()>>,
    pub spawned_failures: Vec<SpawnedJobFailure>,
}

/// The tree with what a spawn needs that does not change: the first job's extra
/// environment, the hosts and how output is forwarded.
pub(super) struct Launch {
    tree: Mutex<Tree>,
    pub env: Vec<(String, String)>,
    pub hosts: usize,
    pub network: Option<super::hosts::Network>,
    pub lines: Lines,
    pub by_lines: bool,
}

impl Launch {
    pub fn new(spec: &super::JobSpec, network: Option<super::hosts::Network>) -> Launch {
        let tree = Tree {
            jobs: BTreeMap::new(),
            next_job: 0,
            next_bridge: 0,
            registered: HashMap::new(),
            names: HashMap::new(),
            closed: false,
            pgid: 0,
            readers: Vec::new(),
            spawned_failures: Vec::new(),
        };
        Launch {
            tree: Mutex::new(tree),
            env: spec.env.clone(),
            hosts: spec.hosts,
            network,
            lines: Lines::new(spec.tag_output),
            by_lines: spec.dedicated_launcher || spec.tag_output,
        }
    }

    /// The tree, locked (a panic elsewhere does not stop the launcher from ending jobs).
    pub fn lock(&self) -> MutexGuard<'_, Tree> {
        self.tree.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Tree {
    /// Processes of every job not yet reaped.
    pub fn live(&self) -> usize {
        self.jobs.values().map(Job::live).sum()
    }

    /// The job and rank of process `pid`.
    pub fn find(&self, pid: i32) -> Option<(u64, usize)> {
        self.jobs
            .iter()
            .find_map(|(&id, job)| job.pids.iter().position(|&p| p == pid).map(|r| (id, r)))
    }

    /// Marks every bridge of a job: its own to its parent, and those it registered.
    fn mark(&self, id: u64, parent_side: u32) {
        if let Some(link) = self.jobs.get(&id).and_then(|job| job.parent.as_ref()) {
            link.bridge.fail(parent_side);
        }
        for registered in self.registered.values().filter(|r| r.job == id) {
            registered.bridge.fail(if registered.side_a { FAILED_A } else { FAILED_B });
        }
    }

    /// The first job failed (or the tree ends badly): every bridge is marked, a parent's
    /// side first, before the whole group is killed.
    pub fn fail_all(&mut self) {
        for job in self.jobs.values_mut() {
            if let Some(link) = &job.parent {
                link.bridge.fail(FAILED_A);
            }
            job.failed = true;
        }
        for registered in self.registered.values() {
            registered.bridge.fail(if registered.side_a { FAILED_A } else { FAILED_B });
        }
    }

    /// Spawned job `id` failed: marks its bridge (its side, B), kills its processes and
    /// those of the jobs it spawned and is still connected to (their parent failed: A).
    /// Returns the jobs killed with it.
    pub fn fail_spawned(&mut self, id: u64) -> Vec<u64> {
        let mut with_it = Vec::new();
        let mut queue = vec![(id, FAILED_B)];
        while let Some((next, side)) = queue.pop() {
            let Some(job) = self.jobs.get_mut(&next) else { continue };
            if job.failed {
                continue;
            }
            job.failed = true;
            for &pid in job.pids.iter().filter(|&&p| p != 0) {
                // SAFETY: kill only sends a signal; an unreaped pid is still our child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            self.mark(next, side);
            if next != id {
                with_it.push(next);
            }
            let children =
                self.jobs.iter().filter(|(_, j)| j.parent.as_ref().is_some_and(|l| l.job == next));
            queue.extend(children.map(|(&child, _)| (child, FAILED_A)));
        }
        with_it
    }

    /// Removes what ended jobs leave: their names and registered bridges; spawned jobs
    /// whose processes are all reaped go with their regions and bridges.
    pub fn retire_finished(&mut self) {
        let ended: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(_, job)| job.live() == 0 && !job.pids.is_empty())
            .map(|(&id, _)| id)
            .collect();
        for id in ended {
            self.names.retain(|_, (owner, _)| *owner != id);
            self.registered.retain(|_, r| r.job != id);
            if id != 0 {
                self.jobs.remove(&id);
            }
        }
        self.join_finished_readers();
    }

    /// Joins the output readers that finished: a finished thread keeps its stack until
    /// joined.
    pub fn join_finished_readers(&mut self) {
        let (done, running): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.readers).into_iter().partition(JoinHandle::is_finished);
        self.readers = running;
        for reader in done {
            let _ = reader.join();
        }
    }

    /// Job `requester` disconnected from its child `child`: the link goes (the launcher no
    /// longer marks it, and the jobs end independently). Disconnecting a job that already
    /// ended, or again, is fine; one that is not the requester's child is refused.
    pub fn disconnect(&mut self, requester: u64, child: u64) -> Result<(), String> {
        match self.jobs.get_mut(&child) {
            Some(job) => match &job.parent {
                Some(link) if link.job == requester => {
                    job.parent = None;
                    Ok(())
                }
                None => Ok(()),
                Some(_) => Err(format!("job {child} is not a child of job {requester}")),
            },
            None if child < self.next_job && child != 0 => Ok(()),
            None => Err(format!("no job {child} was spawned")),
        }
    }

    /// Registers a bridge of job `job`, marked if the job fails; returns its number.
    pub fn register(&mut self, job: u64, bridge: Bridge, side_a: bool) -> Result<u64, String> {
        if self.registered.len() >= REGISTERED_MAX {
            return Err(format!("{REGISTERED_MAX} bridges are registered: release some"));
        }
        let id = self.next_bridge;
        self.next_bridge += 1;
        self.registered.insert(id, Registered { job, bridge, side_a });
        Ok(id)
    }

    /// Releases bridge `id` of job `job`.
    pub fn release(&mut self, job: u64, id: u64) -> Result<(), String> {
        match self.registered.get(&id) {
            Some(r) if r.job == job => {
                self.registered.remove(&id);
                Ok(())
            }
            Some(_) => Err(format!("bridge {id} was registered by another job")),
            None => Err(format!("no bridge {id} is registered")),
        }
    }

    /// A name-service request of job `job`, with the name server's rules: a name is its
    /// publishing job's until unpublished or that job ends.
    pub fn names(&mut self, job: u64, request: Request<'_>) -> Result<Option<String>, Refusal> {
        match request {
            Request::Publish { name, port } => {
                if self.names.contains_key(name) {
                    return Err(Refusal::AlreadyPublished);
                }
                if self.names.len() >= MAX_NAMES {
                    return Err(Refusal::Full);
                }
                self.names.insert(name.into(), (job, port.into()));
                Ok(None)
            }
            Request::Lookup(name) => self
                .names
                .get(name)
                .map(|(_, port)| Some(port.clone()))
                .ok_or(Refusal::NotPublished),
            Request::Unpublish(name) => match self.names.get(name) {
                None => Err(Refusal::NotPublished),
                Some((owner, _)) if *owner != job => Err(Refusal::NotOwner),
                Some(_) => {
                    self.names.remove(name);
                    Ok(None)
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::BorrowedFd;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Child, Command};

    use super::*;
    use crate::launch::JobSpec;

    fn sleeper() -> Child {
        Command::new("sleep").arg("60").spawn().unwrap()
    }

    fn job(child: &Child, parent: Option<ParentLink>) -> Job {
        let layout = Layout::new(1).unwrap();
        let mut job = Job::new(Region::create(layout.region_bytes()).unwrap(), layout, parent);
        job.pids = vec![child.id() as i32];
        job
    }

    /// A second mapping of `bridge`, as another process would hold it.
    fn view(bridge: &Bridge) -> Bridge {
        // SAFETY: the bridge's region owns the descriptor for the length of the borrow.
        let fd = unsafe { BorrowedFd::borrow_raw(bridge.region.fd()) };
        Bridge::open(Region::from_owned(fd.try_clone_to_owned().unwrap()).unwrap()).unwrap()
    }

    fn link(job: u64) -> (ParentLink, Bridge) {
        let bridge = Bridge::create(1, 1).unwrap();
        let seen = view(&bridge);
        (ParentLink { job, bridge }, seen)
    }

    fn killed(child: &mut Child) -> bool {
        child.wait().unwrap().signal() == Some(libc::SIGKILL)
    }

    #[test]
    fn a_failed_job_takes_its_connected_children_and_marks_each_side() {
        let launch = Launch::new(&JobSpec::new(1, "true"), None);
        let mut tree = launch.lock();
        let mut procs: Vec<Child> = (0..4).map(|_| sleeper()).collect();
        let (link1, seen1) = link(0);
        let (link2, seen2) = link(1);
        tree.jobs.insert(0, job(&procs[0], None));
        tree.jobs.insert(1, job(&procs[1], Some(link1)));
        tree.jobs.insert(2, job(&procs[2], Some(link2)));
        // Job 3 was spawned by job 1 and disconnected: it goes on alone.
        tree.jobs.insert(3, job(&procs[3], None));
        tree.next_job = 4;
        let (a, b) = (Bridge::create(1, 1).unwrap(), Bridge::create(1, 1).unwrap());
        let (seen_a, seen_b) = (view(&a), view(&b));
        let id_a = tree.register(1, a, true).unwrap();
        tree.register(0, b, false).unwrap();

        assert_eq!(tree.fail_spawned(1), [2]);
        assert_eq!(seen1.failure(), Some(FAILED_B), "the failed job's own bridge");
        assert_eq!(seen2.failure(), Some(FAILED_A), "its child's: the parent side failed");
        assert_eq!(seen_a.failure(), Some(FAILED_A), "a bridge job 1 registered as side A");
        assert_eq!(seen_b.failure(), None, "job 0 goes on");
        assert!(killed(&mut procs[1]) && killed(&mut procs[2]));
        assert!(procs[3].try_wait().unwrap().is_none(), "a disconnected job is not killed");
        assert!(procs[0].try_wait().unwrap().is_none());
        assert!(tree.release(1, id_a).is_ok() && tree.release(1, id_a).is_err());

        // The first job fails: everything is marked before the group is killed.
        tree.fail_all();
        assert_eq!(seen_b.failure(), Some(FAILED_B), "registered as side B");
        for index in [0, 3] {
            procs[index].kill().unwrap();
            procs[index].wait().unwrap();
        }
        for job in tree.jobs.values_mut() {
            job.pids.fill(0);
        }
        tree.retire_finished();
        assert_eq!(tree.jobs.keys().copied().collect::<Vec<_>>(), [0]);
        assert_eq!(tree.live(), 0);
    }

    #[test]
    fn disconnect_and_names_follow_their_jobs() {
        let launch = Launch::new(&JobSpec::new(1, "true"), None);
        let mut tree = launch.lock();
        let mut procs: Vec<Child> = (0..2).map(|_| sleeper()).collect();
        let (link1, seen1) = link(0);
        tree.jobs.insert(0, job(&procs[0], None));
        tree.jobs.insert(1, job(&procs[1], Some(link1)));
        tree.next_job = 2;
        let publish = Request::Publish { name: "svc", port: "p" };
        assert_eq!(tree.names(1, publish), Ok(None));
        assert_eq!(tree.names(0, publish), Err(Refusal::AlreadyPublished));
        assert_eq!(tree.names(0, Request::Lookup("svc")), Ok(Some("p".into())));
        assert_eq!(tree.names(0, Request::Unpublish("svc")), Err(Refusal::NotOwner));
        assert!(tree.disconnect(1, 1).is_err(), "job 1 is not its own child");
        assert!(tree.disconnect(0, 7).is_err(), "never spawned");
        assert!(tree.disconnect(0, 1).is_ok() && tree.disconnect(0, 1).is_ok());
        // Disconnected: its failure no longer reaches the bridge.
        tree.fail_spawned(1);
        assert_eq!(seen1.failure(), None);
        assert!(killed(&mut procs[1]));
        tree.jobs.get_mut(&1).unwrap().pids[0] = 0;
        tree.retire_finished();
        assert_eq!(tree.names(0, Request::Lookup("svc")), Err(Refusal::NotPublished));
        assert!(tree.disconnect(0, 1).is_ok(), "a job that ended");
        procs[0].kill().unwrap();
        procs[0].wait().unwrap();
    }
}
