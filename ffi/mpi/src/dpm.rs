//! Dynamic processes: spawn, ports with accept and connect, the name service, join and
//! disconnect.

use std::ffi::{c_char, c_int};
use std::sync::Arc;
use std::time::Duration;

use commcore_linux::runtime::{DpmError, SpawnCommand, SpawnOptions};

use crate::call::mpi_fn;
use crate::comm::add;
use crate::consts::*;
use crate::error::{fail, MpiError, MpiResult};
use crate::p2p::on_comm;
use crate::ptr::{array, array_mut, c_str, count, get, put, put_text};
use crate::state;

/// How long accept and join wait for the other side (MPI has no limit).
const MEET_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// How long a connect waits for an accept unless told (MPICH's default): MPI makes a port
/// that no process accepts on an error of the connect, `MPI_ERR_PORT`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(180);

/// A connect's time limit: the info's `timeout` (seconds), else MPICH's setting of it in
/// the environment, else [`CONNECT_TIMEOUT`].
fn connect_timeout(info: c_int) -> MpiResult<Duration> {
    let pairs = crate::info::pairs(info)?;
    let given = pairs.iter().find(|(k, _)| k == "timeout").map(|(_, v)| v.clone()).or_else(|| {
        ["MPIR_CVAR_CH4_COMM_CONNECT_TIMEOUT", "MPIR_CVAR_CH3_COMM_CONNECT_TIMEOUT"]
            .iter()
            .find_map(|name| std::env::var(name).ok())
    });
    match given {
        None => Ok(CONNECT_TIMEOUT),
        Some(text) => match text.trim().parse::<u64>() {
            Ok(seconds) => Ok(Duration::from_secs(seconds)),
            Err(_) => fail(
                MPI_ERR_INFO_VALUE,
                format!("connect timeout \"{text}\" is not a number of seconds"),
            ),
        },
    }
}

impl From<DpmError> for MpiError {
    fn from(error: DpmError) -> Self {
        let class = match &error {
            DpmError::Comm(comm) => return (*comm).into(),
            DpmError::NotLaunched | DpmError::Spawn { .. } | DpmError::Launcher(_) => MPI_ERR_SPAWN,
            DpmError::InvalidArgument(_) => MPI_ERR_ARG,
            DpmError::Port(_) => MPI_ERR_PORT,
            DpmError::Name(_) => MPI_ERR_NAME,
            _ => MPI_ERR_OTHER,
        };
        MpiError::new(class, error.to_string())
    }
}

/// The arguments `argv` (NULL-terminated, or `MPI_ARGV_NULL`).
///
/// # Safety
/// `argv` is NULL or a NULL-terminated array of C strings.
unsafe fn arguments(argv: *const *const c_char) -> MpiResult<Vec<String>> {
    let mut args = Vec::new();
    if argv.is_null() {
        return Ok(args);
    }
    for i in 0.. {
        // SAFETY: the array ends with NULL, which this loop stops at.
        let arg = unsafe { *argv.add(i) };
        if arg.is_null() {
            break;
        }
        // SAFETY: a C string of the array.
        args.push(unsafe { c_str(arg) }?.to_string());
    }
    Ok(args)
}

