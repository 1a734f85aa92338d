//! `commcore bench cid`: the CID allocation stress benchmark in the simulated world, and
//! the storage structures replayed on the CID sequences it produces.
//!
//! Options: `--ranks N` (128), `--allocations N` (10,000 per run, split over the
//! threads), `--width N` (65,536 CIDs), `--eager N` (64), `--seed N` (1),
//! `--lookups N` (1,048,576 per timing), `--part all|allocation|storage` (all; storage
//! runs only the single-threaded lowest and highest allocations it replays).

use std::hint::black_box;
use std::time::Instant;

use commcore::cid::store::{
    CidStore, Flat, Folded, FoldedSlot, Radix, RadixInner, RadixLeaf, RbNode, RbTree,
};
use commcore::cid::{words_for, Algorithm, Cid, SpaceConfig, MAX_WIDTH};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::cid_floor::Floor;
use super::cid_one_load::{density_bound, one_load_cells, Seen};
use super::option;
use super::progress::Progress;
use commcore_sim::cid_world::{stress, Participation, StoreEvent, StressConfig, World};

/// Capacity of every simulated space: the widest CID space.
const W: usize = words_for(MAX_WIDTH);

const ALGORITHMS: [(Algorithm, &str); 3] =
    [(Algorithm::Lowest, "lowest"), (Algorithm::Mask, "mask"), (Algorithm::Highest, "highest")];
const SCENARIOS: [Participation; 3] =
    [Participation::SmallComm, Participation::LargeComm, Participation::FewLive];

/// Every rank's CID inserts and removes over one run.
type Traces = Vec<Vec<StoreEvent>>;

struct Options {
    ranks: usize,
    allocations: usize,
    width: u32,
    eager: u32,
    seed: u64,
    lookups: usize,
}

/// Runs the benchmark.
pub fn run(args: &[String]) -> Result<Value, String> {
    let o = Options {
        ranks: option(args, "--ranks")?.unwrap_or(128),
        allocations: option(args, "--allocations")?.unwrap_or(10_000),
        width: option(args, "--width")?.unwrap_or(MAX_WIDTH),
        eager: option(args, "--eager")?.unwrap_or(64),
        seed: option(args, "--seed")?.unwrap_or(1),
        lookups: option(args, "--lookups")?.unwrap_or(1 << 20),
    };
    let part: String = option(args, "--part")?.unwrap_or_else(|| "all".into());
    let (allocation_part, storage_part) = match part.as_str() {
        "all" => (true, true),
        "allocation" => (true, false),
        "storage" => (false, true),
        other => return Err(format!("--part: unknown part {other:?}")),
    };
    if o.ranks < 2 || o.ranks > 128 {
        return Err("--ranks must be 2..=128".into());
    }
    if o.allocations == 0 || o.lookups == 0 {
        return Err("--allocations and --lookups must be positive".into());
    }
    // Steps: the allocation runs of each loop below, then one per recorded trace.
    let recorded =
        ALGORITHMS.iter().filter(|(a, _)| *a != Algorithm::Mask).count() * SCENARIOS.len();
    let first = if allocation_part { ALGORITHMS.len() * SCENARIOS.len() * 2 } else { recorded };
    let later = if allocation_part { ALGORITHMS.len() + 4 } else { 0 };
    let progress = Progress::new((first + later + if storage_part { recorded } else { 0 }) as u64);
    let mut allocation = Vec::new();
    let mut traces = Vec::new();
    for (algorithm, name) in ALGORITHMS {
        for scenario in SCENARIOS {
            for threads in [1, 4] {
                let config = SpaceConfig { width: o.width, eager: o.eager, threaded: threads > 1 };
                let stress_config = StressConfig {
                    ranks: o.ranks,
                    threads,
                    per_stream: o.allocations / threads,
                    participation: scenario,
                    max_live: scenario.default_max_live(),
                    seed: o.seed,
                };
                let record = threads == 1 && algorithm != Algorithm::Mask;
                if !(allocation_part || record && storage_part) {
                    continue;
                }
                let record = record && storage_part;
                progress
                    .start(format!("allocation: {name}, {}, {threads} thread(s)", scenario.name()));
                let (row, trace) = allocate(name, algorithm, config, stress_config, record)?;
                progress.done();
                allocation.push(row);
                if let Some(trace) = trace {
                    traces.push((name, scenario, trace));
                }
            }
        }
    }
    let mut narrow = Vec::new();
    for (algorithm, name) in ALGORITHMS.into_iter().filter(|_| allocation_part) {
        let config = SpaceConfig { width: 256, eager: 32, threaded: false };
        let stress_config = StressConfig {
            ranks: o.ranks,
            threads: 1,
            per_stream: o.allocations,
            participation: Participation::SmallComm,
            max_live: 200,
            seed: o.seed,
        };
        progress.start(format!("narrow width: {name}"));
        narrow.push(allocate(name, algorithm, config, stress_config, false)?.0);
        progress.done();
    }
    // The mask algorithm at MPICH's width and at the widest: the eager allreduce is the same.
    let mut mask_widths = Vec::new();
    for width in [2048, MAX_WIDTH].into_iter().filter(|_| allocation_part) {
        for scenario in [Participation::FewLive, Participation::SmallComm] {
            let config = SpaceConfig { width, eager: o.eager.min(width - 32), threaded: false };
            let stress_config = StressConfig {
                ranks: o.ranks,
                threads: 1,
                per_stream: o.allocations,
                participation: scenario,
                max_live: scenario.default_max_live(),
                seed: o.seed,
            };
            progress.start(format!("mask at width {width}, {}", scenario.name()));
            mask_widths.push(allocate("mask", Algorithm::Mask, config, stress_config, false)?.0);
            progress.done();
        }
    }
    let mut storage = Vec::new();
    for (name, scenario, trace) in &traces {
        progress.start(format!("storage: {name}, {}", scenario.name()));
        storage.extend(store_rows(name, scenario.name(), trace, o.width, o.lookups, o.seed)?);
        progress.done();
    }
    Ok(json!({
        "ranks": o.ranks,
        "width": o.width,
        "eager": o.eager,
        "seed": o.seed,
        "allocation": allocation,
        "narrow_width": narrow,
        "mask_widths": mask_widths,
        "storage": storage,
    }))
}

