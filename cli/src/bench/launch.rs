//! Start-up under the launchers clusters run: the wall time from starting the launcher to
//! its exit, for a job whose ranks initialize, meet in one barrier and finalize, with
//! commcore's runtime and, under the same launcher, with the host MPI's own `MPI_Init` +
//! `MPI_Barrier` program. Runs are interleaved (each run measures every row once) and the
//! medians reported, so that this machine's drifts hit every row alike.
//!
//! Launchers: `commcore run` (always), MPICH's `mpiexec` (PMI-1) and Open MPI's `mpirun`
//! (PMIx: this program must be built with the `pmix` feature) when installed, and Slurm's
//! `srun --mpi=pmix` when a cluster answers (`sinfo`). A launcher that is missing is
//! listed in `skipped` with the reason.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use commcore_linux::runtime::World;
use serde_json::{json, Value};

use super::option;
use super::stats::median;

/// The host MPIs' start-up program.
const HOST_PROGRAM: &str = r#"#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"#;

/// One launcher: how it starts `n` copies of a program, and which MPI's compiler builds
/// the host program it starts.
struct Launcher {
    name: &'static str,
    /// The command before the program, for `n` ranks.
    prefix: fn(usize) -> Vec<String>,
    /// The host MPI's compiler wrapper.
    host_cc: Option<&'static str>,
    /// Extra environment for both programs.
    env: &'static [(&'static str, &'static str)],
}

const OPEN_MPI_ENV: &[(&str, &str)] =
    &[("OMPI_MCA_pml", "ob1"), ("OMPI_MCA_btl", "self,vader,tcp")];

fn launchers() -> [Launcher; 4] {
    [
        Launcher {
            name: "commcore run",
            prefix: |n| {
                let me =
                    std::env::current_exe().map_or("commcore".into(), |p| p.display().to_string());
                vec![me, "run".into(), "-n".into(), n.to_string(), "--".into()]
            },
            host_cc: None,
            env: &[],
        },
        Launcher {
            name: "mpiexec.mpich",
            prefix: |n| vec!["mpiexec.mpich".into(), "-n".into(), n.to_string()],
            host_cc: Some("mpicc.mpich"),
            env: &[],
        },
        Launcher {
            name: "mpirun.openmpi",
            prefix: |n| {
                ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-n"]
                    .iter()
                    .map(|s| s.to_string())
                    .chain([n.to_string()])
                    .collect()
            },
            host_cc: Some("mpicc.openmpi"),
            env: OPEN_MPI_ENV,
        },
        Launcher {
            name: "srun",
            prefix: |n| vec!["srun".into(), "--mpi=pmix".into(), "-n".into(), n.to_string()],
            host_cc: Some("mpicc.openmpi"),
            env: OPEN_MPI_ENV,
        },
    ]
}

/// Why `launcher` cannot run here, if it cannot.
fn unavailable(launcher: &Launcher) -> Option<String> {
    let found = |program: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let program = launcher.prefix(1)[0].clone();
    match launcher.name {
        "commcore run" => None,
        _ if !found(&program) => Some(format!("{program} is not installed")),
        "mpirun.openmpi" | "srun" if !cfg!(feature = "pmix") => {
            Some("this commcore was built without the pmix feature".into())
        }
        "srun"
            if !Command::new("sinfo")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()) =>
        {
            Some("no Slurm cluster answers (sinfo failed)".into())
        }
        _ => None,
    }
}

impl Launcher {
    fn prefix(&self, n: usize) -> Vec<String> {
        (self.prefix)(n)
    }

    /// Runs `program` as `n` ranks; the wall time in milliseconds and rank 0's output.
    fn time(&self, n: usize, program: &[String]) -> Result<(f64, String), String> {
        let mut words = self.prefix(n);
        words.extend(program.iter().cloned());
        let started = Instant::now();
        let output = Command::new(&words[0])
            .args(&words[1..])
            .envs(self.env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", words[0]))?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        if !output.status.success() {
            return Err(format!(
                "`{}` failed ({}): {}",
                words.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or("")
            ));
        }
        Ok((ms, String::from_utf8_lossy(&output.stdout).into_owned()))
    }
}

