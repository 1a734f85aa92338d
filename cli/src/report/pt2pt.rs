//! Point-to-point between two processes, the path under every paper's figures: ping-pong
//! latency by size, bandwidth and message rate, over shared memory (single- and two-copy)
//! and TCP, beside the peers.

use serde_json::Value;

use super::figure::{verdict, Figure, Gap, Section};
use super::peers::Peers;
use super::runner::{args, is, num, rows, Runner};
use super::scale::Scale;

/// The sizes the peers' ping-pong program measures.
const STANDARD_SIZES: [f64; 3] = [8.0, 65536.0, 1048576.0];
const PATHS: [&str; 3] = ["shared memory", "shared memory, two-copy", "TCP"];

/// The section.
pub fn section(runner: &mut Runner, scale: &Scale, peers: &Peers) -> Section {
    let mut gaps = Vec::new();
    let mut run = |transport: &str| {
        let result = runner.bench(
            &format!("point-to-point over {transport}"),
            "pt2pt",
            &args(&[
                ("--rounds", scale.pt2pt_rounds.to_string()),
                ("--batches", scale.pt2pt_batches.to_string()),
                ("--transport", transport.to_string()),
                ("--sizes", scale.pt2pt_sizes.to_string()),
            ]),
        );
        result.unwrap_or_else(|message| {
            gaps.push(Gap::new(format!("commcore over {transport}"), message));
            Value::Null
        })
    };
    let shm = run("shm");
    let tcp = run("tcp");
    let value = |report: &Value, figure: &str, column: &str| {
        rows(report, "figures")
            .iter()
            .find(|r| is(r, "figure", figure))
            .and_then(|r| num(r, column))
    };
    let mut latency = Figure::numeric(
        "pt2pt_latency",
        "Ping-pong between two processes",
        "message size (bytes)",
        true,
        "one-way latency (us)",
    )
    .log_y();
    // Every latency row names its size; the peers' rows share the figure names.
    let latency_rows = |report: &Value, column: &'static str| -> Vec<(f64, String, Option<f64>)> {
        rows(report, "figures")
            .iter()
            .filter_map(|r| {
                let bytes = num(r, "bytes")?;
                let name = r.get("figure")?.as_str()?.to_string();
                Some((bytes, name, num(r, column)))
            })
            .collect()
    };
    for (bytes, _, us) in latency_rows(&shm, "single_copy") {
        latency.add("commcore, shared memory", bytes, us);
    }
    for (bytes, _, us) in latency_rows(&shm, "two_copy") {
        latency.add("commcore, two-copy", bytes, us);
    }
    for (bytes, _, us) in latency_rows(&tcp, "tcp") {
        latency.add("commcore, TCP", bytes, us);
    }
    for (bytes, figure, _) in latency_rows(&shm, "single_copy") {
        let peers_here = !peers.values(&figure, 2).is_empty();
        if peers_here || STANDARD_SIZES.contains(&bytes) {
            peers.add(&mut latency, &figure, 2, bytes);
        }
        for (name, v) in peers.values(&format!("tcp_{figure}"), 2) {
            latency.add(&format!("{name}, TCP"), bytes, Some(v));
        }
    }
    let mut bandwidth =
        Figure::categorical("pt2pt_bandwidth", "Bandwidth at 1 MiB", "path", &PATHS, "MB/s");
    let mut rate = Figure::categorical(
        "pt2pt_message_rate",
        "Message rate at 8 B",
        "path",
        &PATHS[..1],
        "million messages per second",
    );
    for (path, report, column) in
        [(PATHS[0], &shm, "single_copy"), (PATHS[1], &shm, "two_copy"), (PATHS[2], &tcp, "tcp")]
    {
        bandwidth.add_at("commcore", path, value(report, "bandwidth_1MiB", column));
    }
    rate.add_at("commcore", PATHS[0], value(&shm, "message_rate_8B", "single_copy"));
    peers.add_at(&mut bandwidth, "bandwidth_1MiB", 2, PATHS[0]);
    for (name, v) in peers.values("tcp_bandwidth_1MiB", 2) {
        bandwidth.add_at(name, PATHS[2], Some(v));
    }
    peers.add_at(&mut rate, "message_rate_8B", 2, PATHS[0]);
    for figure in [&mut latency, &mut bandwidth, &mut rate] {
        peers.note(figure);
    }
    let ours = latency.value("commcore, shared memory", 8.0);
    let verdict_line = match (ours, peers.best_lower("pingpong_latency_8B", 2)) {
        (Some(o), Some(p)) => format!(
            "8 B ping-pong over shared memory against the better peer: {}",
            verdict(o, p, true)
        ),
        _ => "against the peers: no peer figures in this run".into(),
    };
    gaps.push(Gap::new(
        "which vCPU placement each job got",
        "this machine's host places its two vCPUs one of two ways per job (8 B ping-pong 0.1 against 0.3-0.7 us); a single run may land on either",
    ));
    Section {
        id: "pt2pt".into(),
        title: "Point-to-point (the path under every figure)".into(),
        claim: "Not a paper of its own: the rank-map and dynamic-process papers both rest on a \
                message path whose latency and rate should match production MPIs on the same \
                machine."
            .into(),
        verdict: verdict_line,
        figures: vec![latency, bandwidth, rate],
        gaps,
    }
}
