//! The scenarios of the `runtime_rank` program, by subject. The tests name them with this
//! enum, so a misspelt scenario does not compile; the program parses its argument back.

/// A scenario `runtime_rank` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Point-to-point.
    P2p(P2p),
    /// Communicator creation.
    Comms(Comms),
    /// Collectives.
    Coll(Coll),
    /// The job around the ranks: identity, waiting, failures, start-up checks.
    Job(Job),
}

/// Point-to-point scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum P2p {
    /// Messages of one pair arrive in order, every size.
    Ordering,
    /// Receives from any source, from every rank.
    AnySource,
    /// Messages that arrive before their receive is posted.
    Unexpected,
    /// Messages longer than the receive's buffer.
    Truncation,
    /// Bad ranks, tags and counts are errors.
    BadInput,
    /// Nonblocking sends and receives.
    Nonblocking,
    /// Every rank sends to every other at once.
    Exchange,
}

/// Communicator-creation scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comms {
    /// dup, split, create and their traffic.
    Communicators,
    /// 1,000 random splits and frees.
    Splits,
    /// Concurrent creations from two threads per process.
    Threads,
}

/// Collective scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coll {
    /// Every collective against hand-composed results.
    Collectives,
    /// Collective areas handed to new communicators many times over.
    AreaReuse,
    /// A non-commutative user operation.
    Noncommutative,
    /// Queued sends across collectives.
    IsendAcrossCollectives,
    /// Synchronous and long sends into receives posted before a collective or a send.
    PostedReceiveAcrossCalls,
    /// A scatter whose ranks pass different counts (an erroneous program).
    MismatchedScatter,
}

/// Scenarios about the job itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// Ranks, nodes and CPU binding as the launcher set them.
    Identity,
    /// A rank waits for a message nobody sends.
    Hang,
    /// Waiting ranks sleep rather than spin.
    Idle,
    /// A rank is killed by a signal.
    DieSignal,
    /// A rank exits with code 3.
    DieExit,
    /// A rank is killed in the middle of a collective.
    DieInCollective,
    /// Ranks with different protocol settings refuse to start.
    MismatchedSettings,
    /// Rank 0 exits early (code: the second argument) while the others are in a barrier.
    LeaveInCollective,
    /// Rank 0 exits early while the others wait in a receive.
    LeaveInRecv,
    /// A program a rank starts does not inherit the job's region descriptor.
    FdNotInherited,
}

/// Every scenario with its command-line name.
const NAMES: [(Scenario, &str); 26] = [
    (Scenario::P2p(P2p::Ordering), "ordering"),
    (Scenario::P2p(P2p::AnySource), "any-source"),
    (Scenario::P2p(P2p::Unexpected), "unexpected"),
    (Scenario::P2p(P2p::Truncation), "truncation"),
    (Scenario::P2p(P2p::BadInput), "bad-input"),
    (Scenario::P2p(P2p::Nonblocking), "nonblocking"),
    (Scenario::P2p(P2p::Exchange), "exchange"),
    (Scenario::Comms(Comms::Communicators), "communicators"),
    (Scenario::Comms(Comms::Splits), "splits"),
    (Scenario::Comms(Comms::Threads), "threads"),
    (Scenario::Coll(Coll::Collectives), "collectives"),
    (Scenario::Coll(Coll::AreaReuse), "area-reuse"),
    (Scenario::Coll(Coll::Noncommutative), "noncommutative"),
    (Scenario::Coll(Coll::IsendAcrossCollectives), "isend-across-collectives"),
    (Scenario::Coll(Coll::PostedReceiveAcrossCalls), "posted-receive-across-calls"),
    (Scenario::Coll(Coll::MismatchedScatter), "mismatched-scatter"),
    (Scenario::Job(Job::Identity), "identity"),
    (Scenario::Job(Job::Hang), "hang"),
    (Scenario::Job(Job::Idle), "idle"),
    (Scenario::Job(Job::DieSignal), "die-signal"),
    (Scenario::Job(Job::DieExit), "die-exit"),
    (Scenario::Job(Job::DieInCollective), "die-in-collective"),
    (Scenario::Job(Job::MismatchedSettings), "mismatched-settings"),
    (Scenario::Job(Job::LeaveInCollective), "leave-in-collective"),
    (Scenario::Job(Job::LeaveInRecv), "leave-in-recv"),
    (Scenario::Job(Job::FdNotInherited), "fd-not-inherited"),
];

impl Scenario {
    /// The scenario's command-line name.
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(s, _)| *s == self).map_or("", |(_, name)| name)
    }

    /// The scenario named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Scenario> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(s, _)| *s)
    }

    /// Every scenario.
    pub fn all() -> impl Iterator<Item = Scenario> {
        NAMES.iter().map(|(s, _)| *s)
    }
}

impl From<P2p> for Scenario {
    fn from(s: P2p) -> Scenario {
        Scenario::P2p(s)
    }
}

impl From<Comms> for Scenario {
    fn from(s: Comms) -> Scenario {
        Scenario::Comms(s)
    }
}

impl From<Coll> for Scenario {
    fn from(s: Coll) -> Scenario {
        Scenario::Coll(s)
    }
}

impl From<Job> for Scenario {
    fn from(s: Job) -> Scenario {
        Scenario::Job(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_has_one_name_that_parses_back() {
        let mut names: Vec<&str> = Scenario::all().map(Scenario::name).collect();
        assert!(names.iter().all(|n| !n.is_empty()));
        for scenario in Scenario::all() {
            assert_eq!(Scenario::from_name(scenario.name()), Some(scenario));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), NAMES.len(), "names are distinct");
        assert_eq!(Scenario::from_name("odering"), None);
    }
}
