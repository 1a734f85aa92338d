//! Hosts on this machine for `commcore run --hosts H`: H network namespaces linked through
//! a bridge, so that ranks on different "hosts" can reach each other only over TCP on
//! addresses of their own.
//!
//! ```text
//!   host 0 ns: eth0 10.77.0.1/24 --veth-- h0 \
//!   host 1 ns: eth0 10.77.0.2/24 --veth-- h1 -- br0   (switch ns)
//!   ...                                    hN /
//! ```
//!
//! Every namespace is anonymous: no name under `/var/run/netns`, nothing in this machine's
//! own namespace (no veth, no bridge, no route). The launcher holds each by a descriptor and
//! each rank lives in its host's; when the last of them is gone, whatever the cause (the job
//! ended, failed, or the launcher was killed), the kernel removes the namespaces with their
//! links. The same private range serves every job, since each job's namespaces are its own.
//!
//! Creating a namespace needs CAP_SYS_ADMIN (root) and a kernel with network namespaces;
//! links are configured with iproute2's `ip`. Without either, [`Network::create`] says so.

use std::fmt;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::process::{Command, Stdio};
use std::sync::mpsc;

/// The first three octets of every host address; host `i` is `.(i + 1)`.
const SUBNET: [u8; 3] = [10, 77, 0];
/// Hosts one job may have (one /24, the bridge's port names).
pub const HOSTS_MAX: usize = 64;

/// Why the hosts could not be made.
#[derive(Debug)]
pub enum HostsError {
    /// `--hosts` out of range.
    Count(usize),
    /// Creating a namespace was refused (no root, or no namespace support).
    Namespace(io::Error),
    /// `ip` is missing or failed.
    Ip(String),
}

impl fmt::Display for HostsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostsError::Count(n) => write!(f, "--hosts must be 1 to {HOSTS_MAX}, not {n}"),
            HostsError::Namespace(e) if e.raw_os_error() == Some(libc::EPERM) => write!(
                f,
                "--hosts needs root (CAP_SYS_ADMIN) to create network namespaces ({e}); \
                 run as root or without --hosts"
            ),
            HostsError::Namespace(e) => write!(
                f,
                "cannot create a network namespace ({e}): this kernel or container does not \
                 allow them; run without --hosts"
            ),
            HostsError::Ip(why) => write!(f, "cannot link the hosts: {why}"),
        }
    }
}

impl std::error::Error for HostsError {}

/// The job's hosts; dropping it lets the kernel remove them once no rank is left in them.
#[derive(Debug)]
pub struct Network {
    hosts: Vec<OwnedFd>,
    _switch: OwnedFd,
}

/// A namespace made by a thread that stays in it until told to configure and leave.
struct Holder {
    fd: OwnedFd,
    tid: i32,
    go: mpsc::Sender<String>,
    done: std::thread::JoinHandle<Result<(), HostsError>>,
}

fn holder() -> Result<Holder, HostsError> {
    let (made, made_rx) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<String>();
    let done = std::thread::spawn(move || -> Result<(), HostsError> {
        // SAFETY: unshare only changes this thread's namespaces; gettid takes no arguments.
        let unshared = unsafe { libc::unshare(libc::CLONE_NEWNET) };
        if unshared != 0 {
            let _ = made.send(Err(HostsError::Namespace(io::Error::last_os_error())));
            return Ok(());
        }
        let fd = std::fs::File::open("/proc/thread-self/ns/net").map(OwnedFd::from);
        // SAFETY: gettid takes no arguments.
        let tid = unsafe { libc::gettid() };
        let _ = made.send(fd.map(|fd| (fd, tid)).map_err(HostsError::Namespace));
        // Commands forked from this thread run in its namespace.
        match go_rx.recv() {
            Ok(script) => ip_batch(&script).and_then(|()| wait_until_up()),
            Err(_) => Ok(()),
        }
    });
    let (fd, tid) = made_rx.recv().map_err(|_| HostsError::Ip("a setup thread died".into()))??;
    Ok(Holder { fd, tid, go, done })
}

/// Runs iproute2 commands, one per line, in the calling thread's network namespace.
fn ip_batch(script: &str) -> Result<(), HostsError> {
    let mut child = Command::new("ip")
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| HostsError::Ip(format!("cannot run `ip` ({e}): install iproute2")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes()).map_err(|e| HostsError::Ip(e.to_string()))?;
    }
    let output = child.wait_with_output().map_err(|e| HostsError::Ip(e.to_string()))?;
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(HostsError::Ip(format!("`ip` failed: {}", stderr.trim())))
    }
}

