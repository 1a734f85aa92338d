//! Spawned jobs through the `commcore` command: ranks of `spawn_probe` ask the launcher for
//! children over their exchange and check what they get (see that program's modes). Every
//! run has a time limit, far above what it needs; no test asserts a time.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use commcore_tests::ended::{finish, Ended};
use commcore_tests::leftovers::{live_in_group, marker, processes_with, shm_entries, Network};

const PROBE: &str = env!("CARGO_BIN_EXE_spawn_probe");
const LIMIT: Duration = Duration::from_secs(120);

/// `commcore run [options] -- spawn_probe ARGS`.
fn run(options: &[&str], args: &[&str]) -> Ended {
    let mut command = Command::new(env!("CARGO_BIN_EXE_commcore_cli"));
    command.arg("run").args(options).arg("--").arg(PROBE).args(args);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().expect("start commcore");
    finish(child, LIMIT, &args.join(" "))
}

/// Runs and expects success, then no process with `marker` left.
fn run_ok(args: &[&str], marker: &str) -> String {
    let ended = run(&["-n", "1"], args);
    assert_eq!(ended.status, 0, "{args:?}: {}\n{}", ended.stdout, ended.stderr);
    assert!(!ended.stderr.contains("panicked"), "{}", ended.stderr);
    assert_none_left(marker);
    ended.stdout
}

fn assert_none_left(marker: &str) {
    let start = Instant::now();
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `child ...` lines of the output, sorted, without the offset and host.
fn children(stdout: &str, job: u64) -> Vec<String> {
    let prefix = format!("child job={job} ");
    let mut lines: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with(&prefix) && l.contains("size="))
        .map(|l| l.split(" offset=").next().unwrap_or(l).to_string())
        .collect();
    lines.sort();
    lines
}

#[test]
fn spawns_of_1_4_and_8_children_arrive_with_their_identity() {
    for n in [1, 4, 8] {
        let marker = marker("spawn");
        let out = run_ok(&["spawn", &n.to_string(), &marker], &marker);
        let expected: Vec<String> =
            (0..n).map(|r| format!("child job=1 rank={r} size={n} appnum=0 parents=1")).collect();
        assert_eq!(children(&out, 1), expected, "{out}");
        // One parent was running before them: the children bind from CPU offset 1.
        assert!(
            out.lines().filter(|l| l.starts_with("child")).all(|l| l.contains("offset=1 ")),
            "{out}"
        );
        assert!(out.contains(&format!("parent ok: job 1 of {n}")), "{out}");
    }
}

#[test]
fn spawn_multiple_numbers_children_through_both_commands() {
    let marker = marker("multiple");
    let out = run_ok(&["multiple", &marker], &marker);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("child job=1")).collect();
    assert_eq!(lines.len(), 3, "{out}");
    for (rank, appnum, via) in [(0, 0, ""), (1, 0, ""), (2, 1, "sh with spaces")] {
        let wanted = format!("rank={rank} size=3 appnum={appnum} parents=1");
        let line =
            lines.iter().find(|l| l.contains(&wanted)).unwrap_or_else(|| panic!("{wanted}: {out}"));
        assert!(line.ends_with(&format!("via={via:?}")), "{line}");
    }
}

#[test]
fn a_spawned_child_spawns_in_turn() {
    let marker = marker("nested");
    let out = run_ok(&["nested", &marker], &marker);
    assert_eq!(children(&out, 1).len(), 2, "{out}");
    let grandchildren = children(&out, 2);
    let expected = [
        "child job=2 rank=0 size=2 appnum=0 parents=1",
        "child job=2 rank=1 size=2 appnum=0 parents=1",
    ];
    assert_eq!(grandchildren, expected, "{out}");
    assert!(out.contains("child job=1 rank=0 met job 2"), "{out}");
}

#[test]
fn a_missing_program_fails_every_child_of_its_command_and_leaves_nothing() {
    let shm_before = shm_entries();
    let marker = marker("missing");
    let out = run_ok(&["missing", &marker], &marker);
    let enoent = libc::ENOENT;
    let codes = format!("errcodes=-1,-1,{enoent},{enoent},{enoent} ");
    assert!(out.contains(&codes), "{out}");
    assert!(out.contains("/nonexistent/commcore-probe-missing"), "{out}");
    assert!(out.contains("nothing left"), "{out}");
    assert_eq!(shm_entries(), shm_before, "/dev/shm changed");
}

#[test]
fn bad_sizes_and_hosts_are_refused_and_the_exchange_goes_on() {
    let out = run_ok(&["refused"], "no-marker-needed-here");
    for what in [
        "maxprocs 0: maxprocs must be at least 1",
        "maxprocs 2000: a spawn starts at most 1024",
        "host 7: host 7 does not exist",
    ] {
        assert!(out.contains(&format!("refused {what}")), "{what}: {out}");
    }
    assert!(out.contains("refused no command") && out.contains("refused ok"), "{out}");
}

