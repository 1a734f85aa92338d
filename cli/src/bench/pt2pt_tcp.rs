//! `commcore bench pt2pt --transport tcp [--hosts H]`: ping-pong latency (8 B, 64 KiB,
//! 1 MiB) and 1 MiB bandwidth between two processes over the TCP transport, on one host or
//! across network namespaces. The job's ranks reach each other through the transport
//! itself (`commcore_linux::tcp`), not yet through the runtime's communicators, which do
//! not select TCP per peer yet. Each figure is the median over `--batches` (default 7)
//! timed batches of a job, then over `--rounds` (default 3) jobs.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::option;
use super::pt2pt::launch_self_on;
use super::stats::median;
use commcore::wire::{Header, Kind};
use commcore_linux::launch::kv;
use commcore_linux::tcp::{TcpError, TcpSettings, TcpTransport};

const LATENCY_SIZES: [usize; 3] = [8, 64 * 1024, 1024 * 1024];
const BANDWIDTH_BYTES: usize = 1024 * 1024;
const BANDWIDTH_WINDOW: usize = 16;
/// A receive that waits longer than this means the other rank is gone.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the benchmark (or, inside its job, one rank of it).
pub fn run(args: &[String]) -> Result<Value, String> {
    if std::env::var_os(kv::ENV_FD).is_some() {
        rank_main(args).map_err(|e| e.to_string())?;
        std::process::exit(0);
    }
    let rounds: usize = option(args, "--rounds")?.unwrap_or(3);
    if rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    let hosts: usize = option(args, "--hosts")?.unwrap_or(1);
    let runs: Vec<Value> = (0..rounds)
        .map(|_| launch_self_on(2, hosts, "pt2pt", args, &[("COMMCORE_TRANSPORT", "tcp")]))
        .collect::<Result<_, _>>()?;
    let figure = |pointer: &str| {
        json!(median(runs.iter().filter_map(|r| r.pointer(pointer)?.as_f64()).collect()))
    };
    let mut rows: Vec<Value> = LATENCY_SIZES
        .iter()
        .map(|size| {
            let label = match size {
                s if *s >= 1 << 20 => format!("{}MiB", s >> 20),
                s if *s >= 1 << 10 => format!("{}KiB", s >> 10),
                s => format!("{s}B"),
            };
            json!({
                "figure": format!("pingpong_latency_{label}"),
                "unit": "us",
                "tcp": figure(&format!("/latency_us/{size}")),
            })
        })
        .collect();
    rows.push(
        json!({ "figure": "bandwidth_1MiB", "unit": "MB/s", "tcp": figure("/bandwidth_mbps") }),
    );
    Ok(json!({
        "benchmark": "pt2pt",
        "transport": "tcp",
        "hosts": hosts,
        "procs": 2,
        "rounds": rounds,
        "figures": rows,
    }))
}

fn rank_main(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let batches: usize = option(args, "--batches")?.unwrap_or(7).max(1);
    let mut t = TcpTransport::join(TcpSettings::new(0))?;
    let mut latency = serde_json::Map::new();
    let mut bandwidth = f64::NAN;
    if t.rank() < 2 {
        for size in LATENCY_SIZES {
            let iterations = match size {
                s if s <= 1024 => 5_000,
                s if s <= 65536 => 500,
                _ => 100,
            };
            let mut runs = Vec::with_capacity(batches);
            for _ in 0..batches {
                runs.push(pingpong(&mut t, size, iterations)?);
            }
            latency.insert(size.to_string(), json!(median(runs)));
        }
        let send = vec![2u8; BANDWIDTH_BYTES];
        let mut runs = Vec::with_capacity(batches);
        for _ in 0..batches {
            runs.push(window(&mut t, &send, 8)?);
        }
        bandwidth = (BANDWIDTH_BYTES * BANDWIDTH_WINDOW * 8) as f64 / median(runs) / 1e6;
    }
    if t.rank() == 0 {
        let figures = json!({ "latency_us": latency, "bandwidth_mbps": bandwidth });
        println!("{figures}");
    }
    t.finish(Instant::now() + Duration::from_secs(5))?;
    Ok(())
}

fn header(tag: i32, length: usize) -> Header {
    Header { kind: Kind::Eager, context: 0, source: 0, tag, sequence: 0, length: length as u64 }
}

fn receive(t: &mut TcpTransport) -> Result<Vec<u8>, TcpError> {
    let deadline = Instant::now() + RECEIVE_TIMEOUT;
    loop {
        if let Some(arrival) = t.poll()? {
            return Ok(arrival.payload);
        }
        if !t.wait(deadline)? && Instant::now() >= deadline {
            return Ok(Vec::new());
        }
    }
}

/// Half the round-trip time of `size`-byte ping-pongs between ranks 0 and 1, in µs.
fn pingpong(t: &mut TcpTransport, size: usize, iterations: usize) -> Result<f64, TcpError> {
    let buf = vec![1u8; size];
    let peer = 1 - t.rank();
    let mut start = Instant::now();
    for i in 0..iterations + iterations / 10 {
        if i == iterations / 10 {
            start = Instant::now();
        }
        if t.rank() == 0 {
            t.send(peer, &header(1, size), &buf)?;
            receive(t)?;
        } else {
            receive(t)?;
            t.send(peer, &header(1, size), &buf)?;
        }
    }
    Ok(start.elapsed().as_secs_f64() / iterations as f64 / 2.0 * 1e6)
}

/// Seconds for `repeats` windows of 16 messages from rank 0 to rank 1, each window
/// acknowledged by a 4-byte reply (the OSU bandwidth pattern).
fn window(t: &mut TcpTransport, send: &[u8], repeats: usize) -> Result<f64, TcpError> {
    let mut start = Instant::now();
    for repeat in 0..repeats + 1 {
        if repeat == 1 {
            start = Instant::now();
        }
        if t.rank() == 0 {
            for _ in 0..BANDWIDTH_WINDOW {
                t.send(1, &header(2, send.len()), send)?;
            }
            receive(t)?;
        } else {
            for _ in 0..BANDWIDTH_WINDOW {
                receive(t)?;
            }
            t.send(0, &header(3, 4), &[0; 4])?;
        }
    }
    Ok(start.elapsed().as_secs_f64())
}
