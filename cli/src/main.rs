//! The `commcore` command: the launcher, the demo and the benchmarks.

use std::process::ExitCode;

use commcore_cli::bench::{report, BENCHES};

const USAGE: &str = "usage:
  commcore run -n N [--nodes K] [--placement block|cyclic] [--timeout SECS] -- PROGRAM ARGS...
                                     start N ranks of PROGRAM over shared memory
  commcore demo                      run the demo on the embedded default
  commcore bench NAME [--json] ...   run a benchmark (NAME: rankmap, cid, coll, pt2pt)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("commcore: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("run") => {
            let spec = commcore_linux::launch::JobSpec::parse(&args[1..])
                .map_err(|message| format!("{message}\n{USAGE}"))?;
            commcore_linux::launch::run_job(&spec).map(drop).map_err(|failure| failure.to_string())
        }
        Some("demo") => commcore_cli::demo::run(&args[1..]),
        Some("bench") => {
            let name = args.get(1).ok_or_else(|| format!("bench needs a NAME\n{USAGE}"))?;
            let (_, bench) = BENCHES
                .iter()
                .find(|(n, _)| n == name)
                .ok_or_else(|| format!("unknown benchmark {name:?}\n{USAGE}"))?;
            let rest = &args[2..];
            let json = rest.iter().any(|a| a == "--json");
            let own: Vec<String> = rest.iter().filter(|a| *a != "--json").cloned().collect();
            report::emit(&bench(&own)?, json);
            Ok(())
        }
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}\n{USAGE}")),
        None => Err(USAGE.into()),
    }
}
