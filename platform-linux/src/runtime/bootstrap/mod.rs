//! Who started this process, and through whom it meets the rest of its job: the bootstrap
//! boundary of [`super::World::init`].
//!
//! | origin | found by | identity | exchange | node |
//! |---|---|---|---|---|
//! | `commcore run` | `COMMCORE_SHM_FD` | `COMMCORE_RANK`/`SIZE` | its key-value exchange | one region for the job, handed down |
//! | hydra (`mpiexec.mpich`) | `PMI_FD` | `PMI_RANK`/`PMI_SIZE` | PMI-1 put/barrier/get | met here ([`node`]) |
//! | a PMIx server (`mpirun.openmpi`, `srun --mpi=pmix`) | `PMIX_NAMESPACE` | `PMIx_Init` | PMIx put/commit/fence/get | met here ([`node`]) |
//! | none | nothing of the above | rank 0 of 1 | none | its own region |
//!
//! `COMMCORE_BOOTSTRAP=launcher|pmi|pmix` chooses instead of the environment. A process that
//! some other launcher started as one of several ranks is refused rather than run alone
//! ([`super::foreign_launcher`]). PMIx is a cargo feature (`pmix`, linking Debian's
//! `libpmix2`), so the default build needs no PMIx library; a build without it names the
//! feature when it meets a PMIx server.
//!
//! Under PMI and PMIx the launcher does not hand down a shared region: the ranks of each
//! node meet over the exchange and share one ([`node`]); ranks on different nodes (another
//! machine, or another network namespace of this one) talk over TCP.

pub(super) mod node;
mod services;

pub(super) use services::ForeignApp;

use std::sync::atomic::Ordering::{AcqRel, Relaxed, Release};
use std::sync::atomic::{AtomicI32, AtomicUsize};
use std::sync::Once;
use std::time::Duration;

use super::error::InitError;
use crate::launch::exchange::{Exchange, ExchangeError};
use crate::launch::pmi1::Pmi1Client;
#[cfg(feature = "pmix")]
use crate::launch::pmix::PmixClient;

/// The variable that chooses the bootstrap instead of the environment.
pub const ENV_BOOTSTRAP: &str = "COMMCORE_BOOTSTRAP";
/// How long one request to a foreign launcher may take (a fence waits for every rank).
const FOREIGN_TIMEOUT: Duration = Duration::from_secs(60);

/// How this process joins its job.
pub(super) enum Origin {
    /// Alone: rank 0 of 1.
    Singleton,
    /// `commcore run` started it (its variables are read by the caller).
    Launcher,
    /// Another launcher, through its exchange.
    Foreign(Box<Foreign>),
}

/// A foreign launcher's client: the exchange at start-up, abort, and finalize when the
/// world ends.
pub struct Foreign {
    client: Client,
    /// Bytes of keys and values this rank put, and of values it read.
    published: usize,
    fetched: usize,
}

enum Client {
    Pmi(Pmi1Client),
    #[cfg(feature = "pmix")]
    Pmix(Box<PmixClient>),
}

impl Foreign {
    fn new(client: Client) -> Foreign {
        Foreign { client, published: 0, fetched: 0 }
    }

    /// This process's rank in the job.
    pub fn rank(&self) -> usize {
        match &self.client {
            Client::Pmi(c) => c.rank(),
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.rank(),
        }
    }

    /// The job's size.
    pub fn size(&self) -> usize {
        match &self.client {
            Client::Pmi(c) => c.size(),
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.size(),
        }
    }

    /// Bytes of keys and values this rank put through the exchange, and of values it read.
    pub fn exchanged_bytes(&self) -> (usize, usize) {
        (self.published, self.fetched)
    }

    /// The launcher, in words.
    pub fn name(&self) -> &'static str {
        match &self.client {
            Client::Pmi(_) => "PMI-1 (MPICH's mpiexec)",
            #[cfg(feature = "pmix")]
            Client::Pmix(_) => "PMIx",
        }
    }

    /// Asks the launcher to end the whole job with `code`, through its own call, so that it
    /// reports the failure its way.
    pub fn abort(&mut self, code: i32, message: &str) -> Result<(), ExchangeError> {
        let launcher = self.name();
        let failed = match &mut self.client {
            Client::Pmi(c) => c.abort(code, message).err().map(|e| e.to_string()),
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => Some(c.abort(code, message).to_string()),
        };
        failed.map_or(Ok(()), |message| Err(ExchangeError { launcher, message }))
    }
}

