//! Group-collective creation and inter-communicators through the launcher on real
//! processes: concurrent `create_group`s, `intercomm_create` between unequal halves,
//! point-to-point across, inter-communicator collectives against references, merges in both
//! orders, dups, splits and creates of inter-communicators, and bad input. Every job runs
//! under the launcher's timeout.

use std::time::Duration;

use commcore_linux::launch::hosts::host_of;
use commcore_linux::launch::JobSpec;
use commcore_tests::jobs::{self, run_ok};

const TIMEOUT: Duration = Duration::from_secs(60);

fn job(procs: usize, args: &[&str]) -> JobSpec {
    jobs::job(env!("CARGO_BIN_EXE_runtime_intercomm_rank"), procs, args, TIMEOUT)
}

#[test]
fn disjoint_groups_create_communicators_at_once_with_their_own_tags() {
    let out = run_ok(&job(5, &["create-group"]));
    assert!(out.contains("create-group: groups of 2 and 3"), "{out}");
}

#[test]
fn overlapping_groups_create_communicators_from_concurrent_threads() {
    let out = run_ok(&job(4, &["create-group-threads"]));
    assert!(out.contains("create-group-threads: 20 rounds"), "{out}");
}

#[test]
fn intercomm_between_equal_halves_talks_reduces_merges_dups_and_splits() {
    let out = run_ok(&job(4, &["intercomm", "2"]));
    assert!(out.contains("intercomm: 2 and 2 ranks"), "{out}");
    // Rank 0's group of two shares this job's memory on one node (unless the suite runs
    // over TCP or verbs, or its ranks land on different hosts): its side of the
    // collectives runs over an area.
    assert!(out.contains(&format!("group of 2: on node {}", on_one_node(2, 4))), "{out}");
}

/// Whether ranks `0..group` of a job of `procs` share one node's memory in this suite's run.
fn on_one_node(group: usize, procs: usize) -> bool {
    let hosts = jobs::test_hosts().min(procs);
    let first = host_of(0, procs, hosts);
    !jobs::test_message_only() && (0..group).all(|rank| host_of(rank, procs, hosts) == first)
}

#[test]
fn intercomm_between_unequal_groups_talks_reduces_merges_dups_and_splits() {
    for split in ["1", "4", "3"] {
        let out = run_ok(&job(5, &["intercomm", split]));
        assert!(out.contains("intercomm: "), "{out}");
        // A group of one has nothing to share.
        let group: usize = split.parse().unwrap();
        let on_node = group > 1 && on_one_node(group, 5);
        assert!(out.contains(&format!("group of {split}: on node {on_node}")), "{out}");
    }
}

#[test]
fn intercomm_over_the_two_copy_path() {
    let mut spec = job(3, &["intercomm", "1"]);
    spec.env.push(("COMMCORE_SINGLE_COPY".into(), "0".into()));
    run_ok(&spec);
}

#[test]
fn bad_leaders_and_non_members_are_errors() {
    let out = run_ok(&job(4, &["bad-input"]));
    assert!(out.contains("bad-input: errors returned"), "{out}");
}
