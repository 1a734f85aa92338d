//! Jobs of the rank programs under the launcher, for the multi-process tests: each runs
//! under a timeout, so a hang fails the test instead of stalling CI.
//!
//! The same suites run over other transports: `COMMCORE_TEST_TRANSPORT=tcp` sends every
//! message between two ranks over TCP, and `COMMCORE_TEST_HOSTS=H` spreads each job's ranks
//! over H hosts (network namespaces, root only), shared memory within a host and TCP
//! between hosts. `scripts/test.sh` runs the runtime's suites all three ways.

use std::time::Duration;

use commcore_linux::launch::{run_job, JobSpec};

/// The variable that makes every job of the suite use TCP between any two ranks.
pub const ENV_TEST_TRANSPORT: &str = "COMMCORE_TEST_TRANSPORT";
/// The variable that spreads every job of the suite over this many hosts.
pub const ENV_TEST_HOSTS: &str = "COMMCORE_TEST_HOSTS";

/// The hosts jobs of the suite are spread over (1 unless [`ENV_TEST_HOSTS`] says more).
pub fn test_hosts() -> usize {
    std::env::var(ENV_TEST_HOSTS).ok().and_then(|h| h.parse().ok()).unwrap_or(1).max(1)
}

/// Whether the suite runs over TCP between every pair ([`ENV_TEST_TRANSPORT`]).
pub fn test_tcp_only() -> bool {
    std::env::var(ENV_TEST_TRANSPORT).is_ok_and(|t| t == "tcp")
}

/// A job of `procs` ranks of `program` with `args`, under `timeout`, rank 0's output kept,
/// over the transport and hosts the suite runs with.
pub fn job(program: &str, procs: usize, args: &[&str], timeout: Duration) -> JobSpec {
    let mut spec = JobSpec::new(procs, program);
    spec.args = args.iter().map(|&arg| arg.into()).collect();
    spec.timeout = Some(timeout);
    spec.capture_rank0_stdout = true;
    spec.hosts = test_hosts().min(procs.max(1));
    if test_tcp_only() {
        spec.env.push(("COMMCORE_TRANSPORT".into(), "tcp".into()));
    }
    spec
}

/// Runs `spec` and returns rank 0's output; panics, naming the job, when it fails.
pub fn run_ok(spec: &JobSpec) -> String {
    match run_job(spec) {
        Ok(output) => String::from_utf8_lossy(&output.rank0_stdout).into_owned(),
        Err(failure) => panic!(
            "{:?} with {} ranks on {} nodes and {} hosts failed: {failure}",
            spec.args, spec.procs, spec.nodes, spec.hosts
        ),
    }
}
