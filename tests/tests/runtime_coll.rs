//! The shared-memory collective component on real processes: selected on one node, left
//! out by control strings and on several nodes, and its areas reused across many
//! communicators. Every job runs under the launcher's timeout.

use std::time::Duration;

use commcore_linux::launch::{run_job, JobSpec};
use commcore_tests::jobs::{self, run_ok};
use commcore_tests::scenario::{Coll, Job, Scenario};

const TIMEOUT: Duration = Duration::from_secs(120);

fn run(procs: usize, nodes: usize, scenario: impl Into<Scenario>, env: &[(&str, &str)]) -> String {
    let name = scenario.into().name();
    let mut spec = jobs::job(env!("CARGO_BIN_EXE_runtime_rank"), procs, &[name], TIMEOUT);
    spec.nodes = nodes;
    spec.env.extend(env.iter().map(|&(k, v)| (k.into(), v.into())));
    run_ok(&spec)
}

#[test]
fn areas_are_reused_across_hundreds_of_communicators() {
    for procs in [2, 3, 8] {
        let out = run(procs, 1, Coll::AreaReuse, &[]);
        assert!(out.contains("area reuse: 300 rounds; allreduce by shm\n"), "{out}");
    }
}

#[test]
fn every_collective_through_the_areas_and_chunked_through_them() {
    // 4096 sends the 70,000-byte calls to the schedules, 1,000,000 takes them through the
    // area: by single-copy reads from the members' buffers (a bcast split between root and
    // readers above 4096 bytes, or read whole), or, with those turned off, in pieces
    // (alltoall too). Unset, the default: single-copy reads, or with those off, the
    // schedules, except a bcast among more ranks than CPUs, which pipelines through the
    // area, and an allreduce among them above a cell, which goes through the staging
    // buffers. All must give the same results.
    for procs in [2, 3, 5, 8] {
        for bound in [Some("4096"), Some("1000000"), None] {
            for (single_copy, split) in [("1", "4096"), ("1", "off"), ("0", "off")] {
                let mut env = vec![
                    ("COMMCORE_SINGLE_COPY", single_copy),
                    ("COMMCORE_SPLIT_COPY_ABOVE", split),
                ];
                env.extend(bound.map(|max| ("COMMCORE_SHM_MAX", max)));
                let out = run(procs, 1, Coll::Collectives, &env);
                assert!(out.contains("allreduce by shm"), "{out}");
            }
        }
    }
}

#[test]
fn single_copy_reads_serve_ranks_sharing_cpus_when_their_bound_is_set() {
    // With more ranks than CPUs an allreduce above a cell goes through the staging buffers,
    // unless COMMCORE_SHM_SINGLE_COPY_FROM asks for single-copy reads for every operation:
    // then each member folds its segment of everyone's buffers and gathers the others'.
    let env = [("COMMCORE_SHM_SINGLE_COPY_FROM", "3072")];
    for procs in [3, 8] {
        let out = run(procs, 1, Coll::Collectives, &env);
        assert!(out.contains("allreduce by shm"), "{out}");
        let out = run(procs, 1, Coll::Noncommutative, &env);
        assert!(out.contains(&format!("checked on {procs} ranks; allreduce by shm")), "{out}");
    }
}

#[test]
fn control_strings_exclude_shm_and_several_nodes_keep_hier() {
    let out = run(4, 1, Coll::AreaReuse, &[("COMMCORE_COLL", "coll=^shm")]);
    assert!(out.contains("allreduce by tuned\n"), "{out}");
    let out = run(6, 2, Coll::Collectives, &[]);
    assert!(out.contains("allreduce by hier"), "{out}");
}

#[test]
fn ranks_whose_protocol_settings_differ_are_refused_at_init() {
    let out = run(3, 1, Job::MismatchedSettings, &[]);
    assert!(out.contains("init refused: rank 2's settings differ"), "{out}");
}

#[test]
fn a_scatter_whose_ranks_pass_different_counts_ends_on_every_rank() {
    // Linear and tree schedules: a rank that got a message of another length still serves
    // the ranks after it, so none waits for ever (the job's timeout would end the test).
    for procs in [2, 4, 7] {
        let out = run(procs, 1, Coll::MismatchedScatter, &[]);
        assert!(out.contains("none waited"), "{out}");
    }
}

#[test]
fn non_commutative_reductions_combine_in_rank_order() {
    for procs in [2, 3, 5, 8] {
        let out = run(procs, 1, Coll::Noncommutative, &[]);
        assert!(out.contains(&format!("checked on {procs} ranks; allreduce by shm")), "{out}");
        let out = run(procs, 1, Coll::Noncommutative, &[("COMMCORE_COLL", "coll=^shm")]);
        assert!(out.contains("allreduce by tuned"), "{out}");
    }
}

#[test]
fn a_long_send_moves_on_while_its_receiver_waits_in_an_area_barrier() {
    let env = [("COMMCORE_SHM_MAX", "0")];
    let mut spec = JobSpec::new(4, env!("CARGO_BIN_EXE_runtime_rank"));
    spec.args = vec![Scenario::from(Coll::IsendAcrossCollectives).name().into()];
    spec.timeout = Some(Duration::from_secs(30));
    spec.env.extend(env.iter().map(|&(k, v)| (k.into(), v.into())));
    // Whether the ranks meet the hazard depends on timing: try a few times.
    for _ in 0..4 {
        if let Err(failure) = run_job(&spec) {
            panic!("isend across collectives failed: {failure}");
        }
    }
}

#[test]
fn sends_into_receives_posted_before_a_barrier_or_a_send_complete() {
    for procs in [2, 3] {
        let mut spec = JobSpec::new(procs, env!("CARGO_BIN_EXE_runtime_rank"));
        spec.args = vec![Scenario::from(Coll::PostedReceiveAcrossCalls).name().into()];
        spec.timeout = Some(Duration::from_secs(30));
        spec.capture_rank0_stdout = true;
        let out = run_job(&spec).unwrap_or_else(|f| panic!("{procs} ranks: {f}"));
        assert!(String::from_utf8_lossy(&out.rank0_stdout).contains("delivered"));
    }
}