fn allocate(
    name: &str,
    algorithm: Algorithm,
    config: SpaceConfig,
    stress_config: StressConfig,
    record: bool,
) -> Result<(Value, Option<Traces>), String> {
    let script = stress(stress_config);
    let mut world = World::<W>::new(script, algorithm, config)?;
    if record {
        world = world.with_traces();
    }
    world
        .run(stress_config.seed)
        .map_err(|f| format!("{name} {}: {f}", stress_config.participation.name()))?;
    let mut rounds = Vec::new();
    let (mut bytes, mut failures, mut highest) = (0u64, 0usize, 0 as Cid);
    for outcome in world.outcomes() {
        match outcome.result {
            Some(Ok(cid)) => highest = highest.max(cid),
            Some(Err(_)) => failures += 1,
            None => return Err(format!("{name}: an allocation never ran")),
        }
        rounds.push(outcome.allreduces);
        bytes += outcome.bytes;
    }
    rounds.sort_unstable();
    let n = rounds.len().max(1);
    let p99 = rounds.get((n * 99).div_ceil(100).saturating_sub(1)).copied().unwrap_or(0);
    let row = json!({
        "algorithm": name,
        "scenario": stress_config.participation.name(),
        "threads": stress_config.threads,
        "width": config.width,
        "allocations": rounds.len(),
        "allreduces_mean": rounds.iter().map(|r| f64::from(*r)).sum::<f64>() / n as f64,
        "allreduces_p99": p99,
        "allreduces_max": rounds.last().copied().unwrap_or(0),
        "bytes_mean": bytes as f64 / n as f64,
        "highest_cid": highest,
        "failures": failures,
        "steps": world.steps(),
    });
    Ok((row, world.traces().map(<[_]>::to_vec)))
}

