//! Joining the job: reading the launcher's environment (or becoming a singleton), meeting
//! the peers in the shared region, and probing whether single-copy reads work.

use std::fmt;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use commcore::av::{Address, Ave, NodeId, Pgid};
use commcore::cid::{CidSpace, SpaceConfig, SpaceError};
use commcore::rankmap::{RankMap, TableArena};

use super::bootstrap::{self, Foreign, Origin};
use super::engine::{message_peer, Engine};
use super::error::InitError;
use super::job_link;
use super::settings::{self, Settings, TransportSetting, WakeFenceSetting};
use super::{Comm, Runtime, Spin};
use crate::launch::env;
use crate::launch::exchange::Exchange;
use crate::launch::kv::KvClient;
use crate::shm::layout::{RANK_FINALIZED, RANK_JOINED};
use crate::shm::{cma, futex, membarrier, Layout, Region, Ring};
use crate::transport;
use crate::transport::shm::{ShmTransport, WakeFence};

const DEFAULT_SINGLE_COPY_ABOVE: usize = 128 * 1024;
/// How long a request to the launcher's exchange may take (start-up waits for every rank).
const KV_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_SPLIT_COPY_ABOVE: usize = 128 * 1024;

static LAUNCHED_WORLD: AtomicBool = AtomicBool::new(false);

pub(super) fn release_launched_world() {
    LAUNCHED_WORLD.store(false, Release);
}

/// Whether long messages go by single copy, as decided at start-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SingleCopy {
    /// On, for messages above this many bytes.
    On {
        /// The threshold in bytes.
        above: usize,
    },
    /// Turned off by `COMMCORE_SINGLE_COPY=0`.
    Off,
    /// The kernel refused the start-up probe on this many ranks (e.g. ptrace restrictions);
    /// long messages use the pipelined two-copy path.
    Refused {
        /// Ranks whose probe failed.
        ranks: u32,
    },
}

impl fmt::Display for SingleCopy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SingleCopy::On { above } => write!(f, "single-copy (process_vm_readv) above {above} B"),
            SingleCopy::Off => write!(f, "two-copy (single-copy turned off)"),
            SingleCopy::Refused { ranks } => {
                write!(f, "two-copy (the kernel refused process_vm_readv on {ranks} rank(s))")
            }
        }
    }
}

/// This process's membership in the job: its rank, the world and self communicators.
pub struct World {
    comm: Comm,
    self_comm: Comm,
    /// The inter-communicator to the group that spawned this one (`MPI_Comm_get_parent`).
    parent: Option<Comm>,
    av: &'static [Ave],
}

/// How this rank joins the region it met its node in.
struct Join {
    /// Ranks that share the region and meet in it.
    members: usize,
    /// Whether a launcher started the job (ours or another): the rank's slot is then marked
    /// finalized when the runtime ends.
    launched: bool,
    /// The CPU to bind this rank to, if any.
    bind: Option<usize>,
    /// Another launcher's client.
    foreign: Option<Foreign>,
}

impl World {
    /// Joins the job started by `commcore run`, or becomes a singleton world of one rank
    /// when started without it. Only one launched world may exist at a time per process.
    pub fn init() -> Result<World, InitError> {
        Self::init_thread(false)
    }

    /// [`World::init`] for a process whose threads may communicate and create
    /// communicators at the same time (`MPI_THREAD_MULTIPLE`): the highest CID algorithm
    /// then confirms each id, one more allreduce.
    pub fn init_thread_multiple() -> Result<World, InitError> {
        Self::init_thread(true)
    }

    fn init_thread(threaded: bool) -> Result<World, InitError> {
        let settings = settings::install(Settings::from_env().map_err(InitError::Setting)?);
        match bootstrap::origin(|name| std::env::var(name).ok())? {
            Origin::Singleton => Self::singleton(settings, threaded),
            Origin::Launcher => Self::launched(settings, threaded),
            Origin::Foreign(foreign) => Self::foreign(*foreign, settings, threaded),
        }
    }

