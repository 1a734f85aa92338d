//! Dynamic processes in the runtime: spawning children ([`spawn`]), ports with accept and
//! connect ([`ports`]), join over a socket, names, and disconnect. Whatever way two groups
//! meet, they end up the same way ([`bridge_comm`]): on one host, a bridge region that both
//! groups map, whose rings the engine drives exactly as it drives the job's own, and an
//! inter-communicator whose remote group is a process group of its own in the registry.
//!
//! Launch and supervision (starting children, telling a group that the other failed) are
//! the launcher's; this module asks it over the rank's key-value socket.

mod bridge_comm;
mod error;
pub(crate) mod handover;
mod join;
mod listen;
mod meet_verbs;
mod names;
mod ports;
mod spawn;
mod spawn_foreign;
mod spawn_tcp;
mod tcp_meet;

pub use error::DpmError;
pub(crate) use names::Names;
pub(crate) use ports::OpenPorts;
pub use spawn::{SpawnCommand, SpawnOptions};
pub use spawn_tcp::ENV_PARENT_TCP;

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::registry::{GroupTie, LauncherTie, TieKind};
use super::{Comm, Runtime};
use crate::shm::bridge::Bridge;

/// The variable naming the inherited descriptor of the bridge to the parents (set by the
/// launcher for a spawned job).
pub const ENV_PARENT_BRIDGE_FD: &str = "COMMCORE_PARENT_BRIDGE_FD";
/// How long a TCP link of a disconnected group may take to say goodbye.
const LINK_FINISH: Duration = Duration::from_secs(2);
/// How long a spawned job waits for its parents to meet it (the parents' own spawn
/// timeout ends it sooner, through the bridge's failure word).
const PARENT_TIMEOUT: Duration = Duration::from_secs(120);

/// The inter-communicator to the parents, when `world` (this job's world communicator) was
/// spawned (collective over the job).
pub(super) fn parent(world: &Comm) -> Result<Option<Comm>, DpmError> {
    let Ok(text) = std::env::var(ENV_PARENT_BRIDGE_FD) else {
        // Spawned by another launcher: the parents are met over TCP, without a bridge to
        // watch; their rendezvous is in the environment (PMIx) or the key space (PMI-1).
        let parents = match world.runtime.foreign().as_mut() {
            None => return Ok(None),
            Some(foreign) => match std::env::var(ENV_PARENT_TCP) {
                Ok(parents) => Some(parents),
                Err(_) => foreign.parent_rendezvous(ENV_PARENT_TCP).map_err(DpmError::Launcher)?,
            },
        };
        let deadline = Instant::now() + PARENT_TIMEOUT;
        return match parents {
            Some(parents) => spawn_tcp::meet_parents(world, &parents, None, deadline).map(Some),
            None => Ok(None),
        };
    };
    let fd: i32 = text
        .parse()
        .map_err(|_| DpmError::Launcher(format!("{ENV_PARENT_BRIDGE_FD}={text:?} is malformed")))?;
    let region = crate::shm::Region::open(fd)
        .map_err(|e| DpmError::Handover(format!("cannot map the bridge to the parents: {e}")))?;
    let bridge = Bridge::open(region).map_err(|e| DpmError::Handover(e.to_string()))?;
    let deadline = Instant::now() + PARENT_TIMEOUT;
    if let Ok(parents) = std::env::var(ENV_PARENT_TCP) {
        // Spawned onto another host: the parents are met over TCP, and the bridge the
        // launcher made only carries its failure word.
        return spawn_tcp::meet_parents(world, &parents, Some(Arc::new(bridge)), deadline)
            .map(Some);
    }
    let side = bridge_comm::Side::B;
    world.bridge_intercomm(Arc::new(bridge), side, 0, deadline, LauncherTie::None).map(Some)
}

impl Comm {
    /// Disconnects (`MPI_Comm_disconnect`; collective over both groups of an
    /// inter-communicator, or all ranks of an intra-communicator): waits until the traffic on
    /// the communicator is done, then frees it. A process group that no communicator reaches
    /// any more is released: after it, the two jobs run and end independently. The
    /// communicator is freed also when waiting fails (the other group died).
    pub fn disconnect(self) -> Result<(), DpmError> {
        self.barrier()?;
        Ok(())
    }
}

impl Runtime {
    /// Undoes what tied this process to groups no communicator reaches any more: the
    /// engine forgets their processes, the bridges are unmapped (with the last reference),
    /// and the launcher is told.
    pub(super) fn untie(&self, ties: Vec<GroupTie>) {
        for tie in ties {
            match tie.kind {
                TieKind::Shm { first, count } => {
                    self.engine().remove_guests(&self.fabric, first, count);
                    self.note_guests(self.engine().guest_count());
                }
                TieKind::Link { link } => {
                    let removed = self.engine().remove_message_link(link);
                    if let Some(link) = removed {
                        // Say goodbye, so the other group takes the end of our streams as
                        // normal; it is already done with us (disconnect waited for that).
                        let _ = link.finish(Instant::now() + LINK_FINISH);
                    }
                }
            }
            let mut kv = self.kv();
            if let Some(kv) = kv.as_mut() {
                // The launcher only stops watching: a failure here changes nothing for us.
                let _ = match tie.launcher {
                    LauncherTie::None => Ok(()),
                    LauncherTie::Spawned(job) => kv.disconnect(job),
                    LauncherTie::Registered(id) => kv.release_bridge(id),
                };
            }
        }
    }
}
