//! `MPI_Comm_spawn` and `MPI_Comm_spawn_multiple`: the root asks the launcher to start the
//! children (its answer carries a bridge between the parents and the children, or one error
//! code per child), the outcome is broadcast so every parent returns the same, the root
//! shares the bridge with its group, and the two groups meet over it. Children on another
//! host meet their parents over TCP instead ([`super::spawn_tcp`]). The children find the
//! inter-communicator with `World::parent`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use commcore::port::{Token, TOKEN_BYTES};

use super::bridge_comm::Side;
use super::spawn_tcp::Rendezvous;
use super::DpmError;
use crate::launch::kv::{KvError, SpawnCommand as LaunchCommand, SpawnRequest};
use crate::runtime::registry::LauncherTie;
use crate::runtime::Comm;
use crate::shm::bridge::{Bridge, FAILED_ABANDONED};
use crate::shm::Region;

/// What the root started: the children's job, the bridge the launcher made, and the
/// rendezvous when the children meet the parents over TCP.
struct Started {
    job: u64,
    bridge: Bridge,
    rendezvous: Option<Rendezvous>,
}

impl Started {
    /// What every parent learns: the job, then the token of a TCP meeting if there is one.
    fn outcome(&self) -> Vec<u8> {
        let mut bytes = self.job.to_le_bytes().to_vec();
        if let Some(rendezvous) = &self.rendezvous {
            bytes.extend_from_slice(&rendezvous.token.0);
        }
        bytes
    }
}

/// Where and how children start (`MPI_Info` keys of `MPI_Comm_spawn`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnOptions {
    /// Variables added to the children's environment.
    pub env: Vec<(String, String)>,
    /// The children's working directory (`wdir`); the launcher's when `None`.
    pub wdir: Option<PathBuf>,
    /// The host (`commcore run --hosts` namespace) the children start on (`host`).
    pub host: Option<usize>,
    /// How long the spawn may take, the children's start-up included.
    pub timeout: Duration,
}

impl Default for SpawnOptions {
    fn default() -> SpawnOptions {
        SpawnOptions { env: Vec::new(), wdir: None, host: None, timeout: Duration::from_secs(30) }
    }
}

/// One program of `spawn_multiple`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnCommand {
    /// The program.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// How many processes run it.
    pub maxprocs: usize,
    /// Their environment, directory and host (the first command's timeout bounds all).
    pub options: SpawnOptions,
}

impl Comm {
    /// Starts `maxprocs` processes of `program` with `args` (`MPI_Comm_spawn`; collective
    /// over this intra-communicator; the arguments matter at `root` only) and returns the
    /// inter-communicator to them. Every rank returns the same error when the children
    /// cannot start ([`DpmError::Spawn`] holds one code per child), die before they meet
    /// their parents, or do not come within `options.timeout`.
    pub fn spawn(
        &self,
        program: &str,
        args: &[&str],
        maxprocs: usize,
        options: &SpawnOptions,
        root: usize,
    ) -> Result<Comm, DpmError> {
        let command = SpawnCommand {
            program: program.into(),
            args: args.iter().map(Into::into).collect(),
            maxprocs,
            options: options.clone(),
        };
        self.spawn_multiple(std::slice::from_ref(&command), root)
    }

    /// Starts the processes of several programs as one group (`MPI_Comm_spawn_multiple`):
    /// the children's world ranks follow the order of `commands`.
    pub fn spawn_multiple(&self, commands: &[SpawnCommand], root: usize) -> Result<Comm, DpmError> {
        self.check_root(root)?;
        if self.spawns_through_foreign_launcher() {
            return self.spawn_foreign(commands, root);
        }
        let timeout = commands.first().map_or(Duration::from_secs(30), |c| c.options.timeout);
        let deadline = Instant::now() + timeout;
        let started = if self.rank() == root {
            self.start_children(commands, timeout).map(Some)
        } else {
            Ok(None)
        };
        let outcome = started.as_ref().map(|s| s.as_ref().map_or_else(Vec::new, Started::outcome));
        let outcome = self.bcast_outcome(root, outcome.map_err(Clone::clone))?;
        let job =
            u64::from_le_bytes(outcome.get(..8).and_then(|b| b.try_into().ok()).unwrap_or([0; 8]));
        let started = started?;
        if let Some(token) = outcome.get(8..8 + TOKEN_BYTES) {
            let mut shared = [0u8; TOKEN_BYTES];
            shared.copy_from_slice(token);
            return self.meet_children_over_tcp(root, started, job, Token(shared), deadline);
        }
        let bridge = started.map(|s| s.bridge);
        let bridge = match self.share_bridge(root, bridge.as_ref()) {
            Ok(bridge) => bridge,
            Err(error) => {
                if let Some(bridge) = &bridge {
                    bridge.fail(FAILED_ABANDONED);
                }
                return Err(error);
            }
        };
        // The root tells the launcher when the children's group goes.
        let launcher =
            if self.rank() == root { LauncherTie::Spawned(job) } else { LauncherTie::None };
        self.bridge_intercomm(bridge, Side::A, root, deadline, launcher)
    }

