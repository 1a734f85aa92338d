//! The `commcore` command as users meet it, run as a binary: its command line, exit
//! statuses, messages, signals, ranks that leave early, settings, and what a job leaves
//! behind (processes by group and by a marker argument, /dev/shm). Every run has a time
//! limit, and limits are generous: the machine may be loaded.
//!
//! `LAUNCHER_UNDER_TEST=/path/to/commcore` runs these tests against another build of the
//! command (e.g. an older one, to see them fail).

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use commcore_linux::runtime::SETTINGS;
use commcore_tests::ended::{finish, Ended};
use commcore_tests::leftovers::{live_in_group, marker, processes_with, shm_entries};

const RANK: &str = env!("CARGO_BIN_EXE_runtime_rank");
/// Far above what any of these jobs needs on an idle machine.
const LIMIT: Duration = Duration::from_secs(90);

fn commcore() -> Command {
    let program = std::env::var("LAUNCHER_UNDER_TEST")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_commcore_cli").to_string());
    let mut command = Command::new(program);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// Runs `commcore ARGS` with `env` added, for at most `limit`.
fn run_with(args: &[&str], env: &[(&str, &str)], limit: Duration) -> Ended {
    let child = commcore().args(args).envs(env.iter().copied()).spawn().expect("start commcore");
    finish(child, limit, &args.join(" "))
}

fn run(args: &[&str]) -> Ended {
    run_with(args, &[], LIMIT)
}

fn assert_no_panic(ended: &Ended) {
    assert!(!ended.stderr.contains("panicked"), "a panic: {}", ended.stderr);
}

/// Waits until `count` processes carry `marker` (the job has started); panics past LIMIT.
fn wait_for_processes(marker: &str, count: usize) {
    let start = Instant::now();
    while processes_with(marker).len() < count {
        assert!(start.elapsed() < LIMIT, "the job's processes did not appear");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that no process with `marker` is left, allowing a moment for the kernel to
/// finish killing them.
fn assert_none_left(marker: &str) {
    let start = Instant::now();
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A job of two ranks that each start a child; all four carry `marker`, as does the
/// launcher's own command line.
fn job_with_children(marker: &str) -> Vec<String> {
    let script = format!("sh -c 'sleep 300; : {marker}' & sleep 300; : {marker}");
    ["run", "-n", "2", "--", "sh", "-c", &script].iter().map(|s| s.to_string()).collect()
}

#[test]
fn signals_to_the_launcher_reach_the_whole_job_and_leave_nothing() {
    let shm_before = shm_entries();
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2] {
        let marker = marker("signal");
        let mut command = commcore();
        command.args(job_with_children(&marker));
        // As a script's `&` starts it: SIGINT ignored, in the script's process group.
        // SAFETY: signal() is async-signal-safe; it runs in the child before exec.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                Ok(())
            })
        };
        let child = command.spawn().expect("start commcore");
        let launcher = child.id() as i32;
        wait_for_processes(&marker, 5);
        // SAFETY: kill sends a signal to the launcher we started.
        unsafe { libc::kill(launcher, signal) };
        let ended = finish(child, LIMIT, "run with a signal");
        assert_eq!(ended.status, 128 + signal, "signal {signal}: {}", ended.stderr);
        assert!(ended.stderr.contains("forwarded it to the job"), "{}", ended.stderr);
        assert_none_left(&marker);
    }
    assert_eq!(shm_entries(), shm_before, "/dev/shm changed");
}

