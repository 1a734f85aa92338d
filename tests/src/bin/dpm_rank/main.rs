//! A rank program for the dynamic-process tests: `dpm_rank SCENARIO [FILE] [CYCLES]`,
//! started by the launcher. Every check that fails panics, so the rank exits non-zero and
//! the launcher names it; rank 0 prints `ok` (and figures) at the end.

use std::io::{Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::time::{Duration, Instant};

use commcore::coll::{Datatype, ReduceOp};
use commcore_linux::runtime::{Comm, DpmError, World};

const TIMEOUT: Duration = Duration::from_secs(20);

/// What the job does.
#[derive(Clone, Copy)]
enum Scenario {
    /// Opens a port, publishes its name in FILE (or with the name service, for a FILE of
    /// `name:SERVICE`), accepts CYCLES times.
    Accept,
    /// Reads the port name from FILE and connects CYCLES times.
    Connect,
    /// Ranks 0 and 1 join over an abstract Unix socket.
    JoinUnix,
    /// Ranks 0 and 1 join over a TCP connection on the loopback.
    JoinTcp,
    /// Malformed, closed and forged ports, and an accept nobody comes to: errors on every
    /// rank, the same everywhere.
    BadPorts,
    /// Spawns CYCLES times FILE (a number) children of this program as `child`, talks to
    /// them, merges, and disconnects; descriptors do not grow.
    Spawn,
    /// A spawned child: meets its parents, talks, merges, disconnects.
    Child,
    /// Spawns 2 children as `middle`, which spawn 2 grandchildren each.
    Nested,
    /// A child that spawns 2 children of its own before it meets its parents.
    Middle,
    /// spawn_multiple of two commands (2 and 1 children): the children's APPNUM.
    Multiple,
    /// A missing program and maxprocs 0: the same error on every rank.
    SpawnBad,
    /// Children that die: one before it meets the parents, one during a collective on the
    /// inter-communicator, one after it disconnected.
    SpawnDying,
    /// A child that exits at once (FILE says when: `early`, `collective` or `after`).
    Dying,
    /// The ranks of each host (`commcore run --hosts 2`) form a group; host 0's accepts,
    /// host 1's connects (over TCP: no shared memory between hosts), CYCLES times.
    Hosts,
    /// Rank 0 (host 0) spawns FILE children onto host 1: they meet over TCP, CYCLES times.
    SpawnHost,
    /// [`Scenario::SpawnDying`] with the children on host 1 (met over TCP).
    SpawnDyingHost,
}

mod spawn;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scenario = match args.get(1).map(String::as_str) {
        Some("accept") => Scenario::Accept,
        Some("connect") => Scenario::Connect,
        Some("join-unix") => Scenario::JoinUnix,
        Some("join-tcp") => Scenario::JoinTcp,
        Some("bad-ports") => Scenario::BadPorts,
        Some("spawn") => Scenario::Spawn,
        Some("child") => Scenario::Child,
        Some("nested") => Scenario::Nested,
        Some("middle") => Scenario::Middle,
        Some("multiple") => Scenario::Multiple,
        Some("spawn-bad") => Scenario::SpawnBad,
        Some("spawn-dying") => Scenario::SpawnDying,
        Some("dying") => Scenario::Dying,
        Some("hosts") => Scenario::Hosts,
        Some("spawn-host") => Scenario::SpawnHost,
        Some("spawn-dying-host") => Scenario::SpawnDyingHost,
        other => {
            eprintln!("dpm_rank: unknown scenario {other:?}");
            std::process::exit(2);
        }
    };
    let file = args.get(2).cloned().unwrap_or_default();
    let cycles: usize = args.get(3).and_then(|c| c.parse().ok()).unwrap_or(1);
    if matches!(scenario, Scenario::Dying)
        && file == "early"
        && std::env::var("COMMCORE_RANK").as_deref() == Ok("1")
    {
        // Dies before it meets its parents.
        std::process::exit(3);
    }
    let mut world = World::init().unwrap_or_else(|e| {
        eprintln!("dpm_rank: {e}");
        std::process::exit(1)
    });
    match scenario {
        Scenario::Accept | Scenario::Connect => {
            meet_repeatedly(&world, matches!(scenario, Scenario::Accept), &file, cycles)
        }
        Scenario::JoinUnix | Scenario::JoinTcp => {
            join(&world, matches!(scenario, Scenario::JoinTcp))
        }
        Scenario::BadPorts => bad_ports(&world),
        Scenario::Spawn => spawn::repeatedly(&world, file.parse().unwrap_or(1), cycles),
        Scenario::Child => spawn::child(&mut world),
        Scenario::Nested => spawn::nested(&world),
        Scenario::Middle => spawn::middle(&mut world),
        Scenario::Multiple => spawn::multiple(&world),
        Scenario::SpawnBad => spawn::bad(&world),
        Scenario::SpawnDying => spawn::dying(&world, None),
        Scenario::SpawnDyingHost => spawn::dying(&world, Some(1)),
        Scenario::Dying => spawn::die(&mut world, &file),
        Scenario::Hosts => across_hosts(&world, cycles),
        Scenario::SpawnHost => spawn::onto_host(&world, file.parse().unwrap_or(1), cycles),
    }
    world.comm().barrier().unwrap();
    if world.rank() == 0 {
        println!("ok");
    }
}

