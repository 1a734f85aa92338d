//! The runtime: real processes exchanging messages over the job's shared region, behind an
//! API that reads like MPI.
//!
//! ```no_run
//! use commcore_linux::runtime::{World, ANY_SOURCE, ANY_TAG};
//! let world = World::init()?;
//! let comm = world.comm();
//! if comm.rank() == 0 {
//!     comm.send(b"ping", 1, 7)?;
//! } else if comm.rank() == 1 {
//!     let mut buf = [0u8; 4];
//!     let status = comm.recv(&mut buf, ANY_SOURCE, ANY_TAG)?;
//!     assert_eq!((status.source, status.tag, status.len), (0, 7, 4));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Transfers: a message that fits one ring cell is copied in and out (eager); a longer one is
//! announced and read by the receiver straight from the sender's memory with
//! `process_vm_readv` (single copy) when the kernel allows it, probed at start-up and
//! reported by [`World::single_copy`]; otherwise it streams through the ring in cell-sized
//! pieces that the receiver copies out while the sender writes more (pipelined two-copy).
//! Waiting spins briefly, yields, then sleeps on a futex, so more ranks than cores do not
//! burn the machine. A rank about to sleep runs a process-wide barrier (`membarrier`), so
//! that senders check for sleepers without a fence of their own (see `fabric.rs`).

mod affinity;
mod bootstrap;
mod coll;
mod coll_selection;
mod comm;
mod dpm;
mod engine;
mod error;
mod foreign_launcher;
mod init;
mod job_link;
mod layout_words;
mod registry;
mod request;
pub(crate) mod settings;
mod shm_coll;

pub use comm::create::UNDEFINED;
pub use comm::group::MAX_GROUP_TAG;
pub use comm::Comm;
pub use dpm::{DpmError, SpawnCommand, SpawnOptions};
pub use error::{CollectiveError, CommError, InitError, P2pError};
pub use init::{SingleCopy, World};
pub use request::{Request, RequestSet, Status};
pub use settings::{
    Bind, Difference, SettingDoc, SettingError, Settings, TransportSetting, WakeFenceSetting,
    ENV_BIND, ENV_CID_ALGORITHM, ENV_COLL, ENV_COLL_SPIN_US, ENV_CPU_OFFSET, ENV_SHM_MAX,
    ENV_SHM_SINGLE_COPY_FROM, ENV_SINGLE_COPY, ENV_SINGLE_COPY_ABOVE, ENV_SPIN_US,
    ENV_SPLIT_COPY_ABOVE, ENV_TCP_SEND_TIMEOUT_MS, ENV_TRANSPORT, ENV_WAKE_FENCE, ENV_YIELD_US,
    SETTINGS,
};

use std::sync::{Mutex, MutexGuard, PoisonError};

use commcore::cid::{Algorithm, CidSpace};
use commcore::rankmap::TableArena;
use std::time::{Duration, Instant};

use crate::shm::bridge::Bridge;
use crate::transport::shm::ShmTransport;
use crate::transport::{self as transports, Route};
use comm::context_id;
use engine::{Engine, GuestInbox, MessageLink, Peer};
use std::sync::Arc;

/// Any tag, for receives.
pub const ANY_TAG: i32 = -1;

/// The largest message in bytes (MPI's `int` count of bytes).
pub const MAX_MESSAGE_BYTES: usize = i32::MAX as usize;

/// Where a receive accepts messages from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Any rank of the communicator.
    Any,
    /// This rank of the communicator.
    Rank(usize),
}

/// Any source, for receives.
pub const ANY_SOURCE: Source = Source::Any;

impl From<usize> for Source {
    fn from(rank: usize) -> Source {
        Source::Rank(rank)
    }
}

/// How long a waiter polls, then yields the CPU between polls, before it sleeps.
#[derive(Clone, Copy, Debug)]
struct Spin {
    poll: Duration,
    yield_until: Duration,
}

