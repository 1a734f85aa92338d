//! The command line, parsed by clap: `run`, `demo` and `bench NAME` with their options.
//! mpirun's spellings are accepted where they mean the same: `-np` for `-n`, `-x`,
//! `--oversubscribe`, `--tag-output`, `--timeout`.

use std::ffi::OsString;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use commcore_linux::launch::{Placement, EXIT_LAUNCHER};

use crate::bench::{self, BENCHES};
use crate::help;

/// commcore: the communicator core of an MPI implementation, its launcher, demo and benchmarks.
#[derive(Parser, Debug)]
#[command(name = "commcore", bin_name = "commcore", version, propagate_version = true, after_help = help::settings())]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands clap derives (`bench` is built from the benchmark table).
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Start N ranks of PROGRAM over shared memory on this machine (like mpirun).
    #[command(after_help = help::run_after())]
    Run(RunArgs),
    /// Run the demo: a job of 4 ranks on 2 node labels, then rank maps of a large world.
    Demo(DemoArgs),
    /// Serve publish/lookup of port names to unrelated jobs (COMMCORE_NAMESERVER=ADDR).
    Nameserver(crate::nameserver::NameserverArgs),
    /// Run the papers' experiments and write a page of plots (DIR/index.html) and every
    /// number on it (DIR/results.json).
    Report(crate::report::ReportArgs),
}

/// `commcore run`'s options.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Number of ranks (mpirun's -np is accepted too).
    #[arg(short = 'n', long = "np", visible_alias = "procs", value_name = "N")]
    pub procs: usize,
    /// Number of node labels the ranks are spread over (all on this machine).
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub nodes: usize,
    /// Network namespaces ("hosts") the launcher creates and spreads the ranks over; ranks
    /// on different hosts reach each other over TCP only (needs root).
    #[arg(long, value_name = "H", default_value_t = 1)]
    pub hosts: usize,
    /// How ranks are spread over node labels.
    #[arg(long, value_enum, default_value_t = PlacementArg::Block)]
    pub placement: PlacementArg,
    /// End the job after SECS seconds (a positive number, at most 1e9).
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    pub timeout: Option<std::time::Duration>,
    /// Pass NAME=VALUE to every rank, or NAME with this process's value (repeatable).
    #[arg(short = 'x', value_name = "NAME[=VALUE]")]
    pub export: Vec<String>,
    /// Prefix every line a rank prints with `[rank] ` (whole lines only).
    #[arg(long)]
    pub tag_output: bool,
    /// Accepted for mpirun's sake: ranks never busy-poll for long, so more ranks than CPUs
    /// are always allowed.
    #[arg(long)]
    pub oversubscribe: bool,
    /// The program each rank runs, and its arguments (after `--` or after the options).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM [ARGS]..."
    )]
    pub command: Vec<OsString>,
}

/// `--placement`'s values.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PlacementArg {
    /// Consecutive ranks share a node: 0 0 1 1 for four ranks on two nodes.
    Block,
    /// Ranks go round the nodes: 0 1 0 1.
    Cyclic,
}

impl From<PlacementArg> for Placement {
    fn from(arg: PlacementArg) -> Placement {
        match arg {
            PlacementArg::Block => Placement::Block,
            PlacementArg::Cyclic => Placement::Cyclic,
        }
    }
}

/// `commcore demo`'s options.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Number of ranks of the job part.
    #[arg(short = 'n', value_name = "N", default_value_t = 4)]
    pub procs: usize,
    /// Node labels of the job part (default: 2, or 1 for one rank).
    #[arg(long, value_name = "K")]
    pub nodes: Option<usize>,
    /// World size of the rank-map part.
    #[arg(long, value_name = "N")]
    pub ranks: Option<u32>,
    /// Communicator sizes the rank-map part looks up, comma-separated.
    #[arg(long, value_name = "A,B,C")]
    pub lookup_ranks: Option<String>,
    /// Run as a rank of the demo's own job (the demo starts itself so).
    #[arg(long, hide = true)]
    pub rank_program: bool,
}

/// The most seconds `--timeout` takes (about 32 years).
const MAX_TIMEOUT_SECS: f64 = 1e9;

fn parse_timeout(text: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = text.parse().map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(format!("{text} is not a positive number of seconds"));
    }
    if secs > MAX_TIMEOUT_SECS {
        return Err(format!("{text} s is above the largest timeout, {MAX_TIMEOUT_SECS} s"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// mpirun's `-np` (one dash, two letters) and `-n=N` as clap's `--np`, before the
/// program's arguments.
fn mpirun_spellings(args: Vec<OsString>) -> Vec<OsString> {
    let mut seen_run = false;
    let mut out = Vec::with_capacity(args.len());
    let mut options = true;
    for arg in args {
        let text = arg.to_str().unwrap_or("");
        if options && seen_run {
            if text == "--" {
                options = false;
            } else if text == "-np" || text.starts_with("-np=") {
                out.push(OsString::from(format!("-{text}")));
                continue;
            } else if let Some(value) = text.strip_prefix("-n=") {
                out.push(OsString::from(format!("--np={value}")));
                continue;
            }
        }
        if text == "run" {
            seen_run = true;
        }
        out.push(arg);
    }
    out
}

/// The whole command line: clap's derived part with `bench` added from the table.
fn command() -> clap::Command {
    Cli::command().subcommand(bench::command())
}

/// Runs the command line `args` (program name first); returns the exit status.
pub fn dispatch(args: Vec<OsString>) -> i32 {
    let matches = match command().try_get_matches_from(mpirun_spellings(args)) {
        Ok(matches) => matches,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() { EXIT_LAUNCHER } else { 0 };
        }
    };
    if let Some(("bench", bench_matches)) = matches.subcommand() {
        return bench::dispatch(bench_matches);
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return EXIT_LAUNCHER;
        }
    };
    match cli.command {
        Command::Run(args) => crate::run::run(args),
        Command::Nameserver(args) => match crate::nameserver::run(&args) {
            Ok(()) => 0,
            Err(message) => {
                eprintln!("commcore nameserver: {message}");
                EXIT_LAUNCHER
            }
        },
        Command::Report(args) => match crate::report::run(&args) {
            Ok(()) => 0,
            Err(message) => {
                eprintln!("commcore report: {message}");
                1
            }
        },
        Command::Demo(args) => match crate::demo::run(&args) {
            Ok(()) => 0,
            Err(message) => {
                eprintln!("commcore demo: {message}");
                1
            }
        },
    }
}

/// The benchmarks' names, for the bench command's help.
pub fn bench_names() -> Vec<&'static str> {
    BENCHES.iter().map(|b| b.name).collect()
}
