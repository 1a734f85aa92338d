//! The two context-id papers, from one run of the simulated CID world (`bench cid`) and the
//! split benchmark between processes: allreduces per allocation by algorithm, scenario and
//! threads; CID storage lookups against the flat array; split time beside the peers.

use serde_json::Value;

use super::figure::{verdict, Figure, Gap, Section};
use super::peers::Peers;
use super::runner::{args, is, num, rows, Runner};
use super::scale::Scale;

const SCENARIOS: [&str; 3] = ["small_comm", "large_comm", "few_live"];
const ALGORITHMS: [&str; 3] = ["lowest", "mask", "highest"];
const STRUCTURES: [&str; 4] = ["flat", "radix", "rbtree", "folded"];
/// Ranks of the split benchmark, as compare-peers.sh runs it.
const SPLIT_PROCS: u32 = 8;

/// Both CID sections: (allocation trade-offs, multithreaded allocation).
pub fn sections(runner: &mut Runner, scale: &Scale, peers: &Peers) -> (Section, Section) {
    let run = runner.bench(
        "context ids: simulated world, allocation and storage",
        "cid",
        &args(&[
            ("--ranks", scale.cid_ranks.to_string()),
            ("--allocations", scale.cid_allocations.to_string()),
            ("--lookups", scale.cid_lookups.to_string()),
        ]),
    );
    let (report, failure) = match run {
        Ok(report) => (report, None),
        Err(message) => (Value::Null, Some(Gap::new("the simulated CID world", message))),
    };
    let tradeoffs = tradeoffs(runner, scale, peers, &report, failure.clone());
    let threads = multithreaded(&report, failure);
    (tradeoffs, threads)
}

fn allocation(report: &Value, algorithm: &str, scenario: &str, threads: f64) -> Option<f64> {
    rows(report, "allocation")
        .iter()
        .find(|r| {
            is(r, "algorithm", algorithm)
                && is(r, "scenario", scenario)
                && num(r, "threads") == Some(threads)
        })
        .and_then(|r| num(r, "allreduces_mean"))
}

fn tradeoffs(
    runner: &mut Runner,
    scale: &Scale,
    peers: &Peers,
    report: &Value,
    failure: Option<Gap>,
) -> Section {
    let mut allreduces = Figure::categorical(
        "cid_allreduces",
        "Allreduces per allocation, one thread per rank",
        "workload",
        &SCENARIOS,
        "allreduces per allocation (mean)",
    );
    for algorithm in ALGORITHMS {
        for scenario in SCENARIOS {
            allreduces.add_at(algorithm, scenario, allocation(report, algorithm, scenario, 1.0));
        }
    }
    let mut storage = Figure::categorical(
        "cid_storage",
        "CID to communicator lookup, by storage",
        "workload",
        &SCENARIOS,
        "ns per lookup",
    );
    for row in rows(report, "storage").iter().filter(|r| is(r, "algorithm", "lowest")) {
        let Some(structure) = STRUCTURES.iter().find(|s| is(row, "structure", s)) else { continue };
        let Some(scenario) = SCENARIOS.iter().find(|s| is(row, "scenario", s)) else { continue };
        storage.add_at(structure, scenario, num(row, "lookup_ns"));
    }
    let mut split = Figure::categorical(
        "split_median",
        &format!("Communicator split between {SPLIT_PROCS} processes"),
        "workload",
        &["small_comm", "large_comm"],
        "median time per split (us)",
    );
    let mut split_ours = None;
    for scenario in ["small_comm", "large_comm"] {
        let run = runner.bench(
            &format!("context ids: split, {scenario}, {SPLIT_PROCS} processes"),
            "split",
            &args(&[
                ("--procs", SPLIT_PROCS.to_string()),
                ("--scenario", scenario.to_string()),
                ("--iterations", scale.split_iterations.to_string()),
            ]),
        );
        match run {
            Ok(r) => {
                split.add_at("commcore", scenario, num(&r, "median_us"));
                if scenario == "large_comm" {
                    split_ours = num(&r, "median_us");
                }
            }
            Err(message) => split.gaps.push(Gap::new(format!("commcore, {scenario}"), message)),
        }
        let key = format!("split_median_{scenario}");
        peers.add_at(&mut split, &key, SPLIT_PROCS, scenario);
    }
    peers.note(&mut split);
    let best_peer =
        peers.values("split_median_large_comm", SPLIT_PROCS).iter().map(|p| p.1).reduce(f64::min);
    let split_verdict = match (split_ours, best_peer) {
        (Some(ours), Some(peer)) => format!(
            "split of a large communicator against the better peer: {}",
            verdict(ours, peer, true)
        ),
        _ => "split against the peers: no peer figures in this run".into(),
    };
    let storage_verdict = {
        let at = |s: &str| storage.value(s, 0.0);
        match (at("radix"), at("flat")) {
            (Some(radix), Some(flat)) => format!(
                "radix storage lookup against the flat array: {}",
                verdict(radix, flat, true)
            ),
            _ => "storage: not measured".into(),
        }
    };
    let mut gaps: Vec<Gap> = failure.into_iter().collect();
    gaps.push(Gap::new(
        "split and collective durations on the paper's cluster (its Figures 2 to 5)",
        "this machine has 2 vCPUs; the split figure above runs 8 processes on them",
    ));
    Section {
        id: "cid-allocation-tradeoffs".into(),
        title: "Context-id allocation: trade-offs".into(),
        claim: "An allocation that reduces one integer (the highest id in use) needs a single small \
                allreduce where a free-mask algorithm needs a wide one and lowest-free may loop; and \
                the table from id to communicator can be a flat array, a radix tree or a hash-like \
                structure, trading memory for lookup time."
            .into(),
        verdict: format!("{split_verdict}; {storage_verdict}"),
        figures: vec![allreduces, storage, split],
        gaps,
    }
}

fn multithreaded(report: &Value, failure: Option<Gap>) -> Section {
    let mut threads = Figure::numeric(
        "cid_threads",
        "Allreduces per allocation against threads per rank (small_comm)",
        "threads per rank",
        false,
        "allreduces per allocation (mean)",
    );
    for algorithm in ALGORITHMS {
        for t in [1.0, 4.0] {
            threads.add(algorithm, t, allocation(report, algorithm, "small_comm", t));
        }
    }
    let mask4 = allocation(report, "mask", "small_comm", 4.0);
    let lowest4 = allocation(report, "lowest", "small_comm", 4.0);
    let verdict_line = match (mask4, lowest4) {
        (Some(mask), Some(lowest)) => format!(
            "the paper's mask algorithm at 4 threads against lowest-free: {} (allreduces per allocation, lower is better)",
            verdict(mask, lowest, true)
        ),
        _ => "not measured".into(),
    };
    let mut gaps: Vec<Gap> = failure.into_iter().collect();
    gaps.push(Gap::new(
        "comm_create_group timings at scale (the paper's Figure 2)",
        "measured on a large cluster; the simulated world above counts allreduces, not time",
    ));
    Section {
        id: "cid-multithreaded".into(),
        title: "Context-id allocation with threads".into(),
        claim: "Threads of one process can allocate context ids concurrently without deadlock if \
                they agree on a priority and reserve the shared free mask in turn; the fix costs \
                few extra allreduces, and group-collective creation needs only the group."
            .into(),
        verdict: verdict_line,
        figures: vec![threads],
        gaps,
    }
}