/// The selectors of message transports (TCP, verbs), a range so that routing tests both
/// at once.
const MESSAGE_SELECTORS_FROM: u8 = transports::TCP.0;
const MESSAGE_SELECTORS_TO: u8 = transports::VERBS.0;
const _: () = assert!(MESSAGE_SELECTORS_TO == MESSAGE_SELECTORS_FROM + 1);

pub(crate) struct Runtime {
    fabric: ShmTransport,
    engine: Mutex<Engine>,
    /// The job's message link (also held by the engine), when some peer is reached over
    /// TCP or verbs: waiting then sleeps in its transport (`poll(2)` on TCP's sockets).
    message_link: Option<MessageLink>,
    /// A group connected across hosts has had a link of its own.
    links_made: std::sync::atomic::AtomicBool,
    /// Whether communicators on one node may use shared-memory collective areas (not when
    /// `COMMCORE_TRANSPORT=tcp` sends everything over TCP).
    areas_enabled: bool,
    spin: Spin,
    single_copy: SingleCopy,
    /// Single copies longer than this are split between both sides (`COMMCORE_SPLIT_COPY_ABOVE`;
    /// the engine's long messages and the `shm` bcast).
    split_copy_above: Option<usize>,
    launched: bool,
    /// The process groups this process knows, each with its address vector; group 0 is
    /// the world's.
    registry: registry::Registry,
    /// Storage for the tables of rank maps that need one.
    arena: Mutex<Arena>,
    /// This process's context ids, shared by its threads (core's CID space).
    cids: CidSpace<CID_WORDS>,
    /// The CID algorithm of this job (`COMMCORE_CID_ALGORITHM`).
    cid_algorithm: Algorithm,
    /// Allreduces this process's CID requests have run.
    cid_allreduces: std::sync::atomic::AtomicU64,
    /// The collective areas this rank owns.
    areas: shm_coll::pool::AreaPool,
    /// Collective tables selected for communicators of the shapes met last.
    selections: coll_selection::SelectionCache,
    /// More ranks than CPUs (counted before this rank was bound to one).
    oversubscribed: bool,
    /// CPUs the job's ranks may use (the fewest any rank has).
    cores: usize,
    /// More processes reach each other through this host's shared memory than there are
    /// CPUs, counting the processes of connected groups: a waiter then polls briefly before
    /// it yields, as with more ranks than cores (unless `COMMCORE_SPIN_US` says otherwise).
    crowded: std::sync::atomic::AtomicBool,
    /// The ports this process opened.
    ports: dpm::OpenPorts,
    /// The connection to a name server, once used.
    names: dpm::Names,
    /// This rank's end of the launcher's key-value exchange (spawn, names, bridges).
    kv: Mutex<Option<crate::launch::kv::KvClient>>,
    /// Another launcher's client (spawn and names under PMIx, abort); the last field, so
    /// that it finalizes after the runtime said goodbye to its peers.
    foreign: Mutex<Option<bootstrap::Foreign>>,
}

/// Context ids a process can hold: `0..CID_WIDTH`.
const CID_WIDTH: u32 = 4096;
const CID_WORDS: usize = commcore::cid::words_for(CID_WIDTH);

/// Process groups the registry holds at most (the world, spawned and connected jobs);
/// registering one more is an error.
pub(crate) const MAX_PROCESS_GROUPS: usize = 64;

/// Rank-map tables the arena holds at most.
const ARENA_TABLES: usize = 1024;

/// Where the runtime's rank maps keep their tables.
type Arena = TableArena<'static, ARENA_TABLES>;

