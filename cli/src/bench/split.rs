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
//!
//! A member's time includes waiting for members still busy in earlier splits, so even
//! an implementation whose every call cost the same would show a tail. The report gives
//! that floor (`unit_cost_floor`: the same calls replayed with every split taking one unit
//! once its last member is free), and the calls timed from the moment their last member
//! entered (`after_last_arrival`: the split's own cost, without that wait; entry and exit
//! times are read from the system-wide monotonic clock).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::option;
use super::pt2pt::launch_self;
use super::stats::{quantile, sorted};
use commcore_linux::launch::env;
use commcore_linux::runtime::{Comm, World, UNDEFINED};

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

/// One member's split: which iteration, and when it entered and left (monotonic ns).
#[derive(Clone, Copy)]
struct Call {
    iteration: u64,
    entered: u64,
    left: u64,
}

const CALL_BYTES: usize = 24;

impl Call {
    fn to_bytes(self) -> [u8; CALL_BYTES] {
        let mut bytes = [0u8; CALL_BYTES];
        for (chunk, word) in
            bytes.chunks_exact_mut(8).zip([self.iteration, self.entered, self.left])
        {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }

    fn from_bytes(bytes: &[u8]) -> Call {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[8 * i..8 * i + 8]);
            u64::from_le_bytes(w)
        };
        Call { iteration: word(0), entered: word(1), left: word(2) }
    }
}

/// Nanoseconds of `CLOCK_MONOTONIC`, which every process of the machine reads alike
/// (`Instant` does not expose its value).
fn monotonic_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec on the stack; CLOCK_MONOTONIC exists on
    // every Linux, so the call only writes `now`.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
    }
    (now.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(now.tv_nsec as u64)
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
    let mut calls = Vec::new();
    // Each iteration's splitting members (world ranks), the same on every rank.
    let mut splitters: Vec<Vec<usize>> = Vec::with_capacity(iterations);
    let allreduces_before = comm.context_id_allreduces();
    for iteration in 0..iterations {
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
                let entered = monotonic_ns();
                let child = parent_comm.split(color, parent_comm.rank() as i32)?;
                calls.push(Call { iteration: iteration as u64, entered, left: monotonic_ns() });
                child
            }
            None => None,
        };
        splitters.push(members);
        live.push((kept, child));
        if live.len() > LIVE {
            live.remove(1);
        }
    }
    let allreduces = comm.context_id_allreduces() - allreduces_before;
    let per_allocation = allreduces as f64 / calls.len().max(1) as f64;
    comm.barrier()?;
    if me != 0 {
        comm.send(&(calls.len() as u64).to_le_bytes(), 0, 1)?;
        let bytes: Vec<u8> = calls.iter().flat_map(|c| c.to_bytes()).collect();
        comm.send(&bytes, 0, 2)?;
        return Ok(());
    }
    // Rank 0 collects every rank's calls.
    let mut all = calls;
    for from in 1..size {
        let mut count = [0u8; 8];
        comm.recv(&mut count, from, 1)?;
        let mut bytes = vec![0u8; u64::from_le_bytes(count) as usize * CALL_BYTES];
        comm.recv(&mut bytes, from, 2)?;
        all.extend(bytes.chunks_exact(CALL_BYTES).map(Call::from_bytes));
    }
    let micros = |ns: u64| ns as f64 / 1e3;
    let durations: Vec<f64> =
        all.iter().map(|c| micros(c.left.saturating_sub(c.entered))).collect();
    let mut last_entry = vec![0u64; iterations];
    for call in &all {
        let last = &mut last_entry[call.iteration as usize];
        *last = (*last).max(call.entered);
    }
    let after_last: Vec<f64> = all
        .iter()
        .map(|c| micros(c.left.saturating_sub(last_entry[c.iteration as usize])))
        .collect();
    let mut report = summary(durations);
    if let Value::Object(fields) = &mut report {
        fields.insert("benchmark".into(), json!("split"));
        fields.insert("iterations".into(), json!(iterations));
        fields.insert("calls".into(), json!(all.len()));
        fields.insert("allreduces_per_allocation_rank0".into(), json!(per_allocation));
        fields.insert("after_last_arrival".into(), summary(after_last));
        let floor = summary(unit_cost_replay(&splitters, size));
        fields.insert("unit_cost_floor_p99_over_median".into(), floor["p99_over_median"].clone());
    }
    println!("{report}");
    Ok(())
}

/// Median, p90, p99 and mean of `values` (µs), and p99 over median.
fn summary(values: Vec<f64>) -> Value {
    let values = sorted(values);
    let at = |q: f64| quantile(&values, q);
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    json!({
        "median_us": at(0.5),
        "p90_us": at(0.9),
        "p99_us": at(0.99),
        "mean_us": mean,
        "p99_over_median": at(0.99) / at(0.5),
    })
}

/// Every member's time per call, in units, had each split taken one unit from the moment
/// its last member was free: what waiting for busy members alone puts into the figures.
fn unit_cost_replay(splitters: &[Vec<usize>], size: usize) -> Vec<f64> {
    let mut free_at = vec![0u64; size];
    let mut durations = Vec::new();
    for members in splitters {
        let start = members.iter().map(|&m| free_at[m]).max().unwrap_or(0);
        for &m in members {
            durations.push((start + 1 - free_at[m]) as f64);
            free_at[m] = start + 1;
        }
    }
    durations
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replay_charges_the_wait_for_a_busy_member() {
        // Ranks 0 and 1 split twice before all three split: rank 2 waits two units for them.
        let splitters = [vec![0, 1], vec![0, 1], vec![0, 1, 2]];
        assert_eq!(unit_cost_replay(&splitters, 3), [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0]);
    }

    #[test]
    fn a_call_survives_its_bytes() {
        let call = Call { iteration: 7, entered: 1 << 40, left: (1 << 40) + 12_345 };
        let back = Call::from_bytes(&call.to_bytes());
        assert_eq!((back.iteration, back.entered, back.left), (7, 1 << 40, (1 << 40) + 12_345));
    }

    #[test]
    fn the_summary_takes_quantiles_of_sorted_values() {
        let report = summary((1..=100).rev().map(f64::from).collect());
        assert_eq!(report["median_us"], 51.0);
        assert_eq!(report["p99_us"], 100.0);
        assert_eq!(report["p99_over_median"], 100.0 / 51.0);
    }
}
