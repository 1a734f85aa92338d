//! `commcore bench coll-procs --procs N`: collective latency on real processes through the
//! launcher (the simulated `bench coll` belongs to the collectives work; this is its
//! `--procs` measurement, to be dispatched from there).
//!
//! barrier, bcast, allreduce (u64 sum) and alltoall at 8 B and 64 KiB (alltoall: per
//! block), or at the sizes of `--sizes 8,1024,…` (bytes, multiples of 8: the crossovers
//! between the area, the schedules and single-copy reads lie in between). Each figure:
//! `--batches` (default 5) batches of `--iterations` calls up to 1 KiB (default 200; a
//! quarter as many above) after a warm-up batch of a tenth; a batch's figure is the mean
//! over ranks of each rank's mean time per call; the median batch is reported.
//! `--only OP,…` measures the operations named (for profiling one alone), which may include
//! reduce (u64 sum to rank 0) or allgather (per block), which no figure of the issue names.
//! `scripts/peers/coll.c` measures the same over MPI.

use std::time::Instant;

use commcore::coll::{Datatype, ReduceOp};
use serde_json::{json, Value};

use super::option;
use super::pt2pt::launch_self;
use super::stats::median;
use commcore_linux::launch::env;
use commcore_linux::runtime::{CollectiveError, Comm, World};

const SIZES: [usize; 2] = [8, 64 * 1024];
/// Bytes up to which a figure runs the full `--iterations`.
const SHORT_UP_TO: usize = 1024;
const OPS: [&str; 4] = ["barrier", "bcast", "allreduce", "alltoall"];
/// Operations measured only when `--only` names them.
const MORE_OPS: [&str; 2] = ["reduce", "allgather"];

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
    // Checked here too, so that a bad list is one clear error rather than one per rank.
    if let Some(list) = option::<String>(args, "--sizes")? {
        parse_sizes(&list)?;
    }
    if let Some(list) = option::<String>(args, "--only")? {
        parse_ops(&list)?;
    }
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
    let mut spec = commcore_linux::launch::JobSpec::new(procs, exe);
    spec.nodes = nodes;
    spec.args =
        ["bench", "coll-procs"].iter().map(Into::into).chain(args.iter().map(Into::into)).collect();
    spec.capture_rank0_stdout = true;
    let output =
        commcore_linux::launch::run_job(&spec).map_err(|f| format!("benchmark job failed: {f}"))?;
    let text = String::from_utf8_lossy(&output.rank0_stdout);
    serde_json::from_str(text.trim())
        .map_err(|e| format!("rank 0 printed no figures ({e}): {text:?}"))
}

fn rank_main(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let batches: usize = option(args, "--batches")?.unwrap_or(5).max(1);
    let base: usize = option(args, "--iterations")?.unwrap_or(200).max(4);
    let only = match option::<String>(args, "--only")? {
        Some(list) => Some(parse_ops(&list)?),
        None => None,
    };
    let sizes = match option::<String>(args, "--sizes")? {
        Some(list) => parse_sizes(&list)?,
        None => SIZES.to_vec(),
    };
    let world = World::init()?;
    let comm = world.comm();
    let mut rows = Vec::new();
    let ops = OPS.iter().chain(&MORE_OPS);
    for &op in ops.filter(|op| only.as_ref().map_or(OPS.contains(op), |list| list.contains(op))) {
        for &size in &sizes {
            if op == "barrier" && size != sizes[0] {
                continue;
            }
            let iterations = if size <= SHORT_UP_TO { base } else { base / 4 };
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

/// The operations of `--only`: names of [`OPS`] or [`MORE_OPS`], each once.
fn parse_ops(list: &str) -> Result<Vec<&'static str>, String> {
    let mut ops = Vec::new();
    for name in list.split(',').map(str::trim) {
        let Some(&op) = OPS.iter().chain(&MORE_OPS).find(|&&op| op == name) else {
            return Err(format!("--only: {name:?} is not one of {OPS:?} or {MORE_OPS:?}"));
        };
        if ops.contains(&op) {
            return Err(format!("--only: {op} is given twice"));
        }
        ops.push(op);
    }
    Ok(ops)
}

/// Bytes per call from `--sizes`: positive multiples of 8 (allreduce sums u64s), each
/// once, in the order given.
fn parse_sizes(list: &str) -> Result<Vec<usize>, String> {
    let mut sizes = Vec::new();
    for text in list.split(',') {
        let size: usize =
            text.trim().parse().map_err(|_| format!("--sizes: cannot parse {text:?}"))?;
        if size == 0 || size % 8 != 0 {
            return Err(format!("--sizes: {size} is not a positive multiple of 8 bytes"));
        }
        if sizes.contains(&size) {
            return Err(format!("--sizes: {size} is given twice"));
        }
        sizes.push(size);
    }
    Ok(sizes)
}

fn label(size: usize) -> String {
    if size >= 1024 && size % 1024 == 0 {
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
        let blocks = if matches!(op, "alltoall" | "allgather") { comm.size() } else { 1 };
        let send_blocks = if op == "alltoall" { blocks } else { 1 };
        // Both written, as an application's would be (and as the peers' memset does): a
        // zeroed allocation nobody writes may stay mapped to the kernel's zero page, which a
        // bcast root's readers would then copy from.
        let (mut send, mut recv) = (vec![1u8; size * send_blocks], vec![0u8; size * blocks]);
        std::hint::black_box(&mut send).fill(1);
        std::hint::black_box(&mut recv).fill(0);
        Call { comm, op, send, recv }
    }

    fn run(&mut self) -> Result<(), CollectiveError> {
        match self.op {
            "barrier" => self.comm.barrier(),
            "bcast" => self.comm.bcast(&mut self.recv, 0),
            "allreduce" => {
                self.comm.allreduce(&self.send, &mut self.recv, Datatype::U64, ReduceOp::Sum)
            }
            "reduce" => {
                self.comm.reduce(&self.send, &mut self.recv, Datatype::U64, ReduceOp::Sum, 0)
            }
            "allgather" => self.comm.allgather(&self.send, &mut self.recv),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_positive_multiples_of_eight_given_once() {
        assert_eq!(parse_sizes("8,1024, 1536").unwrap(), [8, 1024, 1536]);
        for bad in ["", "0", "12", "8,x", "8,8", "-8"] {
            assert!(parse_sizes(bad).is_err(), "{bad:?}");
        }
        assert_eq!(label(1536), "1536B");
        assert_eq!(label(65536), "64KiB");
    }

    #[test]
    fn only_takes_known_operations_each_once() {
        assert_eq!(
            parse_ops("allreduce, bcast,allgather").unwrap(),
            ["allreduce", "bcast", "allgather"]
        );
        for bad in ["", "bcst", "bcast,bcast", "bcast,"] {
            assert!(parse_ops(bad).is_err(), "{bad:?}");
        }
    }
}
