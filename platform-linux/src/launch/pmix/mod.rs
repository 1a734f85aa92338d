//! A client of PMIx, the process-management interface Open MPI's `mpirun` and Slurm's
//! `srun --mpi=pmix` serve: the server hands each rank `PMIX_NAMESPACE`, `PMIX_RANK` and
//! the address of its local server, and the rank speaks to it through libpmix (Debian's
//! `libpmix2` 4.2): `PMIx_Init`, `Put`/`Commit`/`Fence` with data collection and `Get`,
//! job-level keys (`PMIX_JOB_SIZE`, `PMIX_LOCAL_PEERS`, `PMIX_NODEID`), `Abort`,
//! `Publish`/`Lookup`/`Unpublish`, `Spawn`, `Finalize`.
//!
//! Behind the `pmix` feature, so that the default build needs no libpmix. The 15 functions
//! and 5 structures used are declared by hand (`ffi.rs`) rather than generated with bindgen,
//! which would need libclang at build time and still leave the release macros
//! (`PMIX_VALUE_RELEASE`, ...) to write by hand. Nothing is trusted blindly: build.rs
//! compiles and runs `header.c` against the installed headers, which emits the constants and
//! keys and a compile-time assertion of every size, alignment and field offset, so a
//! declaration that differs from the header fails the build, not a call.
//!
//! Values are printable ASCII strings (callers hex-encode anything else). `PMIx_Init` runs
//! once per process: a second [`PmixClient::from_env`] is refused; dropping the client
//! finalizes. `get` reads the local data store only (`PMIX_OPTIONAL`), where a fence with
//! data collection put every rank's values: a key nobody put is `None`, never a wait.

mod error;
mod ffi;
mod value;

pub use error::PmixError;

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};

use error::{check, check_served, status_name};
use value::{key, key_array, nspace_text, printable, proc_in, string_of, unsigned_of};
use value::{Fetched, Infos, StringValue};

/// Set by the first [`PmixClient::from_env`] that calls `PMIx_Init`.
static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// How long a lookup may take the server (`PMIX_TIMEOUT`), in seconds.
pub const LOOKUP_TIMEOUT_SECS: i32 = 30;
/// How long a fence may wait for the other ranks (`PMIX_TIMEOUT`), in seconds: a rank that
/// never comes (or a server that loses the fence, as Open MPI 4.1's mpirun sometimes does
/// for spawned jobs) is an error, not a hang.
pub const FENCE_TIMEOUT_SECS: i32 = 60;

/// One process's PMIx connection; finalized on drop.
pub struct PmixClient {
    me: ffi::Proc,
    namespace: String,
    rank: usize,
    size: usize,
}

