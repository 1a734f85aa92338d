//! `commcore report`: the papers' headline experiments in one command, written as a page of
//! plots (`DIR/index.html`, self-contained) and every number on it (`DIR/results.json`).
//!
//! Each paper in `../shared/papers/` has a section: what it claims (in our words), its
//! figures redrawn from this run with the existing benchmarks, the table of every plotted
//! point, a one-line verdict, and what cannot be measured here as labelled gaps. With
//! `--peers`, Open MPI and MPICH run through `scripts/compare-peers.sh`; with `--compare`,
//! an earlier report's results are set beside this run's.

mod av_rankmap;
mod cid;
mod coll;
pub mod compare;
mod dpm;
pub mod figure;
pub mod html;
mod machine;
mod peers;
pub mod plot;
mod pt2pt;
mod runner;
pub mod scale;
mod verbs;

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use figure::Section;
use peers::Peers;
use runner::Runner;
use scale::Scale;

/// `commcore report`'s options.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Every figure with fewer repetitions (under 10 minutes on 2 vCPUs).
    #[arg(long)]
    pub quick: bool,
    /// Where index.html and results.json go.
    #[arg(long, value_name = "DIR", default_value = "target/report")]
    pub out: PathBuf,
    /// Also run Open MPI and MPICH (scripts/compare-peers.sh, from the repository).
    #[arg(long)]
    pub peers: bool,
    /// An earlier report's directory: ratios new/old and plots of both runs.
    #[arg(long, value_name = "OLD_DIR")]
    pub compare: Option<PathBuf>,
    /// The smallest sizes, so that tests can check the page in seconds.
    #[arg(long, hide = true, conflicts_with = "quick")]
    pub tiny: bool,
}

/// Runs the report; an error message for anything a user can cause.
pub fn run(args: &ReportArgs) -> Result<(), String> {
    let scale = if args.tiny {
        Scale::tiny()
    } else if args.quick {
        Scale::quick()
    } else {
        Scale::full()
    };
    // Fail before the experiments, not after: a bad --compare or an unwritable --out.
    let old = args.compare.as_deref().map(compare::load).transpose()?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    let load_before = machine::load_average();
    // The commit and date of the run as it starts: the tree may change while it runs.
    let command: Vec<String> = std::env::args().collect();
    let mut header = machine::header(&command.join(" "), scale.name);
    let mut runner = Runner::new()?;
    let peers = if args.peers {
        let mut groups = vec!["tcp", "pt2pt", "split", "dpm"];
        for p in &scale.coll_procs {
            groups.push(match p {
                2 => "coll2",
                4 => "coll4",
                _ => "coll8",
            });
        }
        let env = [
            ("SPLIT_ITERATIONS", scale.peer_split_iterations.to_string()),
            ("DPM_REPS", scale.dpm_reps.to_string()),
            ("DPM_TIMEOUT", scale.peer_job_timeout_secs.to_string()),
        ];
        Peers::run(&mut runner, &groups, scale.peer_runs, &env)
    } else {
        Peers::not_requested()
    };
    let mut sections: Vec<Section> = Vec::new();
    sections.push(av_rankmap::section(&mut runner, &scale));
    let (tradeoffs, threads) = cid::sections(&mut runner, &scale, &peers);
    sections.push(tradeoffs);
    sections.push(threads);
    sections.push(coll::section(&mut runner, &scale, &peers));
    sections.push(dpm::section(&mut runner, &scale, &peers));
    sections.push(pt2pt::section(&mut runner, &scale, &peers));
    for figure in sections.iter_mut().flat_map(|s| s.figures.iter_mut()) {
        figure.choose_y_scale();
    }
    let comparison = match (&old, &args.compare) {
        (Some(old), Some(dir)) => {
            Some(compare::compare(&dir.display().to_string(), old, &sections))
        }
        _ => None,
    };
    header.extend(peers.versions.iter().cloned());
    header.push(("vCPU placement seen".into(), placement(&sections)));
    header.push((
        "load average (1 min)".into(),
        format!("{load_before} at the start, {} at the end", machine::load_average()),
    ));
    header.push(("run time".into(), format!("{:.0} s", runner.elapsed_secs())));
    let page = html::page(&header, &sections, comparison.as_ref())?;
    let results = json!({
        "header": header.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
        "run_seconds": runner.elapsed_secs(),
        "sections": sections.iter().map(Section::to_json).collect::<Vec<_>>(),
        "comparison": comparison.as_ref().map_or(Value::Null, compare::Comparison::to_json),
    });
    let write = |name: &str, text: String| {
        let path = args.out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write("index.html", page)?;
    write("results.json", format!("{results:#}\n"))?;
    runner.finish();
    eprintln!(
        "report: {} sections, {} figures in {:.0} s: {}",
        sections.len(),
        sections.iter().map(|s| s.figures.len()).sum::<usize>(),
        runner.elapsed_secs(),
        args.out.join("index.html").display()
    );
    Ok(())
}

/// Which of this host's two vCPU placements the shared-memory ping-pong saw: 8 B takes
/// about 0.1 us in the fast one and 0.3-0.7 us in the slow one.
fn placement(sections: &[Section]) -> String {
    let latency = sections
        .iter()
        .flat_map(|s| &s.figures)
        .find(|f| f.id == "pt2pt_latency")
        .and_then(|f| f.value("commcore, shared memory", 8.0));
    match latency {
        Some(us) if us < 0.2 => format!("fast (8 B ping-pong {us:.3} us)"),
        Some(us) => format!("slow (8 B ping-pong {us:.3} us)"),
        None => "unknown (no ping-pong figure)".into(),
    }
}