/// Builds the host program with `cc` into `dir`.
fn build_host_program(cc: &str, dir: &Path) -> Result<PathBuf, String> {
    let source = dir.join("init_barrier.c");
    std::fs::write(&source, HOST_PROGRAM).map_err(|e| e.to_string())?;
    let binary = dir.join(format!("init_barrier.{}", cc.replace('.', "_")));
    let status = Command::new(cc)
        .arg("-O2")
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .status()
        .map_err(|e| format!("{cc}: {e}"))?;
    if !status.success() {
        return Err(format!("{cc} could not build the host program"));
    }
    Ok(binary)
}

/// `commcore bench launch`.
pub fn run(args: &[String]) -> Result<Value, String> {
    if option::<String>(args, "--role")?.as_deref() == Some("rank") {
        rank_main().map_err(|e| e.to_string())?;
        std::process::exit(0);
    }
    let procs: Vec<usize> = match option::<String>(args, "--procs")? {
        Some(list) => list
            .split(',')
            .map(|p| p.trim().parse().ok().filter(|&n| (1..=64).contains(&n)))
            .collect::<Option<_>>()
            .ok_or_else(|| format!("--procs {list:?}: ranks from 1 to 64, comma-separated"))?,
        None => vec![2, 4, 8],
    };
    let runs: usize = option(args, "--runs")?.unwrap_or(5).max(1);
    let wanted: Option<String> = option(args, "--launchers")?;
    let me = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let ours: Vec<String> = vec![
        me.display().to_string(),
        "bench".into(),
        "launch".into(),
        "--role".into(),
        "rank".into(),
    ];
    let dir = std::env::temp_dir().join(format!("commcore-bench-launch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut skipped = Vec::new();
    let mut chosen = Vec::new();
    for launcher in launchers() {
        if wanted
            .as_deref()
            .is_some_and(|w| !w.split(',').any(|name| launcher.name.starts_with(name)))
        {
            continue;
        }
        if let Some(why) = unavailable(&launcher) {
            skipped.push(json!({ "launcher": launcher.name, "why": why }));
            continue;
        }
        let host = match launcher.host_cc {
            Some(cc) => match build_host_program(cc, &dir) {
                Ok(binary) => Some(vec![binary.display().to_string()]),
                Err(why) => {
                    skipped.push(json!({ "launcher": launcher.name, "why": why }));
                    continue;
                }
            },
            None => None,
        };
        chosen.push((launcher, host));
    }
    // times[launcher][procs] = (ours, host)
    let mut times = vec![vec![(Vec::new(), Vec::new()); procs.len()]; chosen.len()];
    let mut bytes = Value::Null;
    let result = (|| -> Result<(), String> {
        for _ in 0..runs {
            for (l, (launcher, host)) in chosen.iter().enumerate() {
                for (p, &n) in procs.iter().enumerate() {
                    let (ms, out) = launcher.time(n, &ours)?;
                    times[l][p].0.push(ms);
                    if let Some(line) = out.lines().find(|l| l.starts_with('{')) {
                        if launcher.name != "commcore run" {
                            bytes = serde_json::from_str(line).unwrap_or(Value::Null);
                        }
                    }
                    if let Some(host) = host {
                        times[l][p].1.push(launcher.time(n, host)?.0);
                    }
                }
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    let round = |ms: f64| (ms * 10.0).round() / 10.0;
    let mut startup = Vec::new();
    for (l, (launcher, host)) in chosen.iter().enumerate() {
        for (p, &n) in procs.iter().enumerate() {
            let (ours, theirs) = &times[l][p];
            let host_ms = host.as_ref().map(|_| round(median(theirs.clone())));
            startup.push(json!({
                "launcher": launcher.name,
                "ranks": n,
                "commcore_ms": round(median(ours.clone())),
                "host_mpi_ms": host_ms,
            }));
        }
    }
    Ok(json!({
        "startup": startup,
        "bytes_per_rank": bytes,
        "runs": runs,
        "skipped": skipped,
        "note": "wall time of the launcher starting N ranks that initialize, meet in a barrier \
                 and finalize (medians of interleaved runs); host_mpi_ms is the same launcher \
                 with its own MPI's program (none for commcore run); bytes are rank 0's \
                 through a foreign launcher's exchange at the largest N",
    }))
}

/// One rank: initialize, one barrier; rank 0 prints what the bootstrap exchanged.
fn rank_main() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::init()?;
    world.comm().barrier()?;
    if world.rank() == 0 {
        if let Some((published, fetched)) = world.exchanged_bytes() {
            println!("{}", json!({ "published": published, "fetched": fetched }));
        }
    }
    Ok(())
}