impl PmixClient {
    /// The connection the PMIx server described in the environment, initialized
    /// (`PMIx_Init`), with the job's size read; `None` when `PMIX_NAMESPACE` and `PMIX_RANK`
    /// are not set (not started by a PMIx server).
    pub fn from_env() -> Result<Option<Self>, PmixError> {
        let namespace = std::env::var_os("PMIX_NAMESPACE");
        let rank = std::env::var_os("PMIX_RANK");
        match (&namespace, &rank) {
            (None, None) => return Ok(None),
            (None, Some(_)) => {
                return Err(PmixError::NotLaunched("PMIX_RANK is set, PMIX_NAMESPACE not".into()))
            }
            (Some(_), None) => {
                return Err(PmixError::NotLaunched("PMIX_NAMESPACE is set, PMIX_RANK not".into()))
            }
            (Some(_), Some(_)) => {}
        }
        if INITIALIZED.swap(true, Ordering::AcqRel) {
            return Err(PmixError::Refused(
                "PMIx_Init was already called in this process (one PmixClient per process)".into(),
            ));
        }
        let mut me = ffi::Proc::empty();
        // SAFETY: `me` is a valid pmix_proc_t to fill; no directives (NULL, 0).
        let status = unsafe { ffi::PMIx_Init(&mut me, std::ptr::null_mut(), 0) };
        check("PMIx_Init", status)?;
        // From here on, dropping the client finalizes.
        let mut client =
            PmixClient { me, namespace: nspace_text(&me.nspace), rank: me.rank as usize, size: 0 };
        let job = proc_in(&me, ffi::RANK_WILDCARD);
        let size = match client.fetch("PMIx_Get(PMIX_JOB_SIZE)", &job, ffi::JOB_SIZE, false)? {
            Some(size) => Some(size),
            None => client.fetch("PMIx_Get(PMIX_UNIV_SIZE)", &job, ffi::UNIV_SIZE, false)?,
        };
        let size = size.ok_or_else(|| {
            PmixError::NotLaunched(
                "the server gives neither PMIX_JOB_SIZE nor PMIX_UNIV_SIZE".into(),
            )
        })?;
        let size = unsigned_of(size.value()).ok_or_else(|| {
            PmixError::NotLaunched(format!(
                "the job size is not an unsigned integer (PMIx type {})",
                size.value().kind
            ))
        })?;
        client.size = usize::try_from(size).unwrap_or(usize::MAX);
        if client.rank >= client.size {
            return Err(PmixError::NotLaunched(format!(
                "rank {} is not below the job size {}",
                client.rank, client.size
            )));
        }
        Ok(Some(client))
    }

    /// This process's rank in its namespace.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The job's size (`PMIX_JOB_SIZE`, or `PMIX_UNIV_SIZE` where the server gives no job
    /// size).
    pub fn size(&self) -> usize {
        self.size
    }

