//! `commcore run`: checks the options and the settings the ranks will see, runs the job as
//! a dedicated launcher, and turns its end into mpirun's exit status.

use commcore_linux::launch::{run_job, JobSpec, EXIT_LAUNCHER};
use commcore_linux::runtime::Settings;

use crate::args::RunArgs;

/// Runs the job `args` describe; returns the exit status.
pub fn run(args: RunArgs) -> i32 {
    match spec(args) {
        Ok(spec) => match run_job(&spec) {
            Ok(_) => 0,
            Err(failure) => {
                eprintln!("commcore run: {failure}");
                failure.error.exit_status()
            }
        },
        Err(message) => {
            eprintln!("commcore run: {message}");
            EXIT_LAUNCHER
        }
    }
}

/// The job, or what is wrong with the options or settings.
pub fn spec(args: RunArgs) -> Result<JobSpec, String> {
    let mut command = args.command.into_iter();
    let program = command.next().ok_or("run needs a PROGRAM")?;
    let mut spec = JobSpec::new(args.procs, program);
    spec.args = command.collect();
    spec.nodes = args.nodes;
    spec.hosts = args.hosts;
    spec.placement = args.placement.into();
    spec.timeout = args.timeout;
    spec.tag_output = args.tag_output;
    spec.dedicated_launcher = true;
    // MPICH-built programs load commcore's MPI library (unless -x sets the path).
    if let Some(dir) = crate::mpi_library::directory() {
        let current = std::env::var("LD_LIBRARY_PATH").ok();
        let path = crate::mpi_library::library_path(&dir, current.as_deref());
        spec.env.push(("LD_LIBRARY_PATH".to_string(), path));
    }
    for export in &args.export {
        spec.env.push(exported(export)?);
    }
    spec.validate()?;
    // The ranks inherit this environment with the -x values on top: check it once here, so
    // a bad value is one message rather than one per rank.
    let lookup = |name: &str| {
        let passed = spec.env.iter().rev().find(|(n, _)| n == name);
        passed.map(|(_, v)| v.clone()).or_else(|| std::env::var(name).ok())
    };
    Settings::from_lookup(lookup).map_err(|e| e.to_string())?;
    Ok(spec)
}

/// `-x NAME=VALUE`, or `-x NAME` with this process's value.
fn exported(text: &str) -> Result<(String, String), String> {
    let (name, value) = match text.split_once('=') {
        Some((name, value)) => (name, value.to_string()),
        None => {
            let value = std::env::var(text)
                .map_err(|_| format!("-x {text}: {text} is not set here; write -x {text}=VALUE"))?;
            (text, value)
        }
    };
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!("-x {text}: {name:?} is not a variable name (letters, digits, _)"));
    }
    Ok((name.to_string(), value))
}
