//! `commcore bench pt2pt`: ping-pong latency (8 B, 64 KiB, 1 MiB, or `--sizes`), bandwidth and message rate
//! between two real processes started by the launcher, once with single-copy transfers and
//! once with the two-copy path, in `--rounds` (default 3) alternating pairs of jobs.
//!
//! The command launches itself: without a launcher environment it starts a job of
//! `--procs` ranks (default 2; ranks beyond 1 only wait in a barrier) running this same
//! benchmark, and rank 0 of that job measures and prints its figures as JSON. Each figure is
//! the median over `--batches` timed batches (default 7) of a job, then over the rounds.

use std::time::Instant;

use serde_json::{json, Value};

use super::option;
use super::stats::median;
use commcore_linux::launch::{env, run_job, JobSpec};
use commcore_linux::runtime::{Comm, P2pError, Request, World};

const LATENCY_SIZES: [usize; 3] = [8, 64 * 1024, 1024 * 1024];
/// The largest `--sizes` entry: 16 MiB, well past the single-copy threshold.
const MAX_LATENCY_SIZE: usize = 16 << 20;
const BANDWIDTH_BYTES: usize = 1024 * 1024;
const BANDWIDTH_WINDOW: usize = 16;
const RATE_WINDOW: usize = 64;

/// Runs the benchmark.
pub fn run(args: &[String]) -> Result<Value, String> {
    if std::env::var_os(env::SHM_FD).is_some() {
        rank_main(args).map_err(|e| e.to_string())?;
        std::process::exit(0);
    }
    match option::<String>(args, "--transport")?.as_deref() {
        None | Some("shm") => {}
        Some("tcp") => return super::pt2pt_tcp::run(args),
        Some(other) => return Err(format!("--transport must be shm or tcp, not {other:?}")),
    }
    let procs: usize = option(args, "--procs")?.unwrap_or(2);
    if procs < 2 {
        return Err("--procs must be at least 2".into());
    }
    let rounds: usize = option(args, "--rounds")?.unwrap_or(3);
    if rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    let sizes = latency_sizes(args)?;
    // Jobs alternate between the two paths, so that a change in the machine's load falls
    // on both alike; each figure is the median over the rounds.
    let (mut on_runs, mut off_runs) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        on_runs.push(launch_self(procs, "pt2pt", args, &[])?);
        off_runs.push(launch_self(procs, "pt2pt", args, &[("COMMCORE_SINGLE_COPY", "0")])?);
    }
    let (on, off) = (&on_runs, &off_runs);
    let figure = |runs: &[Value], pointer: &str| {
        json!(median(runs.iter().filter_map(|r| r.pointer(pointer)?.as_f64()).collect()))
    };
    let mut rows = Vec::new();
    for size in sizes {
        let pointer = format!("/latency_us/{size}");
        let mut latency = row(
            &format!("pingpong_latency_{}", label(size)),
            "us",
            &figure(on, &pointer),
            &figure(off, &pointer),
        );
        latency["bytes"] = json!(size);
        rows.push(latency);
    }
    rows.push(row(
        "bandwidth_1MiB",
        "MB/s",
        &figure(on, "/bandwidth_mbps"),
        &figure(off, "/bandwidth_mbps"),
    ));
    rows.push(row(
        "message_rate_8B",
        "Mmsg/s",
        &figure(on, "/message_rate_mmsgs"),
        &figure(off, "/message_rate_mmsgs"),
    ));
    let big = "/latency_us/1048576";
    let speedup = figure(off, big).as_f64().unwrap_or(f64::NAN)
        / figure(on, big).as_f64().unwrap_or(f64::NAN);
    let per_round: Vec<f64> = on
        .iter()
        .zip(off)
        .map(|(on, off)| {
            let us = |r: &Value| r.pointer(big).and_then(Value::as_f64).unwrap_or(f64::NAN);
            us(off) / us(on)
        })
        .collect();
    Ok(json!({
        "benchmark": "pt2pt",
        "procs": procs,
        "rounds": rounds,
        "single_copy_mode": on[0]["transfers"],
        "two_copy_mode": off[0]["transfers"],
        "figures": rows,
        "speedup_1MiB_single_copy_over_two_copy": speedup,
        "speedup_1MiB_per_round": per_round,
    }))
}

/// Runs this benchmark again as a job of `procs` ranks of this program (`commcore bench
/// NAME ARGS…` under the launcher, with `env` added) and returns the JSON rank 0 printed.
pub(crate) fn launch_self(
    procs: usize,
    name: &str,
    args: &[String],
    env: &[(&str, &str)],
) -> Result<Value, String> {
    launch_self_on(procs, 1, name, args, env)
}

/// [`launch_self`] with the ranks spread over `hosts` network namespaces (1: this host).
pub(crate) fn launch_self_on(
    procs: usize,
    hosts: usize,
    name: &str,
    args: &[String],
    env: &[(&str, &str)],
) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut spec = JobSpec::new(procs, exe);
    spec.args = ["bench", name].iter().map(Into::into).chain(args.iter().map(Into::into)).collect();
    spec.env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    spec.capture_rank0_stdout = true;
    spec.hosts = hosts;
    let output = run_job(&spec).map_err(|f| format!("benchmark job failed: {f}"))?;
    let text = String::from_utf8_lossy(&output.rank0_stdout);
    serde_json::from_str(text.trim())
        .map_err(|e| format!("rank 0 printed no figures ({e}): {text:?}"))
}

