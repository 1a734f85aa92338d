//! What a foreign launcher serves after start-up: spawning a group and the name service.
//! PMIx serves both (`PMIx_Spawn`, `PMIx_Publish`/`Lookup`/`Unpublish`); hydra serves PMI-1's
//! spawn (the children find their parents' rendezvous in their key space, put there before
//! they start) and PMI-1's publish, lookup and unpublish.

use super::{Client, Foreign};

/// One program of a spawn, in the launcher's terms.
pub(in crate::runtime) struct ForeignApp {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub wdir: Option<String>,
    pub maxprocs: usize,
}

const PMI_ENV: &str = "MPICH's mpiexec (PMI-1) cannot set spawned processes' environment: \
                       leave the env key out, or start the job with mpirun.openmpi (PMIx) or \
                       `commcore run`";
/// Hydra's refusal, with where else names can live.
fn pmi_names(e: crate::launch::pmi1::PmiError) -> String {
    format!(
        "{e} (hydra's name service; or start `commcore nameserver` and set \
         COMMCORE_NAMESERVER to the address it prints)"
    )
}

impl Foreign {
    /// Starts `apps` as one new group that finds its parents through `parent` (a variable
    /// and its value: in the children's environment under PMIx, in their key space under
    /// PMI-1). Errors are the launcher's words.
    pub(in crate::runtime) fn spawn(
        &mut self,
        apps: &[ForeignApp],
        parent: &(String, String),
    ) -> Result<(), String> {
        match &mut self.client {
            Client::Pmi(c) => {
                if apps.iter().any(|a| !a.env.is_empty()) {
                    return Err(PMI_ENV.into());
                }
                let apps: Vec<crate::launch::pmi1::PmiApp> = apps
                    .iter()
                    .map(|a| crate::launch::pmi1::PmiApp {
                        program: a.program.clone(),
                        args: a.args.clone(),
                        wdir: a.wdir.clone(),
                        maxprocs: a.maxprocs,
                    })
                    .collect();
                c.spawn(&apps, &[(&parent.0, &parent.1)]).map_err(|e| e.to_string())
            }
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => {
                let apps: Vec<crate::launch::pmix::SpawnApp> = apps
                    .iter()
                    .map(|a| crate::launch::pmix::SpawnApp {
                        program: a.program.clone(),
                        args: a.args.clone(),
                        env: a.env.iter().cloned().chain([parent.clone()]).collect(),
                        wdir: a.wdir.clone(),
                        maxprocs: a.maxprocs,
                    })
                    .collect();
                c.spawn_apps(&apps).map(drop).map_err(|e| e.to_string())
            }
        }
    }

    /// Where a spawned job's parents wait for it, when the launcher keeps it in the job's
    /// key space (PMI-1) rather than in the environment; `None` for a job not spawned.
    pub(in crate::runtime) fn parent_rendezvous(
        &mut self,
        variable: &str,
    ) -> Result<Option<String>, String> {
        match &mut self.client {
            Client::Pmi(c) => c.spawner_value(variable).map_err(|e| e.to_string()),
            #[cfg(feature = "pmix")]
            Client::Pmix(_) => Ok(None),
        }
    }

    /// Publishes `name` for `port` (`MPI_Publish_name`).
    pub(in crate::runtime) fn publish(&mut self, name: &str, port: &str) -> Result<(), String> {
        match &mut self.client {
            Client::Pmi(c) => c.publish(name, port).map_err(pmi_names),
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.publish(name, port).map_err(|e| e.to_string()),
        }
    }

    /// The port published under `name`, if any (`MPI_Lookup_name`).
    pub(in crate::runtime) fn lookup(&mut self, name: &str) -> Result<Option<String>, String> {
        match &mut self.client {
            Client::Pmi(c) => c.lookup(name).map_err(pmi_names),
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.lookup(name).map_err(|e| e.to_string()),
        }
    }

    /// Withdraws `name` (`MPI_Unpublish_name`).
    pub(in crate::runtime) fn unpublish(&mut self, name: &str) -> Result<(), String> {
        match &mut self.client {
            Client::Pmi(c) => c.unpublish(name).map_err(pmi_names),
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.unpublish(name).map_err(|e| e.to_string()),
        }
    }
}