    /// This job's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The ranks of this namespace on this node (`PMIX_LOCAL_PEERS`), sorted.
    pub fn local_ranks(&self) -> Result<Vec<usize>, PmixError> {
        const CALL: &str = "PMIx_Get(PMIX_LOCAL_PEERS)";
        let job = proc_in(&self.me, ffi::RANK_WILDCARD);
        let peers =
            self.fetch(CALL, &job, ffi::LOCAL_PEERS, false)?.ok_or_else(|| not_found(CALL))?;
        let text = string_of(peers.value()).ok_or_else(|| {
            PmixError::Refused(format!(
                "PMIX_LOCAL_PEERS is not a string (PMIx type {})",
                peers.value().kind
            ))
        })?;
        let mut ranks = text
            .split(',')
            .map(|r| r.trim().parse::<usize>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                PmixError::Refused(format!("PMIX_LOCAL_PEERS {text:?} is not a list of ranks"))
            })?;
        ranks.sort_unstable();
        ranks.dedup();
        Ok(ranks)
    }

    /// The node `rank` runs on (`PMIX_NODEID`).
    pub fn node_of(&self, rank: usize) -> Result<u32, PmixError> {
        const CALL: &str = "PMIx_Get(PMIX_NODEID)";
        let peer = proc_in(&self.me, self.peer(rank)?);
        let node = self.fetch(CALL, &peer, ffi::NODEID, false)?.ok_or_else(|| not_found(CALL))?;
        unsigned_of(node.value()).and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
            PmixError::Refused(format!(
                "PMIX_NODEID of rank {rank} is not a 32-bit unsigned integer (PMIx type {})",
                node.value().kind
            ))
        })
    }

    /// Publishes `value` under `key` for this rank to every rank (`PMIX_GLOBAL`); visible
    /// to others after the next [`fence`](Self::fence).
    pub fn put(&mut self, key_text: &str, value_text: &str) -> Result<(), PmixError> {
        let key = key(key_text)?;
        let mut value = StringValue::new(&printable("value", value_text)?)?;
        // SAFETY: the key is NUL-terminated and the value loaded; PMIx_Put copies both.
        let status = unsafe { ffi::PMIx_Put(ffi::GLOBAL, key.as_ptr(), value.as_mut_ptr()) };
        check("PMIx_Put", status)
    }

    /// Commits what was put and waits until every rank of the namespace did
    /// (`PMIx_Commit`, `PMIx_Fence` on the whole namespace with `PMIX_COLLECT_DATA`).
    pub fn fence(&mut self) -> Result<(), PmixError> {
        // SAFETY: no arguments; commits what this process put.
        check("PMIx_Commit", unsafe { ffi::PMIx_Commit() })?;
        let job = proc_in(&self.me, ffi::RANK_WILDCARD);
        let infos = Infos::default()
            .flag(ffi::COLLECT_DATA, true)?
            .int(ffi::TIMEOUT, FENCE_TIMEOUT_SECS)?;
        let (info, ninfo) = infos.as_parts();
        // SAFETY: one valid proc (the whole namespace) and a valid info array, both alive
        // for the blocking call.
        check("PMIx_Fence", unsafe { ffi::PMIx_Fence(&job, 1, info, ninfo) })
    }

    /// What `rank` put under `key` before the last fence; `None` if it put nothing there.
    /// Read from the local data store the fence filled (`PMIX_OPTIONAL`), so never a wait:
    /// a value put after the last fence is `None` too.
    pub fn get(&mut self, rank: usize, key_text: &str) -> Result<Option<String>, PmixError> {
        let key = key(key_text)?;
        let peer = proc_in(&self.me, self.peer(rank)?);
        let Some(value) = self.fetch("PMIx_Get", &peer, &key, true)? else { return Ok(None) };
        string_of(value.value()).map(Some).ok_or_else(|| {
            PmixError::Refused(format!(
                "rank {rank}'s {key_text:?} is not a string (PMIx type {})",
                value.value().kind
            ))
        })
    }

    /// Ends the whole namespace with `status` (`PMIx_Abort` for every process of it, then
    /// this process exits with `status` at once, as Open MPI's own abort does: Open MPI
    /// 4.1's `mpirun` ends the job when the aborting process exits, and an aborting process
    /// that lingers can leave it hanging). Returns only if `PMIx_Abort` failed.
    pub fn abort(&self, status: i32, message: &str) -> PmixError {
        let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
        // No processes (NULL, 0): every process of this namespace.
        // SAFETY: a NUL-terminated message alive for the call.
        let result =
            unsafe { ffi::PMIx_Abort(status as c_int, message.as_ptr(), std::ptr::null_mut(), 0) };
        if let Err(error) = check("PMIx_Abort", result) {
            return error;
        }
        std::process::exit(status)
    }

    /// Publishes `name` = `value` to the session (`PMIx_Publish`, `PMIX_RANGE_SESSION`).
    pub fn publish(&mut self, name: &str, value_text: &str) -> Result<(), PmixError> {
        let (name, value) = (key(name)?, printable("value", value_text)?);
        let infos =
            Infos::default().string(&name, &value)?.range(ffi::RANGE, ffi::RANGE_SESSION)?;
        let (info, ninfo) = infos.as_parts();
        // SAFETY: a valid info array, alive for the blocking call.
        check_served("PMIx_Publish", unsafe { ffi::PMIx_Publish(info, ninfo) })
    }

    /// The value published under `name` in the session now, `None` if nothing is (no wait
    /// for a publisher; the server must answer within [`LOOKUP_TIMEOUT_SECS`]).
    pub fn lookup(&mut self, name: &str) -> Result<Option<String>, PmixError> {
        let name = key(name)?;
        let mut data = ffi::Pdata::empty();
        data.key = key_array(&name);
        // No PMIX_WAIT: not waiting is PMIx's default, and Open MPI 4.1's data server waits
        // whenever the key is present, whatever its value. The timeout bounds the server.
        let infos = Infos::default()
            .range(ffi::RANGE, ffi::RANGE_SESSION)?
            .int(ffi::TIMEOUT, LOOKUP_TIMEOUT_SECS)?;
        let (info, ninfo) = infos.as_parts();
        // SAFETY: one constructed pdata whose key is set, and a valid info array, alive for
        // the blocking call, which fills the pdata's proc and value.
        let status = unsafe { ffi::PMIx_Lookup(&mut data, 1, info, ninfo) };
        let found = string_of(&data.value);
        let kind = data.value.kind;
        // SAFETY: the pdata's value is constructed or filled by PMIx_Lookup; released once.
        unsafe { ffi::PMIx_Value_destruct(&mut data.value) };
        if status == ffi::ERR_NOT_FOUND {
            return Ok(None);
        }
        check_served("PMIx_Lookup", status)?;
        found.map(Some).ok_or_else(|| {
            PmixError::Refused(format!(
                "the value published as {name:?} is not a string (PMIx type {kind})"
            ))
        })
    }

    /// Withdraws what this process published under `name` (`PMIx_Unpublish`).
    pub fn unpublish(&mut self, name: &str) -> Result<(), PmixError> {
        let name = key(name)?;
        let mut keys = [name.as_ptr().cast_mut(), std::ptr::null_mut()];
        let infos = Infos::default().range(ffi::RANGE, ffi::RANGE_SESSION)?;
        let (info, ninfo) = infos.as_parts();
        // SAFETY: a NULL-terminated array of NUL-terminated keys the library only reads, and
        // a valid info array, alive for the blocking call.
        check_served("PMIx_Unpublish", unsafe {
            ffi::PMIx_Unpublish(keys.as_mut_ptr(), info, ninfo)
        })
    }

    /// Starts `maxprocs` processes of `program` with `args` and `env` in a new namespace
    /// (`PMIx_Spawn`, in this process's working directory) and returns that namespace.
    pub fn spawn(
        &mut self,
        program: &str,
        args: &[String],
        env: &[(String, String)],
        maxprocs: usize,
    ) -> Result<String, PmixError> {
        let app = SpawnApp {
            program: program.to_string(),
            args: args.to_vec(),
            env: env.to_vec(),
            wdir: None,
            maxprocs,
        };
        self.spawn_apps(std::slice::from_ref(&app))
    }

    /// Starts the processes of several programs as one new namespace (`PMIx_Spawn` of
    /// several apps: their ranks follow the order of `apps`) and returns the namespace.
    pub fn spawn_apps(&mut self, apps: &[SpawnApp]) -> Result<String, PmixError> {
        let prepared = apps.iter().map(PreparedApp::new).collect::<Result<Vec<_>, _>>()?;
        let mut argvs: Vec<Vec<*mut c_char>> =
            prepared.iter().map(|p| null_terminated(&p.argv)).collect();
        let mut envs: Vec<Vec<*mut c_char>> =
            prepared.iter().map(|p| null_terminated(&p.env)).collect();
        let raw: Vec<ffi::App> = prepared
            .iter()
            .zip(argvs.iter_mut().zip(envs.iter_mut()))
            .map(|(p, (argv, env))| ffi::App {
                cmd: p.cmd.as_ptr().cast_mut(),
                argv: argv.as_mut_ptr(),
                env: env.as_mut_ptr(),
                cwd: p.cwd.as_ref().map_or(std::ptr::null_mut(), |c| c.as_ptr().cast_mut()),
                maxprocs: p.maxprocs,
                info: std::ptr::null_mut(),
                ninfo: 0,
            })
            .collect();
        let mut nspace = [0 as c_char; ffi::MAX_NSLEN + 1];
        // SAFETY: the apps' strings and NULL-terminated arrays (`prepared`, `argvs`, `envs`)
        // outlive the blocking call, which only reads them; `nspace` is a pmix_nspace_t for
        // the new namespace.
        let status = unsafe {
            ffi::PMIx_Spawn(std::ptr::null(), 0, raw.as_ptr(), raw.len(), nspace.as_mut_ptr())
        };
        check_served("PMIx_Spawn", status)?;
        Ok(nspace_text(&nspace))
    }

    /// `rank` as a PMIx rank, if it is one of this job's.
    fn peer(&self, rank: usize) -> Result<ffi::Rank, PmixError> {
        ffi::Rank::try_from(rank).ok().filter(|_| rank < self.size).ok_or_else(|| {
            PmixError::Refused(format!("rank {rank} is not below the job size {}", self.size))
        })
    }

    /// `PMIx_Get` of `key` for `proc_` (`PMIX_OPTIONAL`: the local store only, if
    /// `local`); `PMIX_ERR_NOT_FOUND` is `None`.
    fn fetch(
        &self,
        call: &'static str,
        proc_: &ffi::Proc,
        key: &CStr,
        local: bool,
    ) -> Result<Option<Fetched>, PmixError> {
        let infos = match local {
            true => Infos::default().flag(ffi::OPTIONAL, true)?,
            false => Infos::default(),
        };
        let (info, ninfo) = infos.as_parts();
        let mut value: *mut ffi::Value = std::ptr::null_mut();
        // SAFETY: a valid proc, NUL-terminated key and info array, alive for the blocking
        // call, which stores a value it allocated (or nothing) in `value`.
        let status = unsafe { ffi::PMIx_Get(proc_, key.as_ptr(), info, ninfo, &mut value) };
        // Owned from here, whatever the status.
        let value = Fetched::new(value);
        if status == ffi::ERR_NOT_FOUND {
            return Ok(None);
        }
        check(call, status)?;
        value.map(Some).ok_or_else(|| PmixError::Refused(format!("{call} returned no value")))
    }
}