/// The spawn options from info keys `wdir`, `host` and `env` (`NAME=value` lines).
fn options(info: c_int) -> MpiResult<SpawnOptions> {
    let mut options = SpawnOptions::default();
    for (key, value) in crate::info::pairs(info)? {
        match key.as_str() {
            "wdir" => options.wdir = Some(value.into()),
            "host" => options.host = value.parse().ok(),
            "env" => options.env.extend(
                value
                    .lines()
                    .filter_map(|l| l.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            ),
            _ => {}
        }
    }
    Ok(options)
}

/// Runs spawn `commands` at `root` of `comm`; writes the inter-communicator and the
/// children's error codes.
///
/// # Safety
/// `intercomm` is valid for a write; `errcodes` NULL or has a slot per child.
unsafe fn spawn(
    commands: Vec<SpawnCommand>,
    root: c_int,
    comm: c_int,
    intercomm: *mut c_int,
    errcodes: *mut c_int,
) -> MpiResult {
    if intercomm.is_null() {
        return fail(MPI_ERR_ARG, "intercomm is NULL");
    }
    let children: usize = commands.iter().map(|c| c.maxprocs).sum();
    // SAFETY: the caller's contract.
    let codes = unsafe { array_mut(errcodes, children) }.ok();
    let made = on_comm(comm, |c| {
        let root = usize::try_from(root).ok().filter(|&r| r < c.size());
        let Some(root) = root else {
            return fail(MPI_ERR_ROOT, "the root is not a rank of the communicator");
        };
        Ok(c.spawn_multiple(&commands, root))
    })?;
    match made {
        Ok(inter) => {
            if let Some(codes) = codes {
                codes.fill(MPI_SUCCESS);
            }
            // SAFETY: the caller's contract.
            unsafe { put(intercomm, add(comm, Some(inter))?) }
        }
        Err(error) => {
            if let (Some(codes), DpmError::Spawn { errcodes, .. }) = (codes, &error) {
                for (slot, &code) in codes.iter_mut().zip(errcodes) {
                    *slot = if code == 0 { MPI_SUCCESS } else { MPI_ERR_SPAWN };
                }
            }
            // SAFETY: the caller's contract.
            unsafe { put(intercomm, MPI_COMM_NULL) }?;
            Err(error.into())
        }
    }
}

mpi_fn! {
    /// Starts `maxprocs` processes of `command` (arguments read at `root`).
    fn MPI_Comm_spawn / PMPI_Comm_spawn(command: *const c_char, argv: *const *const c_char, maxprocs: c_int, info: c_int, root: c_int, comm: c_int, intercomm: *mut c_int, array_of_errcodes: *mut c_int) {
        let is_root = on_comm(comm, |c| Ok(usize::try_from(root).ok() == Some(c.rank())))?;
        let commands = if is_root {
            let args = arguments(argv)?;
            vec![SpawnCommand { program: c_str(command)?.into(), args: args.into_iter().map(Into::into).collect(), maxprocs: count(maxprocs)?, options: options(info)? }]
        } else {
            Vec::new()
        };
        spawn(commands, root, comm, intercomm, if is_root { array_of_errcodes } else { std::ptr::null_mut() })
    }

    fn MPI_Comm_spawn_multiple / PMPI_Comm_spawn_multiple(n: c_int, commands: *const *const c_char, argvs: *const *const *const c_char, maxprocs: *const c_int, infos: *const c_int, root: c_int, comm: c_int, intercomm: *mut c_int, array_of_errcodes: *mut c_int) {
        let is_root = on_comm(comm, |c| Ok(usize::try_from(root).ok() == Some(c.rank())))?;
        let mut list = Vec::new();
        if is_root {
            let n = count(n)?;
            let (programs, procs, infos) = (array(commands, n)?, array(maxprocs, n)?, array(infos, n)?);
            let argvs = if argvs.is_null() { None } else { Some(array(argvs, n)?) };
            for i in 0..n {
                let args = match argvs { Some(a) => arguments(a[i])?, None => Vec::new() };
                list.push(SpawnCommand { program: c_str(programs[i])?.into(), args: args.into_iter().map(Into::into).collect(), maxprocs: count(procs[i])?, options: options(infos[i])? });
            }
        }
        spawn(list, root, comm, intercomm, if is_root { array_of_errcodes } else { std::ptr::null_mut() })
    }

    fn MPI_Open_port / PMPI_Open_port(_info: c_int, port_name: *mut c_char) {
        let name = state::with(|s| Ok(s.world.open_port()?))?;
        put_text(port_name, MPI_MAX_PORT_NAME, std::ptr::null_mut(), &name)
    }

    fn MPI_Close_port / PMPI_Close_port(port_name: *const c_char) {
        let name = c_str(port_name)?;
        state::with(|s| Ok(s.world.close_port(name)?))
    }

    fn MPI_Comm_accept / PMPI_Comm_accept(port_name: *const c_char, _info: c_int, root: c_int, comm: c_int, newcomm: *mut c_int) {
        meet(port_name, root, comm, newcomm, None)
    }

    /// Fails with `MPI_ERR_PORT` when no accept comes within the connect's time limit.
    fn MPI_Comm_connect / PMPI_Comm_connect(port_name: *const c_char, info: c_int, root: c_int, comm: c_int, newcomm: *mut c_int) {
        meet(port_name, root, comm, newcomm, Some(connect_timeout(info)?))
    }

    fn MPI_Publish_name / PMPI_Publish_name(service_name: *const c_char, _info: c_int, port_name: *const c_char) {
        let (service, port) = (c_str(service_name)?, c_str(port_name)?);
        state::with(|s| Ok(s.world.publish_name(service, port)?))
    }

    fn MPI_Lookup_name / PMPI_Lookup_name(service_name: *const c_char, _info: c_int, port_name: *mut c_char) {
        let service = c_str(service_name)?;
        let port = state::with(|s| Ok(s.world.lookup_name(service)?))?;
        put_text(port_name, MPI_MAX_PORT_NAME, std::ptr::null_mut(), &port)
    }

    fn MPI_Unpublish_name / PMPI_Unpublish_name(service_name: *const c_char, _info: c_int, _port_name: *const c_char) {
        let service = c_str(service_name)?;
        // The name service refuses a name that is not published: MPI's MPI_ERR_SERVICE.
        state::with(|s| {
            s.world.unpublish_name(service).map_err(|error| match error {
                DpmError::Name(why) => MpiError::new(MPI_ERR_SERVICE, why),
                other => other.into(),
            })
        })
    }

    /// Waits for the traffic on `comm` to end, then frees it; a group no communicator
    /// reaches any more is released.
    fn MPI_Comm_disconnect / PMPI_Comm_disconnect(comm: *mut c_int) {
        let handle = get(comm)?;
        if handle == MPI_COMM_WORLD || handle == MPI_COMM_SELF {
            return fail(MPI_ERR_COMM, "the world and self communicators cannot be disconnected");
        }
        crate::progress::drain(handle);
        let (c, parent) = state::with(|s| {
            s.comm(handle)?;
            let c = crate::comms::remove(handle);
            s.errhandlers.remove(&handle);
            s.names.remove(&handle);
            let parent = s.parent == handle;
            if parent {
                s.parent = MPI_COMM_NULL;
            }
            Ok((c, parent))
        })?;
        if parent {
            // The world holds the parent communicator too: it disconnects that one.
            drop(c);
            state::with(|s| Ok(s.world.disconnect_parent()?))?;
        } else {
            if let Some(c) = c {
                Arc::unwrap_or_clone(c).disconnect()?;
            }
        }
        put(comm, MPI_COMM_NULL)
    }

    /// The inter-communicator to the process at the other end of socket `fd`.
    fn MPI_Comm_join / PMPI_Comm_join(fd: c_int, intercomm: *mut c_int) {
        if intercomm.is_null() {
            return fail(MPI_ERR_ARG, "intercomm is NULL");
        }
        let mut socket = crate::join_socket::Borrowed::new(fd)?;
        let inter = state::with(|s| Ok(s.world.join(&mut socket, MEET_TIMEOUT)?))?;
        put(intercomm, add(MPI_COMM_WORLD, Some(inter))?)
    }
}

/// `MPI_Comm_accept` and `MPI_Comm_connect` (`connect`: its time limit).
///
/// # Safety
/// `port_name` is a C string at `root`; `newcomm` valid for a write.
unsafe fn meet(
    port_name: *const c_char,
    root: c_int,
    comm: c_int,
    newcomm: *mut c_int,
    connect: Option<Duration>,
) -> MpiResult {
    if newcomm.is_null() {
        return fail(MPI_ERR_ARG, "newcomm is NULL");
    }
    let made = on_comm(comm, |c| {
        let root = usize::try_from(root).ok().filter(|&r| r < c.size());
        let Some(root) = root else {
            return fail(MPI_ERR_ROOT, "the root is not a rank of the communicator");
        };
        let port = if c.rank() == root {
            // SAFETY: the caller's contract (the name matters at the root only).
            unsafe { c_str(port_name) }?.to_string()
        } else {
            String::new()
        };
        match connect {
            None => Ok(c.accept(&port, root, MEET_TIMEOUT)?),
            Some(limit) => c.connect(&port, root, limit).map_err(|error| match error {
                DpmError::TimedOut(_) => MpiError::new(
                    MPI_ERR_PORT,
                    format!("no process accepted on the port within {} s", limit.as_secs()),
                ),
                other => other.into(),
            }),
        }
    })?;
    // SAFETY: the caller's contract.
    unsafe { put(newcomm, add(comm, Some(made))?) }
}