/// The PMI socket of a rank that joined and has not finalized, for [`left_early`]; -1 when
/// there is none.
static UNFINALIZED_PMI_FD: AtomicI32 = AtomicI32::new(-1);
/// That rank's number, for the message.
static UNFINALIZED_RANK: AtomicUsize = AtomicUsize::new(0);

/// Runs when the process exits normally (`exit`, or the end of `main`) with `status`. A
/// rank that exits while it is still in the job left it early, whatever its status; hydra
/// would take status 0 as a finished rank and could report the job's success, so the rank
/// asks hydra to abort the job with its status (1 for 0), as `commcore run` reports such a
/// rank.
extern "C" fn left_early(status: libc::c_int, _: *mut libc::c_void) {
    let fd = UNFINALIZED_PMI_FD.swap(-1, AcqRel);
    if fd < 0 {
        return;
    }
    let rank = UNFINALIZED_RANK.load(Relaxed);
    let code = if status == 0 { 1 } else { status };
    let says = format!(
        "rank {rank} exited with status {status} without finalizing (it left the job early): \
         asking the launcher to end the job\n"
    );
    let line = format!("cmd=abort exitcode={code} error_msg=rank_{rank}_left_the_job_early\n");
    // SAFETY: fd is the PMI socket of the client still alive in this exiting process (the
    // client clears the word before it closes it); both buffers are valid for their length.
    unsafe {
        libc::write(libc::STDERR_FILENO, says.as_ptr().cast(), says.len());
        // The launcher forwards our words before it ends the job on the abort.
        libc::usleep(100_000);
        libc::write(fd, line.as_ptr().cast(), line.len());
    }
}

extern "C" {
    /// glibc's exit handler that is told the exit status.
    fn on_exit(
        handler: extern "C" fn(libc::c_int, *mut libc::c_void),
        argument: *mut libc::c_void,
    ) -> libc::c_int;
}

/// Arms [`left_early`] for `rank`'s PMI socket `fd`.
fn watch_exit(fd: i32, rank: usize) {
    UNFINALIZED_RANK.store(rank, Relaxed);
    static REGISTER: Once = Once::new();
    // SAFETY: left_early never unwinds and ignores its argument, which may be null.
    REGISTER.call_once(|| unsafe {
        on_exit(left_early, std::ptr::null_mut());
    });
    UNFINALIZED_PMI_FD.store(fd, Release);
}

impl Drop for Foreign {
    fn drop(&mut self) {
        UNFINALIZED_PMI_FD.store(-1, Release);
        // The launcher then takes this rank's exit as the end of a finished rank. (PMIx's
        // client finalizes when it is dropped.)
        #[allow(irrefutable_let_patterns)]
        if let Client::Pmi(c) = &mut self.client {
            let _ = c.finalize();
        }
    }
}

impl Exchange for Foreign {
    fn put(&mut self, key: &str, value: &str) -> Result<(), ExchangeError> {
        self.published += key.len() + value.len();
        match &mut self.client {
            Client::Pmi(c) => Exchange::put(c, key, value),
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.put(key, value).map_err(pmix_error),
        }
    }

    fn fence(&mut self) -> Result<(), ExchangeError> {
        match &mut self.client {
            Client::Pmi(c) => Exchange::fence(c),
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.fence().map_err(pmix_error),
        }
    }

    fn get(&mut self, rank: usize, key: &str) -> Result<String, ExchangeError> {
        let value = match &mut self.client {
            Client::Pmi(c) => Exchange::get(c, rank, key),
            #[cfg(feature = "pmix")]
            Client::Pmix(c) => c.get(rank, key).map_err(pmix_error)?.ok_or_else(|| ExchangeError {
                launcher: "PMIx",
                message: format!("rank {rank} has no {key}"),
            }),
        }?;
        self.fetched += value.len();
        Ok(value)
    }
}

#[cfg(feature = "pmix")]
fn pmix_error(e: crate::launch::pmix::PmixError) -> ExchangeError {
    ExchangeError { launcher: "PMIx", message: e.to_string() }
}

/// Which bootstrap `COMMCORE_BOOTSTRAP` or the environment (read by `var`) asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wanted {
    Launcher,
    Pmi,
    Pmix,
    /// No launcher's variables: a singleton, unless a launcher we cannot join started it.
    Nothing,
}

