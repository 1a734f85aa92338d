//! `commcore bench pt2pt --transport tcp [--hosts H]`: the runtime's ping-pong latency (8 B,
//! 64 KiB, 1 MiB, or `--sizes`), 1 MiB bandwidth and 8 B message rate between two processes whose
//! communicator reaches each other over TCP (`COMMCORE_TRANSPORT=tcp`), on one host or on
//! two hosts (network namespaces). Each figure is the median over `--batches` (default 7)
//! timed batches of a job, then over `--rounds` (default 3) jobs.

use serde_json::{json, Value};

use super::option;
use super::pt2pt::{label, latency_sizes, launch_self_on};
use super::stats::median;

/// Runs the benchmark's jobs and reports their figures.
pub fn run(args: &[String]) -> Result<Value, String> {
    let rounds: usize = option(args, "--rounds")?.unwrap_or(3);
    if rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    let hosts: usize = option(args, "--hosts")?.unwrap_or(1);
    let sizes = latency_sizes(args)?;
    let runs: Vec<Value> = (0..rounds)
        .map(|_| launch_self_on(2, hosts, "pt2pt", args, &[("COMMCORE_TRANSPORT", "tcp")]))
        .collect::<Result<_, _>>()?;
    let figure = |pointer: &str| {
        json!(median(runs.iter().filter_map(|r| r.pointer(pointer)?.as_f64()).collect()))
    };
    let mut rows: Vec<Value> = sizes
        .iter()
        .map(|size| {
            json!({
                "figure": format!("pingpong_latency_{}", label(*size)),
                "unit": "us",
                "bytes": size,
                "tcp": figure(&format!("/latency_us/{size}")),
            })
        })
        .collect();
    rows.push(
        json!({ "figure": "bandwidth_1MiB", "unit": "MB/s", "tcp": figure("/bandwidth_mbps") }),
    );
    rows.push(json!({
        "figure": "message_rate_8B",
        "unit": "Mmsg/s",
        "tcp": figure("/message_rate_mmsgs"),
    }));
    Ok(json!({
        "benchmark": "pt2pt",
        "transport": "tcp",
        "hosts": hosts,
        "procs": 2,
        "rounds": rounds,
        "figures": rows,
    }))
}