/// The ping-pong sizes: `--sizes A,B,C` in bytes (1 to 16 MiB each), or 8 B, 64 KiB, 1 MiB.
pub(crate) fn latency_sizes(args: &[String]) -> Result<Vec<usize>, String> {
    let Some(list) = option::<String>(args, "--sizes")? else { return Ok(LATENCY_SIZES.to_vec()) };
    list.split(',')
        .map(|item| match item.trim().parse::<usize>() {
            Ok(size) if (1..=MAX_LATENCY_SIZE).contains(&size) => Ok(size),
            _ => Err(format!("--sizes: {item:?} is not a size from 1 to {MAX_LATENCY_SIZE} bytes")),
        })
        .collect()
}

pub(crate) fn label(size: usize) -> String {
    match size {
        s if s >= 1 << 20 => format!("{}MiB", s >> 20),
        s if s >= 1 << 10 => format!("{}KiB", s >> 10),
        s => format!("{s}B"),
    }
}

fn row(figure: &str, unit: &str, single_copy: &Value, two_copy: &Value) -> Value {
    json!({ "figure": figure, "unit": unit, "single_copy": single_copy, "two_copy": two_copy })
}

/// One rank of the benchmark job: ranks 0 and 1 measure, the rest wait.
fn rank_main(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let batches: usize = option(args, "--batches")?.unwrap_or(7).max(1);
    let world = World::init()?;
    let comm = world.comm();
    let mut latency = serde_json::Map::new();
    let (mut bandwidth, mut rate) = (f64::NAN, f64::NAN);
    if comm.rank() < 2 {
        for size in latency_sizes(args)? {
            let iterations = match size {
                s if s <= 1024 => 10_000,
                s if s <= 65536 => 1_000,
                _ => 200,
            };
            let us = median(
                (0..batches).map(|_| pingpong(comm, size, iterations)).collect::<Result<_, _>>()?,
            );
            latency.insert(size.to_string(), json!(us));
        }
        let send = vec![2u8; BANDWIDTH_BYTES];
        let mut receive = vec![vec![1u8; BANDWIDTH_BYTES]; BANDWIDTH_WINDOW];
        let seconds = median(
            (0..batches).map(|_| window(comm, &send, &mut receive, 8)).collect::<Result<_, _>>()?,
        );
        bandwidth = (BANDWIDTH_BYTES * BANDWIDTH_WINDOW * 8) as f64 / seconds / 1e6;
        let mut receive = vec![vec![1u8; 8]; RATE_WINDOW];
        let seconds = median(
            (0..batches)
                .map(|_| window(comm, &send[..8], &mut receive, 200))
                .collect::<Result<_, _>>()?,
        );
        rate = (RATE_WINDOW * 200) as f64 / seconds / 1e6;
    }
    comm.barrier()?;
    if comm.rank() == 0 {
        let figures = json!({
            "transfers": world.single_copy().to_string(),
            "latency_us": latency,
            "bandwidth_mbps": bandwidth,
            "message_rate_mmsgs": rate,
        });
        println!("{figures}");
    }
    Ok(())
}

/// Half the round-trip time of `size`-byte ping-pongs between ranks 0 and 1, in µs.
fn pingpong(comm: &Comm, size: usize, iterations: usize) -> Result<f64, P2pError> {
    let mut buf = vec![1u8; size];
    let peer = 1 - comm.rank();
    for _ in 0..iterations / 10 {
        exchange(comm, &mut buf, peer)?;
    }
    let start = Instant::now();
    for _ in 0..iterations {
        exchange(comm, &mut buf, peer)?;
    }
    Ok(start.elapsed().as_secs_f64() / iterations as f64 / 2.0 * 1e6)
}

fn exchange(comm: &Comm, buf: &mut [u8], peer: usize) -> Result<(), P2pError> {
    if comm.rank() == 0 {
        comm.send(buf, peer, 1)?;
        comm.recv(buf, peer, 1)?;
    } else {
        comm.recv(buf, peer, 1)?;
        comm.send(buf, peer, 1)?;
    }
    Ok(())
}

/// Seconds for `repeats` windows of nonblocking sends of `send` from rank 0 to rank 1, one
/// per buffer of `receive`, each window acknowledged by a 4-byte reply (the OSU bandwidth
/// pattern). Buffers are allocated and touched once, outside the timed batches.
fn window(
    comm: &Comm,
    send: &[u8],
    receive: &mut [Vec<u8>],
    repeats: usize,
) -> Result<f64, P2pError> {
    let window = receive.len();
    let mut ack = [0u8; 4];
    let mut start = Instant::now();
    for repeat in 0..repeats + 1 {
        if repeat == 1 {
            start = Instant::now();
        }
        // The requests' room is made once per window, as the C benchmark's arrays are (a
        // collected `Result` would grow it by doubling).
        let mut requests = Vec::with_capacity(window);
        if comm.rank() == 0 {
            for _ in 0..window {
                requests.push(comm.isend(send, 1, 2)?);
            }
            Request::wait_all(requests)?;
            comm.recv(&mut ack, 1, 3)?;
        } else {
            for b in receive.iter_mut() {
                requests.push(comm.irecv(b, 0, 2)?);
            }
            Request::wait_all(requests)?;
            comm.send(&ack, 0, 3)?;
        }
    }
    Ok(start.elapsed().as_secs_f64())
}
