//! `commcore bench verbs`: the verbs transport's counts on the in-process fabric, where
//! they are exact: queue pairs and registered bytes per process for on-demand against
//! all-to-all (eager) connections, handshake datagrams per connection under datagram loss,
//! and (with `--probe`, for `scripts/instructions.sh verbs`) a send or a receive to count
//! under callgrind. Times are not figures here: the fabric is a simulation.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::option;
use commcore::wire::{Header, Kind};
use commcore_linux::transport::verbs::fabric::{Fabric, FabricDevice, Faults};
use commcore_linux::transport::verbs::simulate::{ring_pairs, run_job, small_settings, JobRun};
use commcore_linux::transport::verbs::{ConnectMode, VerbsSettings, VerbsTransport};

const TOKEN: u128 = 0x7e57;
/// Each rank talks to this many peers in the resource rows.
const TALK_TO: usize = 2;
/// Ranks of one simulated job in the handshake rows.
const HANDSHAKE_RANKS: usize = 64;

/// Runs the benchmark.
pub fn run(args: &[String]) -> Result<Value, String> {
    if let Some(probe) = option::<String>(args, "--probe")? {
        let calls: u64 = option(args, "--calls")?.unwrap_or(100_000);
        return probe_run(&probe, calls);
    }
    let connections: usize = option(args, "--connections")?.unwrap_or(10_000);
    let ranks_list: String = option(args, "--ranks")?.unwrap_or_else(|| "2,8,32".into());
    let ranks: Vec<usize> = ranks_list
        .split(',')
        .map(|r| r.trim().parse().ok().filter(|&n| (2..=256).contains(&n)))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("--ranks takes numbers from 2 to 256, not {ranks_list:?}"))?;
    let mut resources = Vec::new();
    for &n in &ranks {
        let pairs = ring_pairs(n, TALK_TO);
        for mode in [ConnectMode::OnDemand, ConnectMode::Eager] {
            let settings = VerbsSettings::new(TOKEN);
            let job = run_job(n, &pairs, mode, Faults::default(), settings, 1)
                .map_err(|e| format!("{e:?}"))?;
            resources.push(json!({
                "ranks": n,
                "connect": if mode == ConnectMode::OnDemand { "on_demand" } else { "eager" },
                "peers_talked_to": TALK_TO.min(n - 1),
                "qps_per_process": job.resources.queue_pairs,
                "registered_bytes_per_process": job.resources.registered_bytes,
                "queue_bytes_per_process": job.resources.queue_bytes,
            }));
        }
    }
    let mut handshake = Vec::new();
    for loss in [0u32, 10, 30] {
        handshake.push(handshake_row(loss, connections)?);
    }
    Ok(json!({
        "device": "in-process fabric (exact counts; no times)",
        "resources": resources,
        "handshake": handshake,
        "instructions": "scripts/instructions.sh verbs",
    }))
}

/// Jobs of [`HANDSHAKE_RANKS`] ranks in a ring, until `connections` were made, at `loss`
/// percent of handshake datagrams dropped (and 5 % duplicated, 10 % reordered).
fn handshake_row(loss: u32, connections: usize) -> Result<Value, String> {
    let faults = Faults { drop_ppm: loss * 10_000, duplicate_ppm: 50_000, reorder_ppm: 100_000 };
    let pairs = ring_pairs(HANDSHAKE_RANKS, TALK_TO);
    let mut datagrams: Vec<u64> = Vec::new();
    let mut failed = 0;
    let mut seed = 1;
    while datagrams.len() < connections {
        let job: JobRun = run_job(
            HANDSHAKE_RANKS,
            &pairs,
            ConnectMode::OnDemand,
            faults,
            small_settings(TOKEN),
            seed,
        )
        .map_err(|e| format!("loss {loss} %, seed {seed}: {e:?}"))?;
        failed += job.failed;
        datagrams.extend(job.datagrams);
        seed += 1;
    }
    let mean = datagrams.iter().sum::<u64>() as f64 / datagrams.len() as f64;
    Ok(json!({
        "loss": format!("{loss}%"),
        "connections": datagrams.len(),
        "failed": failed,
        "datagrams_mean": (mean * 100.0).round() / 100.0,
        "datagrams_max": datagrams.iter().max().copied().unwrap_or(0),
    }))
}

fn header(length: usize) -> Header {
    Header { kind: Kind::Eager, context: 1, source: 0, tag: 0, sequence: 0, length: length as u64 }
}

/// Two connected transports on a wall-clock fabric.
fn pair() -> Result<Vec<VerbsTransport<FabricDevice>>, String> {
    let fabric = Fabric::new(1, Faults::default());
    let mut ts = Vec::new();
    for r in 0..2 {
        ts.push(
            VerbsTransport::new(fabric.device(), 0, r, VerbsSettings::new(TOKEN), r as u64)
                .map_err(|e| e.to_string())?,
        );
    }
    let addrs: Vec<_> = ts.iter().map(VerbsTransport::address).collect();
    for t in &mut ts {
        t.set_peers(addrs.clone()).map_err(|e| e.to_string())?;
    }
    ts[0].send(1, &header(8), &[0; 8]).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut got = 0;
    while got == 0 || !ts[0].is_connected(1) {
        if start.elapsed() > Duration::from_secs(5) {
            return Err("the fabric's pair did not connect".into());
        }
        ts[0].progress().map_err(|e| e.to_string())?;
        ts[1].poll(|_| got += 1).map_err(|e| e.to_string())?;
    }
    Ok(ts)
}

/// One 8-byte send: what callgrind counts for `verbs_send` (the device's calls excluded).
#[inline(never)]
pub fn probe_verbs_send(t: &mut VerbsTransport<FabricDevice>, payload: &[u8; 8]) -> bool {
    t.send(1, &header(8), payload).is_ok()
}

/// One receive of an 8-byte message already there: what callgrind counts for
/// `verbs_recv` (the device's calls excluded).
#[inline(never)]
pub fn probe_verbs_recv(t: &mut VerbsTransport<FabricDevice>, sum: &mut u64) -> bool {
    t.poll(|a| *sum += u64::from(a.payload[0])).is_ok()
}

fn probe_run(probe: &str, calls: u64) -> Result<Value, String> {
    let mut ts = pair()?;
    let payload = [1u8; 8];
    let mut sum = 0;
    for _ in 0..calls {
        let ok = match probe {
            "send" => {
                let sent = probe_verbs_send(&mut ts[0], &payload);
                let taken = ts[1].poll(|_| {}).is_ok();
                sent && taken && ts[0].progress().is_ok()
            }
            "recv" => {
                let sent = ts[0].send(1, &header(8), &payload).is_ok();
                sent && probe_verbs_recv(&mut ts[1], &mut sum)
            }
            other => return Err(format!("--probe takes send or recv, not {other:?}")),
        };
        if !ok {
            return Err("a probe call failed".into());
        }
    }
    Ok(json!({ "probe": probe, "calls": calls, "checksum": sum }))
}