#[test]
fn a_launcher_killed_with_sigkill_leaves_no_rank_and_no_child() {
    let marker = marker("sigkill");
    let mut child = commcore().args(job_with_children(&marker)).spawn().expect("start");
    wait_for_processes(&marker, 5);
    let launcher = child.id() as i32;
    let mut groups: Vec<i32> = processes_with(&marker)
        .into_iter()
        .filter(|&(pid, _)| pid != launcher)
        .map(|(_, group)| group)
        .collect();
    groups.dedup();
    child.kill().expect("SIGKILL the launcher");
    let _ = child.wait();
    assert_none_left(&marker);
    // A process that is exiting has already lost its command line but is not yet a zombie,
    // so the groups get the same grace as the marker check.
    let start = Instant::now();
    for group in groups {
        loop {
            let left = live_in_group(group);
            if left.is_empty() {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(5), "group {group} has {left:?} left");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn a_rank_that_leaves_early_ends_the_job_naming_it() {
    let left = |code| format!("rank 0 exited with code {code} before the job finished");
    for scenario in ["leave-in-collective", "leave-in-recv"] {
        let ended = run(&["run", "-n", "3", "--", RANK, scenario, "0"]);
        assert_eq!(ended.status, 1, "{scenario}: {}", ended.stderr);
        assert!(ended.stderr.contains(&left(0)), "{scenario}: {}", ended.stderr);
        let ended = run(&["run", "-n", "2", "--", RANK, scenario, "3"]);
        assert_eq!(ended.status, 3, "{scenario}: {}", ended.stderr);
        assert!(ended.stderr.contains(&left(3)), "{scenario}: {}", ended.stderr);
        // With a timeout, the job still ends at once, naming the rank that left.
        let ended = run(&["run", "-n", "2", "--timeout", "600", "--", RANK, scenario, "0"]);
        assert_eq!(ended.status, 1, "{scenario}: {}", ended.stderr);
        assert!(ended.stderr.contains(&left(0)), "{scenario}: {}", ended.stderr);
    }
    // Rank 0 never joins: the issue's `sh` wrapper around a program that uses the runtime.
    let script = format!("if [ \"$COMMCORE_RANK\" = 0 ]; then exit 0; fi; exec {RANK} collectives");
    let ended = run(&["run", "-n", "2", "--", "sh", "-c", &script]);
    assert_eq!(ended.status, 1, "{}", ended.stderr);
    assert!(ended.stderr.contains(&left(0)), "{}", ended.stderr);
    // Programs that never use the runtime are judged by their exit codes alone.
    let script = "if [ \"$COMMCORE_RANK\" = 0 ]; then exit 0; fi; sleep 1";
    let ended = run(&["run", "-n", "2", "--", "sh", "-c", script]);
    assert_eq!((ended.status, ended.stderr.as_str()), (0, ""));
}

#[test]
fn timeouts_out_of_range_are_errors_not_panics() {
    for bad in ["1e30", "inf", "NaN", "0", "-1", "soon"] {
        let ended = run(&["run", "-n", "2", "--timeout", bad, "--", "true"]);
        assert_no_panic(&ended);
        assert_eq!(ended.status, 125, "--timeout {bad}: {}", ended.stderr);
        assert!(ended.stderr.contains("--timeout"), "{}", ended.stderr);
    }
    let ended = run(&["run", "-n", "2", "--timeout", "0.5", "--", "sleep", "30"]);
    assert_eq!(ended.status, 124, "{}", ended.stderr);
    assert!(ended.stderr.contains("timed out after 0.5 s"), "{}", ended.stderr);
    assert!(ended.stderr.contains("ranks still running: 0, 1"), "{}", ended.stderr);
}

#[test]
fn every_setting_with_a_bad_value_is_one_error_naming_it() {
    for doc in SETTINGS {
        let ended =
            run_with(&["run", "-n", "3", "--", RANK, "ordering"], &[(doc.name, "weird!")], LIMIT);
        assert_eq!(ended.status, 125, "{}: {}", doc.name, ended.stderr);
        assert_eq!(ended.stderr.lines().count(), 1, "one message: {}", ended.stderr);
        assert!(ended.stderr.contains(doc.name), "{}", ended.stderr);
        assert!(ended.stderr.contains("\"weird!\""), "{}", ended.stderr);
        // Passed with -x instead, the same.
        let export = format!("{}=weird!", doc.name);
        let ended = run(&["run", "-n", "2", "-x", &export, "--", RANK, "ordering"]);
        assert_eq!(ended.status, 125, "-x {export}: {}", ended.stderr);
    }
    // The case, which ran and exited 0.
    let env =
        [("COMMCORE_SHM_MAX", "-5"), ("COMMCORE_BIND", "weird"), ("COMMCORE_SINGLE_COPY", "maybe")];
    let ended = run_with(&["run", "-n", "3", "--", RANK, "collectives"], &env, LIMIT);
    assert_eq!(ended.status, 125, "{}", ended.stderr);
    // Set by the ranks themselves: every rank's init refuses it.
    let script = format!("COMMCORE_SHM_MAX=-5 exec {RANK} ordering");
    let ended = run(&["run", "-n", "2", "--", "sh", "-c", &script]);
    assert_ne!(ended.status, 0);
    assert!(ended.stderr.contains("COMMCORE_SHM_MAX"), "{}", ended.stderr);
}

#[test]
fn errors_say_what_was_wrong_and_what_to_do() {
    let ended = run_with(
        &["run", "-n", "2", "--", RANK, "collectives"],
        &[("COMMCORE_COLL", "coll=^nosuch")],
        LIMIT,
    );
    assert_eq!(ended.status, 125);
    assert!(ended.stderr.contains("unknown collective component: `nosuch`"), "{}", ended.stderr);

    let none = "coll=^basic,tuned,hier,inter,shm";
    let ended =
        run_with(&["run", "-n", "2", "--", RANK, "collectives"], &[("COMMCORE_COLL", none)], LIMIT);
    assert_ne!(ended.status, 0);
    let expected =
        format!("no collective component is left to run barrier under COMMCORE_COLL={none:?}");
    assert!(ended.stderr.contains(&expected), "{}", ended.stderr);

    // One rank changes a setting that must agree: the launcher says which, once.
    let script = format!(
        "if [ \"$COMMCORE_RANK\" = 2 ]; then export COMMCORE_SHM_MAX=4096; fi; exec {RANK} ordering"
    );
    let ended = run(&["run", "-n", "3", "--", "sh", "-c", &script]);
    assert_ne!(ended.status, 0);
    let detail = "COMMCORE_SHM_MAX differs between ranks (unset on rank 0, 4096 on rank 2)";
    let launcher_lines: Vec<&str> =
        ended.stderr.lines().filter(|l| l.starts_with("commcore run:")).collect();
    assert_eq!(launcher_lines.len(), 1, "{}", ended.stderr);
    assert!(launcher_lines[0].contains(detail), "{}", ended.stderr);

    // Two processes claim rank 0.
    let script = format!("COMMCORE_RANK=0 exec {RANK} ordering");
    let ended = run(&["run", "-n", "2", "--", "sh", "-c", &script]);
    assert_ne!(ended.status, 0);
    assert!(ended.stderr.contains("two processes claimed rank 0"), "{}", ended.stderr);

    let ended = run(&["run", "-n", "2", "--", "/nonexistent/commcore-program"]);
    assert_eq!(ended.status, 125);
    let expected = "cannot start rank 0: /nonexistent/commcore-program: No such file or directory";
    assert!(ended.stderr.contains(expected), "{}", ended.stderr);
}

#[test]
fn the_command_line_takes_mpirun_spellings_and_refuses_unknown_ones() {
    let ended = run(&["--version"]);
    assert_eq!(ended.status, 0);
    assert!(ended.stdout.starts_with("commcore "), "{}", ended.stdout);
    let help = run(&["run", "--help"]);
    assert_eq!(help.status, 0, "{}", help.stderr);
    for doc in SETTINGS {
        assert!(help.stdout.contains(doc.name), "run --help lacks {}", doc.name);
    }
    for needle in ["Exit status", "124", "125", "128+S", "at most 1024 ranks", "-x", "--tag-output"]
    {
        assert!(help.stdout.contains(needle), "run --help lacks {needle}");
    }
    for args in [
        &["--help"][..],
        &["bench", "--help"],
        &["bench", "rankmap", "--help"],
        &["demo", "--help"],
    ] {
        let ended = run(args);
        assert_eq!(ended.status, 0, "{args:?}: {}", ended.stderr);
        assert!(ended.stdout.contains("Usage"), "{args:?}: {}", ended.stdout);
    }
    let start = Instant::now();
    let ended = run(&["bench", "rankmap", "--bogusflag"]);
    assert_eq!(ended.status, 125, "{}", ended.stderr);
    assert!(ended.stderr.contains("--bogusflag"), "{}", ended.stderr);
    assert!(start.elapsed() < Duration::from_secs(10), "it ran the benchmark");

    let print = "echo \"rank $COMMCORE_RANK of $COMMCORE_SIZE: FOO=$FOO\"";
    for count in [
        &["-n", "2"][..],
        &["-n=2"],
        &["-np", "2"],
        &["--np", "2"],
        &["-n", "2", "--oversubscribe"],
    ] {
        let mut args = vec!["run"];
        args.extend_from_slice(count);
        args.extend_from_slice(&["-x", "FOO=bar", "--tag-output", "--", "sh", "-c", print]);
        let ended = run(&args);
        assert_eq!(ended.status, 0, "{args:?}: {}", ended.stderr);
        let mut lines: Vec<&str> = ended.stdout.lines().collect();
        lines.sort();
        assert_eq!(lines, ["[0] rank 0 of 2: FOO=bar", "[1] rank 1 of 2: FOO=bar"], "{args:?}");
    }
    let ended = run(&["run", "-n", "2", "-n", "3", "--", "true"]);
    assert_eq!(ended.status, 125, "{}", ended.stderr);
    let ended = run_with(
        &["run", "-n", "1", "-x", "FOO", "--", "sh", "-c", print],
        &[("FOO", "here")],
        LIMIT,
    );
    assert_eq!(ended.stdout.trim(), "rank 0 of 1: FOO=here");
    for bad in [
        &["run", "-n", "2", "-x", "1A=b", "--", "true"][..],
        &["run", "-n", "0", "--", "true"],
        &["run", "-n", "2"],
    ] {
        assert_eq!(run(bad).status, 125, "{bad:?}");
    }
    // Beyond the old cap of 256 ranks.
    let ended = run(&["run", "-n", "300", "--", "true"]);
    assert_eq!(ended.status, 0, "{}", ended.stderr);
}

#[test]
fn exit_statuses_follow_mpirun() {
    let script = "if [ \"$COMMCORE_RANK\" = 1 ]; then exit 7; fi; sleep 30";
    let ended = run(&["run", "-n", "3", "--", "sh", "-c", script]);
    assert_eq!(ended.status, 7, "{}", ended.stderr);
    assert!(ended.stderr.contains("rank 1 exited with code 7"), "{}", ended.stderr);
    let script = "if [ \"$COMMCORE_RANK\" = 1 ]; then kill -SEGV $$; fi; sleep 30";
    let ended = run(&["run", "-n", "2", "--", "sh", "-c", script]);
    assert_eq!(ended.status, 128 + libc::SIGSEGV, "{}", ended.stderr);
    assert!(ended.stderr.contains("rank 1 was killed by signal 11 (SIGSEGV)"), "{}", ended.stderr);
}

#[test]
fn tagged_output_comes_in_whole_lines() {
    // Each line leaves the rank in three writes; ranks write at once.
    let script = "i=0; while [ $i -lt 300 ]; do printf 'rank %s ' $COMMCORE_RANK; \
                  printf 'line %s' $i; printf ' end\\n'; i=$((i+1)); done";
    let ended = run(&["run", "-n", "4", "--tag-output", "--", "sh", "-c", script]);
    assert_eq!(ended.status, 0, "{}", ended.stderr);
    let mut counts = [0usize; 4];
    for line in ended.stdout.lines() {
        let (tag, rest) = line.split_once(' ').expect("a tagged line");
        let rank: usize = tag.trim_matches(['[', ']']).parse().expect("a rank tag");
        let expected = format!("rank {rank} line {} end", counts[rank]);
        assert_eq!(rest, expected, "mixed line: {line:?}");
        counts[rank] += 1;
    }
    assert_eq!(counts, [300; 4]);
}

#[test]
fn programs_a_rank_starts_do_not_inherit_the_region() {
    let ended = run(&["run", "-n", "2", "--", RANK, "fd-not-inherited"]);
    assert_eq!(ended.status, 0, "{}", ended.stderr);
    assert!(ended.stdout.contains("not inherited"), "{}", ended.stdout);
}

#[test]
fn benchmark_json_stays_clean_when_stderr_is_not_a_terminal() {
    let args = ["bench", "cid", "--ranks", "4", "--allocations", "40", "--lookups", "64", "--json"];
    let ended = run(&args);
    assert_eq!(ended.status, 0, "{}", ended.stderr);
    assert_eq!(ended.stderr, "", "progress went to a non-terminal");
    let report: serde_json::Value = serde_json::from_str(ended.stdout.trim()).expect("JSON");
    assert!(report.get("allocation").is_some(), "{report}");
}