/// Waits until every link of the calling thread's namespace is up. The kernel activates a
/// link's queue a while after its carrier comes (up to a second later); packets sent before
/// are dropped, and a lost ARP request is retried only after a second.
fn wait_until_up() -> Result<(), HostsError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let output = Command::new("ip")
            .args(["-o", "link", "show"])
            .output()
            .map_err(|e| HostsError::Ip(format!("cannot run `ip` ({e}): install iproute2")))?;
        let text = String::from_utf8_lossy(&output.stdout);
        let down: Vec<&str> =
            text.lines().filter(|l| !l.contains("LOOPBACK") && !l.contains("state UP")).collect();
        if down.is_empty() {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(HostsError::Ip(format!("links still down after 5 s: {}", down.join("; "))));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

impl Network {
    /// Makes `hosts` namespaces on one bridge, each with its address ([`Network::address`]).
    pub fn create(hosts: usize) -> Result<Network, HostsError> {
        if !(1..=HOSTS_MAX).contains(&hosts) {
            return Err(HostsError::Count(hosts));
        }
        let switch = holder()?;
        let members: Vec<Holder> = (0..hosts).map(|_| holder()).collect::<Result<_, _>>()?;
        // Each pair is made with its ends straight in the two namespaces: nothing in ours.
        let pairs: String = members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                format!(
                    "link add h{i} netns {} type veth peer name eth0 netns {}\n",
                    switch.tid, m.tid
                )
            })
            .collect();
        ip_batch(&pairs)?;
        let mut bridge =
            String::from("link set lo up\nlink add br0 type bridge forward_delay 0 stp_state 0\nlink set br0 up\n");
        for i in 0..hosts {
            bridge.push_str(&format!("link set h{i} master br0\nlink set h{i} up\n"));
        }
        let _ = switch.go.send(bridge);
        for (i, m) in members.iter().enumerate() {
            let ip = Self::address(i);
            let _ =
                m.go.send(format!("link set lo up\naddr add {ip}/24 dev eth0\nlink set eth0 up\n"));
        }
        let mut outcome = Ok(());
        let mut hosts_fds = Vec::with_capacity(hosts);
        let switch_fd = switch.fd;
        let done = std::iter::once(switch.done).chain(members.into_iter().map(|m| {
            hosts_fds.push(m.fd);
            m.done
        }));
        for thread in done.collect::<Vec<_>>() {
            let result =
                thread.join().unwrap_or_else(|_| Err(HostsError::Ip("setup panicked".into())));
            if outcome.is_ok() {
                outcome = result;
            }
        }
        outcome.map(|()| Network { hosts: hosts_fds, _switch: switch_fd })
    }

    /// Host `host`'s address.
    pub fn address(host: usize) -> Ipv4Addr {
        Ipv4Addr::new(SUBNET[0], SUBNET[1], SUBNET[2], host as u8 + 1)
    }

    /// Hosts in the network.
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// The descriptor of host `host`'s namespace, for [`enter`] in a child before exec.
    pub fn namespace(&self, host: usize) -> Option<RawFd> {
        self.hosts.get(host).map(AsRawFd::as_raw_fd)
    }
}

/// Moves the calling (single-threaded, just forked) process into the namespace `fd`.
/// Async-signal-safe: a child's `pre_exec` may call it.
pub fn enter(fd: RawFd) -> io::Result<()> {
    // SAFETY: setns takes a descriptor and a flag, no pointers.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Which host rank `rank` of `procs` runs on: consecutive blocks, as even as they go.
pub fn host_of(rank: usize, procs: usize, hosts: usize) -> usize {
    rank * hosts / procs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_fill_hosts_in_even_blocks() {
        let of = |procs, hosts| (0..procs).map(|r| host_of(r, procs, hosts)).collect::<Vec<_>>();
        assert_eq!(of(4, 2), [0, 0, 1, 1]);
        assert_eq!(of(3, 3), [0, 1, 2]);
        assert_eq!(of(5, 2), [0, 0, 0, 1, 1]);
        assert_eq!(Network::address(2), Ipv4Addr::new(10, 77, 0, 3));
    }

    #[test]
    fn out_of_range_host_counts_are_refused() {
        assert!(matches!(Network::create(0), Err(HostsError::Count(0))));
        assert!(matches!(Network::create(HOSTS_MAX + 1), Err(HostsError::Count(_))));
    }
}
