//! The peer MPIs (Open MPI, MPICH) through `scripts/compare-peers.sh`, which builds its C
//! programs with each, runs commcore and both peers interleaved and prints the medians as
//! one JSON list. A peer that is missing or fails is a labelled gap, never a made-up point.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::figure::{Figure, Gap};
use super::runner::{num, Runner};

/// The peers' figures, or why there are none.
#[derive(Default)]
pub struct Peers {
    /// compare-peers.sh's rows: `{figure, procs, commcore, openmpi, mpich, unit, …}`.
    rows: Vec<Value>,
    /// Why figures lack a peer's series.
    pub gaps: Vec<Gap>,
    /// The peers' versions, as their launchers print them.
    pub versions: Vec<(String, String)>,
    /// Whether peers were asked for.
    pub requested: bool,
}

/// The peers' names as compare-peers.sh keys them, and as the page shows them.
const PEERS: [(&str, &str); 2] = [("openmpi", "Open MPI"), ("mpich", "MPICH")];

impl Peers {
    /// No peers: `--peers` was not given.
    pub fn not_requested() -> Peers {
        Peers {
            gaps: vec![Gap::new("Open MPI and MPICH", "not run (pass --peers)")],
            ..Peers::default()
        }
    }

    /// Runs compare-peers.sh for `groups` with `runs` interleaved runs each and the
    /// script's size settings `env`.
    pub fn run(runner: &mut Runner, groups: &[&str], runs: u32, env: &[(&str, String)]) -> Peers {
        let mut peers = Peers { requested: true, ..Peers::default() };
        let Some(script) = find_script() else {
            peers.gaps.push(Gap::new(
                "Open MPI and MPICH",
                "scripts/compare-peers.sh not found above the current directory",
            ));
            return peers;
        };
        let mut command = Command::new("bash");
        command.envs(env.iter().map(|(k, v)| (k, v))).arg(&script).args([
            "--json",
            "--runs",
            &runs.to_string(),
            "--only",
            &groups.join(","),
        ]);
        if let Some(root) = script.parent().and_then(Path::parent) {
            command.current_dir(root);
        }
        match runner.run_showing(
            &format!("peers: compare-peers.sh --only {}", groups.join(",")),
            &mut command,
        ) {
            Ok(output) => {
                // The script prints the TCP list first, then the main list, one per line.
                for line in output.lines().filter(|l| l.starts_with('[')) {
                    if let Ok(Value::Array(rows)) = serde_json::from_str::<Value>(line) {
                        peers.rows.extend(rows);
                    }
                }
                if peers.rows.is_empty() {
                    peers.gaps.push(Gap::new(
                        "Open MPI and MPICH",
                        "compare-peers.sh printed no figures",
                    ));
                }
            }
            Err(message) => peers.gaps.push(Gap::new("Open MPI and MPICH", message)),
        }
        for (tool, name) in [("mpirun.openmpi", "Open MPI"), ("mpirun.mpich", "MPICH")] {
            match version(tool) {
                Some(v) => peers.versions.push((name.into(), v)),
                None => peers.gaps.push(Gap::new(name, format!("{tool} is not installed"))),
            }
        }
        peers
    }

    /// The row of `figure` at `procs` (any process count when 0: the dynamic-process
    /// figures name their sizes).
    fn row(&self, figure: &str, procs: u32) -> Option<&Value> {
        self.rows.iter().find(|r| {
            r.get("figure").and_then(Value::as_str) == Some(figure)
                && (procs == 0 || num(r, "procs") == Some(f64::from(procs)))
        })
    }

    /// The peers' values of `figure` at `procs` as `(name, value)` pairs; a peer without a
    /// value is left out.
    pub fn values(&self, figure: &str, procs: u32) -> Vec<(&'static str, f64)> {
        let Some(row) = self.row(figure, procs) else { return Vec::new() };
        PEERS.iter().filter_map(|(key, name)| Some((*name, num(row, key)?))).collect()
    }

    /// The better (smaller) peer value of `figure` at `procs`.
    pub fn best_lower(&self, figure: &str, procs: u32) -> Option<f64> {
        self.values(figure, procs).iter().map(|p| p.1).reduce(f64::min)
    }

    /// Adds the peers' points of `figure` at `procs` to `plot` at `x`; a peer that ran but
    /// has no value there is a gap.
    pub fn add(&self, plot: &mut Figure, figure: &str, procs: u32, x: f64) {
        let values = self.values(figure, procs);
        for (name, value) in &values {
            plot.add(name, x, Some(*value));
        }
        self.note_missing(plot, &values, &plot.x_text(x));
    }

    /// Like [`Peers::add`] at a category.
    pub fn add_at(&self, plot: &mut Figure, figure: &str, procs: u32, category: &str) {
        let values = self.values(figure, procs);
        for (name, value) in &values {
            plot.add_at(name, category, Some(*value));
        }
        self.note_missing(plot, &values, category);
    }

    fn note_missing(&self, plot: &mut Figure, values: &[(&str, f64)], at: &str) {
        if self.rows.is_empty() {
            return; // the peers did not run at all: one gap for the figure says so
        }
        for (_, name) in PEERS {
            if !values.iter().any(|v| v.0 == name) {
                let reason =
                    "compare-peers.sh gave no value (the job hung, failed or has no such figure)";
                plot.gaps.push(Gap::new(format!("{name} at {at}"), reason));
            }
        }
    }

    /// Copies the peers' gaps into `plot` (once per figure that would show them).
    pub fn note(&self, plot: &mut Figure) {
        plot.gaps.extend(self.gaps.iter().cloned());
        if self.requested && self.rows.is_empty() && self.gaps.is_empty() {
            plot.gaps.push(Gap::new("Open MPI and MPICH", "no figures"));
        }
    }
}

/// compare-peers.sh in the current directory or one above it.
fn find_script() -> Option<PathBuf> {
    let here = std::env::current_dir().ok()?;
    here.ancestors().map(|d| d.join("scripts/compare-peers.sh")).find(|p| p.is_file())
}

/// What `tool --version` says of its version: MPICH's Hydra prints build details first and
/// the version on a `Version:` line, Open MPI prints it on its first line.
fn version(tool: &str) -> Option<String> {
    let output = Command::new(tool).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.clone().next()?.to_string();
    Some(
        lines
            .find(|l| l.starts_with("Version:"))
            .map_or(first, |l| format!("MPICH {}", l["Version:".len()..].trim())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn peer_values_go_to_their_figure_and_missing_ones_stay_out() {
        let peers = Peers {
            rows: vec![
                json!({"figure": "barrier", "procs": 4, "commcore": 1.0, "openmpi": 2.0, "mpich": null}),
                json!({"figure": "barrier", "procs": 8, "commcore": 1.0, "openmpi": 5.0, "mpich": 3.0}),
            ],
            requested: true,
            ..Peers::default()
        };
        let mut figure = Figure::numeric("b", "barrier", "processes", false, "us");
        peers.add(&mut figure, "barrier", 4, 4.0);
        peers.add(&mut figure, "barrier", 8, 8.0);
        peers.add(&mut figure, "barrier", 2, 2.0);
        assert_eq!(figure.value("Open MPI", 4.0), Some(2.0));
        assert_eq!(figure.value("MPICH", 4.0), None);
        assert_eq!(figure.point_count(), 3);
        assert_eq!(peers.best_lower("barrier", 8), Some(3.0));
        assert!(peers.values("barrier", 0).len() == 1, "any process count finds the first row");
    }
}
