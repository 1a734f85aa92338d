//! Benchmarks behind `commcore bench NAME`: each prints one JSON object (`--json`) or a
//! readable table of the same figures. Each declares its options, so clap rejects any
//! other and prints them in `commcore bench NAME --help`.

pub mod cid;
mod cid_floor;
mod cid_one_load;
pub mod cidmask;
pub mod coll;
pub mod coll_procs;
pub mod dpm;
pub mod launch;
pub mod progress;
pub mod pt2pt;
mod pt2pt_tcp;
pub mod rankmap;
pub mod report;
pub mod split;
pub mod stats;
pub mod verbs;

use clap::{Arg, ArgAction, ArgMatches, Command};

/// A benchmark's entry point: its own arguments in, its JSON report out.
pub type BenchFn = fn(&[String]) -> Result<serde_json::Value, String>;

/// A benchmark: its name, what it measures, its entry point and its options (each takes
/// one value).
pub struct Bench {
    /// The name after `commcore bench`.
    pub name: &'static str,
    /// One line on what it measures.
    pub about: &'static str,
    /// Its entry point.
    pub run: BenchFn,
    /// Its options: flag, value name, help.
    pub options: &'static [(&'static str, &'static str, &'static str)],
}

const PROCS_OPTIONS: [(&str, &str, &str); 6] = [
    ("--procs", "N", "ranks of the measured job"),
    ("--nodes", "K", "node labels of the job"),
    ("--sizes", "LIST", "message sizes in bytes, comma-separated"),
    ("--batches", "N", "batches of iterations"),
    ("--iterations", "N", "iterations per batch"),
    ("--only", "LIST", "operations to measure, comma-separated"),
];

/// Every benchmark.
pub const BENCHES: &[Bench] = &[
    Bench {
        name: "rankmap",
        about: "rank-map memory, creation and lookup time against the VC/VCRT baseline",
        run: rankmap::run,
        options: &[
            ("--ranks", "N", "world size"),
            ("--lookup-ranks", "LIST", "communicator sizes for the lookup rows"),
            ("--lookups", "N", "lookups per repetition"),
            ("--probe", "MODEL", "run one model's probe (for scripts/instructions.sh)"),
            ("--calls", "N", "probe calls"),
            ("--via", "WAY", "probe through entry or address_word"),
        ],
    },
    Bench {
        name: "cid",
        about: "context-id agreement in a simulated 128-rank world, and CID storage (minutes)",
        run: cid::run,
        options: &[
            ("--ranks", "N", "simulated ranks (2 to 128)"),
            ("--allocations", "N", "allocations per stream"),
            ("--width", "BITS", "CID space width"),
            ("--eager", "BITS", "eager window"),
            ("--seed", "N", "workload seed"),
            ("--lookups", "N", "storage lookups"),
            ("--part", "PART", "all, allocation or storage"),
        ],
    },
    Bench {
        name: "cidmask",
        about: "context-id mask scan, claim, lookup and release: core's words against bitvec (for scripts/instructions.sh)",
        run: cidmask::run,
        options: &[
            ("--probe", "FORM", "ours or bitvec: run that form's probes (without it: check the forms agree)"),
            ("--fill", "FILL", "empty, half or full"),
            ("--calls", "N", "probe calls"),
        ],
    },
    Bench {
        name: "coll",
        about: "collectives: dispatch, schedules and hierarchy (simulated), or --procs N real processes",
        run: coll::run,
        options: &[
            ("--iters", "N", "dispatch iterations"),
            ("--blocks", "N", "dispatch blocks"),
            ("--ranks", "LIST", "schedule sizes"),
            PROCS_OPTIONS[0],
            PROCS_OPTIONS[1],
            PROCS_OPTIONS[2],
            PROCS_OPTIONS[3],
            PROCS_OPTIONS[4],
            PROCS_OPTIONS[5],
        ],
    },
    Bench {
        name: "pt2pt",
        about: "point-to-point latency, bandwidth and message rate between processes",
        run: pt2pt::run,
        options: &[
            ("--procs", "N", "ranks (at least 2)"),
            ("--rounds", "N", "jobs per path"),
            ("--batches", "N", "batches per figure"),
            ("--transport", "shm|tcp", "tcp: over the TCP transport (default shm)"),
            ("--hosts", "H", "with tcp: ranks on H network namespaces (needs root)"),
            ("--sizes", "LIST", "ping-pong sizes in bytes, comma-separated (default 8,65536,1048576)"),
        ],
    },
    Bench {
        name: "split",
        about: "communicator creation by split between processes",
        run: split::run,
        options: &[
            ("--scenario", "NAME", "small_comm or large_comm"),
            ("--algorithm", "NAME", "lowest, mask or highest"),
            ("--procs", "N", "ranks (at least 2)"),
            ("--iterations", "N", "splits"),
            ("--seed", "N", "workload seed"),
        ],
    },
    Bench {
        name: "coll-procs",
        about: "collectives between real processes over shared memory",
        run: coll_procs::run,
        options: &PROCS_OPTIONS,
    },
    Bench {
        name: "dpm",
        about: "dynamic processes: spawn, merge, inter-group ping-pong, accept/connect, inter-communicator collectives",
        run: dpm::run,
        options: &[
            ("--reps", "N", "repetitions per figure"),
            ("--rounds", "N", "interleaved rounds of the three ping-pongs (default 3)"),
            ("--role", "ROLE", "(inside the benchmark's jobs) what a job does"),
            ("--file", "PATH", "(inside the benchmark's jobs) where the port name goes"),
            ("--part", "PART", "(inside the benchmark's jobs) all, or pingpong: connect once and ping-pong"),
        ],
    },
    Bench {
        name: "launch",
        about: "start-up under commcore run, mpiexec.mpich, mpirun.openmpi and srun, beside each launcher's own MPI",
        run: launch::run,
        options: &[
            ("--procs", "LIST", "job sizes, comma-separated (default 2,4,8)"),
            ("--runs", "N", "interleaved runs; medians are reported (default 5)"),
            ("--launchers", "LIST", "commcore,mpiexec,mpirun,srun (default: every one installed)"),
            ("--role", "ROLE", "(inside the benchmark's jobs) rank"),
        ],
    },
    Bench {
        name: "verbs",
        about: "verbs transport on the in-process fabric: queue pairs and registered bytes, on demand against eager; handshake datagrams under loss",
        run: verbs::run,
        options: &[
            ("--ranks", "LIST", "job sizes of the resource rows, comma-separated"),
            ("--connections", "N", "connections per handshake row"),
            ("--probe", "WHAT", "(for scripts/instructions.sh) send or recv, counted under callgrind"),
            ("--calls", "N", "probe calls"),
        ],
    },
];