/// Replays every rank's inserts and removes into each structure; density and bytes are
/// sampled after every insert (every allocation a rank keeps) and averaged over the run and
/// the ranks. Lookups are timed on the final live CIDs of the rank that holds the most.
fn store_rows(
    algorithm: &str,
    scenario: &str,
    traces: &[Vec<StoreEvent>],
    width: u32,
    lookups: usize,
    seed: u64,
) -> Result<Vec<Value>, String> {
    let mut flat_slots = vec![None; width as usize];
    let mut inners = vec![RadixInner::EMPTY; 1024];
    let mut leaves = vec![RadixLeaf::EMPTY; (width as usize).div_ceil(256)];
    let mut nodes = vec![RbNode::EMPTY; width as usize + 1];
    let mut arena = vec![FoldedSlot::empty(); 1 << 14];
    let mut sampled = Vec::new();
    for structure in STRUCTURES {
        let (mut density, mut bytes) = (0.0, 0.0);
        for trace in traces {
            let sample = |store: &mut dyn CidStore<u32>| replay(store, trace);
            let (d, b) = match structure {
                "flat" => sample(&mut Flat::new(&mut flat_slots))?,
                "radix" => sample(&mut Radix::new(&mut inners, &mut leaves))?,
                "rbtree" => sample(&mut RbTree::new(&mut nodes))?,
                _ => sample(&mut Folded::new(&mut arena))?,
            };
            density += d / traces.len() as f64;
            bytes += b / traces.len() as f64;
        }
        sampled.push((density, bytes));
    }

    // Lookups run on the rank that ends with the most live communicators (and, for
    // comparison, on the median one), every structure in turn in each pass, so a busy
    // machine slows them alike.
    let mut by_live: Vec<usize> = (0..traces.len()).collect();
    by_live.sort_by_key(|&r| final_live(&traces[r]).len());
    let timed_rank = by_live.last().copied().unwrap_or(0);
    let median_rank = by_live.get(by_live.len() / 2).copied().unwrap_or(0);
    let mut stores = Stores {
        flat: &mut flat_slots,
        inners: &mut inners,
        leaves: &mut leaves,
        nodes: &mut nodes,
        arena: &mut arena,
    };
    let live = final_live(&traces[timed_rank]);
    let (one_load_bound, one_load_every) = density_bound(traces);
    let Timings { best, displaced, unstashed, shape_floor } = stores.time(&live, lookups, seed)?;
    let [bare_flat, bare_masked, bare_field, bare_two_load] = shape_floor;
    // The folded store's two layouts against the bare shapes they are built on.
    let folded_floor = json!({
        "flat_ns": bare_flat,
        "masked_ns": bare_masked,
        "bit_field_ns": bare_field,
        "two_load_xor_ns": bare_two_load,
        "masked_ratio": bare_masked / bare_flat,
        "bit_field_ratio": bare_field / bare_flat,
        "two_load_xor_ratio": bare_two_load / bare_flat,
        "one_load_density": live.len() as f64 / one_load_cells(&live, &mut Seen::new()).max(1) as f64,
        "one_load_density_mean": one_load_bound,
        "one_load_every_kth_insert": one_load_every,
    });
    let median_live = final_live(&traces[median_rank]);
    let Timings { best: median, displaced: median_displaced, .. } =
        stores.time(&median_live, lookups, seed)?;
    let flat_ns = best[0];
    Ok(STRUCTURES
        .iter()
        .zip(sampled)
        .zip(best.into_iter().zip(median))
        .map(|((structure, (density, bytes)), (ns, median_ns))| {
            json!({
                "structure": structure,
                "scenario": scenario,
                "algorithm": algorithm,
                "density_mean": density,
                "bytes": bytes,
                "lookup_ns": ns.0,
                "flat_lookup_ns": flat_ns.0,
                "lookup_ratio": ns.0 / flat_ns.0,
                "throughput_ns": ns.1,
                "flat_throughput_ns": flat_ns.1,
                "timed_rank": timed_rank,
                "timed_live": live.len(),
                "displaced_fraction": (*structure == "folded").then_some(displaced),
                "unstashed_lookup_ns": unstashed.filter(|_| *structure == "folded").map(|u| u.0),
                "unstashed_flat_lookup_ns": unstashed.filter(|_| *structure == "folded").map(|u| u.1),
                "shape_floor": (*structure == "folded").then_some(&folded_floor),
                "median_rank": median_rank,
                "median_live": median_live.len(),
                "median_lookup_ns": median_ns.0,
                "median_flat_lookup_ns": median[0].0,
                "median_lookup_ratio": median_ns.0 / median[0].0,
                "median_displaced_fraction": (*structure == "folded").then_some(median_displaced),
            })
        })
        .collect())
}

const STRUCTURES: [&str; 4] = ["flat", "radix", "rbtree", "folded"];

/// The caller storage of the four structures, reused for every timing.
struct Stores<'a> {
    flat: &'a mut [Option<u32>],
    inners: &'a mut [RadixInner],
    leaves: &'a mut [RadixLeaf<u32>],
    nodes: &'a mut [RbNode<u32>],
    arena: &'a mut [FoldedSlot<u32>],
}

impl Stores<'_> {
    /// Times every structure holding `live`.
    fn time(&mut self, live: &[Cid], lookups: usize, seed: u64) -> Result<Timings, String> {
        let sequence = lookup_sequence(live, lookups, seed);
        let mut flat = Flat::new(self.flat);
        let mut radix = Radix::new(self.inners, self.leaves);
        let mut rbtree = RbTree::new(self.nodes);
        let mut folded = Folded::new(self.arena);
        fill(&mut flat, live)?;
        fill(&mut radix, live)?;
        fill(&mut rbtree, live)?;
        fill(&mut folded, live)?;
        let floor = Floor::new(live);
        let mut best = [(f64::INFINITY, f64::INFINITY); 4];
        let mut shape_floor = [f64::INFINITY; 4];
        for _ in 0..PASSES {
            for (b, t) in shape_floor.iter_mut().zip(floor.time(&sequence)) {
                *b = b.min(t);
            }
            let times = [
                time_lookups(&flat, &sequence),
                time_lookups(&radix, &sequence),
                time_lookups(&rbtree, &sequence),
                time_lookups(&folded, &sequence),
            ];
            for (b, t) in best.iter_mut().zip(times) {
                *b = (b.0.min(t.0), b.1.min(t.1));
            }
        }
        let mut unstashed = None;
        if folded.displaced() > 0 {
            let kept: Vec<Cid> =
                sequence.iter().copied().filter(|&cid| !folded.is_displaced(cid)).collect();
            let mut pair = (f64::INFINITY, f64::INFINITY);
            for _ in 0..PASSES {
                pair.0 = pair.0.min(time_lookups(&folded, &kept).0);
                pair.1 = pair.1.min(time_lookups(&flat, &kept).0);
            }
            unstashed = Some(pair);
        }
        Ok(Timings {
            best,
            displaced: folded.displaced() as f64 / live.len() as f64,
            unstashed,
            shape_floor,
        })
    }
}

