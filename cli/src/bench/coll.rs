//! `commcore bench coll`: the collective framework measured in the simulator.
//!
//! - `dispatch`: one collective on 8 simulated ranks, every rank's schedule built and run
//!   to completion, with the algorithm `tuned` picks called directly (its own constructor)
//!   against the same algorithm reached through the selected module of a [`CollTable`];
//!   the two alternate in batches of 16 collectives within one run, and the ratio of the
//!   median batch times is reported (with the ratio of the fastest batches beside it). The schedule-creation cost alone (no execution) is
//!   reported beside it.
//! - `schedule`: for every algorithm, the steps all ranks' schedules yield at 64 and 4,096
//!   ranks and the time per generated step.
//! - `hier`: messages that cross nodes, counted by the executor, for the hierarchical
//!   algorithms against the flat algorithm `tuned` would pick, on 64 ranks over 8 nodes.

use std::hint::black_box;
use std::time::Instant;

use serde_json::{json, Value};

use commcore::coll::component::BUILTIN;
use commcore::coll::ctor::constructor;
use commcore::coll::{
    tuned, Algorithm, Blocks, CollArgs, CollOp, CollTable, CommInfo, Control, Ctx, Datatype,
    NodeLayout, Schedule,
};

use crate::bench::option;
use crate::bench::stats::median;
use commcore_sim::coll_exec::{intra_buffers, run as execute, Executor, RankBufs, Topology};

