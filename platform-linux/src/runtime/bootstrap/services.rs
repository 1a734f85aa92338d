//! What a foreign launcher serves after start-up: spawning a group and the name service.
//! PMIx serves both (`PMIx_Spawn`, `PMIx_Publish`/`Lookup`/`Unpublish`); to PMI-1 clients
//! each is one clear error (hydra's spawn and name service are not used yet).

use super::{Client, Foreign};

/// One program of a spawn, in the launcher's terms.
#[cfg_attr(not(feature = "pmix"), allow(dead_code))]
pub(in crate::runtime) struct ForeignApp {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub wdir: Option<String>,
    pub maxprocs: usize,
}

const PMI_SPAWN: &str = "spawning under MPICH's mpiexec (PMI-1) is not supported yet: start \
                         the job with mpirun.openmpi or srun --mpi=pmix (PMIx), or with \
                         `commcore run`";
const PMI_NAMES: &str = "MPICH's mpiexec (PMI-1) offers commcore no name service: start \
                         `commcore nameserver` and set COMMCORE_NAMESERVER to the address it \
                         prints";

impl Foreign {
    /// Starts `apps` as one new group; its namespace. Errors are the launcher's words.
    pub(in crate::runtime) fn spawn(&mut self, apps: &[ForeignApp]) -> Result<String, String> {
        match &mut self.client {
            Client::Pmi(_) => {
                let _ = apps;
                Err(PMI_SPAWN.into())
            }
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => {
                let apps: Vec<crate::launch::pmix::SpawnApp> = apps
                    .iter()
                    .map(|a| crate::launch::pmix::SpawnApp {
                        program: a.program.clone(),
                        args: a.args.clone(),
                        env: a.env.clone(),
                        wdir: a.wdir.clone(),
                        maxprocs: a.maxprocs,
                    })
                    .collect();
                c.spawn_apps(&apps).map_err(|e| e.to_string())
            }
        }
    }

    /// Publishes `name` for `port` (`MPI_Publish_name`).
    pub(in crate::runtime) fn publish(&mut self, name: &str, port: &str) -> Result<(), String> {
        match &mut self.client {
            Client::Pmi(_) => {
                let _ = (name, port);
                Err(PMI_NAMES.into())
            }
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.publish(name, port).map_err(|e| e.to_string()),
        }
    }

    /// The port published under `name`, if any (`MPI_Lookup_name`).
    pub(in crate::runtime) fn lookup(&mut self, name: &str) -> Result<Option<String>, String> {
        match &mut self.client {
            Client::Pmi(_) => {
                let _ = name;
                Err(PMI_NAMES.into())
            }
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.lookup(name).map_err(|e| e.to_string()),
        }
    }

    /// Withdraws `name` (`MPI_Unpublish_name`).
    pub(in crate::runtime) fn unpublish(&mut self, name: &str) -> Result<(), String> {
        match &mut self.client {
            Client::Pmi(_) => {
                let _ = name;
                Err(PMI_NAMES.into())
            }
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.unpublish(name).map_err(|e| e.to_string()),
        }
    }
}