fn wanted(var: &impl Fn(&str) -> Option<String>) -> Result<Wanted, InitError> {
    if let Some(choice) = var(ENV_BOOTSTRAP) {
        return match choice.trim() {
            "launcher" => Ok(Wanted::Launcher),
            "pmi" => Ok(Wanted::Pmi),
            "pmix" => Ok(Wanted::Pmix),
            other => Err(InitError::Environment(format!(
                "{ENV_BOOTSTRAP}={other:?}: choose launcher (commcore run), pmi (MPICH's \
                 mpiexec) or pmix (Open MPI's mpirun, Slurm's srun --mpi=pmix)"
            ))),
        };
    }
    Ok(if var(crate::launch::env::SHM_FD).is_some() {
        Wanted::Launcher
    } else if var("PMIX_NAMESPACE").is_some() {
        Wanted::Pmix
    } else if var("PMI_FD").is_some() {
        Wanted::Pmi
    } else {
        Wanted::Nothing
    })
}

/// Finds this process's origin from the environment (read by `var`), connecting to a
/// foreign launcher when one started it.
pub(super) fn origin(var: impl Fn(&str) -> Option<String>) -> Result<Origin, InitError> {
    let bad = InitError::Environment;
    match wanted(&var)? {
        Wanted::Launcher => Ok(Origin::Launcher),
        Wanted::Nothing => match super::foreign_launcher::refusal(&var) {
            Some(refusal) => Err(bad(refusal)),
            None => Ok(Origin::Singleton),
        },
        Wanted::Pmi => match Pmi1Client::from_env(FOREIGN_TIMEOUT) {
            Ok(Some(client)) => {
                watch_exit(client.raw_fd(), client.rank());
                Ok(Origin::Foreign(Box::new(Foreign::new(Client::Pmi(client)))))
            }
            Ok(None) => Err(bad(format!("{ENV_BOOTSTRAP}=pmi, but PMI_FD is not set"))),
            Err(e) => Err(bad(e.to_string())),
        },
        Wanted::Pmix => pmix_origin(),
    }
}

#[cfg(feature = "pmix")]
fn pmix_origin() -> Result<Origin, InitError> {
    match PmixClient::from_env() {
        Ok(Some(client)) => {
            Ok(Origin::Foreign(Box::new(Foreign::new(Client::Pmix(Box::new(client))))))
        }
        Ok(None) => Err(InitError::Environment(
            "asked for PMIx, but no PMIx server started this process (PMIX_NAMESPACE is unset)"
                .into(),
        )),
        Err(e) => Err(InitError::Environment(e.to_string())),
    }
}

#[cfg(not(feature = "pmix"))]
fn pmix_origin() -> Result<Origin, InitError> {
    Err(InitError::Environment(
        "a PMIx server (Open MPI's mpirun, or srun --mpi=pmix) started this process, and this \
         build has no PMIx client: build with `--features commcore-linux/pmix` (needs \
         libpmix-dev), or start it with `mpiexec.mpich` or `commcore run`"
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_environment_names_the_launcher_and_the_setting_overrides_it() {
        let choose = |pairs: &[(&str, &str)]| wanted(&env(pairs)).ok();
        assert_eq!(choose(&[("COMMCORE_SHM_FD", "3"), ("PMI_FD", "4")]), Some(Wanted::Launcher));
        assert_eq!(choose(&[("PMIX_NAMESPACE", "j"), ("PMI_FD", "4")]), Some(Wanted::Pmix));
        assert_eq!(choose(&[("PMI_FD", "4")]), Some(Wanted::Pmi));
        assert_eq!(choose(&[]), Some(Wanted::Nothing));
        assert_eq!(choose(&[("PMIX_NAMESPACE", "j"), (ENV_BOOTSTRAP, "pmi")]), Some(Wanted::Pmi));
        let typo = wanted(&env(&[(ENV_BOOTSTRAP, "slurm")])).expect_err("refused");
        assert!(typo.to_string().contains("launcher") && typo.to_string().contains("pmix"));
    }

    #[test]
    fn an_asked_for_launcher_that_is_not_there_is_an_error_not_a_singleton() {
        // PMI_FD is not set in the test's own environment.
        assert!(std::env::var_os("PMI_FD").is_none());
        let Err(refused) = origin(env(&[(ENV_BOOTSTRAP, "pmi")])) else { panic!("joined") };
        assert!(refused.to_string().contains("PMI_FD"), "{refused}");
        let Err(foreign) = origin(env(&[("OMPI_COMM_WORLD_SIZE", "4")])) else { panic!("joined") };
        assert!(foreign.to_string().contains("one of 4 ranks"), "{foreign}");
    }
}
