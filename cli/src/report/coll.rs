//! The collective-components paper: the cost of choosing a module through the component
//! framework against calling the algorithm directly, inter-node messages of hierarchical
//! against flat algorithms, and collectives between processes beside the peers.

use super::figure::{verdict, Figure, Gap, Section};
use super::peers::Peers;
use super::runner::{args, is, num, rows, Runner};
use super::scale::Scale;

const DISPATCH_OPS: [&str; 3] = ["barrier", "bcast", "allreduce"];
const HIER_OPS: [&str; 5] = ["barrier", "bcast", "reduce", "allreduce", "allgather"];
/// The figures of `bench coll-procs` (and of compare-peers.sh's coll.c), with their titles.
const PROC_FIGURES: [(&str, &str); 7] = [
    ("barrier", "barrier"),
    ("bcast_8B", "bcast, 8 B"),
    ("bcast_64KiB", "bcast, 64 KiB"),
    ("allreduce_8B", "allreduce, 8 B"),
    ("allreduce_64KiB", "allreduce, 64 KiB"),
    ("alltoall_8B", "alltoall, 8 B"),
    ("alltoall_64KiB", "alltoall, 64 KiB"),
];

/// The section.
pub fn section(runner: &mut Runner, scale: &Scale, peers: &Peers) -> Section {
    let mut gaps = Vec::new();
    let mut dispatch = Figure::categorical(
        "coll_dispatch",
        "Collective through the component framework against a direct call",
        "operation (8 simulated ranks)",
        &DISPATCH_OPS,
        "ns per call",
    );
    let mut hier = Figure::categorical(
        "coll_hier_messages",
        "Inter-node messages: hierarchical against flat (64 ranks, 8 nodes)",
        "operation",
        &HIER_OPS,
        "inter-node messages per call",
    )
    .log_y();
    let simulated = runner.bench(
        "collectives: dispatch and hierarchy (simulated)",
        "coll",
        &args(&[
            ("--iters", scale.dispatch_iters.to_string()),
            ("--blocks", scale.dispatch_blocks.to_string()),
            ("--ranks", "64".to_string()),
        ]),
    );
    let mut dispatch_ratio = None;
    match simulated {
        Ok(report) => {
            for row in rows(&report, "dispatch") {
                let Some(op) = DISPATCH_OPS.iter().find(|o| is(row, "op", o)) else { continue };
                dispatch.add_at("component framework", op, num(row, "framework_ns"));
                dispatch.add_at("direct call", op, num(row, "direct_ns"));
            }
            let sum = |s: &str| -> Option<f64> {
                let v: Vec<f64> = dispatch
                    .series
                    .iter()
                    .find(|x| x.name == s)?
                    .points
                    .iter()
                    .map(|p| p.1)
                    .collect();
                (!v.is_empty()).then(|| v.iter().sum())
            };
            dispatch_ratio = sum("component framework").zip(sum("direct call"));
            for row in rows(&report, "hier") {
                let Some(op) = HIER_OPS.iter().find(|o| is(row, "op", o)) else { continue };
                for placement in ["block", "cyclic"] {
                    if is(row, "placement", placement) {
                        hier.add_at(
                            &format!("hierarchical, {placement}"),
                            op,
                            num(row, "inter_node_messages"),
                        );
                        hier.add_at(
                            &format!("flat, {placement}"),
                            op,
                            num(row, "flat_inter_node_messages"),
                        );
                    }
                }
            }
        }
        Err(message) => gaps.push(Gap::new("dispatch and hierarchy figures", message)),
    }
    let mut procs_figures: Vec<Figure> = PROC_FIGURES
        .iter()
        .map(|(key, title)| {
            Figure::numeric(
                &format!("coll_procs_{key}"),
                &format!("{title} between processes (shared memory)"),
                "processes",
                false,
                "latency (us)",
            )
        })
        .collect();
    for &procs in &scale.coll_procs {
        let run = runner.bench(
            &format!("collectives: {procs} processes"),
            "coll-procs",
            &args(&[
                ("--procs", procs.to_string()),
                ("--iterations", scale.coll_iterations.to_string()),
                ("--batches", scale.coll_batches.to_string()),
            ]),
        );
        let report = run.unwrap_or_else(|message| {
            gaps.push(Gap::new(format!("collectives at {procs} processes"), message));
            serde_json::Value::Null
        });
        for ((key, _), figure) in PROC_FIGURES.iter().zip(procs_figures.iter_mut()) {
            let ours = rows(&report, "figures")
                .iter()
                .find(|r| is(r, "figure", key))
                .and_then(|r| num(r, "latency"));
            let x = f64::from(procs);
            if !report.is_null() {
                figure.add("commcore", x, ours);
            }
            peers.add(figure, key, procs, x);
        }
    }
    for figure in &mut procs_figures {
        peers.note(figure);
    }
    let largest = scale.coll_procs.iter().copied().max().unwrap_or(2);
    let (mut ours, mut best) = (Vec::new(), Vec::new());
    for ((key, _), figure) in PROC_FIGURES.iter().zip(&procs_figures) {
        let peer = peers.values(key, largest).iter().map(|p| p.1).reduce(f64::min);
        if let (Some(o), Some(p)) = (figure.value("commcore", f64::from(largest)), peer) {
            ours.push(o);
            best.push(p);
        }
    }
    let dispatch_verdict = match dispatch_ratio {
        Some((framework, direct)) => format!(
            "dispatch through the framework against a direct call: {}",
            verdict(framework, direct, true)
        ),
        None => "dispatch: not measured".into(),
    };
    let peer_verdict = if ours.is_empty() {
        "collectives against the peers: no peer figures in this run".to_string()
    } else {
        format!(
            "collectives at {largest} processes against the better peer (geometric mean of {} figures): {}",
            ours.len(),
            verdict(geomean(&ours), geomean(&best), true)
        )
    };
    gaps.push(Gap::new(
        "wall-clock bcast and alltoall on the paper's clusters (its Figures 7 and 8)",
        "this machine has 2 vCPUs and no network between nodes; node labels are simulated",
    ));
    let mut figures = vec![dispatch, hier];
    figures.extend(procs_figures);
    Section {
        id: "coll-components".into(),
        title: "Collective components".into(),
        claim: "Choosing collective algorithms per communicator through components that bid with \
                priorities, with state computed once when the communicator is created, costs \
                nothing measurable per call, and lets hierarchical algorithms cut traffic between \
                nodes."
            .into(),
        verdict: format!("{dispatch_verdict}; {peer_verdict}"),
        figures,
        gaps,
    }
}

/// The geometric mean of positive `values`.
pub fn geomean(values: &[f64]) -> f64 {
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}
