//! A rank program for the runtime's multi-process tests: `runtime_rank SCENARIO`, started by
//! the launcher. The scenarios are `commcore_tests::scenario::Scenario`, one module per
//! subject here. Every check that fails panics, so the rank exits non-zero and the launcher
//! names it.

mod coll;
mod comms;
mod job;
mod p2p;

use commcore_linux::runtime::World;
use commcore_tests::scenario::{Coll, Comms, Job, P2p, Scenario};

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(scenario) = Scenario::from_name(&name) else {
        let known: Vec<&str> = Scenario::all().map(Scenario::name).collect();
        eprintln!("runtime_rank: no scenario {name:?}; pass one of {}", known.join(", "));
        std::process::exit(2);
    };
    let world = match scenario {
        Scenario::Job(Job::MismatchedSettings) => return job::mismatched_settings(),
        Scenario::Comms(Comms::Threads) => World::init_thread_multiple(),
        _ => World::init(),
    };
    let world = world.unwrap_or_else(|error| {
        eprintln!("runtime_rank: {error}");
        std::process::exit(1)
    });
    let comm = world.comm();
    match scenario {
        Scenario::P2p(scenario) => match scenario {
            P2p::Ordering => p2p::ordering(comm),
            P2p::AnySource => p2p::any_source(comm),
            P2p::Unexpected => p2p::unexpected(comm),
            P2p::Truncation => p2p::truncation(comm),
            P2p::BadInput => p2p::bad_input(comm),
            P2p::Nonblocking => p2p::nonblocking(comm),
            P2p::Exchange => p2p::exchange(comm),
        },
        Scenario::Comms(scenario) => match scenario {
            Comms::Communicators => comms::communicators(comm),
            Comms::Splits => comms::splits(comm),
            Comms::Threads => comms::threads(comm),
        },
        Scenario::Coll(scenario) => match scenario {
            Coll::Collectives => coll::collectives(&world),
            Coll::AreaReuse => coll::area_reuse(comm),
            Coll::Noncommutative => coll::noncommutative(comm),
            Coll::IsendAcrossCollectives => coll::isend_across_collectives(comm),
            Coll::PostedReceiveAcrossCalls => coll::posted_receive_across_calls(comm),
            Coll::MismatchedScatter => coll::mismatched_scatter(comm),
        },
        Scenario::Job(scenario) => match scenario {
            Job::Identity => job::identity(&world),
            Job::Hang => job::hang(comm),
            Job::Idle => job::idle(comm),
            Job::DieSignal => job::die(comm, "signal"),
            Job::DieExit => job::die(comm, "exit"),
            Job::DieInCollective => job::die_in_collective(comm),
            Job::LeaveInCollective => job::leave_early(comm, false),
            Job::LeaveInRecv => job::leave_early(comm, true),
            Job::FdNotInherited => job::fd_not_inherited(),
            // Ran above: it must fail in init.
            Job::MismatchedSettings => {}
        },
    }
}
