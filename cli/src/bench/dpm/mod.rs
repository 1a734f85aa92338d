//! `commcore bench dpm`: dynamic processes measured as the DPM paper's benchmarks do —
//! spawn latency and rate, inter-communicator merge, inter- against intra-group ping-pong,
//! accept/connect, and inter-communicator collectives — with every step under a timeout; a
//! job that hits its timeout counts as a hang. One JSON object; `--reps` repetitions per
//! figure (default 10), medians.
//!
//! The three ping-pongs (two processes of one job, a parent and its child, two connected
//! jobs) run in `--rounds` interleaved rounds (default 3), each round's jobs one after
//! another: this machine moves its CPUs between placements from job to job, and an
//! inter/intra ratio is read within a round (`inter_over_intra`, the median over rounds).

mod ranks;

use std::time::Duration;

use serde_json::{json, Value};

use super::option;
use super::stats::median;
use commcore_linux::launch::{env, run_job, JobError, JobSpec};

/// How long one of the benchmark's jobs may run.
const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// A job of one rank bound as the intra job's first rank (a job of one rank is left unbound
/// otherwise); spawned children take the CPUs after their parents'.
const BOUND: [(&str, &str); 1] = [("COMMCORE_CPU_OFFSET", "0")];

/// The ping-pong modes: the intra job's two processes, then a parent and its child, then one
/// process of each of two connected jobs.
const MODES: [&str; 3] = ["intra", "inter_spawned", "inter_connected"];

/// The ping-pong figures of all rounds: per mode and size, the median over rounds, and the
/// inter/intra ratios read within each round.
struct Pingpong {
    figures: Vec<Value>,
    ratios: Vec<Value>,
}

/// Runs the benchmark (or, inside one of its jobs, one rank of it).
pub fn run(args: &[String]) -> Result<Value, String> {
    if std::env::var_os(env::SHM_FD).is_some() {
        ranks::main(args).map_err(|e| e.to_string())?;
        std::process::exit(0);
    }
    let reps: usize = option(args, "--reps")?.unwrap_or(10).max(1);
    let rounds: usize = option(args, "--rounds")?.unwrap_or(3).max(1);
    let mut jobs = Jobs::default();
    let spawner = jobs.run(1, &["--role", "spawner"], &BOUND, reps);
    let pingpong = jobs.pingpong_rounds(rounds, reps);
    let (accept, connect) = jobs.connected(2, reps, false);
    let statics = jobs.run(4, &["--role", "static"], &[], reps);
    let merged = [1, 2].map(|n| jobs.run(n, &["--role", "spawn-merge"], &BOUND, reps));
    let field = |v: &Option<Value>, name: &str| v.as_ref().and_then(|v| v.get(name)).cloned();
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
        "pingpong": pingpong.figures,
        "inter_over_intra": pingpong.ratios,
        "pingpong_rounds": rounds,
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
    /// With `pingpong_only`, they meet once and only ping-pong.
    fn connected(
        &mut self,
        procs: usize,
        reps: usize,
        pingpong_only: bool,
    ) -> (Option<Value>, Option<Value>) {
        let file = std::env::temp_dir().join(format!("commcore-dpm-{}", std::process::id()));
        let file = file.to_string_lossy().into_owned();
        let part = if pingpong_only { "pingpong" } else { "all" };
        let accept_role = ["--role", "accept", "--file", &file, "--part", part];
        let connect_role = ["--role", "connect", "--file", &file, "--part", part];
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

    /// The three ping-pongs, `rounds` times in turn.
    fn pingpong_rounds(&mut self, rounds: usize, reps: usize) -> Pingpong {
        // Per mode, per round: the figures by size.
        let mut by_mode: [Vec<Option<Value>>; 3] = Default::default();
        for _ in 0..rounds {
            let intra = self.run(2, &["--role", "intra"], &[], reps);
            let spawned = self.run(1, &["--role", "spawned-pingpong"], &BOUND, reps);
            let (pair, _) = self.connected(1, reps, true);
            for (figures, job) in by_mode.iter_mut().zip([intra, spawned, pair]) {
                figures.push(job.and_then(|v| v.get("pingpong").cloned()));
            }
        }
        let us = |round: &Option<Value>, bytes: usize| {
            round.as_ref().and_then(|f| f.get(bytes.to_string())).and_then(Value::as_f64)
        };
        let mut figures = Vec::new();
        let mut ratios = Vec::new();
        for (mode, rounds) in MODES.iter().zip(&by_mode) {
            for bytes in ranks::PINGPONG_BYTES {
                let each: Vec<f64> = rounds.iter().filter_map(|r| us(r, bytes)).collect();
                let middle = (!each.is_empty()).then(|| median(each.clone()));
                figures.push(
                    json!({ "mode": mode, "bytes": bytes, "median_us": middle, "rounds_us": each }),
                );
                if *mode == "intra" {
                    continue;
                }
                // Rounds where both figures were measured.
                let each: Vec<f64> = rounds
                    .iter()
                    .zip(&by_mode[0])
                    .filter_map(|(inter, intra)| Some(us(inter, bytes)? / us(intra, bytes)?))
                    .collect();
                let middle = (!each.is_empty()).then(|| median(each.clone()));
                ratios.push(
                    json!({ "mode": mode, "bytes": bytes, "median": middle, "rounds": each }),
                );
            }
        }
        Pingpong { figures, ratios }
    }
}