/// Open descriptors of this process.
pub(crate) fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Rank 0's `text` on every rank.
fn from_rank0(comm: &Comm, text: &str) -> String {
    let mut bytes = [0u8; 1024];
    bytes[..text.len()].copy_from_slice(text.as_bytes());
    comm.bcast(&mut bytes, 0).unwrap();
    String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_string()
}

fn meet(world: &World, accept: bool, path: &str) -> Comm {
    let comm = world.comm();
    if accept {
        let name = if comm.rank() == 0 { world.open_port().unwrap() } else { String::new() };
        if comm.rank() == 0 {
            match path.strip_prefix("name:") {
                Some(service) => world.publish_name(service, &name).unwrap(),
                None => {
                    std::fs::write(format!("{path}.tmp"), &name).unwrap();
                    std::fs::rename(format!("{path}.tmp"), path).unwrap();
                }
            }
        }
        let inter = comm.accept(&name, 0, TIMEOUT).unwrap();
        if comm.rank() == 0 {
            if let Some(service) = path.strip_prefix("name:") {
                world.unpublish_name(service).unwrap();
            }
            world.close_port(&name).unwrap();
        }
        inter
    } else {
        let mut name = String::new();
        if comm.rank() == 0 {
            let start = Instant::now();
            let service = path.strip_prefix("name:");
            name = loop {
                let found = match service {
                    Some(service) => world.lookup_name(service).map_err(|e| e.to_string()),
                    None => std::fs::read_to_string(path).map_err(|e| e.to_string()),
                };
                match found {
                    Ok(name) => break name,
                    Err(_) if start.elapsed() < TIMEOUT => {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    Err(e) => panic!("no port name under {path}: {e}"),
                }
            };
            if service.is_none() {
                let _ = std::fs::remove_file(path);
            }
        }
        comm.connect(&name, 0, TIMEOUT).unwrap()
    }
}

/// Traffic that checks itself on an inter-communicator: point-to-point with every remote
/// rank, an allreduce, a bcast from each side, and a merge with an allreduce on it.
pub(crate) fn exercise(inter: &Comm, accept: bool) {
    let (me, size, remote) = (inter.rank(), inter.size(), inter.remote_size().unwrap());
    for peer in 0..remote {
        let mut back = [0u8; 16];
        let mine = [(me as u64).to_le_bytes(), (peer as u64).to_le_bytes()].concat();
        let status = inter.sendrecv(&mine, peer, 3, &mut back, peer, 3).unwrap();
        assert_eq!(status.source, peer);
        assert_eq!(u64::from_le_bytes(back[..8].try_into().unwrap()), peer as u64);
        assert_eq!(u64::from_le_bytes(back[8..].try_into().unwrap()), me as u64);
    }
    // An inter-communicator allreduce gives each side the other group's sum.
    let mut sum = [0u8; 8];
    let mine = (me as u64 + 1).to_le_bytes();
    inter.allreduce(&mine, &mut sum, Datatype::U64, ReduceOp::Sum).unwrap();
    assert_eq!(u64::from_le_bytes(sum), (remote * (remote + 1) / 2) as u64);
    let merged = inter.intercomm_merge(!accept).unwrap();
    assert_eq!(merged.size(), size + remote);
    let expected_rank = if accept { me } else { remote + me };
    assert_eq!(merged.rank(), expected_rank, "the accepting group (high = false) comes first");
    let mut all = vec![0u8; merged.size() * 8];
    merged.allgather(&(merged.rank() as u64).to_le_bytes(), &mut all).unwrap();
    for (r, chunk) in all.chunks_exact(8).enumerate() {
        assert_eq!(u64::from_le_bytes(chunk.try_into().unwrap()), r as u64);
    }
    let big = vec![merged.rank() as u8; 300_000];
    let mut got = vec![0u8; 300_000];
    let next = (merged.rank() + 1) % merged.size();
    let prev = (merged.rank() + merged.size() - 1) % merged.size();
    merged.sendrecv(&big, next, 9, &mut got, prev, 9).unwrap();
    assert!(got.iter().all(|&b| b == prev as u8), "a long message crosses the bridge");
}

fn meet_repeatedly(world: &World, accept: bool, file: &str, cycles: usize) {
    let mut fds_after_first = 0;
    for cycle in 0..cycles {
        let inter = meet(world, accept, &format!("{file}.{cycle}"));
        exercise(&inter, accept);
        inter.disconnect().unwrap();
        if cycle == 0 {
            fds_after_first = open_fds();
        }
    }
    let fds = open_fds();
    assert!(
        fds <= fds_after_first,
        "descriptors grew over {cycles} cycles: {fds_after_first} -> {fds}"
    );
}

fn join(world: &World, tcp: bool) {
    let comm = world.comm();
    assert!(comm.size() >= 2, "join needs two ranks");
    if comm.rank() > 1 {
        return;
    }
    let name = format!("commcore-join-test-{}", std::process::id());
    let inter = if tcp {
        if comm.rank() == 0 {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            comm.send(&port.to_le_bytes(), 1, 0).unwrap();
            let (mut stream, _) = listener.accept().unwrap();
            world.join(&mut stream, TIMEOUT).unwrap()
        } else {
            let mut port = [0u8; 2];
            comm.recv(&mut port, 0, 0).unwrap();
            let mut stream =
                std::net::TcpStream::connect(("127.0.0.1", u16::from_le_bytes(port))).unwrap();
            world.join(&mut stream, TIMEOUT).unwrap()
        }
    } else if comm.rank() == 0 {
        let address = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixListener::bind_addr(&address).unwrap();
        comm.send(&std::process::id().to_le_bytes(), 1, 0).unwrap();
        let (mut stream, _) = listener.accept().unwrap();
        world.join(&mut stream, TIMEOUT).unwrap()
    } else {
        let mut pid = [0u8; 4];
        comm.recv(&mut pid, 0, 0).unwrap();
        let name = format!("commcore-join-test-{}", u32::from_le_bytes(pid));
        let address = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let mut stream = UnixStream::connect_addr(&address).unwrap();
        stream.write_all(&[]).unwrap();
        let _ = stream.read(&mut []);
        world.join(&mut stream, TIMEOUT).unwrap()
    };
    assert_eq!((inter.size(), inter.remote_size()), (1, Some(1)));
    let mut back = [0u8; 8];
    inter.sendrecv(&(comm.rank() as u64).to_le_bytes(), 0, 1, &mut back, 0, 1).unwrap();
    assert_eq!(u64::from_le_bytes(back), 1 - comm.rank() as u64);
    inter.disconnect().unwrap();
}

/// Host 0's ranks accept, host 1's connect, `cycles` times, with traffic each time.
fn across_hosts(world: &World, cycles: usize) {
    let comm = world.comm();
    let host = world.host_of(comm.rank()).expect("a rank has a host");
    assert_eq!(world.host_of(0), Some(0));
    let side = comm.split(host as i32, 0).unwrap().expect("every rank has a host");
    for _ in 0..cycles {
        let name = if comm.rank() == 0 { world.open_port().unwrap() } else { String::new() };
        let name = from_rank0(comm, &name);
        let inter = if host == 0 {
            side.accept(&name, 0, TIMEOUT).unwrap()
        } else {
            side.connect(&name, 0, TIMEOUT).unwrap()
        };
        exercise(&inter, host == 0);
        inter.disconnect().unwrap();
        if comm.rank() == 0 {
            world.close_port(&name).unwrap();
        }
    }
    assert_eq!(world.process_groups(), 1, "disconnected groups are released");
}

/// Every rank gets the same error kind (checked by an allgather of its first letter).
pub(crate) fn same_everywhere(comm: &Comm, result: Result<Comm, DpmError>, kind: &str) {
    let error = match result {
        Ok(_) => panic!("{kind}: expected an error"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains(kind), "{kind}: got {error:?}");
    let mut all = vec![0u8; comm.size() * 4];
    let digest = (error.len() as u32).to_le_bytes();
    comm.allgather(&digest, &mut all).unwrap();
    assert!(all.chunks_exact(4).all(|c| c == digest), "ranks differ on {kind}: {error}");
}

fn bad_ports(world: &World) {
    let comm = world.comm();
    let short = Duration::from_millis(300);
    same_everywhere(comm, comm.connect("not a port", 0, short), "port");
    same_everywhere(comm, comm.connect("commcore-port:2;unix=x;token=00", 0, short), "port");
    let name = world.open_port().unwrap();
    world.close_port(&name).unwrap();
    same_everywhere(comm, comm.connect(&name, 0, short), "closed");
    // Rank 0 accepts alone (on self) while the other ranks connect with a forged token
    // (the same socket, another token): the live acceptor refuses them and times out.
    let name = world.open_port().unwrap();
    let rank0 = from_rank0(comm, &name);
    let at = rank0.rfind("token=").expect("a port name carries a token");
    let forged = format!("{}{}", &rank0[..at + 6], "0".repeat(32));
    let side = comm.split(i32::from(comm.rank() > 0), 0).unwrap().unwrap();
    if comm.rank() == 0 {
        let accepted = world.self_comm().accept(&name, 0, Duration::from_millis(800));
        assert!(matches!(accepted, Err(DpmError::TimedOut(_))), "{accepted:?}");
    } else {
        same_everywhere(&side, side.connect(&forged, 0, Duration::from_secs(5)), "refused");
    }
    world.close_port(&name).unwrap();
    // A port that is open but whose owner never accepts: the connect ends at its timeout.
    if comm.size() > 1 {
        let name = world.open_port().unwrap();
        let rank0 = from_rank0(comm, &name);
        if comm.rank() > 0 {
            same_everywhere(&side, side.connect(&rank0, 0, short), "timed out");
        }
        comm.barrier().unwrap();
        world.close_port(&name).unwrap();
    }
    same_everywhere(comm, comm.accept("never opened", 0, short), "not open");
    let no_one = world.open_port().unwrap();
    same_everywhere(comm, comm.accept(&no_one, 0, short), "timed out");
    world.close_port(&no_one).unwrap();
    assert!(world.close_port(&no_one).is_err(), "a port closes once");
}
