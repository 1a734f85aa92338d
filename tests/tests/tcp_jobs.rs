//! Jobs over the TCP transport: on one host (`COMMCORE_TRANSPORT=tcp`) and across 2 and 3
//! hosts (network namespaces, `--hosts`; these need root and run with `--include-ignored`,
//! as `scripts/test.sh` does). Faults end the job with an error naming the rank within 2 s
//! and leave no namespace, link or /dev/shm entry behind.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use commcore_linux::launch::{run_job, JobError, JobSpec};
use commcore_tests::jobs::job;
use commcore_tests::leftovers::Network;

const RANK: &str = env!("CARGO_BIN_EXE_tcp_rank");

/// One job at a time: the leftover checks count the machine's namespaces and links.
static SERIAL: Mutex<()> = Mutex::new(());

fn spec(scenario: &str, procs: usize, hosts: usize) -> JobSpec {
    let mut spec = job(RANK, procs, &[scenario], Duration::from_secs(60));
    spec.hosts = hosts;
    spec.env.push(("COMMCORE_TRANSPORT".into(), "tcp".into()));
    spec
}

/// What could be left behind: network namespaces and links, and commcore's /dev/shm
/// entries (other programs on the machine make their own there).
fn residue() -> (Network, usize) {
    let shm = std::fs::read_dir("/dev/shm").map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains("commcore"))
            .count()
    });
    (Network::now(), shm)
}

fn run_clean(spec: &JobSpec) -> (Result<String, JobError>, Duration) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = residue();
    let start = Instant::now();
    let outcome = run_job(spec)
        .map(|o| String::from_utf8_lossy(&o.rank0_stdout).into_owned())
        .map_err(|f| f.error);
    let elapsed = start.elapsed();
    let after = residue();
    assert!(
        !after.0.grew_since(&before.0) && after.1 <= before.1,
        "namespaces, links or /dev/shm entries left by {:?}: {before:?} before, {after:?} after",
        spec.args
    );
    (outcome, elapsed)
}

fn exchange(procs: usize, hosts: usize) {
    let (outcome, _) = run_clean(&spec("exchange", procs, hosts));
    match outcome {
        Ok(out) => assert_eq!(out.trim(), "ok"),
        Err(e) => panic!("exchange on {procs} ranks over {hosts} hosts failed: {e}"),
    }
}

/// A fault scenario on 3 ranks: rank 0 reports an error naming rank 1 found within 2 s
/// (or, for a killed rank, the launcher may name rank 1 first), the job ends, and nothing is
/// left behind.
fn fault(scenario: &str, hosts: usize) {
    let mut spec = spec(scenario, 3, hosts);
    // A failed job's output is not returned: rank 0 writes its report to a file as well.
    let path = std::env::temp_dir().join(format!("tcp-{scenario}-{hosts}-{}", std::process::id()));
    spec.env.push(("TCP_RANK_REPORT".into(), path.display().to_string()));
    let (outcome, elapsed) = run_clean(&spec);
    let report = std::fs::read_to_string(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    assert!(elapsed < Duration::from_secs(20), "{scenario}: the job took {elapsed:?}");
    match outcome {
        Err(JobError::RankFailed { rank: 1, .. }) if scenario == "killed" => return,
        Err(JobError::RankFailed { rank: 0, .. }) => {}
        other => panic!("{scenario}: the job should fail naming rank 1 or 0, got {other:?}"),
    }
    let ms: u64 = report
        .strip_prefix("error after ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{scenario}: rank 0 reported {report:?}"));
    assert!(ms < 2000, "{scenario}: {report}");
    assert!(report.contains("rank 1"), "{scenario}: {report}");
}

#[test]
fn one_host_exchange() {
    exchange(3, 1);
}

#[test]
fn one_host_killed_rank() {
    fault("killed", 1);
}

#[test]
fn one_host_reset() {
    fault("reset", 1);
}

#[test]
fn one_host_stops_reading() {
    fault("stops-reading", 1);
}

#[test]
#[ignore = "needs root for network namespaces: scripts/test.sh runs it"]
fn two_hosts_exchange() {
    exchange(4, 2);
}

#[test]
#[ignore = "needs root for network namespaces: scripts/test.sh runs it"]
fn three_hosts_exchange() {
    exchange(3, 3);
}

#[test]
#[ignore = "needs root for network namespaces: scripts/test.sh runs it"]
fn three_hosts_faults() {
    fault("killed", 3);
    fault("reset", 3);
    fault("stops-reading", 3);
}

#[test]
fn hosts_need_a_count_that_fits() {
    let mut spec = spec("exchange", 2, 3);
    spec.hosts = 3;
    let failure = run_job(&spec).expect_err("3 hosts for 2 ranks");
    assert!(failure.to_string().contains("--hosts"), "{failure}");
}