impl Runtime {
    fn engine(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn kv(&self) -> MutexGuard<'_, Option<crate::launch::kv::KvClient>> {
        self.kv.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn foreign(&self) -> MutexGuard<'_, Option<bootstrap::Foreign>> {
        self.foreign.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The engine's name for the process an address-vector entry routes to, if this
    /// process runs the entry's transport.
    #[inline]
    fn peer(&self, route: Route) -> Option<Peer> {
        match route.transport {
            // A slot of this job's region, or a guest of a bridge (the engine checks it).
            transports::SHARED_MEMORY => Some(Peer::Shm(ShmTransport::peer_index(route.peer))),
            // The job's own link (TCP or verbs), or one made for a group met over TCP: one
            // range test on the selector (an arm per selector costs a send 8 instructions).
            commcore::av::TransportId(MESSAGE_SELECTORS_FROM..=MESSAGE_SELECTORS_TO)
                if self.links_up() =>
            {
                usize::try_from(route.peer.0).ok().map(Peer::Message)
            }
            _ => None,
        }
    }

    /// Sleeps until a peer may have sent something: on this rank's doorbell, or, with TCP
    /// peers, in `poll(2)` on the sockets for at most [`TCP_SLEEP`] (a shared-memory peer's
    /// doorbell does not end that sleep, so it is short). Returns whether it was woken by
    /// news rather than by its time running out (always `true` for the doorbell, whose
    /// sleeps are long).
    fn sleep(
        &self,
        bridges: &[(Arc<Bridge>, usize)],
        ready: impl Fn() -> bool,
    ) -> Result<bool, P2pError> {
        let links = if self.links_up() { self.engine().links_up() } else { Vec::new() };
        if links.is_empty() {
            self.fabric.sleep_bridged(bridges, ready);
            return Ok(true);
        }
        if ready() {
            return Ok(true);
        }
        // Each link's sockets in turn, the slice shared between them.
        let slice = TCP_SLEEP / links.len() as u32;
        let mut news = false;
        for link in links {
            news |= link.wait(Instant::now() + slice)?;
        }
        Ok(news)
    }

    /// Moves this process's traffic on once (a call that waits for something else, such as
    /// a connection to a port, keeps other ranks' messages to and from it moving, as MPI's
    /// progress rule asks). A failure belongs to the operation it hits, which reports it.
    pub(super) fn progress_once(&self) {
        let mut engine = self.engine();
        let _ = engine.progress(&self.fabric, None, None);
    }

    /// TCP links up now.
    pub(super) fn tcp_links(&self) -> usize {
        self.engine().links_up().len()
    }

    /// Whether this process has ever run a TCP link (its job's or a connected group's).
    #[inline]
    fn links_up(&self) -> bool {
        self.message_link.is_some() || self.links_made.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether this node runs more processes than it has CPUs: the job's own ranks alone
    /// (`oversubscribed`) or with connected groups' processes (see [`Runtime::note_guests`]).
    #[inline]
    pub(super) fn crowded(&self) -> bool {
        self.oversubscribed || self.crowded.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How long a blocked operation polls before it yields.
    #[inline]
    fn poll_time(&self) -> Duration {
        if self.crowded.load(std::sync::atomic::Ordering::Relaxed) {
            self.spin.poll.min(CROWDED_POLL)
        } else {
            self.spin.poll
        }
    }

    /// Notes how many processes of connected groups this process reaches through shared
    /// memory (`guests`): with the job's own ranks, more than the CPUs make it crowded.
    pub(super) fn note_guests(&self, guests: usize) {
        let crowded =
            settings::current().spin_us.is_none() && self.fabric.size + guests > self.cores;
        self.crowded.store(crowded, std::sync::atomic::Ordering::Relaxed);
    }

    /// Runs `step` under the engine lock until it yields a value. Between steps it polls
    /// the rings without the lock (up to [`POLLS_PER_STEP`] times: another thread may have
    /// finished our operation meanwhile), then yields the CPU, then sleeps on this rank's
    /// doorbell until a peer rings it.
    fn block<T>(
        &self,
        mut step: impl FnMut(&mut Engine, &ShmTransport) -> Result<Option<T>, P2pError>,
    ) -> Result<T, P2pError> {
        let fabric = &self.fabric;
        // Read the clock only once the first step has missed: most small operations finish
        // at once.
        let mut start = None;
        let mut failure_seen = None;
        let mut guests = None;
        loop {
            let (blocked, watching) = {
                let mut engine = self.engine();
                if let Some(value) = step(&mut engine, fabric)? {
                    return Ok(value);
                }
                // The guests' rings, copied only when guests came or went: no reference
                // count touched per poll of a wait on a peer of another group.
                engine.refresh_guest_inboxes(&mut guests);
                (engine.blocked.clone(), engine.watches_groups())
            };
            let ready = || {
                fabric.any_inbound()
                    || blocked.iter().any(|&d| fabric.outbox(d).has_room())
                    || guests.as_ref().is_some_and(|g| g.iter().any(GuestInbox::has_cell))
            };
            let waited = start.get_or_insert_with(Instant::now).elapsed();
            let poll = self.poll_time();
            if watching && waited >= poll {
                // A group we are connected to failed: what we wait for may never come. A
                // wait on its processes ends at once (after taking what they sent before
                // they went); any other wait after a grace period, since the rank it waits
                // on may have given up for the same reason.
                let (failed, waits_on_it) = {
                    let engine = self.engine();
                    (engine.failed_bridge(), engine.waits_on_failed_group(fabric))
                };
                if let Some(reason) = failed {
                    let since = *failure_seen.get_or_insert_with(Instant::now);
                    if waits_on_it.is_some() || since.elapsed() >= FAILURE_GRACE {
                        let mut engine = self.engine();
                        return match step(&mut engine, fabric)? {
                            Some(value) => Ok(value),
                            None => Err(P2pError::GroupFailed { reason }),
                        };
                    }
                }
            }
            if waited < poll {
                // With TCP peers the next step's look at the sockets comes first: polling
                // the rings in between would only delay it.
                let polls = if self.links_up() { 1 } else { POLLS_PER_STEP };
                for _ in 0..polls {
                    if ready() {
                        break;
                    }
                    std::hint::spin_loop();
                }
            } else if waited < self.spin.yield_until {
                // A peer that shares our core (more ranks than cores, or a busy machine)
                // gets it now rather than at the end of our time slice.
                std::thread::yield_now();
            } else {
                // Before sleeping, free peers whose sends wait on receives posted here.
                self.engine().pull_matched_remotes(fabric);
                let bridges = if guests.is_some() { self.engine().bridges() } else { Vec::new() };
                if self.sleep(&bridges, ready)? {
                    // Something came: poll again before the next sleep.
                    start = Some(Instant::now());
                }
            }
        }
    }
}

/// Lock-free polls of the rings between two steps of a blocked operation.
const POLLS_PER_STEP: u32 = 32;

/// How long a waiter polls when processes outnumber CPUs (as the default with more ranks
/// than cores).
const CROWDED_POLL: Duration = Duration::from_micros(2);

/// How long a wait that does not depend on a failed group goes on after the failure is seen
/// (the rank it waits on may have stopped because of it).
const FAILURE_GRACE: Duration = Duration::from_millis(500);

/// How long one sleep of a process with TCP peers lasts at most.
const TCP_SLEEP: Duration = Duration::from_millis(1);

/// How long finalizing waits for TCP peers to take what is queued to them.
const TCP_FINISH: Duration = Duration::from_secs(10);

impl Drop for Runtime {
    fn drop(&mut self) {
        // Like MPI_Finalize: what is still queued for a peer is delivered before we go.
        let _ = self.block(|engine, fabric| {
            engine.progress(fabric, None, None)?;
            Ok((!engine.has_outbound()).then_some(()))
        });
        // Groups still connected learn that we are gone, rather than wait on us for ever.
        for (bridge, slot) in self.engine().bridges() {
            bridge.leave(slot);
        }
        for link in self.engine().links_up() {
            // Say goodbye, so that peers take the end of our streams as normal.
            let _ = link.finish(Instant::now() + TCP_FINISH);
        }
        if self.launched {
            let state = self.fabric.layout.state(self.fabric.rank);
            self.fabric
                .region
                .atomic_u32(state)
                .store(crate::shm::layout::RANK_FINALIZED, std::sync::atomic::Ordering::Release);
            init::release_launched_world();
        }
    }
}