/// What [`Stores::time`] measured.
struct Timings {
    /// Best (dependent, independent) nanoseconds per lookup, in `STRUCTURES` order.
    best: [(f64, f64); 4],
    /// The folded store's fraction of stashed CIDs.
    displaced: f64,
    /// When it stashed any, the best dependent (folded, flat) nanoseconds on the same
    /// sequence without the stashed CIDs: the two-load lookup apart from the stash.
    unstashed: Option<(f64, f64)>,
    /// Best dependent nanoseconds through bare slices: [one load, one masked load, one
    /// load at a shifted and masked index, two loads and an XOR]; see `cid_floor`.
    shape_floor: [f64; 4],
}

/// Timing passes; each structure keeps its best.
const PASSES: usize = 7;

fn fill<S: CidStore<u32>>(store: &mut S, live: &[Cid]) -> Result<(), String> {
    for &cid in live {
        store.insert(cid, cid).map_err(|e| format!("insert {cid}: {e}"))?;
    }
    Ok(())
}

/// The predefined world and self CIDs, then the trace; returns (mean density, mean bytes)
/// sampled after each insert.
fn replay(store: &mut dyn CidStore<u32>, trace: &[StoreEvent]) -> Result<(f64, f64), String> {
    for cid in [0, 1] {
        store.insert(cid, cid).map_err(|e| format!("insert {cid}: {e}"))?;
    }
    let (mut density, mut bytes, mut samples) = (0.0, 0.0, 0usize);
    for event in trace {
        match *event {
            StoreEvent::Insert(cid) => {
                store.insert(cid, cid).map_err(|e| format!("insert {cid}: {e}"))?;
                density += store.len() as f64 / store.cells().max(1) as f64;
                bytes += store.bytes() as f64;
                samples += 1;
            }
            StoreEvent::Remove(cid) => {
                store.remove(cid).ok_or_else(|| format!("remove {cid}: not stored"))?;
            }
        }
    }
    let samples = samples.max(1) as f64;
    Ok((density / samples, bytes / samples))
}

fn final_live(trace: &[StoreEvent]) -> Vec<Cid> {
    let mut live = std::collections::BTreeSet::from([0, 1]);
    for event in trace {
        match *event {
            StoreEvent::Insert(cid) => live.insert(cid),
            StoreEvent::Remove(cid) => live.remove(&cid),
        };
    }
    live.into_iter().collect()
}

fn lookup_sequence(live: &[Cid], count: usize, seed: u64) -> Vec<Cid> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count).map(|_| live[rng.gen_range(0..live.len())]).collect()
}

/// Nanoseconds per lookup of `sequence` in `store`, one pass each way: (dependent,
/// independent). Dependent lookups take their key through the previous result, as a
/// message's communicator is found before the next message is matched, so they measure a
/// lookup's latency; independent ones overlap and measure throughput.
// Always inlined, whatever the number of callers: an outlined copy called the folded
// lookup instead of inlining it, about 12% slower.
#[inline(always)]
fn time_lookups<S: CidStore<u32>>(store: &S, sequence: &[Cid]) -> (f64, f64) {
    let per_lookup = |started: Instant| started.elapsed().as_nanos() as f64 / sequence.len() as f64;
    // Opaque to the optimiser, so the key really depends on the previous result.
    let zero = black_box(0u32);
    let started = Instant::now();
    let mut last = 0u32;
    for &cid in black_box(sequence) {
        last = store.get(cid ^ (last & zero)).unwrap_or(0);
    }
    black_box(last);
    let dependent = per_lookup(started);

    let started = Instant::now();
    let mut sum = 0u64;
    for &cid in black_box(sequence) {
        sum = sum.wrapping_add(u64::from(store.get(cid).unwrap_or(0)));
    }
    black_box(sum);
    (dependent, per_lookup(started))
}
