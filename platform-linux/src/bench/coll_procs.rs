//! `commcore bench coll-procs --procs N`: collective latency on real processes through the
//! launcher (the simulated `bench coll` belongs to the collectives work; this is its
//! `--procs` measurement, to be dispatched from there).
//!
//! barrier, bcast, allreduce (u64 sum) and alltoall at 8 B and 64 KiB (alltoall: per
//! block). Each figure: `--batches` (default 5) batches of `--iterations` calls at 8 B
//! (default 200; a quarter as many at 64 KiB) after a warm-up batch of a tenth; a batch's
//! figure is the mean over ranks of each rank's mean time per call; the median batch is
//! reported. `--only OP` measures one operation (for profiling it alone).
//! `scripts/peers/coll.c` measures the same over MPI.

use std::time::Instant;

use commcore::coll::{Datatype, ReduceOp};
use serde_json::{json, Value};

use super::option;
use super::pt2pt::launch_self;
use super::stats::median;
use crate::launch::env;
use crate::runtime::{CollectiveError, Comm, World};

const SIZES: [usize; 2] = [8, 64 * 1024];
const OPS: [&str; 4] = ["barrier", "bcast", "allreduce", "alltoall"];

/// Runs the benchmark.
pub fn run(args: &[String]) -> Result<Value, String> {
    if std::env::var_os(env::SHM_FD).is_some() {
        rank_main(args).map_err(|e| e.to_string())?;
        std::process::exit(0);
    }
    let procs: usize = option(args, "--procs")?.unwrap_or(4);
    if procs == 0 {
        return Err("--procs must be at least 1".into());
    }
    let nodes: usize = option(args, "--nodes")?.unwrap_or(1);
    let mut report = if nodes > 1 {
        launch_nodes(procs, nodes, args)?
    } else {
        launch_self(procs, "coll-procs", args, &[])?
    };
    if let Value::Object(fields) = &mut report {
        fields.insert("procs".into(), json!(procs));
        fields.insert("nodes".into(), json!(nodes));
    }
    Ok(report)
}

fn launch_nodes(procs: usize, nodes: usize, args: &[String]) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut spec = crate::launch::JobSpec::new(procs, exe);
    spec.nodes = nodes;
    spec.args =
        ["bench", "coll-procs"].iter().map(Into::into).chain(args.iter().map(Into::into)).collect();
    spec.capture_rank0_stdout = true;
    let output = crate::launch::run_job(&spec).map_err(|f| format!("benchmark job failed: {f}"))?;
    let text = String::from_utf8_lossy(&output.rank0_stdout);
    serde_json::from_str(text.trim())
        .map_err(|e| format!("rank 0 printed no figures ({e}): {text:?}"))
}

fn rank_main(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let batches: usize = option(args, "--batches")?.unwrap_or(5).max(1);
    let base: usize = option(args, "--iterations")?.unwrap_or(200).max(4);
    let only: Option<String> = option(args, "--only")?;
    if let Some(op) = only.as_deref().filter(|op| !OPS.contains(op)) {
        return Err(format!("--only: {op} is not one of {OPS:?}").into());
    }
    let world = World::init()?;
    let comm = world.comm();
    let mut rows = Vec::new();
    for op in OPS.into_iter().filter(|op| only.as_deref().map_or(true, |o| o == *op)) {
        for size in SIZES {
            if op == "barrier" && size != SIZES[0] {
                continue;
            }
            let iterations = if size <= 8 { base } else { base / 4 };
            let mut call = Call::new(comm, op, size);
            batch(comm, &mut call, iterations.div_ceil(10))?;
            let mut samples = Vec::new();
            for _ in 0..batches {
                samples.push(batch(comm, &mut call, iterations)?);
            }
            let label = if op == "barrier" {
                "barrier".to_string()
            } else {
                format!("{op}_{}", label(size))
            };
            rows.push(json!({ "figure": label, "unit": "us", "latency": median(samples) }));
        }
    }
    if comm.rank() == 0 {
        println!("{}", json!({ "benchmark": "coll-procs", "figures": rows }));
    }
    Ok(())
}

fn label(size: usize) -> String {
    if size >= 1024 {
        format!("{}KiB", size / 1024)
    } else {
        format!("{size}B")
    }
}

/// One operation's buffers.
struct Call<'c> {
    comm: &'c Comm,
    op: &'static str,
    send: Vec<u8>,
    recv: Vec<u8>,
}

impl<'c> Call<'c> {
    fn new(comm: &'c Comm, op: &'static str, size: usize) -> Call<'c> {
        let n = comm.size();
        let (send, recv) = match op {
            "alltoall" => (vec![1u8; size * n], vec![0u8; size * n]),
            _ => (vec![1u8; size], vec![0u8; size]),
        };
        Call { comm, op, send, recv }
    }

    fn run(&mut self) -> Result<(), CollectiveError> {
        match self.op {
            "barrier" => self.comm.barrier(),
            "bcast" => self.comm.bcast(&mut self.recv, 0),
            "allreduce" => {
                self.comm.allreduce(&self.send, &mut self.recv, Datatype::U64, ReduceOp::Sum)
            }
            _ => self.comm.alltoall(&self.send, &mut self.recv),
        }
    }
}

/// The mean over ranks of each rank's mean µs per call over `iterations` calls.
fn batch(
    comm: &Comm,
    call: &mut Call<'_>,
    iterations: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    comm.barrier()?;
    let start = Instant::now();
    for _ in 0..iterations {
        call.run()?;
    }
    let mine = start.elapsed().as_secs_f64() * 1e6 / iterations as f64;
    let mut all = vec![0u8; 8 * comm.size()];
    comm.allgather(&mine.to_le_bytes(), &mut all)?;
    let sum: f64 =
        all.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).sum();
    Ok(sum / comm.size() as f64)
}
