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
mod ports;

pub use error::DpmError;
pub(crate) use ports::OpenPorts;

use super::registry::{GroupTie, LauncherTie};
use super::{Comm, Runtime};

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
            self.engine().remove_guests(&self.fabric, tie.first, tie.count);
            match tie.launcher {
                LauncherTie::None | LauncherTie::Spawned(_) | LauncherTie::Registered(_) => {}
            }
        }
    }
}
