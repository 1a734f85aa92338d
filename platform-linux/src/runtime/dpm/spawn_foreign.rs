//! `MPI_Comm_spawn` in a job that another launcher started: the root opens a rendezvous
//! (a TCP socket and a fresh token, as for children on another host), asks the launcher to
//! start the children (PMIx: `PMIx_Spawn`, the address and token in their environment;
//! PMI-1: hydra's spawn, the address and token in their key space), and the two groups meet
//! over TCP. No bridge is shared: a child that dies before it meets
//! its parents ends the wait at its deadline, and every parent returns the same error.

use std::time::{Duration, Instant};

use commcore::port::{Token, TOKEN_BYTES};

use super::spawn::SpawnCommand;
use super::spawn_tcp::Rendezvous;
use super::DpmError;
use crate::runtime::bootstrap::ForeignApp;
use crate::runtime::registry::LauncherTie;
use crate::runtime::Comm;

impl Comm {
    /// Whether spawns of this job go through another launcher (the same answer on every
    /// rank: a job is started one way).
    pub(super) fn spawns_through_foreign_launcher(&self) -> bool {
        self.runtime.kv().is_none() && self.runtime.foreign().is_some()
    }

    /// [`Comm::spawn_multiple`] through another launcher (collective).
    pub(super) fn spawn_foreign(
        &self,
        commands: &[SpawnCommand],
        root: usize,
    ) -> Result<Comm, DpmError> {
        let timeout = commands.first().map_or(Duration::from_secs(30), |c| c.options.timeout);
        let deadline = Instant::now() + timeout;
        let started =
            if self.rank() == root { self.start_foreign(commands).map(Some) } else { Ok(None) };
        let token =
            started.as_ref().map(|r| r.as_ref().map_or_else(Vec::new, |r| r.token.0.to_vec()));
        let token = self.bcast_outcome(root, token.map_err(Clone::clone))?;
        let rendezvous = started?;
        let mut shared = [0u8; TOKEN_BYTES];
        shared.copy_from_slice(
            token
                .get(..TOKEN_BYTES)
                .ok_or_else(|| DpmError::Launcher("the root sent no rendezvous token".into()))?,
        );
        let hello = match &rendezvous {
            Some(rendezvous) => rendezvous.wait(&self.runtime, None, deadline).map(Some),
            None => Ok(None),
        };
        let said = hello.as_ref().map(|_| Vec::new()).map_err(Clone::clone);
        self.bcast_outcome(root, said)?;
        self.accept_tcp(root, hello?, (Token(shared), deadline), (LauncherTie::None, None))
    }

    /// The root's start of the children: a rendezvous, then the launcher's spawn.
    fn start_foreign(&self, commands: &[SpawnCommand]) -> Result<Rendezvous, DpmError> {
        if commands.is_empty() || commands.iter().any(|c| c.maxprocs == 0) {
            return Err(DpmError::InvalidArgument(
                "maxprocs must be at least 1 for every command".into(),
            ));
        }
        if commands.iter().any(|c| c.options.host.is_some()) {
            return Err(DpmError::InvalidArgument(
                "the host key names a `commcore run --hosts` host; this job's launcher places \
                 the children itself"
                    .into(),
            ));
        }
        // A launcher may end the whole job when it cannot start a child (Open MPI's mpirun
        // does): a program missing here is the spawn's error instead, one code per child.
        if let Some(missing) = commands.iter().find(|c| !runnable(&c.program)) {
            let children = commands.iter().map(|c| c.maxprocs).sum();
            return Err(DpmError::Spawn {
                errcodes: vec![libc::ENOENT; children],
                message: format!(
                    "{} is not an executable program here",
                    missing.program.to_string_lossy()
                ),
            });
        }
        let rendezvous = Rendezvous::open()?;
        let variable = rendezvous.child_env()?;
        let apps: Vec<ForeignApp> = commands
            .iter()
            .map(|c| ForeignApp {
                program: c.program.to_string_lossy().into_owned(),
                args: c.args.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
                env: c.options.env.clone(),
                wdir: c.options.wdir.as_ref().map(|d| d.display().to_string()),
                maxprocs: c.maxprocs,
            })
            .collect();
        let mut foreign = self.runtime.foreign();
        let foreign = foreign.as_mut().ok_or(DpmError::NotLaunched)?;
        foreign.spawn(&apps, &variable).map_err(DpmError::Launcher)?;
        Ok(rendezvous)
    }
}

/// Whether `program` names an executable file: a path, or a name found in `PATH`.
fn runnable(program: &std::ffi::OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let executable = |path: &std::path::Path| {
        let Ok(text) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
        // SAFETY: text is a NUL-terminated path; access only reads it.
        path.is_file() && unsafe { libc::access(text.as_ptr(), libc::X_OK) } == 0
    };
    if program.as_bytes().contains(&b'/') {
        return executable(std::path::Path::new(program));
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| executable(&dir.join(program)))
    })
}
