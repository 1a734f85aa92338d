//! The texts `--help` adds after the options: settings, exit statuses, limits, examples.

use commcore_linux::launch::{EXIT_LAUNCHER, EXIT_LEFT_EARLY, EXIT_TIMEOUT};
use commcore_linux::runtime::SETTINGS;
use commcore_linux::shm::layout::MAX_RANKS;

/// Every `COMMCORE_*` setting with what it accepts.
pub fn settings() -> String {
    let mut out = String::from(
        "Settings (environment variables, read by every rank; set them in the launcher's \
         environment or pass them with -x; a bad value is an error naming it):\n",
    );
    for doc in SETTINGS {
        out.push_str(&format!(
            "  {}\n      {}\n      accepted: {}\n",
            doc.name, doc.meaning, doc.accepted
        ));
    }
    out
}

/// The exit statuses of `commcore run`.
pub fn exit_statuses() -> String {
    format!(
        "Exit status (as mpirun's):\n  \
         0        every rank finished\n  \
         C        the first rank that failed exited with code C\n  \
         {EXIT_LEFT_EARLY}        a rank exited with code 0 before the job finished (it did not finalize)\n  \
         128+S    the first rank that failed was killed by signal S, or the launcher received\n           \
         signal S (SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2), forwarded it and ended the job\n  \
         {EXIT_TIMEOUT}      the job ran past --timeout\n  \
         {EXIT_LAUNCHER}      the launcher could not run the job: bad options or settings, a program\n           \
         that cannot be started, no shared region\n"
    )
}

/// The `run` subcommand's text after its options.
pub fn run_after() -> String {
    format!(
        "{}\n{}\n\
         Size: at most {MAX_RANKS} ranks on this machine. The job's shared region holds one \
         ring per ordered pair of ranks, so it grows with the square of -n (its memory file \
         is sparse: only rings in use take memory).\n\n\
         Signals: SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 go to the whole job (its ranks \
         and what they started, one process group); after 1 s the rest is killed. If the \
         launcher itself is killed with SIGKILL, ranks die through the parent-death signal and \
         a guardian process kills what they started.\n\n\
         Spawned jobs: ranks may ask the launcher for child jobs (MPI_Comm_spawn), which \
         run in the job's process group. A spawned job whose rank fails is killed alone and \
         reported in one line (\"spawned job J: ...\"); its parent job goes on and the exit \
         status is the first job's. The launcher returns once every job's processes ended.\n\n\
         Examples:\n  \
         commcore run -n 4 --nodes 2 -- target/release/examples/collectives\n  \
         commcore run -np 2 --tag-output -x COMMCORE_BIND=none target/release/examples/ping_pong\n  \
         commcore run -n 3 --timeout 30 -x COMMCORE_COLL=coll=^shm -- ./my_program arg\n",
        settings(),
        exit_statuses()
    )
}