    /// Joins a job that `commcore run` started: its variables name the rank and the region.
    fn launched(settings: &'static Settings, threaded: bool) -> Result<World, InitError> {
        let bad = |m: String| InitError::Environment(m);
        let var = |name: &str| std::env::var(name).ok();
        let fd_text = var(env::SHM_FD).ok_or_else(|| {
            bad(format!("{} is not set: start the program with `commcore run`", env::SHM_FD))
        })?;
        let number = |name: &str| -> Result<usize, InitError> {
            let text = var(name).ok_or_else(|| bad(format!("{name} is not set")))?;
            text.parse().map_err(|_| bad(format!("{name}={text:?} is not a number")))
        };
        let rank = number(env::RANK)?;
        let size = number(env::SIZE)?;
        let node_count = number(env::NODES)?;
        let fd: i32 = fd_text.parse().map_err(|_| bad(format!("{}={fd_text:?}", env::SHM_FD)))?;
        let layout = Layout::new(size).ok_or_else(|| bad(format!("bad job size {size}")))?;
        if rank >= size {
            return Err(bad(format!("rank {rank} out of range for size {size}")));
        }
        if LAUNCHED_WORLD.swap(true, AcqRel) {
            return Err(bad("this process already joined the job".into()));
        }
        let region = match open_region(fd, &layout, size) {
            Ok(region) => region,
            Err(e) => {
                release_launched_world();
                return Err(e);
            }
        };
        let bind = (size > 1 || settings.cpu_offset.is_some())
            .then(|| settings.cpu_offset.unwrap_or(0) + rank);
        let join = Join { members: size, launched: true, bind, foreign: None };
        Self::enter(region, layout, rank, node_count, settings, join, threaded)
            .inspect_err(|_| release_launched_world())
    }

    /// Joins a job that another launcher started: the ranks of each node meet over its
    /// exchange and share a region of their own ([`bootstrap::node`]).
    fn foreign(
        mut foreign: Foreign,
        settings: &'static Settings,
        threaded: bool,
    ) -> Result<World, InitError> {
        let (rank, size) = (foreign.rank(), foreign.size());
        if LAUNCHED_WORLD.swap(true, AcqRel) {
            return Err(InitError::Environment("this process already joined the job".into()));
        }
        let met = match bootstrap::node::meet(&mut foreign, rank, size, settings) {
            Ok(met) => met,
            Err(e) => {
                release_launched_world();
                return Err(e);
            }
        };
        // Ranks, ports and spawned children may be on other nodes: listen where they reach
        // us (COMMCORE_TCP_IP still decides when set).
        if let Some(ip) = crate::tcp::interface_ip() {
            crate::tcp::set_default_listen_ip(ip);
        }
        // The launcher places ranks (or the user did, around it): bind only when asked.
        let bind = settings.cpu_offset.map(|offset| offset + met.local_index);
        let join = Join { members: met.members, launched: true, bind, foreign: Some(foreign) };
        Self::enter(met.region, met.layout, rank, 1, settings, join, threaded)
            .inspect_err(|_| release_launched_world())
    }

    fn singleton(settings: &'static Settings, threaded: bool) -> Result<World, InitError> {
        let layout = Layout::new(1).ok_or_else(|| InitError::Environment("no layout".into()))?;
        let region = Region::create(layout.region_bytes()).map_err(InitError::Region)?;
        region.atomic_u32(layout.job_size()).store(1, Relaxed);
        region.atomic_u32(layout.nodes()).store(1, Relaxed);
        region.atomic_u64(layout.magic()).store(Layout::MAGIC, Release);
        let join = Join { members: 1, launched: false, bind: None, foreign: None };
        Self::enter(region, layout, 0, 1, settings, join, threaded)
    }