/// Runs the benchmark.
pub fn run(args: &[String]) -> Result<Value, String> {
    if args.iter().any(|a| a == "--procs") {
        return super::coll_procs::run(args);
    }
    let iters: usize = option(args, "--iters")?.unwrap_or(2000);
    let blocks: usize = option(args, "--blocks")?.unwrap_or(21);
    if iters == 0 || blocks == 0 {
        return Err("--iters and --blocks must be positive".into());
    }
    let ranks: Vec<u32> = match option::<String>(args, "--ranks")? {
        None => vec![64, 4096],
        Some(list) => list
            .split(',')
            .map(|r| match r.trim().parse::<u32>() {
                Ok(n) if (2..=1 << 20).contains(&n) => Ok(n),
                _ => Err(format!("--ranks: {r:?} is not a size from 2 to 1048576")),
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(json!({
        "dispatch": dispatch(iters, blocks)?,
        "schedule": schedule(&ranks)?,
        "hier": hier()?,
    }))
}

fn dispatch(iters: usize, blocks: usize) -> Result<Value, String> {
    const RANKS: u32 = 8;
    let mut rows = Vec::new();
    for (op, count) in [(CollOp::Barrier, 0usize), (CollOp::Bcast, 1), (CollOp::Allreduce, 1)] {
        let dtype = Datatype::F64;
        let args = CollArgs::new(count, dtype);
        let alg = tuned::decide(op, RANKS, args.message_bytes(), true);
        // The direct path: the algorithm's own constructor, resolved before timing.
        let ctor = constructor(op, alg).map_err(|e| e.to_string())?;
        let tables: Vec<CollTable<'_>> = (0..RANKS)
            .map(|r| CollTable::select(&CommInfo::intra(r, RANKS), &BUILTIN, &Control::none()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let ctxs: Vec<Ctx> = (0..RANKS)
            .map(|r| Ctx::new(r, RANKS))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let mut bufs = intra_buffers(op, RANKS as usize, count, dtype.size());
        let topology = Topology::Intra { size: RANKS as usize };
        // Both paths share one executor, one schedule vector and one set of buffers, so
        // they differ only in how each rank's schedule is obtained.
        let mut exec = Executor::default();
        let mut schedules: Vec<Schedule<'_>> = Vec::with_capacity(RANKS as usize);
        let mut once = |through: bool, bufs: &mut Vec<RankBufs>| -> Result<(), String> {
            schedules.clear();
            for (t, c) in tables.iter().zip(&ctxs) {
                let s = if through { t.schedule(op, &args) } else { ctor(*c, &args) };
                schedules.push(s.map_err(|e| e.to_string())?);
            }
            exec.run(topology, &mut schedules, bufs, None).map_err(|e| e.to_string()).map(|_| ())
        };
        // Direct and framework alternate batch by batch (16 collectives a batch), so drift
        // in the machine's load falls on both; a batch that was preempted is an outlier that
        // the medians ignore.
        const BATCH: usize = 16;
        let (mut d, mut f) = (Vec::new(), Vec::new());
        for batch in 0..(iters * blocks / BATCH).max(1) + 1 {
            for turn in 0..2 {
                let through = (turn == 0) == (batch % 2 == 0);
                let start = Instant::now();
                for _ in 0..BATCH {
                    once(through, &mut bufs)?;
                }
                let ns = start.elapsed().as_nanos() as f64 / BATCH as f64;
                if batch > 0 {
                    if through {
                        f.push(ns)
                    } else {
                        d.push(ns)
                    }
                }
            }
        }
        let min = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min);
        let ratio_min = min(&f) / min(&d);
        let (direct_ns, framework_ns) = (median(d), median(f));
        // Schedule creation alone (all ranks, no execution), alternating batches likewise.
        let create = |through: bool| -> f64 {
            const CALLS: usize = 256;
            let start = Instant::now();
            for _ in 0..CALLS {
                for r in 0..RANKS as usize {
                    let s = if through {
                        tables[r].schedule(op, black_box(&args))
                    } else {
                        ctor(ctxs[r], black_box(&args))
                    };
                    black_box(s.map(|s| s.rounds()).ok());
                }
            }
            start.elapsed().as_nanos() as f64 / CALLS as f64
        };
        let (mut cd, mut cf) = (Vec::new(), Vec::new());
        for batch in 0..(iters * blocks / BATCH).max(1) {
            let framework_first = batch % 2 == 0;
            let first = create(framework_first);
            let second = create(!framework_first);
            let (fw, di) = if framework_first { (first, second) } else { (second, first) };
            cf.push(fw);
            cd.push(di);
        }
        let (create_direct, create_framework) = (median(cd), median(cf));
        rows.push(json!({
            "op": op.name(),
            "ranks": RANKS,
            "bytes": count * dtype.size(),
            "algorithm": alg.name(),
            "direct_ns": direct_ns,
            "framework_ns": framework_ns,
            "ratio": framework_ns / direct_ns,
            "ratio_of_minima": ratio_min,
            "create_direct_ns": create_direct,
            "create_framework_ns": create_framework,
        }));
    }
    Ok(Value::Array(rows))
}

/// Steps and time per step of every rank's schedule of `make(rank)`.
fn generate<'a>(
    ranks: u32,
    make: impl Fn(u32) -> Result<Schedule<'a>, String>,
) -> Result<(u64, f64), String> {
    let start = Instant::now();
    let mut steps = 0u64;
    for r in 0..ranks {
        for step in make(r)? {
            black_box(step);
            steps += 1;
        }
    }
    let ns = start.elapsed().as_nanos() as f64;
    Ok((steps, ns / steps.max(1) as f64))
}

fn schedule(sizes: &[u32]) -> Result<Value, String> {
    let mut rows = Vec::new();
    let count = 1usize;
    let dtype = Datatype::F64;
    for &ranks in sizes {
        let counts = vec![count; ranks as usize];
        let displs: Vec<usize> = (0..ranks as usize).map(|i| i * count).collect();
        let blocks = Blocks { counts: &counts, displs: &displs };
        let args = CollArgs::new(count, dtype).with_send(blocks).with_recv(blocks);
        for op in CollOp::ALL {
            let plain = if matches!(
                op,
                CollOp::Allgatherv
                    | CollOp::Gatherv
                    | CollOp::Scatterv
                    | CollOp::Alltoallv
                    | CollOp::ReduceScatter
            ) {
                args
            } else {
                CollArgs::new(count, dtype)
            };
            for alg in Algorithm::ALL
                .into_iter()
                .filter(|a| a.implements(op) && *a != Algorithm::Hierarchical)
            {
                let (steps, ns) = generate(ranks, |r| {
                    Schedule::intra(op, alg, Ctx::new(r, ranks).map_err(|e| e.to_string())?, &plain)
                        .map_err(|e| e.to_string())
                })?;
                rows.push(json!({"op": op.name(), "algorithm": alg.name(), "ranks": ranks, "count": count, "steps": steps, "ns_per_step": ns}));
            }
        }
        // Hierarchical, 8 ranks a node.
        let ids: Vec<u32> = (0..ranks).map(|r| r / 8).collect();
        let mut storage = vec![0u32; 4 * ids.len() + 1];
        let layout = NodeLayout::build(&ids, &mut storage).map_err(|e| e.to_string())?;
        for op in
            [CollOp::Barrier, CollOp::Bcast, CollOp::Reduce, CollOp::Allreduce, CollOp::Allgather]
        {
            let a = CollArgs::new(count, dtype);
            let (steps, ns) =
                generate(ranks, |r| Schedule::hier(op, r, layout, &a).map_err(|e| e.to_string()))?;
            rows.push(json!({"op": op.name(), "algorithm": "hier", "ranks": ranks, "count": count, "steps": steps, "ns_per_step": ns}));
        }
        // Inter-communicator, two halves.
        let half = ranks / 2;
        let hc = vec![count; half as usize];
        let hd: Vec<usize> = (0..half as usize).map(|i| i * count).collect();
        let hb = Blocks { counts: &hc, displs: &hd };
        for op in CollOp::ALL.into_iter().filter(|o| !matches!(o, CollOp::Scan | CollOp::Exscan)) {
            let a = CollArgs::new(count, dtype).with_send(hb).with_recv(hb);
            let (steps, ns) = generate(ranks, |g| {
                let (r, root) = if g < half {
                    (g, commcore::coll::Root::Rank(0))
                } else if g == half {
                    (0, commcore::coll::Root::Here)
                } else {
                    (g - half, commcore::coll::Root::Elsewhere)
                };
                Schedule::inter(
                    op,
                    Ctx::new(r, half).map_err(|e| e.to_string())?,
                    half,
                    &a.with_root(root),
                )
                .map_err(|e| e.to_string())
            })?;
            rows.push(json!({"op": op.name(), "algorithm": "inter_leaders", "ranks": ranks, "count": count, "steps": steps, "ns_per_step": ns}));
        }
    }
    Ok(Value::Array(rows))
}

fn hier() -> Result<Value, String> {
    const RANKS: u32 = 64;
    const NODES: u32 = 8;
    let mut rows = Vec::new();
    let dtype = Datatype::F64;
    let count = 1;
    for placement in ["block", "cyclic"] {
        let ids: Vec<u32> = (0..RANKS)
            .map(|r| if placement == "block" { r / (RANKS / NODES) } else { r % NODES })
            .collect();
        let mut storage = vec![0u32; 4 * ids.len() + 1];
        let layout = NodeLayout::build(&ids, &mut storage).map_err(|e| e.to_string())?;
        for op in
            [CollOp::Bcast, CollOp::Reduce, CollOp::Allreduce, CollOp::Barrier, CollOp::Allgather]
        {
            let args = CollArgs::new(count, dtype);
            let flat_alg = tuned::decide(op, RANKS, args.message_bytes(), true);
            let topology = Topology::Intra { size: RANKS as usize };
            let mut bufs = intra_buffers(op, RANKS as usize, count, dtype.size());
            let hs: Vec<Schedule<'_>> = (0..RANKS)
                .map(|r| Schedule::hier(op, r, layout, &args))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            let h = execute(topology, hs, &mut bufs, Some(&ids)).map_err(|e| e.to_string())?;
            let fs: Vec<Schedule<'_>> = (0..RANKS)
                .map(|r| Schedule::intra(op, flat_alg, Ctx::new(r, RANKS)?, &args))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            let f = execute(topology, fs, &mut bufs, Some(&ids)).map_err(|e| e.to_string())?;
            rows.push(json!({
                "op": op.name(),
                "ranks": RANKS,
                "nodes": NODES,
                "placement": placement,
                "inter_node_messages": h.inter_node_messages,
                "flat_inter_node_messages": f.inter_node_messages,
                "flat_algorithm": flat_alg.name(),
                "messages": h.messages,
                "flat_messages": f.messages,
            }));
        }
    }
    Ok(Value::Array(rows))
}
