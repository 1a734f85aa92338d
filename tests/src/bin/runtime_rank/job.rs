//! Scenarios about the job: identity and binding, hangs, idle waiting, ranks that die, and
//! settings that differ between ranks.

use commcore_linux::runtime::{Comm, World, ANY_SOURCE, ANY_TAG};

pub(crate) fn identity(world: &World) {
    let comm = world.comm();
    let expected = [
        std::env::var("COMMCORE_RANK").map_or(0, |r| r.parse().unwrap()),
        std::env::var("COMMCORE_SIZE").map_or(1, |s| s.parse().unwrap()),
    ];
    assert_eq!([comm.rank(), comm.size()], expected);
    assert_eq!(world.self_comm().size(), 1);
    // The world's address vector and rank maps come from core.
    let me = comm.rank();
    let av = world.address_vector();
    assert_eq!(av.len(), comm.size());
    let host = world.host_of(me).expect("a rank has a host");
    assert_eq!(av[me].node().0 as usize, host * world.nodes() + world.node());
    assert_eq!(av[me].address_word() >> 32, u64::from(std::process::id()));
    assert_eq!(comm.rank_map().kind(), commcore::rankmap::ModelKind::Direct);
    let (_, lpid) = world.self_comm().rank_map().translate(0).expect("self has rank 0");
    assert_eq!(lpid as usize, me);
    assert_eq!(world.self_comm().rank_map().translate(1), None);
    // Everyone reports its node and the CPU it is bound to (or "-" when it may run on
    // several) to rank 0, which prints both maps.
    let cpus = commcore_tests::cpus::allowed_cpus();
    let cpu = match cpus[..] {
        [cpu] => cpu as u32,
        _ => u32::MAX,
    };
    let mine = [world.node() as u32, cpu];
    if comm.rank() == 0 {
        let mut all = vec![mine];
        for from in 1..comm.size() {
            let mut buf = [0u8; 8];
            comm.recv(&mut buf, from, 0).unwrap();
            let word = |i: usize| u32::from_le_bytes(buf[4 * i..4 * i + 4].try_into().unwrap());
            all.push([word(0), word(1)]);
        }
        let nodes: Vec<String> = all.iter().map(|[node, _]| node.to_string()).collect();
        let bound: Vec<String> = all
            .iter()
            .map(|&[_, cpu]| if cpu == u32::MAX { "-".into() } else { cpu.to_string() })
            .collect();
        println!(
            "nodes {} of {}; cpus {}; {}",
            nodes.join(" "),
            world.nodes(),
            bound.join(" "),
            world.single_copy()
        );
    } else {
        let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_le_bytes()).collect();
        comm.send(&bytes, 0, 0).unwrap();
    }
}

/// Rank 1 dies (killed by a signal, or exiting with code 3) while the others wait for it in
/// a receive; the launcher must end them.
pub(crate) fn die(comm: &Comm, how: &str) {
    if comm.rank() == 1 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if how == "exit" {
            std::process::exit(3);
        }
        // SAFETY: raise only sends a signal to this process.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let mut buf = [0u8; 8];
    let _ = comm.recv(&mut buf, 1, 0);
}

/// Rank 0 waits for a message nobody sends; the launcher's timeout must end the job.
pub(crate) fn hang(comm: &Comm) {
    if comm.rank() == 0 {
        let mut buf = [0u8; 8];
        let _ = comm.recv(&mut buf, ANY_SOURCE, ANY_TAG);
    }
}

/// Rank 0 sleeps a second before it sends; the others wait in a receive meanwhile and must
/// sleep rather than spin: each may use at most a fifth of a core while it waits.
pub(crate) fn idle(comm: &Comm) {
    const WAIT: std::time::Duration = std::time::Duration::from_secs(1);
    if comm.rank() == 0 {
        std::thread::sleep(WAIT);
        for to in 1..comm.size() {
            comm.send(b"wake", to, 0).unwrap();
        }
        return;
    }
    let before = cpu_seconds();
    let mut buf = [0u8; 4];
    comm.recv(&mut buf, 0, 0).unwrap();
    let used = cpu_seconds() - before;
    assert!(
        used < 0.2 * WAIT.as_secs_f64(),
        "rank {} burnt {used:.3} s of CPU waiting",
        comm.rank()
    );
}

pub(crate) fn cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: usage points to writable memory of the right type.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The last rank asks for a different area bound than the others: every rank's init must
/// refuse, naming the setting and both values, rather than run mismatched protocols.
pub(crate) fn mismatched_settings() {
    use commcore_linux::launch::env;
    use commcore_linux::runtime::{InitError, ENV_SHM_MAX};
    let rank: usize = std::env::var(env::RANK).unwrap().parse().unwrap();
    let size: usize = std::env::var(env::SIZE).unwrap().parse().unwrap();
    if rank == size - 1 {
        std::env::set_var(ENV_SHM_MAX, "0");
    }
    match World::init() {
        Err(InitError::SettingsDiffer(difference)) => {
            let other = difference.rank;
            assert_eq!((difference.name, other), (ENV_SHM_MAX, size - 1), "{difference}");
            let text = difference.to_string();
            assert!(text.contains("unset on rank 0") && text.contains("0 on rank"), "{text}");
            if rank == 0 {
                println!("init refused: rank {other}'s settings differ");
            }
        }
        Err(other) => panic!("init failed otherwise: {other}"),
        Ok(_) => panic!("init accepted mismatched settings"),
    }
}

/// Every rank loops on allreduce; rank 1 is killed in the middle of one.
pub(crate) fn die_in_collective(comm: &Comm) {
    use commcore::coll::{Datatype, ReduceOp};
    let mut out = [0u8; 8];
    for round in 0u64.. {
        if comm.rank() == 1 && round == 50 {
            // SAFETY: raise only sends a signal to this process.
            unsafe { libc::raise(libc::SIGKILL) };
        }
        let _ = comm.allreduce(&round.to_le_bytes(), &mut out, Datatype::U64, ReduceOp::Sum);
    }
}

/// Rank 0 exits (with the code given as the second argument) after joining and without
/// finalizing, while the others wait for it in a barrier or a receive: the launcher must end
/// the job naming rank 0.
pub(crate) fn leave_early(comm: &Comm, in_recv: bool) {
    let code: i32 = std::env::args().nth(2).and_then(|c| c.parse().ok()).unwrap_or(0);
    if comm.rank() == 0 {
        std::process::exit(code);
    }
    if in_recv {
        let mut buf = [0u8; 8];
        let _ = comm.recv(&mut buf, 0, 5);
    } else {
        let _ = comm.barrier();
    }
    panic!("rank {} got past rank 0, which left", comm.rank());
}

/// A program this rank starts must not inherit the job's region descriptor.
pub(crate) fn fd_not_inherited() {
    let fd = std::env::var(commcore_linux::launch::env::SHM_FD).expect("launched");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("test ! -e /proc/$$/fd/{fd}"))
        .status()
        .expect("sh runs");
    assert!(status.success(), "a child of the rank inherited descriptor {fd}");
    println!("fd-not-inherited: descriptor {fd} not inherited");
}