#[test]
fn a_child_that_fails_fails_its_job_only() {
    for (mode, how) in [
        ("child-exit-early", "exited with code 0 before the job finished"),
        ("child-sleep", "was killed by signal 9"),
    ] {
        let marker = marker("child-fails");
        let ended = run(&["-n", "1"], &["failing-child", mode, &marker]);
        // The parent saw the bridge fail, handled it and ended well: so does the run.
        assert_eq!(ended.status, 0, "{mode}: {}\n{}", ended.stdout, ended.stderr);
        assert!(ended.stdout.contains("failed-b ok"), "{mode}: {}", ended.stdout);
        let lines: Vec<&str> =
            ended.stderr.lines().filter(|l| l.contains("spawned job 1")).collect();
        assert_eq!(lines.len(), 1, "{mode}: {}", ended.stderr);
        assert!(lines[0].contains(&format!("spawned job 1: rank 1 {how}")), "{mode}: {}", lines[0]);
        assert!(lines[0].contains("job 0, which spawned it, goes on"), "{}", lines[0]);
        assert_none_left(&marker);
    }
}

/// Rank 0 of two spawns two children, then is killed: the run ends with its signal, and no
/// process (of the group or by marker) nor /dev/shm entry is left.
fn killed_parent(options: &[&str]) {
    let shm_before = shm_entries();
    let marker = marker("parent-killed");
    let ended = run(options, &["parent-killed", &marker]);
    assert_eq!(ended.status, 128 + libc::SIGKILL, "{}\n{}", ended.stdout, ended.stderr);
    let group: i32 = ended
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("children up in group "))
        .and_then(|g| g.trim().parse().ok())
        .unwrap_or_else(|| panic!("no group in {}", ended.stdout));
    assert!(ended.stderr.contains("rank 0 was killed by signal 9"), "{}", ended.stderr);
    assert_none_left(&marker);
    let start = Instant::now();
    while !live_in_group(group).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(10), "{:?} left", live_in_group(group));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(shm_entries(), shm_before, "/dev/shm changed");
}

#[test]
fn a_killed_parent_rank_ends_every_job_and_leaves_nothing() {
    killed_parent(&["-n", "2"]);
}

#[test]
fn a_launcher_killed_with_sigkill_takes_spawned_jobs_along() {
    let marker = marker("launcher-killed");
    let mut command = Command::new(env!("CARGO_BIN_EXE_commcore_cli"));
    command.args(["run", "-n", "1", "--", PROBE, "await-children", &marker]);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut launcher = command.spawn().expect("start commcore");
    let kids = format!("{marker}-kid");
    let start = Instant::now();
    while processes_with(&kids).len() < 2 {
        assert!(start.elapsed() < LIMIT, "the children did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    launcher.kill().expect("SIGKILL the launcher");
    let _ = launcher.wait();
    assert_none_left(&marker);
}

/// One run with hosts at a time: the residue counts the machine's namespaces.
static HOSTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
#[ignore = "needs root for network namespaces: scripts/test.sh runs it"]
fn a_killed_parent_rank_with_hosts_leaves_no_namespace() {
    let _one = HOSTS.lock().unwrap_or_else(|e| e.into_inner());
    let before = Network::now();
    killed_parent(&["-n", "2", "--hosts", "2"]);
    let after = Network::now();
    assert!(
        !after.grew_since(&before),
        "namespaces or links left: {before:?} before, {after:?} after"
    );
}

#[test]
fn spawn_and_disconnect_200_times_leaves_the_launcher_as_it_was() {
    let marker = marker("cycles");
    let out = run_ok(&["cycles", "200", &marker], &marker);
    assert!(out.contains("cycles ok"), "{out}");
    assert_eq!(children(&out, 1).len(), 1, "{out}");
    assert_eq!(children(&out, 205).len(), 1, "the 205th job: {out}");
}

#[test]
fn names_published_by_a_parent_and_its_child_reach_each_other() {
    let marker = marker("names");
    let out = run_ok(&["names", &marker], &marker);
    assert!(out.contains("after unpublish: no port is published under \"probe-parent\""), "{out}");
    assert!(out.contains("names ok"), "{out}");
}

#[test]
fn malformed_requests_through_the_launcher_get_errors() {
    let out = run_ok(&["malformed"], "no-marker-needed-here");
    assert_eq!(out.lines().filter(|l| l.starts_with("reply error ")).count(), 6, "{out}");
    assert!(out.contains("malformed ok"), "{out}");
}

#[test]
#[ignore = "needs root for network namespaces: scripts/test.sh runs it"]
fn children_start_in_the_host_asked_for() {
    let _one = HOSTS.lock().unwrap_or_else(|e| e.into_inner());
    let before = Network::now();
    let marker = marker("host");
    let ended = run(&["-n", "2", "--hosts", "2"], &["host", &marker]);
    assert_eq!(ended.status, 0, "{}\n{}", ended.stdout, ended.stderr);
    let line = ended.stdout.lines().find(|l| l.starts_with("child job=1")).unwrap_or_default();
    assert!(line.contains("host=1 "), "{}", ended.stdout);
    assert_none_left(&marker);
    let after = Network::now();
    assert!(
        !after.grew_since(&before),
        "namespaces or links left: {before:?} before, {after:?} after"
    );
}
