//! The launcher's spawn, exercised without the runtime: `spawn_probe MODE ARGS...`, started
//! by `commcore run`. A parent mode asks the launcher for children (copies of this program
//! in a child mode) and checks what it gets; a child maps the bridge from
//! `COMMCORE_PARENT_BRIDGE_FD`, joins its own job's slot as the runtime does, writes its
//! pid into slot `a + rank`, counts itself in `arrived` and finalizes. Every line a check
//! needs goes to standard output; a failed check exits with code 3 and says why.
//!
//! Parent modes (rank 0 acts; other ranks end at once, or wait in `parent-killed`): `spawn N M`, `multiple M`, `nested M`,
//! `missing M`, `refused`, `failing-child MODE M`, `parent-killed M`, `await-children M`, `cycles N M`, `names M`,
//! `malformed`, `host M`. Child modes: `child`, `child-sleep`, `child-exit-early`,
//! `child-nest`, `child-names` (each with the marker `M` as its argument).

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
use std::time::{Duration, Instant};

use commcore_linux::launch::env;
use commcore_linux::launch::kv::{KvClient, KvError, SpawnCommand, SpawnRequest, Spawned};
use commcore_linux::shm::bridge::FAILED_B;
use commcore_linux::shm::layout::{RANK_FINALIZED, RANK_JOINED};
use commcore_linux::shm::{futex, Bridge, Layout, Region};
use commcore_tests::leftovers::processes_with;

/// Far above what any step needs on an idle machine.
const LIMIT: Duration = Duration::from_secs(60);

fn fail(why: impl std::fmt::Display) -> ! {
    println!("probe failed: {why}");
    let _ = std::io::stdout().flush();
    std::process::exit(3)
}

fn var(name: &str) -> usize {
    let text = std::env::var(name).unwrap_or_else(|_| fail(format!("{name} is unset")));
    text.parse().unwrap_or_else(|_| fail(format!("{name}={text:?}")))
}

fn kv() -> KvClient {
    KvClient::from_env(LIMIT).unwrap_or_else(|e| fail(e))
}

fn me() -> OsString {
    std::env::current_exe().unwrap_or_else(|e| fail(e)).into_os_string()
}

/// `n` copies of this program in child mode `mode`, marked [`kid`].
fn copies(mode: &str, n: usize, marker: &str) -> SpawnCommand {
    let mut command = SpawnCommand::new(me(), n);
    command.args = vec![mode.into(), kid(marker)];
    command
}

/// The marker children carry: the run's marker, which the launcher's command line holds
/// too, made their own.
fn kid(marker: &str) -> OsString {
    format!("{marker}-kid").into()
}

fn request(commands: Vec<SpawnCommand>) -> SpawnRequest {
    SpawnRequest { commands, parent_size: 1, parent_nodes: vec![0], timeout: LIMIT }
}

/// Maps a spawn's bridge and takes parent slot 0.
fn parent_side(spawned: Spawned) -> Bridge {
    let region = Region::from_owned(spawned.bridge).unwrap_or_else(|e| fail(e));
    let bridge = Bridge::open(region).unwrap_or_else(|e| fail(e));
    if bridge.layout.a() != 1 || bridge.layout.b() != spawned.size {
        fail(format!(
            "bridge of {}+{} for 1+{}",
            bridge.layout.a(),
            bridge.layout.b(),
            spawned.size
        ));
    }
    arrive(&bridge, 0);
    bridge
}

fn arrive(bridge: &Bridge, slot: usize) {
    bridge.word(bridge.layout.pid(slot)).store(std::process::id(), Release);
    let arrived = bridge.word(bridge.layout.arrived());
    arrived.fetch_add(1, AcqRel);
    futex::wake_all(arrived);
}

/// Waits until every slot arrived; the failure word if the bridge failed first.
fn await_all(bridge: &Bridge) -> Result<(), u32> {
    let deadline = Instant::now() + LIMIT;
    let arrived = bridge.word(bridge.layout.arrived());
    loop {
        if let Some(failed) = bridge.failure() {
            return Err(failed);
        }
        let n = arrived.load(Acquire);
        if n as usize >= bridge.layout.slots() {
            return Ok(());
        }
        if Instant::now() > deadline {
            fail(format!("only {n} of {} arrived", bridge.layout.slots()));
        }
        futex::wait(arrived, n, Duration::from_millis(10));
    }
}