    fn enter(
        region: Region,
        layout: Layout,
        rank: usize,
        node_count: usize,
        settings: &'static Settings,
        mut join: Join,
        threaded: bool,
    ) -> Result<World, InitError> {
        let size = layout.size();
        let launched = join.launched;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let claimed = region.atomic_u32(layout.pid(rank)).compare_exchange(
            0,
            std::process::id(),
            AcqRel,
            Acquire,
        );
        if claimed.is_err() {
            // Another process holds this rank: say so, and still arrive so that nobody waits.
            let _ = region.atomic_u32(layout.duplicate_rank()).compare_exchange(
                0,
                rank as u32 + 1,
                AcqRel,
                Acquire,
            );
            arrive_and_wait(region.atomic_u32(layout.arrived()), join.members);
            return Err(InitError::DuplicateRank { rank });
        }
        region.atomic_u32(layout.state(rank)).store(RANK_JOINED, Release);
        region.atomic_u64(layout.probe_address(rank)).store(cma::probe_address(), Relaxed);
        for (index, (_, word)) in settings.job_wide().into_iter().enumerate() {
            region.atomic_u64(layout.job_setting(rank, index)).store(word, Relaxed);
        }
        region
            .atomic_u32(layout.cpus(rank))
            .store(u32::try_from(cpus).unwrap_or(u32::MAX), Relaxed);
        arrive_and_wait(region.atomic_u32(layout.arrived()), join.members);
        // Every rank fails alike below, so each leaves the job as if it had finalized: a
        // program that handles the error and exits 0 has not left the others waiting.
        let finalized = || region.atomic_u32(layout.state(rank)).store(RANK_FINALIZED, Release);
        if let Some(claimed) =
            region.atomic_u32(layout.duplicate_rank()).load(Acquire).checked_sub(1)
        {
            finalized();
            return Err(InitError::DuplicateRank { rank: claimed as usize });
        }
        let pids: Vec<u32> =
            (0..size).map(|r| region.atomic_u32(layout.pid(r)).load(Relaxed)).collect();
        let hosts: Vec<u32> =
            (0..size).map(|r| region.atomic_u32(layout.host(r)).load(Relaxed)).collect();
        // A node is a node label on a host (`host * labels + label`): ranks on different
        // hosts never share one.
        let host_count = hosts.iter().max().map_or(1, |&h| h as usize + 1);
        let nodes: Vec<u32> = (0..size)
            .map(|r| {
                let label = region.atomic_u32(layout.node(r)).load(Relaxed);
                hosts[r] * node_count as u32 + label
            })
            .collect();
        // Every rank compares every rank's settings with rank 0's, so a difference fails
        // them all alike (before the probe's meeting below, which then nobody waits in).
        if let Some(difference) = settings::difference(&region, &layout) {
            finalized();
            return Err(InitError::SettingsDiffer(difference));
        }

        let wanted = settings.single_copy;
        // The next rank that shares this region (this rank itself when alone).
        let peer = (1..=size)
            .map(|k| (rank + k) % size)
            .find(|&r| hosts[r] == hosts[rank])
            .unwrap_or(rank);
        let mut probe = [0u8; 8];
        let address = region.atomic_u64(layout.probe_address(peer)).load(Relaxed);
        let works = cma::read(pids[peer], address, &mut probe).is_ok()
            && u64::from_ne_bytes(probe) == cma::PROBE_VALUE;
        if !works {
            region.atomic_u32(layout.probe_failures()).fetch_add(1, AcqRel);
        }
        let fence_wanted = settings.wake_fence == WakeFenceSetting::Auto;
        if !(fence_wanted && membarrier::register()) {
            region.atomic_u32(layout.barrier_failures()).fetch_add(1, AcqRel);
        }
        arrive_and_wait(region.atomic_u32(layout.probed()), join.members);
        let failures = region.atomic_u32(layout.probe_failures()).load(Acquire);
        // One rank without the barrier makes the whole job fence on both sides.
        let wake = match region.atomic_u32(layout.barrier_failures()).load(Acquire) {
            0 => WakeFence::Asymmetric,
            _ => WakeFence::Symmetric,
        };
        let above = settings
            .single_copy_above
            .unwrap_or(DEFAULT_SINGLE_COPY_ABOVE)
            .max(Ring::PAYLOAD_BYTES);
        let single_copy = match (wanted, failures) {
            (false, _) => SingleCopy::Off,
            (true, 0) => SingleCopy::On { above },
            (true, ranks) => SingleCopy::Refused { ranks },
        };

        // The fewest CPUs any rank may use, so that every rank makes the same choices
        // where a protocol depends on whether ranks share CPUs.
        let cores = (0..size)
            .map(|r| region.atomic_u32(layout.cpus(r)).load(Relaxed) as usize)
            .min()
            .unwrap_or(cpus)
            .max(1);
        let oversubscribed = size > cores;
        if let Some(cpu) = join.bind {
            super::affinity::bind(cpu, settings.bind);
        }
        // With a core per rank, waiting polls 200 µs like the peers' busy polling (on a busy
        // machine a rank that yields loses its core to other work for a whole time slice);
        // with more ranks than cores it yields after 2 µs so that the peer sharing our core
        // runs at once. Either sleeps after 2 ms.
        let poll_us: u64 = settings.spin_us.unwrap_or(if oversubscribed { 2 } else { 200 });
        // Yielding keeps ranks that share a core taking turns quickly, as Open MPI does when
        // oversubscribed; sleeping after a couple of milliseconds keeps a long wait cheap.
        let yield_us = settings.yield_us.unwrap_or(poll_us.saturating_mul(5).max(2000));
        let spin = Spin {
            poll: Duration::from_micros(poll_us),
            yield_until: Duration::from_micros(yield_us),
        };
        let threshold = matches!(single_copy, SingleCopy::On { .. }).then_some(above);
        let split_above = settings.split_copy_above.unwrap_or(Some(DEFAULT_SPLIT_COPY_ABOVE));
        // TCP or verbs between every pair, not only between hosts.
        let message_only = settings.transport != TransportSetting::Auto;
        // The launcher's exchange, kept for start-up and for spawn and names later.
        let from_launcher = launched && join.foreign.is_none();
        let mut kv = if from_launcher { KvClient::from_env(KV_TIMEOUT).ok() } else { None };
        // `commcore run` names each host's address; another launcher's hosts listen on an
        // interface of their own.
        let away = join.foreign.is_some() && host_count > 1;
        let exchange: Option<&mut dyn Exchange> = match (join.foreign.as_mut(), kv.as_mut()) {
            (Some(foreign), _) => Some(foreign),
            (None, Some(kv)) => Some(kv),
            (None, None) => None,
        };
        // Every rank decides alike which links the job opens and which reaches each peer.
        let job_links = match job_link::join_job(exchange, rank, &hosts, away, settings) {
            Ok(job_links) => job_links,
            Err(error) => {
                finalized();
                return Err(error);
            }
        };
        let av = world_address_vector(&pids, &nodes, &job_links.routes)?;
        let mut links = job_links.links.iter().cloned();
        let mut engine = Engine::new(threshold, split_above, links.next());
        // The engine numbers the further links 1, 2, … in this order, as the routes do.
        links.for_each(|link| {
            engine.add_message_link(link);
        });
        let fabric = ShmTransport { region, layout, rank, size, pids, nodes, node_count, wake };
        let registry = super::registry::Registry::new(av)
            .map_err(|e| InitError::Environment(format!("process group: {e:?}")))?;
        let words: &'static [AtomicU32] =
            Box::leak((0..ARENA_WORDS).map(|_| AtomicU32::new(0)).collect::<Box<[_]>>());
        let runtime = Arc::new(Runtime {
            fabric,
            engine: Mutex::new(engine),
            message_link: job_links.links.first().cloned(),
            links_made: Default::default(),
            areas_enabled: !message_only,
            spin,
            single_copy,
            split_copy_above: split_above,
            launched,
            registry,
            arena: Mutex::new(TableArena::new(words)),
            cids: context_ids(threaded)?,
            cid_algorithm: settings.cid_algorithm,
            cid_allreduces: std::sync::atomic::AtomicU64::new(0),
            areas: super::shm_coll::pool::AreaPool::new(&layout, rank),
            selections: Default::default(),
            oversubscribed,
            cores,
            crowded: Default::default(),
            ports: Default::default(),
            names: Default::default(),
            kv: Mutex::new(kv),
            foreign: Mutex::new(join.foreign),
        });
        let (world_map, self_map) = rank_maps(av, rank)?;
        let coll = InitError::Collectives;
        let comm = Comm::world(runtime.clone(), world_map).map_err(coll)?;
        let self_comm = Comm::own(runtime, self_map).map_err(coll)?;
        let parent = super::dpm::parent(&comm).map_err(InitError::Parent)?;
        // Only now: a spawning parent waits for its children's start, not for this.
        super::shm_coll::prefault_world_area(comm.runtime());
        Ok(World { comm, self_comm, parent, av })
    }

