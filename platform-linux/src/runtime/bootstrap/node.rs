//! Ranks that a foreign launcher started meet their node: each publishes where it runs and
//! what it brings, and the ranks of one node share one region that no path names.
//!
//! A node is a boot of a kernel and a network namespace in it (`boot_id` and the inode of
//! `/proc/self/ns/net`): ranks there can share memory and reach each other's abstract Unix
//! sockets; ranks elsewhere (another machine, another namespace) are reached over TCP.
//!
//! Every rank listens on an abstract Unix socket of a random name before the fence and
//! publishes it with its node. After the fence the node's lowest rank (its leader) makes the
//! region (a memfd: nothing in `/dev/shm`, gone with the last process that maps it, also
//! when ranks are killed), writes what the region would hold for ranks elsewhere (their
//! host and CPU count), and hands the descriptor to each other rank of the node over its
//! socket (`SCM_RIGHTS`). Abstract sockets carry no permissions and no ptrace rule applies,
//! unlike `pidfd_getfd`, which Yama's default scope refuses between siblings; a rank that
//! connects gets the descriptor only if it knows the leader's random name, which only the
//! job's exchange tells.

use std::io;
use std::os::fd::OwnedFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::time::{Duration, Instant};

use super::super::error::InitError;
use super::super::settings::{Difference, Settings, JOB_WIDE};
use crate::dpm::fds::{recv_fds, send_fds};
use crate::launch::exchange::Exchange;
use crate::shm::{Layout, Region};

/// The exchange's key for what a rank publishes at start-up.
const KEY: &str = "node";
/// How long the leader waits for its node's ranks to take the region, and they for it.
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(30);

/// What a rank publishes: `NODE:CPUS:MEETING:SETTING.SETTING...`, every field printable.
struct Published {
    node: String,
    cpus: u32,
    meeting: String,
    settings: [u64; JOB_WIDE],
}

impl Published {
    fn text(&self) -> String {
        let words: Vec<String> = self.settings.iter().map(|w| format!("{w:x}")).collect();
        format!("{}:{}:{}:{}", self.node, self.cpus, self.meeting, words.join("."))
    }

    fn parse(text: &str) -> Option<Published> {
        let mut fields = text.split(':');
        let (node, cpus, meeting, words) =
            (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
        let mut settings = [0u64; JOB_WIDE];
        let mut parsed = words.split('.').map(|w| u64::from_str_radix(w, 16));
        for slot in settings.iter_mut() {
            *slot = parsed.next()?.ok()?;
        }
        let cpus = cpus.parse().ok()?;
        (fields.next().is_none() && parsed.next().is_none()).then(|| Published {
            node: node.to_string(),
            cpus,
            meeting: meeting.to_string(),
            settings,
        })
    }
}

/// This rank's view of the job after the meeting: its node's region and who shares it.
pub(in crate::runtime) struct Met {
    pub region: Region,
    pub layout: Layout,
    /// Ranks sharing the region (this node's).
    pub members: usize,
    /// This rank's place among them (0 for the leader).
    pub local_index: usize,
}

/// The node this process runs on, as a printable word.
fn node_identity() -> io::Result<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")?;
    let namespace = std::fs::metadata("/proc/self/ns/net")?.ino();
    Ok(format!("{}-{namespace:x}", boot.trim().replace('-', "")))
}

fn random_name() -> String {
    let mut bytes = [0u8; 16];
    // SAFETY: bytes is a writable buffer of the length passed.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let fallback = nanos ^ (u128::from(std::process::id()) << 64);
    let value = if n == bytes.len() as isize { u128::from_le_bytes(bytes) } else { fallback };
    format!("commcore-{value:032x}")
}