    /// The root's start of the children: over TCP (a rendezvous whose address and token go
    /// into their environment) when some start on a host other than the root's.
    fn start_children(
        &self,
        commands: &[SpawnCommand],
        timeout: Duration,
    ) -> Result<Started, DpmError> {
        let fabric = &self.runtime.fabric;
        let host = fabric.nodes[fabric.rank] as usize / fabric.node_count.max(1);
        if !commands.iter().any(|c| c.options.host.is_some_and(|h| h != host)) {
            let (job, bridge) = self.ask_launcher(commands, timeout)?;
            return Ok(Started { job, bridge, rendezvous: None });
        }
        let rendezvous = Rendezvous::open()?;
        let variable = rendezvous.child_env()?;
        let mut commands = commands.to_vec();
        for command in &mut commands {
            command.options.env.push(variable.clone());
        }
        let (job, bridge) = self.ask_launcher(&commands, timeout)?;
        Ok(Started { job, bridge, rendezvous: Some(rendezvous) })
    }

    /// The parents' side of a spawn onto another host: the root waits for the children's
    /// root at its rendezvous, every parent learns the outcome and takes a copy of the
    /// launcher's bridge (its failure word says when a child dies), and the two groups
    /// build the inter-communicator over a TCP link of their own (collective).
    fn meet_children_over_tcp(
        &self,
        root: usize,
        started: Option<Started>,
        job: u64,
        token: Token,
        deadline: Instant,
    ) -> Result<Comm, DpmError> {
        let hello = match &started {
            Some(Started { bridge, rendezvous: Some(rendezvous), .. }) => {
                rendezvous.wait(&self.runtime, Some(bridge), deadline).map(Some)
            }
            _ => Ok(None),
        };
        let said = hello.as_ref().map(|_| Vec::new()).map_err(Clone::clone);
        if let Err(error) = self.bcast_outcome(root, said) {
            if let Some(started) = &started {
                // Children still starting see the bridge failed, or the rendezvous gone.
                started.bridge.fail(FAILED_ABANDONED);
            }
            return Err(error);
        }
        let bridge = started.as_ref().map(|s| &s.bridge);
        let watch = match self.share_bridge(root, bridge) {
            Ok(watch) => watch,
            Err(error) => {
                if let Some(bridge) = bridge {
                    bridge.fail(FAILED_ABANDONED);
                }
                return Err(error);
            }
        };
        let launcher =
            if self.rank() == root { LauncherTie::Spawned(job) } else { LauncherTie::None };
        self.accept_tcp(root, hello?, (token, deadline), (launcher, Some(watch)))
    }

    /// Every rank's own mapping of the root's `bridge` (collective).
    fn share_bridge(&self, root: usize, bridge: Option<&Bridge>) -> Result<Arc<Bridge>, DpmError> {
        let shared = self.share_fd(root, bridge.map(|b| b.region.as_fd()))?;
        let region = Region::from_owned(shared)
            .map_err(|e| DpmError::Handover(format!("cannot map the bridge: {e}")))?;
        Bridge::open(region).map(Arc::new).map_err(|e| DpmError::Handover(e.to_string()))
    }

    /// The root's request to the launcher; the bridge it made, mapped.
    fn ask_launcher(
        &self,
        commands: &[SpawnCommand],
        timeout: Duration,
    ) -> Result<(u64, Bridge), DpmError> {
        if commands.is_empty() || commands.iter().any(|c| c.maxprocs == 0) {
            return Err(DpmError::InvalidArgument(
                "maxprocs must be at least 1 for every command".into(),
            ));
        }
        let parent_nodes = (0..self.size()).map(|r| self.members.node(r)).collect();
        let request = SpawnRequest {
            commands: commands
                .iter()
                .map(|c| LaunchCommand {
                    program: c.program.clone(),
                    args: c.args.clone(),
                    maxprocs: c.maxprocs,
                    env: c.options.env.clone(),
                    wdir: c.options.wdir.clone(),
                    host: c.options.host,
                })
                .collect(),
            parent_size: self.size(),
            parent_nodes,
            timeout,
        };
        let mut kv = self.runtime.kv();
        let kv = kv.as_mut().ok_or(DpmError::NotLaunched)?;
        let spawned = kv.spawn(&request).map_err(|e| match e {
            KvError::Spawn { errcodes, message } => DpmError::Spawn { errcodes, message },
            KvError::Refused(why) => DpmError::InvalidArgument(why),
            other => DpmError::Launcher(other.to_string()),
        })?;
        let region =
            Region::from_owned(spawned.bridge).map_err(|e| DpmError::Handover(e.to_string()))?;
        let bridge = Bridge::open(region).map_err(|e| DpmError::Handover(e.to_string()))?;
        Ok((spawned.job, bridge))
    }
}
