//! `commcore bench dpm`: dynamic processes measured as the DPM paper's benchmarks do —
//! spawn latency and rate, inter-communicator merge, inter- against intra-group ping-pong,
//! accept/connect, and inter-communicator collectives — with every step under a timeout; a
//! job that hits its timeout counts as a hang. One JSON object; `--reps` repetitions per
//! figure (default 10), medians.

mod ranks;

use std::time::Duration;

use serde_json::{json, Value};

use super::option;
use commcore_linux::launch::{env, run_job, JobError, JobSpec};

/// How long one of the benchmark's jobs may run.
const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the benchmark (or, inside one of its jobs, one rank of it).
pub fn run(args: &[String]) -> Result<Value, String> {
    if std::env::var_os(env::SHM_FD).is_some() {
        ranks::main(args).map_err(|e| e.to_string())?;
        std::process::exit(0);
    }
    let reps: usize = option(args, "--reps")?.unwrap_or(10).max(1);
    let mut jobs = Jobs::default();
    // Bound like the intra job's ranks (a job of one rank is left unbound otherwise); the
    // children take the CPUs after their parents'.
    let bound = [("COMMCORE_CPU_OFFSET", "0")];
    let spawner = jobs.run(1, &["--role", "spawner"], &bound, reps);
    let intra = jobs.run(2, &["--role", "intra"], &[], reps);
    // Ping-pong between one process of each job, as intra's two processes; the rest at 2+2.
    let (pair, _) = jobs.connected(1, reps);
    let (accept, connect) = jobs.connected(2, reps);
    let statics = jobs.run(4, &["--role", "static"], &[], reps);
    let merged = [1, 2].map(|n| jobs.run(n, &["--role", "spawn-merge"], &bound, reps));
    let field = |v: &Option<Value>, name: &str| v.as_ref().and_then(|v| v.get(name)).cloned();
    let mut pingpong = Vec::new();
    for (mode, figures) in [
        ("intra", field(&intra, "pingpong_intra")),
        ("inter_spawned", field(&spawner, "pingpong_inter_spawned")),
        ("inter_connected", field(&pair, "pingpong_inter_connected")),
    ] {
        for bytes in ranks::PINGPONG_BYTES {
            let us = figures.as_ref().and_then(|f| f.get(bytes.to_string())).cloned();
            pingpong.push(json!({ "mode": mode, "bytes": bytes, "median_us": us }));
        }
    }
    let mut merge: Vec<Value> =
        field(&statics, "merge_static").and_then(|v| v.as_array().cloned()).unwrap_or_default();
    merge.extend(merged.iter().filter_map(|m| field(m, "merge_spawned")));
    if let Some(us) = field(&connect, "merge") {
        merge.push(json!({ "group_a": 2, "group_b": 2, "how": "connected", "median_us": us }));
    }
    Ok(json!({
        "benchmark": "dpm",
        "reps": reps,
        "spawn": field(&spawner, "spawn"),
        "spawn_rate_per_s": field(&spawner, "spawn_rate_per_s"),
        "pingpong": pingpong,
        "accept_connect_median_us": field(&connect, "accept_connect_us"),
        "intercomm_coll": field(&accept, "intercomm_coll"),
        "merge": merge,
        "hangs": jobs.hangs,
        "runs": jobs.runs,
        "failures": jobs.failures,
    }))
}

/// The benchmark's jobs so far: how many ran, hung or failed otherwise.
#[derive(Default)]
struct Jobs {
    runs: usize,
    hangs: usize,
    failures: Vec<String>,
}

impl Jobs {
    fn spec(
        procs: usize,
        role_args: &[&str],
        env: &[(&str, &str)],
        reps: usize,
    ) -> Result<JobSpec, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
        let mut spec = JobSpec::new(procs, exe);
        spec.args = ["bench", "dpm", "--reps", &reps.to_string()]
            .iter()
            .chain(role_args)
            .map(Into::into)
            .collect();
        spec.env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        spec.capture_rank0_stdout = true;
        spec.timeout = Some(JOB_TIMEOUT);
        Ok(spec)
    }

    /// Runs one job and returns what its rank 0 printed, counting hangs and failures.
    fn run(
        &mut self,
        procs: usize,
        role: &[&str],
        env: &[(&str, &str)],
        reps: usize,
    ) -> Option<Value> {
        let outcome = Self::spec(procs, role, env, reps).and_then(|spec| {
            run_job(&spec).map_err(|f| {
                if matches!(f.error, JobError::TimedOut { .. }) {
                    "timed out".to_string()
                } else {
                    f.to_string()
                }
            })
        });
        self.record(role, outcome.map(|o| o.rank0_stdout))
    }

    fn record(&mut self, role: &[&str], outcome: Result<Vec<u8>, String>) -> Option<Value> {
        self.runs += 1;
        match outcome {
            Ok(stdout) => {
                let text = String::from_utf8_lossy(&stdout);
                match serde_json::from_str(text.trim()) {
                    Ok(value) => Some(value),
                    Err(_) => {
                        self.failures.push(format!("{role:?}: printed {text:?}"));
                        None
                    }
                }
            }
            Err(why) => {
                if why == "timed out" {
                    self.hangs += 1;
                }
                self.failures.push(format!("{role:?}: {why}"));
                None
            }
        }
    }

    /// Two jobs of `procs` ranks that accept and connect, the second on the CPUs the first
    /// leaves free; returns what each one's rank 0 printed.
    fn connected(&mut self, procs: usize, reps: usize) -> (Option<Value>, Option<Value>) {
        let file = std::env::temp_dir().join(format!("commcore-dpm-{}", std::process::id()));
        let file = file.to_string_lossy().into_owned();
        let accept_role = ["--role", "accept", "--file", &file];
        let connect_role = ["--role", "connect", "--file", &file];
        let offset = procs.to_string();
        let specs = (
            Self::spec(procs, &accept_role, &[("COMMCORE_CPU_OFFSET", "0")], reps),
            Self::spec(procs, &connect_role, &[("COMMCORE_CPU_OFFSET", &offset)], reps),
        );
        let outcomes = match specs {
            (Ok(a), Ok(c)) => std::thread::scope(|scope| {
                let acceptor = scope.spawn(move || run_job(&a));
                let connector = run_job(&c);
                (acceptor.join().map_err(|_| "panicked".to_string()), connector)
            }),
            (Err(e), _) | (_, Err(e)) => return (self.record(&accept_role, Err(e)), None),
        };
        for round in 0..=reps {
            let _ = std::fs::remove_file(format!("{file}.{round}"));
        }
        let shape =
            |r: Result<commcore_linux::launch::JobOutput, commcore_linux::launch::JobFailure>| {
                r.map(|o| o.rank0_stdout).map_err(|f| {
                    if matches!(f.error, JobError::TimedOut { .. }) {
                        "timed out".to_string()
                    } else {
                        f.to_string()
                    }
                })
            };
        let accepted = outcomes.0.and_then(shape);
        let connected = shape(outcomes.1);
        (self.record(&accept_role, accepted), self.record(&connect_role, connected))
    }
}