    /// The inter-communicator to the group that spawned this process's group
    /// (`MPI_Comm_get_parent`): its local group is this world, its remote group the parents.
    /// `None` when this job was not spawned.
    pub fn parent(&self) -> Option<&Comm> {
        self.parent.as_ref()
    }

    /// Process groups this process knows now: its world's and every spawned or connected
    /// group a communicator still reaches.
    pub fn process_groups(&self) -> usize {
        self.comm.runtime().registry.len()
    }

    /// Disconnects from the parents (`MPI_Comm_disconnect` on the parent communicator;
    /// collective over both groups): afterwards the two jobs run and end independently.
    pub fn disconnect_parent(&mut self) -> Result<(), super::DpmError> {
        match self.parent.take() {
            Some(parent) => parent.disconnect(),
            None => Ok(()),
        }
    }

    /// The world's address vector (process group 0): one 12-byte entry per rank holding its
    /// shared-memory address (process id in the high half, its slot's offset in the region
    /// in the low half), the shared-memory transport and its node.
    pub fn address_vector(&self) -> &'static [Ave] {
        self.av
    }

    /// The world communicator (`MPI_COMM_WORLD`).
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// The communicator of this process alone (`MPI_COMM_SELF`).
    pub fn self_comm(&self) -> &Comm {
        &self.self_comm
    }

    /// This process's rank in the world.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// The number of ranks in the world.
    pub fn size(&self) -> usize {
        self.comm.size()
    }

    /// This process's node label on its host (given by `commcore run --nodes`).
    pub fn node(&self) -> usize {
        self.node_of(self.rank()).unwrap_or(0)
    }

    /// The node label of world rank `rank` on its host, if the rank exists.
    pub fn node_of(&self, rank: usize) -> Option<usize> {
        let fabric = &self.comm.runtime().fabric;
        fabric.nodes.get(rank).map(|&n| n as usize % fabric.node_count.max(1))
    }

    /// The number of node labels per host.
    pub fn nodes(&self) -> usize {
        self.comm.runtime().fabric.node_count
    }

    /// The host (given by `commcore run --hosts`) of world rank `rank`, if it exists: ranks
    /// on different hosts reach each other over TCP.
    pub fn host_of(&self, rank: usize) -> Option<usize> {
        let fabric = &self.comm.runtime().fabric;
        fabric.nodes.get(rank).map(|&n| n as usize / fabric.node_count.max(1))
    }

    /// Message links (TCP or verbs) this process runs now: its job's (with ranks on other
    /// hosts, or every pair over TCP or verbs) and one per group it met over TCP
    /// (connected, or spawned onto another host) and still reaches.
    pub fn tcp_links(&self) -> usize {
        self.comm.runtime().tcp_links()
    }

    /// The launcher that started this job, in words: `commcore run`, another launcher's
    /// bootstrap (PMI-1, PMIx), or none (a singleton).
    pub fn launcher(&self) -> &'static str {
        let runtime = self.comm.runtime();
        match runtime.foreign().as_ref() {
            Some(foreign) => foreign.name(),
            None if runtime.launched => "commcore run",
            None => "none (a singleton)",
        }
    }

    /// Bytes this rank published to and fetched from another launcher's exchange at
    /// start-up (its node entry, and its TCP address when ranks are on several nodes);
    /// `None` under `commcore run` (which hands the region down) or alone.
    pub fn exchanged_bytes(&self) -> Option<(usize, usize)> {
        self.comm.runtime().foreign().as_ref().map(Foreign::exchanged_bytes)
    }

    /// Ends the whole job now with exit code `code` (`MPI_Abort` on the world): through
    /// another launcher's own abort call when one started the job, so that it reports it
    /// its way; under `commcore run` this rank exits and the launcher ends the others.
    pub fn abort(&self, code: i32, message: &str) -> ! {
        eprintln!("rank {} aborts the job (code {code}): {message}", self.rank());
        // The launcher forwards our words before it ends the job on the abort.
        std::thread::sleep(Duration::from_millis(100));
        let asked = self.comm.runtime().foreign().as_mut().map(|f| f.abort(code, message));
        match asked {
            // The launcher kills the job, this rank with it; the exit below is for a
            // launcher that only reports.
            Some(Ok(())) => std::thread::sleep(Duration::from_secs(2)),
            Some(Err(unsent)) => eprintln!("rank {}: {unsent}", self.rank()),
            None => {}
        }
        std::process::exit(code)
    }

    /// How long messages travel, as decided at start-up.
    pub fn single_copy(&self) -> SingleCopy {
        self.comm.runtime().single_copy
    }
}

