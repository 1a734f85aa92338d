//! `commcore demo`: the main job on its embedded default.
//!
//! It launches local processes over shared memory (4 ranks on 2 node labels unless `-n` and
//! `--nodes` say otherwise), which exchange messages, build communicators through core's
//! context-ID agreement and rank maps, and run collectives selected by core's component
//! framework, checking every result; then it shows how rank maps store the communicators of a
//! large world.

mod rankmaps;
mod ranks;

use std::time::Duration;

use commcore_linux::launch::{self, JobSpec, Placement};

use crate::args::DemoArgs;

/// The argument that makes `commcore demo` the rank program of its own job.
const RANK_PROGRAM: &str = "--rank-program";

/// Runs the demo: as the launcher, or as one of its ranks.
pub fn run(args: &DemoArgs) -> Result<(), String> {
    if args.rank_program {
        return ranks::run().map_err(|e| format!("rank program: {e}"));
    }
    let procs = args.procs;
    let nodes = args.nodes.unwrap_or(2usize.min(procs.max(1)));
    let program = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut spec = JobSpec::new(procs, program);
    spec.args = vec!["demo".into(), RANK_PROGRAM.into()];
    spec.nodes = nodes;
    spec.placement = Placement::Block;
    spec.timeout = Some(Duration::from_secs(60));
    println!("== {procs} processes over shared memory, on {nodes} node label(s) ==");
    launch::run_job(&spec).map_err(|failure| format!("the job failed: {failure}"))?;
    println!();
    let mut rest = Vec::new();
    if let Some(ranks) = args.ranks {
        rest.extend(["--ranks".to_string(), ranks.to_string()]);
    }
    if let Some(list) = &args.lookup_ranks {
        rest.extend(["--lookup-ranks".to_string(), list.clone()]);
    }
    rankmaps::run(&rest)
}