/// Meets the job over `exchange` (collective: one put, one fence, one get per rank) and
/// takes this node's region. `rank` of `size`; `settings` must agree job-wide.
pub(in crate::runtime) fn meet(
    exchange: &mut dyn Exchange,
    rank: usize,
    size: usize,
    settings: &Settings,
) -> Result<Met, InitError> {
    let bad = |m: String| InitError::Environment(m);
    let layout = Layout::new(size).ok_or_else(|| bad(format!("bad job size {size}")))?;
    let node = node_identity().map_err(|e| bad(format!("cannot tell this node: {e}")))?;
    let meeting = random_name();
    let address = SocketAddr::from_abstract_name(meeting.as_bytes()).map_err(InitError::Region)?;
    let listener = UnixListener::bind_addr(&address).map_err(InitError::Region)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let own = Published {
        node,
        cpus: u32::try_from(cpus).unwrap_or(u32::MAX),
        meeting,
        settings: settings.job_wide().map(|(_, word)| word),
    };
    let text = own.text();
    let exchanged = |e: crate::launch::exchange::ExchangeError| bad(e.to_string());
    exchange.put(KEY, &text).map_err(exchanged)?;
    exchange.fence().map_err(exchanged)?;
    let mut everyone = Vec::with_capacity(size);
    for r in 0..size {
        let theirs =
            if r == rank { text.clone() } else { exchange.get(r, KEY).map_err(exchanged)? };
        let parsed = Published::parse(&theirs)
            .ok_or_else(|| bad(format!("rank {r} published {theirs:?}, not a commcore entry")))?;
        everyone.push(parsed);
    }
    if let Some(difference) = difference(&everyone) {
        return Err(InitError::SettingsDiffer(difference));
    }
    // Hosts in order of their first rank: the same numbering on every rank.
    let mut nodes: Vec<&str> = Vec::new();
    let hosts: Vec<u32> = everyone
        .iter()
        .map(|p| {
            let index = nodes.iter().position(|&n| n == p.node).unwrap_or_else(|| {
                nodes.push(&p.node);
                nodes.len() - 1
            });
            index as u32
        })
        .collect();
    let locals: Vec<usize> = (0..size).filter(|&r| hosts[r] == hosts[rank]).collect();
    let local_index = locals.iter().position(|&r| r == rank).unwrap_or(0);
    let leader = locals[0];
    let region = if rank == leader {
        let region = Region::create(layout.region_bytes()).map_err(InitError::Region)?;
        region.atomic_u32(layout.job_size()).store(size as u32, Relaxed);
        region.atomic_u32(layout.nodes()).store(1, Relaxed);
        for (r, published) in everyone.iter().enumerate() {
            region.atomic_u32(layout.host(r)).store(hosts[r], Relaxed);
            region.atomic_u32(layout.cpus(r)).store(published.cpus, Relaxed);
        }
        region.atomic_u64(layout.magic()).store(Layout::MAGIC, Release);
        hand_over(&listener, &region, locals.len() - 1, HANDOVER_TIMEOUT)?;
        region
    } else {
        let region = take(&everyone[leader].meeting, leader)?;
        let ours = region.len() >= layout.region_bytes()
            && region.atomic_u64(layout.magic()).load(Acquire) == Layout::MAGIC
            && region.atomic_u32(layout.job_size()).load(Relaxed) as usize == size;
        if !ours {
            return Err(bad(format!("rank {leader} handed over a region that is not this job's")));
        }
        region
    };
    Ok(Met { region, layout, members: locals.len(), local_index })
}

/// The first job-wide setting in which a rank differs from rank 0.
fn difference(everyone: &[Published]) -> Option<Difference> {
    let names = Settings::default().job_wide().map(|(name, _)| name);
    let first = everyone.first()?;
    everyone.iter().enumerate().skip(1).find_map(|(rank, theirs)| {
        (0..JOB_WIDE).find(|&i| theirs.settings[i] != first.settings[i]).map(|i| Difference {
            name: names[i],
            rank,
            on_rank_0: Settings::describe_job_wide(names[i], first.settings[i]),
            on_rank: Settings::describe_job_wide(names[i], theirs.settings[i]),
        })
    })
}