/// The `bench` subcommand with one subcommand per benchmark.
pub fn command() -> Command {
    let mut bench = Command::new("bench")
        .about("Run a benchmark; --json prints one JSON object on stdout")
        .subcommand_required(true)
        .arg_required_else_help(true);
    for b in BENCHES {
        let mut sub = Command::new(b.name).about(b.about).arg(
            Arg::new("json").long("json").action(ArgAction::SetTrue).help("print one JSON object"),
        );
        for (flag, value, help) in b.options {
            let long = flag.trim_start_matches("--");
            sub = sub.arg(Arg::new(long).long(long).value_name(*value).help(*help));
        }
        bench = bench.subcommand(sub);
    }
    bench
}

/// Runs the benchmark `matches` names; returns the exit status.
pub fn dispatch(matches: &ArgMatches) -> i32 {
    let Some((name, sub)) = matches.subcommand() else { return 1 };
    let Some(bench) = BENCHES.iter().find(|b| b.name == name) else { return 1 };
    let mut args = Vec::new();
    for (flag, _, _) in bench.options {
        if let Some(value) = sub.get_one::<String>(flag.trim_start_matches("--")) {
            args.push(flag.to_string());
            args.push(value.clone());
        }
    }
    match (bench.run)(&args) {
        Ok(report) => {
            report::emit(&report, sub.get_flag("json"));
            0
        }
        Err(message) => {
            eprintln!("commcore bench {name}: {message}");
            1
        }
    }
}

/// The value after `--name` in `args`, parsed; `Ok(None)` when the flag is absent.
pub fn option<T: std::str::FromStr>(args: &[String], name: &str) -> Result<Option<T>, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => {
            let text = args.get(i + 1).ok_or_else(|| format!("{name} needs a value"))?;
            text.parse().map(Some).map_err(|_| format!("{name}: cannot parse {text:?}"))
        }
    }
}
