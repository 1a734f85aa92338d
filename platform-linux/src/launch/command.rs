//! The command that starts one process of a job, a first job's rank or a spawned child
//! alike: its identity in the environment, the descriptors it inherits, its host's
//! namespace, and the parent-death signal.

use std::ffi::OsStr;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{env, hosts, kv};

/// Everything one process of a job is told.
pub(super) struct Start<'a> {
    pub program: &'a OsStr,
    pub args: &'a [std::ffi::OsString],
    /// Variables the job was given (`-x`), then the command's own, then the launcher's.
    pub env: [&'a [(String, String)]; 2],
    pub wdir: Option<&'a Path>,
    pub rank: usize,
    pub size: usize,
    pub node: usize,
    pub nodes: usize,
    pub host: usize,
    pub hosts: usize,
    pub job: u64,
    /// The job's region, the rank's end of the exchange, with `--hosts` its host's network
    /// namespace (and the host's number).
    pub fds: RankFds,
    /// For a spawned child: the bridge to its parents and its command's variables.
    pub spawned: Option<SpawnedChild>,
}

/// The descriptors a rank inherits: the job's region, its end of the key-value exchange,
/// and with `--hosts` its host's network namespace (and the host's number).
#[derive(Clone, Copy)]
pub(super) struct RankFds {
    pub region: i32,
    pub kv: i32,
    pub net: Option<(i32, usize)>,
}

/// What a spawned child is told beyond a rank's identity.
#[derive(Clone, Copy)]
pub(super) struct SpawnedChild {
    pub bridge: i32,
    pub parent_size: usize,
    pub appnum: usize,
    pub cpu_offset: usize,
}

/// The command for `start`, in process group `pgid` (0: a new one).
pub(super) fn command(start: &Start<'_>, pgid: i32) -> Command {
    let RankFds { region: fd, kv: kv_fd, net } = start.fds;
    let mut command = Command::new(start.program);
    command.args(start.args);
    for variables in start.env {
        command.envs(variables.iter().map(|(k, v)| (k, v)));
    }
    // A launcher started inside a spawned rank must not pass that rank's parent on.
    for name in env::SPAWNED {
        command.env_remove(name);
    }
    command
        .env(env::RANK, start.rank.to_string())
        .env(env::SIZE, start.size.to_string())
        .env(env::NODE, start.node.to_string())
        .env(env::NODES, start.nodes.to_string())
        .env(env::SHM_FD, fd.to_string())
        .env(kv::ENV_FD, kv_fd.to_string())
        .env(env::HOST, start.host.to_string())
        .env(env::HOSTS, start.hosts.to_string())
        .env(env::JOB, start.job.to_string())
        .stdin(Stdio::null())
        .process_group(pgid);
    if let Some(dir) = start.wdir {
        command.current_dir(dir);
    }
    if let Some((_, host)) = net {
        command.env(crate::tcp::ENV_LISTEN_IP, hosts::Network::address(host).to_string());
    }
    let bridge = start.spawned.map(|s| s.bridge);
    if let Some(s) = start.spawned {
        command
            .env(env::PARENT_BRIDGE_FD, s.bridge.to_string())
            .env(env::PARENT_SIZE, s.parent_size.to_string())
            .env(env::APPNUM, s.appnum.to_string())
            .env(env::CPU_OFFSET, s.cpu_offset.to_string());
    }
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (fcntl, setns, prctl, signal) on values copied in.
    unsafe {
        command.pre_exec(move || {
            // Keep the descriptors across exec (they are close-on-exec in the launcher; the
            // rank makes them close-on-exec again once it has taken them).
            for inherited in [Some(fd), Some(kv_fd), bridge].into_iter().flatten() {
                if libc::fcntl(inherited, libc::F_SETFD, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some((namespace, _)) = net {
                hosts::enter(namespace)?;
            }
            // Die with the launcher, so a killed launcher leaves no ranks behind.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // A launcher started with `&` by a script inherits SIGINT ignored, and an
            // ignored signal stays ignored across exec: give ranks the defaults.
            for signal in super::signals::FORWARDED {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        })
    };
    command
}
