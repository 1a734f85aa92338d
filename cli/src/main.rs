//! The `commcore` command: the launcher, the demo and the benchmarks (see `commcore --help`).

fn main() -> std::process::ExitCode {
    commcore_cli::main()
}
