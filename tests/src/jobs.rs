//! Jobs of the rank programs under the launcher, for the multi-process tests: each runs
//! under a timeout, so a hang fails the test instead of stalling CI.
//!
//! The same suites run over other transports: `COMMCORE_TEST_TRANSPORT=tcp` (or `verbs`)
//! sends every message between two ranks over TCP (or verbs), and `COMMCORE_TEST_HOSTS=H`
//! spreads each job's ranks over H hosts (network namespaces, root only), shared memory
//! within a host and TCP between hosts. `scripts/test.sh` runs the runtime's suites all
//! three ways, and `scripts/verbs-guest.sh` over verbs on soft-RoCE.

use std::time::Duration;

use commcore_linux::launch::{run_job, JobSpec};

/// The variable that makes every job of the suite use TCP (or verbs) between any two ranks.
pub const ENV_TEST_TRANSPORT: &str = "COMMCORE_TEST_TRANSPORT";
/// The variable that spreads every job of the suite over this many hosts.
pub const ENV_TEST_HOSTS: &str = "COMMCORE_TEST_HOSTS";

/// The hosts jobs of the suite are spread over (1 unless [`ENV_TEST_HOSTS`] says more).
pub fn test_hosts() -> usize {
    std::env::var(ENV_TEST_HOSTS).ok().and_then(|h| h.parse().ok()).unwrap_or(1).max(1)
}

/// The transport the suite puts between every pair: [`ENV_TEST_TRANSPORT`], else
/// `COMMCORE_TRANSPORT` (which the ranks inherit), when either names one.
pub fn test_transport() -> Option<String> {
    [ENV_TEST_TRANSPORT, "COMMCORE_TRANSPORT"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|t| t == "tcp" || t == "verbs")
}

/// Whether the suite sends every message over a message transport (TCP or verbs), so no
/// two ranks share memory.
pub fn test_message_only() -> bool {
    test_transport().is_some()
}

/// A job of `procs` ranks of `program` with `args`, under `timeout`, rank 0's output kept,
/// over the transport and hosts the suite runs with.
pub fn job(program: &str, procs: usize, args: &[&str], timeout: Duration) -> JobSpec {
    let mut spec = JobSpec::new(procs, program);
    spec.args = args.iter().map(|&arg| arg.into()).collect();
    spec.timeout = Some(timeout);
    spec.capture_rank0_stdout = true;
    spec.hosts = test_hosts().min(procs.max(1));
    if let Some(transport) = test_transport() {
        spec.env.push(("COMMCORE_TRANSPORT".into(), transport));
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