/// The children's pids, checked distinct and non-zero.
fn child_pids(bridge: &Bridge) -> Vec<i32> {
    let a = bridge.layout.a();
    let pids: Vec<i32> = (a..a + bridge.layout.b())
        .map(|s| bridge.word(bridge.layout.pid(s)).load(Acquire) as i32)
        .collect();
    let mut distinct = pids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() != pids.len() || pids.contains(&0) {
        fail(format!("children's pids {pids:?}"));
    }
    pids
}

/// Spawns, waits for the children and checks them; returns the job and its bridge.
fn spawn_and_meet(kv: &mut KvClient, commands: Vec<SpawnCommand>) -> (u64, Bridge) {
    let spawned = kv.spawn(&request(commands)).unwrap_or_else(|e| fail(e));
    let job = spawned.job;
    let bridge = parent_side(spawned);
    if let Err(failed) = await_all(&bridge) {
        fail(format!("the bridge failed ({failed}) before the children arrived"));
    }
    child_pids(&bridge);
    (job, bridge)
}

/// Whether process `pid` is gone (or a zombie waiting to be reaped).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        }
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !done() {
        if Instant::now() > deadline {
            fail(format!("waited too long for {what}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The launcher's (this rank's parent's) open descriptors, threads and mappings.
fn launcher_usage() -> (usize, usize, usize) {
    // SAFETY: getppid takes no arguments.
    let launcher = unsafe { libc::getppid() };
    let entries =
        |what| std::fs::read_dir(format!("/proc/{launcher}/{what}")).map_or(0, |d| d.count());
    let maps =
        std::fs::read_to_string(format!("/proc/{launcher}/maps")).map_or(0, |m| m.lines().count());
    (entries("fd"), entries("task"), maps)
}

/// The children (of any generation) still running, by their marker.
fn kids_left(marker: &str) -> Vec<i32> {
    processes_with(&format!("{marker}-kid")).into_iter().map(|(pid, _)| pid).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let mode = arg(0);
    if mode.starts_with("child") {
        return child(&mode, &arg(1));
    }
    if std::env::var(env::RANK).as_deref() != Ok("0") {
        // Only rank 0 of a parent job asks; in `parent-killed` the others wait to be ended
        // with the job.
        if mode == "parent-killed" {
            std::thread::sleep(Duration::from_secs(300));
        }
        return;
    }
    let mut kv = kv();
    match mode.as_str() {
        "spawn" => {
            let n: usize = arg(1).parse().unwrap_or_else(|_| fail("spawn N"));
            let (job, _bridge) = spawn_and_meet(&mut kv, vec![copies("child", n, &arg(2))]);
            kv.disconnect(job).unwrap_or_else(|e| fail(e));
            println!("parent ok: job {job} of {n}");
        }
        "multiple" => {
            // The second program is `sh`, which becomes this program in child mode.
            let mut shell = SpawnCommand::new("sh", 1);
            let script = "exec \"$0\" child \"$1\"";
            shell.args = vec!["-c".into(), script.into(), me(), kid(&arg(1))];
            shell.env = vec![("PROBE_VIA".into(), "sh with spaces".into())];
            let (job, _bridge) = spawn_and_meet(&mut kv, vec![copies("child", 2, &arg(1)), shell]);
            kv.disconnect(job).unwrap_or_else(|e| fail(e));
            println!("parent ok: job {job} of 3");
        }
        "nested" => {
            let (job, _bridge) = spawn_and_meet(&mut kv, vec![copies("child-nest", 2, &arg(1))]);
            kv.disconnect(job).unwrap_or_else(|e| fail(e));
            println!("parent ok: job {job} of 2");
        }
        "missing" => missing(&mut kv, &arg(1)),
        "refused" => refused(&mut kv),
        "failing-child" => child_fails(&mut kv, &arg(1), &arg(2)),
        "parent-killed" => {
            let (_, _bridge) = spawn_and_meet(&mut kv, vec![copies("child-sleep", 2, &arg(1))]);
            // SAFETY: getpgrp takes no arguments.
            println!("children up in group {}", unsafe { libc::getpgrp() });
            let _ = std::io::stdout().flush();
            // SAFETY: raise sends a signal to this process.
            unsafe { libc::raise(libc::SIGKILL) };
        }
        "await-children" => {
            let (_, _bridge) = spawn_and_meet(&mut kv, vec![copies("child-sleep", 2, &arg(1))]);
            println!("children up");
            std::thread::sleep(Duration::from_secs(300));
        }
        "cycles" => cycles(&mut kv, arg(1).parse().unwrap_or_else(|_| fail("cycles N")), &arg(2)),
        "names" => names(&mut kv, &arg(1)),
        "malformed" => malformed(kv),
        "host" => {
            let mut command = copies("child", 1, &arg(1));
            command.host = Some(1);
            let (job, _bridge) = spawn_and_meet(&mut kv, vec![command]);
            kv.disconnect(job).unwrap_or_else(|e| fail(e));
            println!("parent ok: job {job} of 1");
        }
        other => fail(format!("unknown mode {other:?}")),
    }
}

/// A command whose program does not exist after one that does: every child of the first
/// is killed, every child of the second has ENOENT, and nothing is left.
fn missing(kv: &mut KvClient, marker: &str) {
    let mut absent = SpawnCommand::new("/nonexistent/commcore-probe-missing", 3);
    absent.args = vec![kid(marker)];
    let commands = vec![copies("child-sleep", 2, marker), absent];
    let mut before = launcher_usage();
    // Once with every check, then again: failed spawns leave the launcher as it was (as it
    // was after the first, once the launcher's own start-up is over).
    for attempt in 0..50 {
        match kv.spawn(&request(commands.clone())) {
            Err(KvError::Spawn { errcodes, message }) if attempt == 0 => {
                let codes: Vec<String> = errcodes.iter().map(i32::to_string).collect();
                println!("errcodes={} message={message}", codes.join(","));
            }
            Err(KvError::Spawn { .. }) => {}
            other => fail(format!("spawning a missing program: {other:?}")),
        }
        // The killed children were reaped before the reply.
        let left = kids_left(marker);
        if !left.is_empty() {
            fail(format!("left behind: {left:?}"));
        }
        if attempt == 0 {
            wait_until("the launcher to close the failed job's descriptors", || {
                launcher_usage().0 <= before.0
            });
            std::thread::sleep(Duration::from_millis(200));
            before = launcher_usage();
        }
    }
    wait_until("the launcher to close the failed jobs' descriptors and threads", || {
        let now = launcher_usage();
        now.0 <= before.0 && now.1 <= before.1 && now.2 <= before.2 + MAPS_SLACK
    });
    println!("nothing left");
}

fn refused(kv: &mut KvClient) {
    let cases = [(0, None, "maxprocs 0"), (2000, None, "maxprocs 2000"), (1, Some(7), "host 7")];
    for (maxprocs, host, what) in cases {
        let mut command = copies("child", maxprocs, "x");
        command.host = host;
        match kv.spawn(&request(vec![command])) {
            Err(KvError::Refused(why)) => println!("refused {what}: {why}"),
            other => fail(format!("{what}: {other:?}")),
        }
    }
    match kv.spawn(&request(Vec::new())) {
        Err(KvError::Refused(_)) => println!("refused no command"),
        other => fail(format!("no command: {other:?}")),
    }
    // The exchange still serves.
    kv.put("still", "here").unwrap_or_else(|e| fail(e));
    println!("refused ok");
}

/// Two children; one exits early (`child-exit-early`) or is killed by this parent
/// (`child-sleep`): the bridge is marked FAILED_B, the other child is killed, and this
/// parent goes on.
fn child_fails(kv: &mut KvClient, mode: &str, marker: &str) {
    let spawned = kv.spawn(&request(vec![copies(mode, 2, marker)])).unwrap_or_else(|e| fail(e));
    let bridge = parent_side(spawned);
    let outcome = await_all(&bridge);
    if mode == "child-sleep" {
        if let Err(failed) = outcome {
            fail(format!("the bridge failed ({failed}) before the kill"));
        }
        // SAFETY: kill sends a signal to the child whose pid it wrote in the bridge.
        unsafe { libc::kill(child_pids(&bridge)[1], libc::SIGKILL) };
    }
    wait_until("the bridge to fail", || bridge.failure().is_some());
    if bridge.failure() != Some(FAILED_B) {
        fail(format!("the bridge failed with {:?}, not FAILED_B", bridge.failure()));
    }
    // The other child may have been killed before it took its slot (when its sibling
    // exited first); one that took it is gone too.
    let other = bridge.word(bridge.layout.pid(1)).load(Acquire) as i32;
    if other != 0 {
        wait_until("the other child to be killed", || gone(other));
    }
    println!("failed-b ok");
}

/// Mappings the launcher may gain without leaking (malloc's per-thread arenas, made as
/// output threads come and go); a region or bridge kept per cycle adds one per cycle.
const MAPS_SLACK: usize = 64;

/// `n` spawns of one child, each disconnected: the launcher's descriptors, threads and
/// mappings do not grow.
fn cycles(kv: &mut KvClient, n: usize, marker: &str) {
    let cycle = |kv: &mut KvClient| {
        let (job, bridge) = spawn_and_meet(kv, vec![copies("child", 1, marker)]);
        kv.disconnect(job).unwrap_or_else(|e| fail(e));
        child_pids(&bridge)[0]
    };
    let mut last = 0;
    for _ in 0..5 {
        last = cycle(kv);
    }
    wait_until("the warm-up's last child to end", || gone(last) && kids_left(marker).is_empty());
    std::thread::sleep(Duration::from_millis(200));
    let before = launcher_usage();
    for _ in 0..n {
        last = cycle(kv);
    }
    wait_until("the last child to end", || gone(last) && kids_left(marker).is_empty());
    // What the last child used is released once the launcher has seen it end.
    let deadline = Instant::now() + LIMIT;
    let mut after = launcher_usage();
    while (after.0 > before.0 || after.1 > before.1 || after.2 > before.2 + MAPS_SLACK)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
        after = launcher_usage();
    }
    println!("usage before {before:?} after {after:?}");
    if after.0 > before.0 || after.1 > before.1 || after.2 > before.2 + MAPS_SLACK {
        fail(format!("the launcher grew over {n} cycles: {before:?} -> {after:?}"));
    }
    println!("cycles ok");
}

fn names(kv: &mut KvClient, marker: &str) {
    kv.publish_name("probe-parent", "port-parent").unwrap_or_else(|e| fail(e));
    let (job, bridge) = spawn_and_meet(kv, vec![copies("child-names", 1, marker)]);
    let port = kv.lookup_name("probe-child").unwrap_or_else(|e| fail(e));
    if port != "port-child" {
        fail(format!("probe-child is {port:?}"));
    }
    // The child's name goes with its job: the child stays until we have looked it up.
    let looked_up = bridge.word(bridge.layout.state(0));
    looked_up.store(RANK_FINALIZED, Release);
    futex::wake_all(looked_up);
    let child = child_pids(&bridge)[0];
    kv.disconnect(job).unwrap_or_else(|e| fail(e));
    // The child's name goes with its job.
    wait_until("the child's name to go with its job", || {
        matches!(kv.lookup_name("probe-child"), Err(KvError::Name(_))) && gone(child)
    });
    kv.unpublish_name("probe-parent").unwrap_or_else(|e| fail(e));
    match kv.lookup_name("probe-parent") {
        Err(KvError::Name(e)) => println!("after unpublish: {e}"),
        other => fail(format!("lookup after unpublish: {other:?}")),
    }
    println!("names ok");
}

/// Garbage on the rank's own exchange socket gets `error` replies, and the exchange still
/// serves the rank afterwards.
fn malformed(kv: KvClient) {
    // The client owns the inherited descriptor; talk raw on a copy of it.
    let fd = var(commcore_linux::launch::kv::ENV_FD) as i32;
    // SAFETY: dup of the open exchange descriptor; the copy is owned by the stream below.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if copy < 0 {
        fail("cannot copy the exchange's descriptor");
    }
    // SAFETY: copy is a fresh descriptor nothing else owns.
    let raw = unsafe { UnixStream::from_raw_fd(copy) };
    raw.set_read_timeout(Some(LIMIT)).unwrap_or_else(|e| fail(e));
    let mut writer = raw.try_clone().unwrap_or_else(|e| fail(e));
    let mut reader = BufReader::new(raw);
    let long = vec![b'7'; 300 * 1024];
    let requests: [&[u8]; 6] = [
        b"spawn 1 - 1:-:-:zz:-:-\n",
        b"spawn\n",
        b"\xff\xff\n",
        b"register-bridge a\n",
        &long,
        b"\nnonsense\n",
    ];
    for request in requests {
        writer.write_all(request).unwrap_or_else(|e| fail(e));
    }
    for _ in 0..requests.len() {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap_or_else(|e| fail(e));
        if !line.starts_with("error ") {
            fail(format!("reply {line:?}"));
        }
        println!("reply {}", line.trim_end());
    }
    drop((reader, writer));
    let mut kv = kv;
    kv.put("after", "garbage").unwrap_or_else(|e| fail(e));
    kv.fence().unwrap_or_else(|e| fail(e));
    println!("malformed ok");
}

/// A child: checks what the launcher told it, joins its job, takes its bridge slot and
/// arrives, then does what its mode says.
fn child(mode: &str, marker: &str) {
    let (rank, size, parents) = (var(env::RANK), var(env::SIZE), var(env::PARENT_SIZE));
    let (job, appnum, offset) = (var(env::JOB), var(env::APPNUM), var(env::CPU_OFFSET));
    let host = var(env::HOST);
    if (var(env::NODE), var(env::NODES)) != (0, 1) || rank >= size || job == 0 || offset == 0 {
        fail(format!("child told rank {rank} of {size}, job {job}, offset {offset}"));
    }
    let region = Region::open(var(env::SHM_FD) as i32).unwrap_or_else(|e| fail(e));
    let layout = Layout::new(size).unwrap_or_else(|| fail("no layout"));
    if region.atomic_u32(layout.job_size()).load(Acquire) as usize != size
        || region.atomic_u32(layout.host(rank)).load(Acquire) as usize != host
    {
        fail("the job's region does not match the environment");
    }
    let bridge = Region::open(var(env::PARENT_BRIDGE_FD) as i32)
        .map_err(|e| e.to_string())
        .and_then(|r| Bridge::open(r).map_err(|e| e.to_string()))
        .unwrap_or_else(|e| fail(e));
    if (bridge.layout.a(), bridge.layout.b()) != (parents, size) {
        fail(format!("bridge {}+{} for {parents}+{size}", bridge.layout.a(), bridge.layout.b()));
    }
    let state = region.atomic_u32(layout.state(rank));
    state.store(RANK_JOINED, Release);
    let via = std::env::var("PROBE_VIA").unwrap_or_default();
    println!("child job={job} rank={rank} size={size} appnum={appnum} parents={parents} offset={offset} host={host} via={via:?}");
    let _ = std::io::stdout().flush();
    if mode == "child-names" {
        let mut kv = kv();
        let port = kv.lookup_name("probe-parent").unwrap_or_else(|e| fail(e));
        if port != "port-parent" {
            fail(format!("probe-parent is {port:?}"));
        }
        if !matches!(kv.unpublish_name("probe-parent"), Err(KvError::Name(_))) {
            fail("a child unpublished its parent's name");
        }
        kv.publish_name("probe-child", "port-child").unwrap_or_else(|e| fail(e));
    }
    arrive(&bridge, parents + rank);
    match mode {
        "child-names" => wait_until("the parent to look up our name", || {
            bridge.word(bridge.layout.state(0)).load(Acquire) == RANK_FINALIZED
        }),
        "child-sleep" => std::thread::sleep(Duration::from_secs(300)),
        "child-exit-early" if rank == 1 => std::process::exit(0),
        "child-exit-early" => std::thread::sleep(Duration::from_secs(300)),
        "child-nest" if rank == 0 => {
            let mut kv = kv();
            let (grandchildren, _bridge) =
                spawn_and_meet(&mut kv, vec![copies("child", 2, marker)]);
            kv.disconnect(grandchildren).unwrap_or_else(|e| fail(e));
            println!("child job={job} rank=0 met job {grandchildren}");
        }
        _ => {}
    }
    state.store(RANK_FINALIZED, Release);
}
