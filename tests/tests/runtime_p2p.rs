//! Point-to-point through the launcher on real processes: matching order, wildcards, the
//! unexpected queue, truncation, nonblocking operations, bad input, and jobs that fail.
//! Every job runs under the launcher's timeout, so a hang fails the test instead of the CI.

use std::time::{Duration, Instant};

use commcore_linux::launch::{run_job, Ending, JobError, JobSpec, Placement};
use commcore_tests::jobs::{self, run_ok};
use commcore_tests::leftovers::{group_is_gone, shm_entries};
use commcore_tests::scenario::{Coll, Comms, Job, P2p, Scenario};

const TIMEOUT: Duration = Duration::from_secs(60);

fn job(procs: usize, scenario: impl Into<Scenario>) -> JobSpec {
    let name = scenario.into().name();
    jobs::job(env!("CARGO_BIN_EXE_runtime_rank"), procs, &[name], TIMEOUT)
}

fn two_copy(mut spec: JobSpec) -> JobSpec {
    spec.env.push(("COMMCORE_SINGLE_COPY".into(), "0".into()));
    spec
}

/// The fallback wake-up protocol, in which wakers fence too (no process-wide barrier).
fn symmetric_wake(mut spec: JobSpec) -> JobSpec {
    spec.env.push(("COMMCORE_WAKE_FENCE".into(), "symmetric".into()));
    spec
}

#[test]
fn messages_between_a_pair_arrive_in_order_with_any_tag() {
    run_ok(&job(2, P2p::Ordering));
    run_ok(&two_copy(job(2, P2p::Ordering)));
}

#[test]
fn any_source_receives_every_rank_in_per_pair_order() {
    run_ok(&job(8, P2p::AnySource));
    run_ok(&two_copy(job(3, P2p::AnySource)));
}

#[test]
fn unexpected_messages_wait_and_posted_receives_match_in_order() {
    run_ok(&job(2, P2p::Unexpected));
    run_ok(&two_copy(job(3, P2p::Unexpected)));
}

#[test]
fn a_too_long_message_is_a_truncation_error_and_is_consumed() {
    run_ok(&job(2, P2p::Truncation));
    run_ok(&two_copy(job(2, P2p::Truncation)));
}

#[test]
fn bad_ranks_tags_and_counts_are_errors() {
    run_ok(&job(3, P2p::BadInput));
    // The same program runs alone, without the launcher, as a singleton world.
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_runtime_rank"))
        .arg(Scenario::from(P2p::BadInput).name())
        .env_remove("COMMCORE_SHM_FD")
        .status()
        .unwrap();
    assert!(status.success(), "singleton bad-input: {status}");
}

#[test]
fn a_rank_started_by_another_launcher_fails_instead_of_running_alone() {
    for (variable, launcher) in [("OMPI_COMM_WORLD_SIZE", "Open MPI"), ("PMI_SIZE", "PMI")] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_runtime_rank"))
            .arg(Scenario::from(P2p::BadInput).name())
            .env_remove("COMMCORE_SHM_FD")
            .env(variable, "4")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{variable}=4 ran as a singleton");
        assert!(stderr.contains(launcher) && stderr.contains("commcore run -n 4"), "{stderr}");
    }
}

#[test]
fn nonblocking_sends_and_receives_complete_with_test_and_wait() {
    run_ok(&job(4, P2p::Nonblocking));
    run_ok(&two_copy(job(2, P2p::Nonblocking)));
}

#[test]
fn eight_ranks_exchange_long_and_short_messages_all_at_once() {
    run_ok(&job(8, P2p::Exchange));
    run_ok(&symmetric_wake(job(8, P2p::Exchange)));
    let mut spec = two_copy(job(5, P2p::Exchange));
    spec.nodes = 2;
    run_ok(&spec);
}

#[test]
fn communicators_dup_split_and_create_with_agreed_context_ids() {
    run_ok(&job(1, Comms::Communicators));
    run_ok(&job(5, Comms::Communicators));
}

#[test]
fn a_thousand_random_splits_with_frees_agree_on_every_member() {
    let mut spec = job(8, Comms::Splits);
    spec.capture_rank0_stdout = true;
    let out = run_ok(&spec);
    let calls: usize = out.split_whitespace().nth(2).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(calls >= 200, "rank 0 took part in too few splits: {out}");
}

#[test]
fn two_threads_per_process_create_communicators_at_once_with_every_cid_algorithm() {
    for algorithm in ["mask", "lowest", "highest"] {
        for procs in [2, 4] {
            let mut spec = job(procs, Comms::Threads);
            spec.env.push(("COMMCORE_CID_ALGORITHM".into(), algorithm.into()));
            spec.capture_rank0_stdout = true;
            let out = run_ok(&spec);
            assert!(out.contains("30 creations per thread completed"), "{algorithm}: {out}");
        }
    }
}

