//! The dynamic-process paper: spawn latency and rate, merge latency, ping-pong inside a job
//! against between a job and the one it spawned or connected to, and inter-communicator
//! collectives; Open MPI's side from compare-peers.sh's dpm group (MPICH cannot spawn).

use serde_json::Value;

use super::figure::{verdict, Figure, Gap, Section};
use super::peers::Peers;
use super::runner::{args, is, num, rows, Runner};
use super::scale::Scale;

const MERGES: [(&str, f64, &str); 5] = [
    ("static", 1.0, "static 1+1"),
    ("static", 2.0, "static 2+2"),
    ("spawned", 1.0, "spawned 1+1"),
    ("spawned", 2.0, "spawned 2+2"),
    ("connected", 2.0, "connected 2+2"),
];
const MODES: [(&str, &str); 3] = [
    ("intra", "inside one job"),
    ("inter_spawned", "parent to child"),
    ("inter_connected", "connected jobs"),
];
/// Inter-communicator collectives at 2+2: (op, bytes, category).
const INTERCOMM: [(&str, f64, &str); 5] = [
    ("barrier", 0.0, "barrier"),
    ("bcast", 8.0, "bcast_8"),
    ("bcast", 65536.0, "bcast_65536"),
    ("allreduce", 8.0, "allreduce_8"),
    ("allreduce", 65536.0, "allreduce_65536"),
];

/// The section.
pub fn section(runner: &mut Runner, scale: &Scale, peers: &Peers) -> Section {
    let run = runner.bench(
        "dynamic processes: spawn, merge, inter-group ping-pong",
        "dpm",
        &args(&[("--reps", scale.dpm_reps.to_string())]),
    );
    let mut gaps = Vec::new();
    let report = run.unwrap_or_else(|message| {
        gaps.push(Gap::new("commcore's dynamic-process figures", message));
        Value::Null
    });
    let mut spawn = Figure::numeric(
        "dpm_spawn",
        "Spawn latency",
        "children spawned",
        false,
        "median time (ms)",
    );
    for row in rows(&report, "spawn") {
        if let Some(children) = num(row, "children") {
            spawn.add("commcore", children, num(row, "median_ms"));
        }
    }
    for children in [1u32, 4] {
        for (name, v) in peers.values(&format!("spawn_median_{children}"), 0) {
            spawn.add(name, f64::from(children), Some(v));
        }
    }
    let mut rate = Figure::categorical(
        "dpm_spawn_rate",
        "Spawn rate, one child at a time",
        "",
        &["spawns"],
        "spawns per second",
    );
    rate.add_at("commcore", "spawns", num(&report, "spawn_rate_per_s"));
    peers.add_at(&mut rate, "spawn_rate", 0, "spawns");
    let names: Vec<&str> = MERGES.iter().map(|m| m.2).collect();
    let mut merge = Figure::categorical(
        "dpm_merge",
        "Inter-communicator merge",
        "groups merged",
        &names,
        "median time (us)",
    );
    for (how, a, label) in MERGES {
        let ours = rows(&report, "merge")
            .iter()
            .find(|r| is(r, "how", how) && num(r, "group_a") == Some(a));
        if let Some(row) = ours {
            merge.add_at("commcore", label, num(row, "median_us"));
        }
        peers.add_at(&mut merge, &format!("merge_{}", label.replace(' ', "_")), 0, label);
    }
    let mut pingpong = Figure::numeric(
        "dpm_pingpong",
        "Ping-pong inside a job and between jobs",
        "message size (bytes)",
        true,
        "median one-way time (us)",
    )
    .log_y();
    for (mode, label) in MODES {
        for row in rows(&report, "pingpong").iter().filter(|r| is(r, "mode", mode)) {
            if let Some(bytes) = num(row, "bytes") {
                pingpong.add(&format!("commcore, {label}"), bytes, num(row, "median_us"));
            }
        }
        for bytes in [8u32, 65536] {
            for (name, v) in peers.values(&format!("pingpong_{mode}_{bytes}B"), 0) {
                pingpong.add(&format!("{name}, {label}"), f64::from(bytes), Some(v));
            }
        }
    }
    let names: Vec<&str> = INTERCOMM.iter().map(|c| c.2).collect();
    let mut intercomm = Figure::categorical(
        "dpm_intercomm_coll",
        "Inter-communicator collectives, 2+2 processes",
        "operation_bytes",
        &names,
        "median time (us)",
    );
    for (op, bytes, label) in INTERCOMM {
        let ours = rows(&report, "intercomm_coll")
            .iter()
            .find(|r| is(r, "op", op) && num(r, "bytes") == Some(bytes));
        if let Some(row) = ours {
            intercomm.add_at("commcore", label, num(row, "median_us"));
        }
        peers.add_at(&mut intercomm, &format!("intercomm_{label}@2+2"), 0, label);
    }
    for figure in [&mut spawn, &mut rate, &mut merge, &mut pingpong, &mut intercomm] {
        peers.note(figure);
    }
    let intra = pingpong.value("commcore, inside one job", 8.0);
    let inter = pingpong.value("commcore, parent to child", 8.0);
    let mut verdicts = Vec::new();
    if let (Some(inter), Some(intra)) = (inter, intra) {
        verdicts.push(format!(
            "8 B parent-to-child ping-pong against inside one job: {}",
            verdict(inter, intra, true)
        ));
    }
    match (spawn.value("commcore", 1.0), spawn.value("Open MPI", 1.0)) {
        (Some(ours), Some(peer)) => verdicts
            .push(format!("spawn of one child against Open MPI: {}", verdict(ours, peer, true))),
        _ => verdicts.push("spawn against Open MPI: no peer figures in this run".into()),
    }
    let (verbs_figures, verbs_verdict, verbs_gaps) = super::verbs::figures(runner, scale);
    verdicts.extend(verbs_verdict);
    gaps.extend(verbs_gaps);
    if let Some(hangs) = num(&report, "hangs").filter(|h| *h > 0.0) {
        gaps.push(Gap::new(
            format!("{hangs} of commcore's dynamic-process jobs"),
            "hung and were cut off",
        ));
    }
    gaps.extend([
        Gap::new("MPICH's dynamic-process figures", "Debian's MPICH 4.0.2 (ch4:ucx) cannot spawn"),
        Gap::new("spawn latency on 512 cores, cyclic and block (the paper's Figure 4)", "this machine has 2 vCPUs"),
        Gap::new("UD against RC connection set-up times on InfiniBand", "this machine has no InfiniBand; the verbs figures above are counts on the in-process fabric, not times"),
        Gap::new("collectives among 63 spawned processes (Figures 9 to 12) and the POV-Ray run (Figure 13)", "too many processes for 2 vCPUs to say anything about the design"),
    ]);
    Section {
        id: "dpm-infiniband".into(),
        title: "Dynamic processes".into(),
        claim: "Spawning, connecting and merging process groups can be fast, and once groups are \
                connected, messages and collectives between them should cost what they cost inside \
                one group, with datagram-based connection set-up scaling better than connected \
                transports."
            .into(),
        verdict: verdicts.join("; "),
        figures: [vec![spawn, rate, merge, pingpong, intercomm], verbs_figures].concat(),
        gaps,
    }
}
