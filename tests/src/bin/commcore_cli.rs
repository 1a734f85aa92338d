//! The `commcore` command, built in this package so that its tests can run it as a binary
//! (`CARGO_BIN_EXE_commcore_cli`): the same entry point as `cli/src/main.rs`.

fn main() -> std::process::ExitCode {
    commcore_cli::main()
}