#[test]
fn every_collective_on_one_to_eight_ranks_flat_and_hierarchical() {
    let mut cases: Vec<(usize, usize)> = (1..=8).map(|n| (n, 1)).collect();
    cases.extend([(4, 2), (6, 3), (8, 2), (8, 3), (5, 2)]);
    for (procs, nodes) in cases {
        let mut spec = job(procs, Coll::Collectives);
        spec.nodes = nodes;
        spec.capture_rank0_stdout = true;
        let out = run_ok(&spec);
        assert!(out.contains(&format!("checked on {procs} ranks over {nodes} nodes")), "{out}");
        if nodes > 1 {
            assert!(out.contains("allreduce by hier"), "hierarchical module expected: {out}");
        }
    }
}

#[test]
fn waiting_ranks_sleep_instead_of_spinning() {
    // Eight ranks on this two-core machine: seven wait a second for the eighth.
    run_ok(&job(8, Job::Idle));
    run_ok(&symmetric_wake(job(8, Job::Idle)));
}

/// What `identity` prints for the CPUs of `procs` ranks: rank `r` bound to the `r mod n`-th
/// of the `n` CPUs this process may use, more ranks than CPUs included.
fn expected_binding(procs: usize) -> String {
    let cpus = commcore_tests::cpus::allowed_cpus();
    let bound: Vec<String> = (0..procs).map(|r| cpus[r % cpus.len()].to_string()).collect();
    format!("cpus {};", bound.join(" "))
}

#[test]
fn ranks_learn_their_identity_node_labels_and_cpus() {
    for (placement, expected) in
        [(Placement::Block, "0 0 1 1 2 2"), (Placement::Cyclic, "0 1 2 0 1 2")]
    {
        let mut spec = job(6, Job::Identity);
        spec.nodes = 3;
        spec.placement = placement;
        spec.capture_rank0_stdout = true;
        let out = run_ok(&spec);
        assert!(out.contains(&format!("nodes {expected} of 3")), "{placement:?}: {out}");
        assert!(out.contains(&expected_binding(6)), "{placement:?}: {out}");
    }
    let mut unbound = job(3, Job::Identity);
    unbound.env.push((commcore_linux::runtime::ENV_BIND.into(), "none".into()));
    let out = run_ok(&unbound);
    if commcore_tests::cpus::allowed_cpus().len() > 1 {
        assert!(out.contains("cpus - - -;"), "{out}");
    }
    let mut spec = job(1, Job::Identity);
    spec.capture_rank0_stdout = true;
    assert!(run_ok(&spec).contains("nodes 0 of 1"));
}

fn failing_job(spec: &JobSpec, expected: &JobError) {
    let before = shm_entries();
    let start = Instant::now();
    let failure = run_job(spec).expect_err("the job must fail");
    let elapsed = start.elapsed();
    assert_eq!(failure.error.to_string(), expected.to_string());
    assert!(failure.to_string().contains("rank 1"), "{failure}");
    // Rank 1 dies 0.1 s in; the others must be gone well within the 2 s allowed.
    assert!(elapsed < Duration::from_secs(5), "the job took {elapsed:?} to end");
    let pgid = failure.process_group.expect("ranks were started");
    assert!(group_is_gone(pgid), "processes of group {pgid} are left behind");
    let left: Vec<_> = shm_entries().difference(&before).cloned().collect();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}

#[test]
fn a_killed_rank_ends_the_job_and_leaves_nothing_behind() {
    let killed = JobError::RankFailed { rank: 1, ending: Ending::Signaled(libc::SIGKILL) };
    failing_job(&job(4, Job::DieSignal), &killed);
    // It exits after joining the job and without finalizing: it left early, code 3.
    failing_job(&job(8, Job::DieExit), &JobError::LeftEarly { rank: 1, code: 3, joined: true });
    failing_job(&job(5, Job::DieInCollective), &killed);
}

#[test]
fn a_hung_job_is_killed_at_its_timeout() {
    let mut spec = job(3, Job::Hang);
    spec.timeout = Some(Duration::from_millis(500));
    let failure = run_job(&spec).expect_err("the job hangs");
    assert!(matches!(failure.error, JobError::TimedOut { .. }), "{failure}");
    assert!(group_is_gone(failure.process_group.unwrap()));
}

#[test]
fn bad_job_sizes_are_errors_and_a_missing_program_is_named() {
    for (procs, nodes) in [(0, 1), (2, 3), (2, 0), (100_000, 1)] {
        let mut spec = job(procs, P2p::Ordering);
        spec.nodes = nodes;
        assert!(spec.validate().is_err(), "-n {procs} --nodes {nodes} must be rejected");
        assert!(matches!(run_job(&spec).unwrap_err().error, JobError::Spec(_)));
    }
    let mut missing = job(2, P2p::Ordering);
    missing.program = "/nonexistent/commcore-rank".into();
    let failure = run_job(&missing).expect_err("cannot start");
    assert!(matches!(failure.error, JobError::Spawn { rank: 0, .. }), "{failure}");
    assert!(failure.to_string().contains("/nonexistent/commcore-rank"), "{failure}");
}