/// Builds the world's address vector: rank `r`'s entry names the message transport of its
/// route (TCP or verbs) and its peer number there (the link's number and its world rank)
/// when it has one, else the shared-memory transport and its slot and process id. It lives
/// as long as the process, as MPI's world does (a few bytes per rank, once per
/// `World::init`).
fn world_address_vector(
    pids: &[u32],
    nodes: &[u32],
    routes: &[Option<(usize, commcore::av::TransportId)>],
) -> Result<&'static [Ave], InitError> {
    let entries = (0..pids.len())
        .map(|r| {
            let (address, transport) = match routes[r] {
                Some((link, selector)) => (message_peer(link, r) as u64, selector),
                None => (ShmTransport::address_of(r, pids[r]).0, transport::SHARED_MEMORY),
            };
            Ave::new(Address::Inline(address), transport, NodeId(nodes[r]))
                .map_err(|e| InitError::Environment(format!("rank {r}: {e:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Box::leak(entries.into_boxed_slice()))
}

/// The process's CID space, with the world's and self's ids taken.
fn context_ids(threaded: bool) -> Result<CidSpace<{ super::CID_WORDS }>, InitError> {
    let config = SpaceConfig { width: super::CID_WIDTH, eager: 64, threaded };
    let bad = |e: SpaceError| InitError::Environment(format!("CID space: {e:?}"));
    let space = CidSpace::new(config).map_err(bad)?;
    space.claim(super::comm::WORLD_CID).map_err(bad)?;
    space.claim(super::comm::SELF_CID).map_err(bad)?;
    space.claim(super::comm::BRIDGE_CID).map_err(bad)?;
    Ok(space)
}

/// Words of rank-map table storage per process (leaked with the world, like the AV).
const ARENA_WORDS: usize = 16 * 1024;

/// The world's map (direct) and this rank's self map (offset), over process group 0.
fn rank_maps(
    av: &'static [Ave],
    rank: usize,
) -> Result<(RankMap<'static>, RankMap<'static>), InitError> {
    let pgid = Pgid(0);
    let own = RankMap::contiguous(pgid, av, rank as u32, 1)
        .map_err(|e| InitError::Environment(format!("self rank map: {e:?}")))?;
    Ok((RankMap::direct(pgid, av), own))
}

fn open_region(fd: i32, layout: &Layout, size: usize) -> Result<Region, InitError> {
    let region = Region::open(fd).map_err(InitError::Region)?;
    let invalid = |m: &str| {
        InitError::Region(std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string()))
    };
    if region.len() < layout.region_bytes() {
        return Err(invalid("the shared region is smaller than the job needs"));
    }
    if region.atomic_u64(layout.magic()).load(Acquire) != Layout::MAGIC
        || region.atomic_u32(layout.job_size()).load(Relaxed) as usize != size
    {
        return Err(invalid("the shared region does not belong to this job"));
    }
    Ok(region)
}

/// A one-shot barrier on a counter in shared memory: count in, sleep until all are in.
fn arrive_and_wait(counter: &AtomicU32, size: usize) {
    let mut seen = counter.fetch_add(1, AcqRel) + 1;
    if seen as usize == size {
        futex::wake_all(counter);
        return;
    }
    let since = Instant::now();
    while (seen as usize) < size {
        futex::yield_then_wait(counter, seen, since, Duration::from_millis(10));
        seen = counter.load(Acquire);
    }
}
