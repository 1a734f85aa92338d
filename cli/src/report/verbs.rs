//! The dynamic-process paper's connection set-up, counted by the verbs transport on the
//! in-process fabric (`bench verbs`): queue pairs per process when connections are made on
//! demand over datagrams against all made eagerly, and handshake datagrams per connection
//! under loss. Counts, not times: this machine has no InfiniBand.

use super::figure::{verdict, Figure, Gap};
use super::runner::{is, num, rows, Runner};
use super::scale::Scale;

const LOSSES: [&str; 3] = ["0%", "10%", "30%"];

/// The figures, a verdict (when measured) and what could not be counted.
pub fn figures(runner: &mut Runner, scale: &Scale) -> (Vec<Figure>, Option<String>, Vec<Gap>) {
    let args: Vec<String> =
        scale.verbs_args.iter().flat_map(|(f, v)| [f.to_string(), v.to_string()]).collect();
    let report =
        match runner.bench("verbs: queue pairs and handshakes (in-process fabric)", "verbs", &args)
        {
            Ok(report) => report,
            Err(message) => {
                return (Vec::new(), None, vec![Gap::new("the verbs transport's counts", message)])
            }
        };
    let mut qps = Figure::numeric(
        "verbs_queue_pairs",
        "Queue pairs per process: on demand against eager",
        "processes",
        true,
        "queue pairs per process",
    );
    for row in rows(&report, "resources") {
        let Some(ranks) = num(row, "ranks") else { continue };
        for (mode, name) in
            [("on_demand", "on demand (datagram handshake)"), ("eager", "eager (all peers)")]
        {
            if is(row, "connect", mode) {
                qps.add(name, ranks, num(row, "qps_per_process"));
            }
        }
    }
    let mut handshake = Figure::categorical(
        "verbs_handshake",
        "Handshake datagrams per connection under loss",
        "datagrams lost",
        &LOSSES,
        "datagrams per connection",
    );
    for row in rows(&report, "handshake") {
        let Some(loss) = LOSSES.iter().find(|l| is(row, "loss", l)) else { continue };
        handshake.add_at("mean", loss, num(row, "datagrams_mean"));
        handshake.add_at("largest", loss, num(row, "datagrams_max"));
    }
    let largest = qps.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).fold(0.0, f64::max);
    let line = match (
        qps.value("on demand (datagram handshake)", largest),
        qps.value("eager (all peers)", largest),
    ) {
        (Some(ours), Some(eager)) => Some(format!(
            "queue pairs per process at {largest} processes, on demand against eager: {}",
            verdict(ours, eager, true)
        )),
        _ => None,
    };
    (vec![qps, handshake], line, Vec::new())
}
