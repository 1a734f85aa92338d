//! Jobs of the rank programs under the launcher, for the multi-process tests: each runs
//! under a timeout, so a hang fails the test instead of stalling CI.

use std::time::Duration;

use commcore_linux::launch::{run_job, JobSpec};

/// A job of `procs` ranks of `program` with `args`, under `timeout`, rank 0's output kept.
pub fn job(program: &str, procs: usize, args: &[&str], timeout: Duration) -> JobSpec {
    let mut spec = JobSpec::new(procs, program);
    spec.args = args.iter().map(|&arg| arg.into()).collect();
    spec.timeout = Some(timeout);
    spec.capture_rank0_stdout = true;
    spec
}

/// Runs `spec` and returns rank 0's output; panics, naming the job, when it fails.
pub fn run_ok(spec: &JobSpec) -> String {
    match run_job(spec) {
        Ok(output) => String::from_utf8_lossy(&output.rank0_stdout).into_owned(),
        Err(failure) => panic!(
            "{:?} with {} ranks on {} nodes failed: {failure}",
            spec.args, spec.procs, spec.nodes
        ),
    }
}