impl Drop for PmixClient {
    fn drop(&mut self) {
        // SAFETY: PMIx_Init succeeded for this client; no directives. Its status has no one
        // left to tell.
        unsafe { ffi::PMIx_Finalize(std::ptr::null(), 0) };
    }
}

/// The error for a reserved key the server does not give.
fn not_found(call: &'static str) -> PmixError {
    PmixError::Call { call, status: ffi::ERR_NOT_FOUND, name: status_name(ffi::ERR_NOT_FOUND) }
}

/// Pointers to `strings`, then NULL, as argv-style arrays are.
/// One program of a spawn: its arguments, added environment, directory (this process's
/// when `None`) and process count.
pub struct SpawnApp {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to its environment.
    pub env: Vec<(String, String)>,
    /// Its working directory.
    pub wdir: Option<String>,
    /// How many processes run it.
    pub maxprocs: usize,
}

/// A [`SpawnApp`] as C strings, alive while `PMIx_Spawn` reads them.
struct PreparedApp {
    cmd: CString,
    argv: Vec<CString>,
    env: Vec<CString>,
    cwd: Option<CString>,
    maxprocs: c_int,
}

impl PreparedApp {
    fn new(app: &SpawnApp) -> Result<PreparedApp, PmixError> {
        let text = |what: &str, t: &str| {
            CString::new(t).map_err(|_| PmixError::Refused(format!("{what} {t:?} holds a NUL")))
        };
        let maxprocs = c_int::try_from(app.maxprocs).ok().filter(|&n| n > 0).ok_or_else(|| {
            PmixError::Refused(format!("cannot spawn {} processes", app.maxprocs))
        })?;
        let cmd = text("program", &app.program)?;
        let argv = std::iter::once(Ok(cmd.clone()))
            .chain(app.args.iter().map(|a| text("argument", a)))
            .collect::<Result<Vec<_>, _>>()?;
        let env = app
            .env
            .iter()
            .map(|(name, value)| text("environment entry", &format!("{name}={value}")))
            .collect::<Result<Vec<_>, _>>()?;
        let cwd = match &app.wdir {
            Some(dir) => Some(text("directory", dir)?),
            None => std::env::current_dir()
                .ok()
                .and_then(|d| CString::new(d.into_os_string().into_encoded_bytes()).ok()),
        };
        Ok(PreparedApp { cmd, argv, env, cwd, maxprocs })
    }
}

fn null_terminated(strings: &[CString]) -> Vec<*mut c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr().cast_mut())
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect()
}
