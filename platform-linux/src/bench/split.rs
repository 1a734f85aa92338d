//! `commcore bench split`: the CID allocation paper's stress benchmark on real processes.
//!
//! `--procs N` ranks (default 8) run `--iterations` (default 1000) `split` calls. Each
//! iteration selects a live communicator at least as large as the scenario needs, and all
//! of its members split it keeping their order, with a random participation:
//! `large_comm` leaves out 0 to a quarter of the members (the paper: 0 to 8 of 128),
//! `small_comm` keeps between an eighth and a quarter of the ranks, at least 2 (the paper:
//! 8 to 16 of 128). Every rank draws the same choices from the same seed. Every member
//! times each of its calls; rank 0 reports the median, p90, p99 and mean over all
//! (process, call) pairs, and the reductions each allocation needed.
//!
//! `--algorithm lowest|mask|highest` picks core's CID algorithm for the job (default
//! highest); the report gives the allreduces each allocation took on average.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::option;
use super::pt2pt::launch_self;
use crate::launch::env;
use crate::runtime::{Comm, World, UNDEFINED};

/// Live communicators kept at most; the oldest is freed beyond this.
const LIVE: usize = 64;

/// Runs the benchmark.
pub fn run(args: &[String]) -> Result<Value, String> {
    let scenario: String = option(args, "--scenario")?.unwrap_or_else(|| "large_comm".into());
    if scenario != "large_comm" && scenario != "small_comm" {
        return Err(format!("--scenario must be small_comm or large_comm, not {scenario:?}"));
    }
    let algorithm: String = option(args, "--algorithm")?.unwrap_or_else(|| "highest".into());
    if !["lowest", "mask", "highest"].contains(&algorithm.as_str()) {
        return Err(format!("--algorithm must be lowest, mask or highest, not {algorithm:?}"));
    }
    if std::env::var_os(env::SHM_FD).is_some() {
        rank_main(args, scenario == "small_comm").map_err(|e| e.to_string())?;
        std::process::exit(0);
    }
    let procs: usize = option(args, "--procs")?.unwrap_or(8);
    if procs < 2 {
        return Err("--procs must be at least 2".into());
    }
    let env = [("COMMCORE_CID_ALGORITHM", algorithm.as_str())];
    let mut report = launch_self(procs, "split", args, &env)?;
    if let Value::Object(fields) = &mut report {
        fields.insert("procs".into(), json!(procs));
        fields.insert("scenario".into(), json!(scenario));
        fields.insert("algorithm".into(), json!(algorithm));
    }
    Ok(report)
}

fn rank_main(args: &[String], small: bool) -> Result<(), Box<dyn std::error::Error>> {
    let iterations: usize = option(args, "--iterations")?.unwrap_or(1000);
    let seed: u64 = option(args, "--seed")?.unwrap_or(0x0c1d);
    let world = World::init()?;
    let comm = world.comm();
    let (me, size) = (comm.rank(), comm.size());
    let quarter = (size / 4).max(1);
    let (small_min, small_max) = ((size / 8).max(2).min(size), quarter.max(2).min(size));
    let needed = if small { small_max } else { size - quarter };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // The same list on every rank: each entry's members (world ranks) and this rank's handle.
    let mut live: Vec<(Vec<usize>, Option<Comm>)> = vec![((0..size).collect(), Some(comm.clone()))];
    let mut durations = Vec::new();
    let allreduces_before = comm.context_id_allreduces();
    for _ in 0..iterations {
        let candidates: Vec<usize> =
            (0..live.len()).filter(|&i| live[i].0.len() >= needed).collect();
        let parent = candidates[rng.gen_range(0..candidates.len())];
        let members = live[parent].0.clone();
        let keep = if small {
            rng.gen_range(small_min..=small_max).min(members.len())
        } else {
            members.len() - rng.gen_range(0..=quarter.min(members.len() - 1))
        };
        // Choose `keep` members uniformly: shuffle positions, keep the first ones.
        let mut order: Vec<usize> = (0..members.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.gen_range(0..=i));
        }
        let mut kept: Vec<usize> = order[..keep].iter().map(|&i| members[i]).collect();
        kept.sort_unstable();
        let child = match &live[parent].1 {
            Some(parent_comm) => {
                let color = if kept.contains(&me) { 0 } else { UNDEFINED };
                let start = Instant::now();
                let child = parent_comm.split(color, parent_comm.rank() as i32)?;
                durations.push(start.elapsed().as_secs_f64() * 1e6);
                child
            }
            None => None,
        };
        live.push((kept, child));
        if live.len() > LIVE {
            live.remove(1);
        }
    }
    let allreduces = comm.context_id_allreduces() - allreduces_before;
    let per_allocation = allreduces as f64 / durations.len().max(1) as f64;
    comm.barrier()?;
    // Rank 0 collects every rank's durations.
    if me == 0 {
        let mut all = durations;
        for from in 1..size {
            let mut count = [0u8; 8];
            comm.recv(&mut count, from, 1)?;
            let mut bytes = vec![0u8; u64::from_le_bytes(count) as usize * 8];
            comm.recv(&mut bytes, from, 2)?;
            all.extend(
                bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8]))),
            );
        }
        all.sort_by(f64::total_cmp);
        let at = |q: f64| {
            all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1))).copied()
        };
        let mean = all.iter().sum::<f64>() / all.len().max(1) as f64;
        let median = at(0.5).unwrap_or(f64::NAN);
        let p99 = at(0.99).unwrap_or(f64::NAN);
        println!(
            "{}",
            json!({
                "benchmark": "split",
                "iterations": iterations,
                "calls": all.len(),
                "median_us": median,
                "p90_us": at(0.9),
                "p99_us": p99,
                "mean_us": mean,
                "p99_over_median": p99 / median,
                "allreduces_per_allocation_rank0": per_allocation,
            })
        );
    } else {
        comm.send(&(durations.len() as u64).to_le_bytes(), 0, 1)?;
        let bytes: Vec<u8> = durations.iter().flat_map(|d| d.to_le_bytes()).collect();
        comm.send(&bytes, 0, 2)?;
    }
    Ok(())
}