/// The leader hands the region to `count` ranks of its node, within the timeout.
fn hand_over(
    listener: &UnixListener,
    region: &Region,
    count: usize,
    timeout: Duration,
) -> Result<(), InitError> {
    let deadline = Instant::now() + timeout;
    listener.set_nonblocking(true).map_err(InitError::Region)?;
    let mut served = 0;
    while served < count {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).map_err(InitError::Region)?;
                send_fds(&stream, b"r", &[region.as_fd()])
                    .map_err(|e| InitError::Environment(format!("handing the region: {e}")))?;
                served += 1;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(InitError::Environment(format!(
                        "{} rank(s) of this node did not come for the shared region within \
                         {timeout:?}",
                        count - served
                    )));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(InitError::Region(e)),
        }
    }
    Ok(())
}

/// A member takes the region from its node's leader.
fn take(meeting: &str, leader: usize) -> Result<Region, InitError> {
    let failed = |what: String| {
        InitError::Environment(format!("cannot take the shared region from rank {leader}: {what}"))
    };
    let address = SocketAddr::from_abstract_name(meeting.as_bytes()).map_err(InitError::Region)?;
    let stream = UnixStream::connect_addr(&address).map_err(|e| failed(e.to_string()))?;
    stream.set_read_timeout(Some(HANDOVER_TIMEOUT)).map_err(InitError::Region)?;
    let mut byte = [0u8; 1];
    let (_, mut fds) = recv_fds(&stream, &mut byte, 1).map_err(|e| failed(e.to_string()))?;
    let fd: OwnedFd = fds.pop().ok_or_else(|| failed("no descriptor came".into()))?;
    Region::from_owned(fd).map_err(InitError::Region)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_rank_publishes_reads_back_and_garbage_does_not() {
        let own = Published {
            node: "ab12-f00".into(),
            cpus: 8,
            meeting: "commcore-0123".into(),
            settings: [1, u64::MAX, 0, 7, 9, 10, 0],
        };
        let back = Published::parse(&own.text()).expect("parses");
        assert_eq!((back.node.as_str(), back.cpus), ("ab12-f00", 8));
        assert_eq!((back.meeting.as_str(), back.settings), ("commcore-0123", own.settings));
        for bad in ["", "a:b", "n:8:m:1.2", "n:x:m:1.2.3.4.5.6.7", "n:8:m:1.2.3.4.5.6.7.8"] {
            assert!(Published::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_rank_whose_settings_differ_from_rank_0_is_named() {
        let rank = |setting: u64| Published {
            node: "n".into(),
            cpus: 2,
            meeting: "m".into(),
            settings: [0, 0, 0, 0, 0, 0, setting],
        };
        assert!(difference(&[rank(0), rank(0)]).is_none());
        let found = difference(&[rank(0), rank(0), rank(1)]).expect("differs");
        assert_eq!((found.rank, found.name), (2, "COMMCORE_TRANSPORT"));
    }

    #[test]
    fn a_member_takes_the_region_its_leader_hands_over() {
        let region = Region::create(4096).unwrap();
        region.atomic_u64(0).store(0x5eed, Release);
        let name = random_name();
        let address = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixListener::bind_addr(&address).unwrap();
        let member =
            std::thread::spawn(move || take(&name, 0).map(|r| r.atomic_u64(0).load(Relaxed)));
        hand_over(&listener, &region, 1, HANDOVER_TIMEOUT).unwrap();
        assert_eq!(member.join().unwrap().unwrap(), 0x5eed);
    }

    #[test]
    fn a_leader_whose_members_never_come_fails_in_bounded_time() {
        let region = Region::create(4096).unwrap();
        let address = SocketAddr::from_abstract_name(random_name().as_bytes()).unwrap();
        let listener = UnixListener::bind_addr(&address).unwrap();
        let started = Instant::now();
        let error = hand_over(&listener, &region, 2, Duration::from_millis(50)).unwrap_err();
        assert!(error.to_string().contains("2 rank(s) of this node did not come"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
