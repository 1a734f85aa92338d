//! The spawn scenarios of `dpm_rank`: parents that spawn copies of this program, and the
//! children's side.

use std::time::Duration;

use commcore_linux::runtime::{DpmError, SpawnCommand, SpawnOptions, World};

use crate::{exercise, open_fds, same_everywhere};

fn me() -> String {
    std::env::current_exe().expect("this program").to_string_lossy().into_owned()
}

fn options() -> SpawnOptions {
    SpawnOptions { timeout: Duration::from_secs(20), ..SpawnOptions::default() }
}

/// Spawns `children` copies of this program as `child`, `cycles` times.
pub(crate) fn repeatedly(world: &World, children: usize, cycles: usize) {
    let comm = world.comm();
    let (mut fds_after_first, mut rss_after_ten) = (0, 0);
    for cycle in 0..cycles {
        let inter = comm.spawn(&me(), &["child"], children, &options(), 0).unwrap();
        assert_eq!(inter.remote_size(), Some(children));
        exercise(&inter, true);
        inter.disconnect().unwrap();
        if cycle == 0 {
            fds_after_first = open_fds();
        }
        if cycle == 9.min(cycles - 1) {
            rss_after_ten = rss_kib();
        }
    }
    let fds = open_fds();
    assert!(
        fds <= fds_after_first,
        "descriptors grew over {cycles} spawns: {fds_after_first} -> {fds}"
    );
    let rss = rss_kib();
    // Allocator noise and lazily mapped pages allow a little; a leak per spawn would not fit.
    assert!(
        rss <= rss_after_ten + 2048,
        "memory grew over {cycles} spawns: {rss_after_ten} -> {rss} KiB"
    );
    assert_eq!(world.process_groups(), 1, "disconnected groups are released");
}

/// Spawns `children` copies of this program onto host 1 from rank 0 on host 0, `cycles`
/// times: the groups meet over a TCP link of their own (one more link while they are
/// connected), talk, merge and disconnect.
pub(crate) fn onto_host(world: &World, children: usize, cycles: usize) {
    assert_eq!(world.host_of(0), Some(0), "rank 0 is on host 0");
    let links = world.tcp_links();
    let options = SpawnOptions { host: Some(1), ..options() };
    for _ in 0..cycles {
        let inter = world.comm().spawn(&me(), &["child"], children, &options, 0).unwrap();
        assert_eq!(inter.remote_size(), Some(children));
        assert_eq!(world.tcp_links(), links + 1, "the children are met over TCP");
        exercise(&inter, true);
        inter.disconnect().unwrap();
        assert_eq!(world.tcp_links(), links, "the link goes with the group");
    }
    assert_eq!(world.process_groups(), 1, "disconnected groups are released");
}

/// This process's resident memory in KiB.
fn rss_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The children's side of [`repeatedly`].
pub(crate) fn child(world: &mut World) {
    let parent = world.parent().expect("a spawned job has a parent");
    exercise(parent, false);
    world.disconnect_parent().unwrap();
    assert!(world.parent().is_none());
}

/// Parents spawn 2 `middle` children, which spawn 2 grandchildren each.
pub(crate) fn nested(world: &World) {
    let inter = world.comm().spawn(&me(), &["middle"], 2, &options(), 0).unwrap();
    exercise(&inter, true);
    // The middles report how many grandchildren they met.
    let mut met = [0u8; 8];
    if world.rank() == 0 {
        inter.recv(&mut met, 0, 77).unwrap();
        assert_eq!(u64::from_le_bytes(met), 4, "each middle met 2 grandchildren");
    }
    inter.disconnect().unwrap();
}

/// A child that is itself a parent.
pub(crate) fn middle(world: &mut World) {
    let grandchildren = world.comm().spawn(&me(), &["child"], 2, &options(), 0).unwrap();
    exercise(&grandchildren, true);
    grandchildren.disconnect().unwrap();
    let parent = world.parent().expect("a spawned job has a parent");
    exercise(parent, false);
    if world.rank() == 0 {
        parent.send(&(2 * world.size() as u64).to_le_bytes(), 0, 77).unwrap();
    }
    world.disconnect_parent().unwrap();
}

/// spawn_multiple: 2 children of one command and 1 of another, numbered in order.
pub(crate) fn multiple(world: &World) {
    let command = |arg: &str, maxprocs| SpawnCommand {
        program: me().into(),
        args: vec!["child".into(), arg.into()],
        maxprocs,
        options: options(),
    };
    let inter = world.comm().spawn_multiple(&[command("a", 2), command("b", 1)], 0).unwrap();
    assert_eq!(inter.remote_size(), Some(3));
    exercise(&inter, true);
    inter.disconnect().unwrap();
}

/// Bad spawns: the same error on every rank.
pub(crate) fn bad(world: &World) {
    let comm = world.comm();
    let missing = comm.spawn("/nonexistent/commcore-child", &[], 2, &options(), 0);
    match &missing {
        Err(DpmError::Spawn { errcodes, .. }) => {
            assert_eq!(errcodes, &vec![libc::ENOENT; 2], "one code per child")
        }
        other => panic!("a missing program: {other:?}"),
    }
    same_everywhere(comm, missing, "spawn failed");
    same_everywhere(comm, comm.spawn(&me(), &["child"], 0, &options(), 0), "maxprocs");
    let root = comm.size();
    assert!(matches!(
        comm.spawn(&me(), &[], 1, &options(), root),
        Err(DpmError::InvalidArgument(_))
    ));
}

/// Children that die at three moments: each ends in an error on every parent, or in
/// nothing at all once disconnected, never in a hang.
pub(crate) fn dying(world: &World, host: Option<usize>) {
    let comm = world.comm();
    let options = SpawnOptions { host, ..options() };
    let spawn = |when: &str| comm.spawn(&me(), &["dying", when], 2, &options, 0);
    // Before meeting the parents: the spawn itself fails.
    let early = spawn("early");
    assert!(early.is_err(), "a child that dies before it meets its parents fails the spawn");
    // During a collective on the inter-communicator: the collective fails.
    let inter = spawn("collective").unwrap();
    let mut failed = false;
    for _ in 0..100 {
        if inter.barrier().is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed, "a collective with a dead child fails");
    drop(inter);
    // After disconnecting: the parents go on.
    let inter = spawn("after").unwrap();
    inter.disconnect().unwrap();
    comm.barrier().unwrap();
}

/// A child of [`dying`].
pub(crate) fn die(world: &mut World, when: &str) {
    match when {
        // Rank 1 died before init (see main); rank 0's init failed, so it never gets here.
        "early" => {}
        "collective" => {
            let parent = world.parent().expect("a parent");
            parent.barrier().unwrap();
            if world.rank() == 1 {
                std::process::exit(3);
            }
            // The other child waits in barriers until the parents give up.
            while parent.barrier().is_ok() {}
        }
        _ => {
            world.disconnect_parent().unwrap();
            if world.rank() == 1 {
                std::process::exit(3);
            }
        }
    }
}
