//! `commcore bench rankmap`: memory, lookup time and creation time of rank maps, against the
//! paper's VC-VCRT model built in the same run ([`vc_vcrt`]).
//!
//! `rank_of` rows: what a receiver pays per message to learn the sender's communicator rank,
//! per model ([`rank_of`]).
//!
//! Options: `--ranks N` (memory and creation cases, default 786,432), `--lookup-ranks
//! A,B,C` (default 16,4096,786432), `--lookups N` (per timed repetition, default 2²¹),
//! `--probe MODEL [--calls N] [--via entry|address_word]` (run only the non-inlined probe of
//! one model, or `baseline`, N times, through `RankMap::entry` (the default),
//! `RankMap::address_word`, or `batch` (`RankMap::translate_batch`, 64 ranks a call):
//! what `scripts/instructions.sh` counts).

pub mod rank_of;
pub mod vc_vcrt;

use std::hint::black_box;
use std::sync::atomic::AtomicU32;
use std::time::Instant;

use commcore::av::{Address, Ave, NodeId, Pgid, ProcessGroups, TransportId};
use commcore::rankmap::{create, from_processes, ModelKind, RankMap, TableArena};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::option;
use super::stats::median;
use vc_vcrt::{Vc, VcComm, VcTable};

/// Process groups the benchmark registers (its own world and one spawned group).
pub const GROUPS: usize = 4;
/// Tables an arena of the benchmark tracks.
pub const TABLES: usize = 1024;
/// The models measured, in report order.
pub const MODELS: [&str; 6] = ["direct", "offset", "stride", "blockstride", "lut", "mlut"];

/// Lookups per timed repetition by default (at least one sweep over the communicator).
const LOOKUPS_PER_REP: usize = 1 << 21;

/// Sweeps over the communicator per timed repetition at least: the paper measured a long
/// steady state (millions of puts per rank after a warm-up), not the first pass.
const MIN_SWEEPS: usize = 8;

/// The instruction probe of AV-Rankmap: translate a rank and load its entry's address.
#[inline(never)]
pub fn probe_rankmap(map: &RankMap<'_>, groups: &ProcessGroups<'_, GROUPS>, rank: u32) -> u64 {
    map.entry(groups, rank).map_or(0, Ave::address_word)
}

/// The same probe through [`RankMap::address_word`], which loads the address inside each arm
/// of the match (the compiler then folds the entry's address into the load), as the
/// baseline's lookup returns its address.
#[inline(never)]
pub fn probe_rankmap_address(
    map: &RankMap<'_>,
    groups: &ProcessGroups<'_, GROUPS>,
    rank: u32,
) -> u64 {
    map.address_word(groups, rank).unwrap_or(0)
}

/// Ranks the batch probe translates per call: a 64-message window's peers.
pub const BATCH: usize = 64;

/// The batch probe: one window of ranks into process words (`pgid << 32 | lpid`, as the C
/// ABI writes them) through [`RankMap::translate_batch`].
#[inline(never)]
pub fn probe_rankmap_batch(map: &RankMap<'_>, ranks: &[u32], out: &mut [u64]) -> bool {
    map.translate_batch(ranks, out).is_ok()
}

/// The instruction probe of the baseline: VCRT index, global VC pointer, the VC's address.
#[inline(never)]
pub fn probe_vc_vcrt(table: &VcTable<'_>, comm: &VcComm, rank: u32) -> u64 {
    vc_vcrt::lookup(table, comm, rank).unwrap_or(0)
}

/// Runs the benchmark.
pub fn run(args: &[String]) -> Result<Value, String> {
    if let Some(model) = option::<String>(args, "--probe")? {
        let calls = option(args, "--calls")?.unwrap_or(1_000_000u64);
        let ranks = option(args, "--ranks")?.unwrap_or(4096u32);
        let via = option::<String>(args, "--via")?;
        let via = match via.as_deref() {
            None | Some("entry") => Via::Entry,
            Some("address_word") => Via::AddressWord,
            Some("batch") => Via::Batch,
            Some(other) => {
                return Err(format!("--via: {other:?} is not entry, address_word or batch"))
            }
        };
        return probe(&model, ranks, calls, via);
    }
    let ranks = option(args, "--ranks")?.unwrap_or(786_432u32);
    let lookup_ranks = match option::<String>(args, "--lookup-ranks")? {
        None => vec![16, 4096, 786_432],
        Some(list) => list
            .split(',')
            .map(|s| s.parse::<u32>().map_err(|_| format!("--lookup-ranks: cannot parse {s:?}")))
            .collect::<Result<Vec<_>, _>>()?,
    };
    if ranks < 2 || lookup_ranks.iter().any(|&r| r < 2) {
        return Err("rank counts must be at least 2".into());
    }
    let per_rep = option(args, "--lookups")?.unwrap_or(LOOKUPS_PER_REP);
    let (memory, creation) = memory_and_creation(ranks)?;
    let mut lookup = Vec::new();
    let mut rank_of = Vec::new();
    for &n in &lookup_ranks {
        let (rows, receives) = lookups(n, per_rep)?;
        lookup.extend(rows);
        rank_of.extend(receives);
    }
    Ok(json!({
        "ave_bytes": std::mem::size_of::<Ave>(),
        "vc_bytes": std::mem::size_of::<Vc>(),
        "rankmap_bytes_per_comm": std::mem::size_of::<RankMap<'static>>(),
        "memory": memory,
        "lookup": lookup,
        "rank_of": rank_of,
        "create": creation,
    }))
}

/// Address-vector entries of a group: process `lpid` at a distinct address, 16 a node.
fn address_vector(pgid: u16, len: u32) -> Result<Vec<Ave>, String> {
    (0..len)
        .map(|lpid| {
            let address = Address::Inline(((pgid as u64) << 40) | (lpid as u64 * 64 + 7));
            Ave::new(address, TransportId((lpid % 2) as u8), NodeId(lpid / 16))
                .map_err(|e| e.to_string())
        })
        .collect()
}

fn arena_words(words: usize) -> Vec<AtomicU32> {
    (0..words).map(|_| AtomicU32::new(0)).collect()
}

/// The processes of one measured communicator of `n` ranks over a world of `2n` processes
/// (group 0): half of the world, as in the paper. The mlut communicator merges `n/2` random
/// world processes with a spawned group of `n − n/2` (group 1), all in random order.
fn members(model: &str, n: u32, rng: &mut ChaCha8Rng) -> Result<Vec<(Pgid, u32)>, String> {
    let world = |lpids: Vec<u32>| lpids.into_iter().map(|l| (Pgid(0), l)).collect::<Vec<_>>();
    Ok(match model {
        "direct" => world((0..n).collect()),
        "offset" => world((n..2 * n).collect()),
        "stride" => world((0..2 * n).step_by(2).collect()),
        "blockstride" => world((0..2 * n).filter(|r| r % 8 < 4).collect()),
        "lut" => {
            let mut all: Vec<u32> = (0..2 * n).collect();
            all.shuffle(rng);
            all.truncate(n as usize);
            world(all)
        }
        "mlut" => {
            let mut mine: Vec<u32> = (0..2 * n).collect();
            mine.shuffle(rng);
            let half = (n / 2) as usize;
            let mut all: Vec<(Pgid, u32)> = mine[..half].iter().map(|&l| (Pgid(0), l)).collect();
            all.extend((0..n - n / 2).map(|l| (Pgid(1), l)));
            all.shuffle(rng);
            all
        }
        other => return Err(format!("unknown model {other:?} (one of {MODELS:?} or baseline)")),
    })
}

/// Everything a lookup measurement at `n` ranks reads: both sides over the same processes.
struct LookupWorld {
    avs: [Vec<Ave>; 2],
    vcs: Vec<Vc>,
    words: Vec<AtomicU32>,
}

impl LookupWorld {
    fn new(n: u32) -> Result<Self, String> {
        let avs = [address_vector(0, 2 * n)?, address_vector(1, n - n / 2)?];
        let vcs = avs
            .iter()
            .enumerate()
            .flat_map(|(pg, av)| {
                av.iter()
                    .enumerate()
                    .map(move |(l, e)| Vc::new(e.address_word(), pg as u64, l as u32, e.node().0))
            })
            .collect();
        Ok(Self { avs, vcs, words: arena_words(2 * n as usize + 64) })
    }

    /// The global index of a process in the VC table.
    fn vc_index(&self, (pgid, lpid): (Pgid, u32)) -> u32 {
        if pgid.0 == 0 {
            lpid
        } else {
            self.avs[0].len() as u32 + lpid
        }
    }
}

/// Builds both sides of `model` at `n` ranks and checks that they name the same processes.
fn build<'a>(
    model: &str,
    n: u32,
    w: &'a LookupWorld,
    groups: &ProcessGroups<'a, GROUPS>,
    arena: &mut TableArena<'a, TABLES>,
    table: &VcTable<'_>,
) -> Result<(RankMap<'a>, VcComm), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
    let procs = members(model, n, &mut rng)?;
    let map = if model == "mlut" {
        from_processes(&procs, groups, arena)
    } else {
        let world = RankMap::direct(Pgid(0), groups.av(Pgid(0)));
        let indirect: Vec<u32> = procs.iter().map(|p| p.1).collect();
        create(&world, &indirect, groups, arena)
    }
    .map_err(|e| format!("{model}: {e}"))?;
    if map.kind().name() != model {
        return Err(format!("{model} communicator came out as {:?}", map.kind()));
    }
    let comm = VcComm { vcrt: procs.iter().map(|&p| w.vc_index(p)).collect() };
    for rank in 0..n {
        let ours = map.entry(groups, rank).map(Ave::address_word);
        let theirs = vc_vcrt::lookup(table, &comm, rank);
        if ours.is_none() || ours != theirs {
            return Err(format!("{model} rank {rank}: {ours:?} != baseline {theirs:?}"));
        }
    }
    Ok((map, comm))
}

fn registry(w: &LookupWorld) -> Result<ProcessGroups<'_, GROUPS>, String> {
    let mut groups = ProcessGroups::new();
    for av in &w.avs {
        groups.register(av).map_err(|e| e.to_string())?;
    }
    Ok(groups)
}

/// What a probe call goes through.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    Entry,
    AddressWord,
    /// [`BATCH`] ranks a call.
    Batch,
}

/// Runs one model's probe `calls` times round-robin over `ranks` ranks.
fn probe(model: &str, ranks: u32, calls: u64, via: Via) -> Result<Value, String> {
    let w = LookupWorld::new(ranks)?;
    let groups = registry(&w)?;
    let mut arena = TableArena::new(&w.words);
    let table = VcTable { vcs: w.vcs.iter().collect() };
    let (map, comm) = build(
        if model == "baseline" { "direct" } else { model },
        ranks,
        &w,
        &groups,
        &mut arena,
        &table,
    )?;
    if via == Via::Batch {
        return probe_batches(model, &map, calls);
    }
    let mut sum = 0u64;
    let mut rank = 0;
    for _ in 0..calls {
        sum = sum.wrapping_add(if model == "baseline" {
            probe_vc_vcrt(black_box(&table), black_box(&comm), rank)
        } else if via == Via::AddressWord {
            probe_rankmap_address(black_box(&map), black_box(&groups), rank)
        } else {
            probe_rankmap(black_box(&map), black_box(&groups), rank)
        });
        rank += 1;
        if rank == ranks {
            rank = 0;
        }
    }
    let via = if via == Via::AddressWord { "address_word" } else { "entry" };
    Ok(json!({ "probe": model, "via": via, "ranks": ranks, "calls": calls, "checksum": sum }))
}

/// The batch probe `calls` times, each over the next [`BATCH`] ranks round-robin.
fn probe_batches(model: &str, map: &RankMap<'_>, calls: u64) -> Result<Value, String> {
    if model == "baseline" {
        return Err("the baseline has no batch probe".into());
    }
    let n = map.size() as usize;
    let order: Vec<u32> = (0..n.div_ceil(BATCH) * BATCH).map(|i| (i % n) as u32).collect();
    let mut windows = order.chunks_exact(BATCH).cycle();
    let mut out = [0u64; BATCH];
    let mut sum = 0u64;
    for _ in 0..calls {
        let window = windows.next().ok_or("no ranks")?;
        if !probe_rankmap_batch(black_box(map), black_box(window), black_box(&mut out)) {
            return Err(format!("{model}: a batch was refused"));
        }
        sum = out.iter().fold(sum, |s, &w| s.wrapping_add(w));
    }
    Ok(json!({
        "probe": model, "via": "batch", "ranks": n, "calls": calls, "batch": BATCH, "checksum": sum
    }))
}

/// One timed repetition: `rounds` round-robin sweeps over all ranks. The map and the registry
/// are opaque to the optimiser at every lookup, as the baseline's VCRT and global table are,
/// so each lookup loads what an MPI call would (the model's `match` runs every time).
#[inline(never)]
fn sweep_rankmap(map: &RankMap<'_>, groups: &ProcessGroups<'_, GROUPS>, rounds: usize) -> u64 {
    let mut sum = 0u64;
    for _ in 0..rounds {
        for rank in 0..map.size() {
            let (map, groups) = black_box((map, groups));
            sum = sum.wrapping_add(map.entry(groups, rank).map_or(0, Ave::address_word));
        }
    }
    sum
}

/// The baseline's repetition, the same way.
#[inline(never)]
fn sweep_vc_vcrt(table: &VcTable<'_>, comm: &VcComm, rounds: usize) -> u64 {
    let mut sum = 0u64;
    for _ in 0..rounds {
        for rank in 0..comm.vcrt.len() as u32 {
            let (table, comm) = black_box((table, comm));
            sum = sum.wrapping_add(vc_vcrt::lookup(table, comm, rank).unwrap_or(0));
        }
    }
    sum
}

/// Lookup time of every model at `n` ranks, against the baseline in alternating repetitions
/// (best of each after a warm-up sweep); and the receiver's cost of the sender's rank per
/// model, against the direct model's in alternating repetitions.
fn lookups(n: u32, per_rep: usize) -> Result<(Vec<Value>, Vec<Value>), String> {
    let w = LookupWorld::new(n)?;
    let groups = registry(&w)?;
    let mut arena = TableArena::new(&w.words);
    let table = VcTable { vcs: w.vcs.iter().collect() };
    let rounds = (per_rep / n as usize).max(MIN_SWEEPS);
    let reps = if n >= 100_000 { 5 } else { 31 };
    let mut rows = Vec::new();
    let mut receives = Vec::new();
    let headers = rank_of::headers(n);
    for model in MODELS {
        let (map, comm) = build(model, n, &w, &groups, &mut arena, &table)?;
        let expected = sweep_rankmap(&map, &groups, 1);
        if sweep_vc_vcrt(&table, &comm, 1) != expected {
            return Err(format!("{model}: the two sides disagree"));
        }
        let (mut ours, mut theirs) = (f64::MAX, f64::MAX);
        for _ in 0..reps {
            // Each side's sweep evicts the other's data; one untimed sweep warms the caches
            // again before each timed repetition, as the paper warmed up before measuring.
            black_box(sweep_vc_vcrt(&table, &comm, 1));
            let t = Instant::now();
            black_box(sweep_vc_vcrt(&table, &comm, rounds));
            theirs = theirs.min(t.elapsed().as_nanos() as f64);
            black_box(sweep_rankmap(&map, &groups, 1));
            let t = Instant::now();
            black_box(sweep_rankmap(&map, &groups, rounds));
            ours = ours.min(t.elapsed().as_nanos() as f64);
        }
        let lookups = (rounds * n as usize) as f64;
        let (ours, theirs) = (ours / lookups, theirs / lookups);
        rows.push(json!({
            "model": model,
            "ranks": n,
            "ns_per_lookup": round3(ours),
            "vc_vcrt_ns_per_lookup": round3(theirs),
            "ratio": round3(ours / theirs),
        }));
        receives.push(rank_of_row(model, &map, &headers, rounds, reps)?);
        map.free(&mut arena).map_err(|e| e.to_string())?;
    }
    if arena.used_bytes() != 0 {
        return Err("lookup tables were not returned to the arena".into());
    }
    Ok((rows, receives))
}

/// The `rank_of` row of `model`: the header-field read a receive does, timed against the
/// same read for the direct model in alternating repetitions, and the removed scan.
fn rank_of_row(
    model: &str,
    map: &RankMap<'_>,
    headers: &[[u8; commcore::wire::HEADER_LEN]],
    rounds: usize,
    reps: usize,
) -> Result<Value, String> {
    let n = map.size();
    let expected = (0..u64::from(n)).sum::<u64>();
    if rank_of::sweep(headers, 1) != expected {
        return Err(format!("{model}: the headers do not name every sender once"));
    }
    let (mut ours, mut direct) = (f64::MAX, f64::MAX);
    for _ in 0..reps {
        // The direct model's receive reads the same field of the same headers: the sender
        // wrote its own rank, whatever the model.
        black_box(rank_of::sweep(headers, 1));
        let t = Instant::now();
        black_box(rank_of::sweep(headers, rounds));
        direct = direct.min(t.elapsed().as_nanos() as f64);
        black_box(rank_of::sweep(headers, 1));
        let t = Instant::now();
        black_box(rank_of::sweep(headers, rounds));
        ours = ours.min(t.elapsed().as_nanos() as f64);
    }
    let receives = (rounds * n as usize) as f64;
    let (ours, direct) = (ours / receives, direct / receives);
    Ok(json!({
        "model": model,
        "ranks": n,
        "ns_per_receive": round3(ours),
        "direct_ns_per_receive": round3(direct),
        "ratio": round3(ours / direct),
        "scan_ns_per_receive_before": round3(rank_of::scan_ns(map, u64::from(n))),
    }))
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The memory cases: (pattern, communicators, child of world as an indirect mapping).
fn memory_cases(n: u32) -> [(&'static str, usize, Vec<u32>); 4] {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let mut random: Vec<u32> = (0..n).collect();
    random.shuffle(&mut rng);
    [
        ("odd_even_split", 100, (0..n).step_by(2).collect()),
        ("dup", 86, (0..n).collect()),
        ("reversed", 10, (0..n).rev().collect()),
        ("random", 10, random),
    ]
}

/// Memory of each case (our maps and the baseline's VCs and VCRTs, all built) and the time
/// our creation takes per rank.
fn memory_and_creation(n: u32) -> Result<(Vec<Value>, Vec<Value>), String> {
    let av = address_vector(0, n)?;
    let vcs: Vec<Vc> = av
        .iter()
        .enumerate()
        .map(|(l, e)| Vc::new(e.address_word(), 0, l as u32, e.node().0))
        .collect();
    let table = VcTable { vcs: vcs.iter().collect() };
    let mut groups: ProcessGroups<'_, GROUPS> = ProcessGroups::new();
    let pgid = groups.register(&av).map_err(|e| e.to_string())?;
    let words = arena_words(10 * n as usize + 64);
    let mut arena: TableArena<'_, TABLES> = TableArena::new(&words);
    let world = RankMap::direct(pgid, groups.av(pgid));
    let world_vcrt = VcComm { vcrt: (0..n).collect() };
    let (mut memory, mut creation) = (Vec::new(), Vec::new());
    for (pattern, comms, indirect) in memory_cases(n) {
        let mut maps = Vec::with_capacity(comms);
        let mut vcrts = Vec::with_capacity(comms);
        let mut nanos = Vec::with_capacity(comms);
        for _ in 0..comms {
            let t = Instant::now();
            let map = create(&world, black_box(&indirect), &groups, &mut arena)
                .map_err(|e| format!("{pattern}: {e}"))?;
            nanos.push(t.elapsed().as_nanos() as f64);
            maps.push(map);
            vcrts.push(VcComm {
                vcrt: indirect.iter().map(|&r| world_vcrt.vcrt[r as usize]).collect(),
            });
        }
        for (map, vcrt) in maps.iter().zip(&vcrts) {
            let probe = [0, map.size() / 2, map.size() - 1];
            for rank in probe {
                let ours = map.entry(&groups, rank).map(Ave::address_word);
                if ours.is_none() || ours != vc_vcrt::lookup(&table, vcrt, rank) {
                    return Err(format!("{pattern}: rank {rank} disagrees with the baseline"));
                }
            }
        }
        let av_bytes = std::mem::size_of_val(av.as_slice());
        let rankmap_bytes = (comms + 1) * std::mem::size_of::<RankMap<'_>>();
        let lut_bytes = arena.used_bytes();
        let vc_bytes =
            vcs.len() * std::mem::size_of::<Vc>() + std::mem::size_of_val(table.vcs.as_slice());
        let vcrt_bytes: usize = vcrts.iter().chain([&world_vcrt]).map(VcComm::bytes).sum();
        memory.push(json!({
            "ranks": n,
            "comms": comms,
            "pattern": pattern,
            "model": maps[0].kind().name(),
            "av_bytes": av_bytes,
            "rankmap_bytes": rankmap_bytes,
            "lut_bytes": lut_bytes,
            "total_bytes": av_bytes + rankmap_bytes + lut_bytes,
            "vc_vcrt_bytes": vc_bytes + vcrt_bytes,
        }));
        // Every communicator of a case is the same build: the median resists other tenants
        // of the machine; the mean is printed beside it.
        let per_rank = |ns: f64| round3(ns / indirect.len() as f64);
        creation.push(json!({
            "ranks": n,
            "pattern": pattern,
            "mean_ns_per_rank": per_rank(nanos.iter().sum::<f64>() / nanos.len() as f64),
            "ns_per_rank": per_rank(median(nanos)),
        }));
        for map in maps {
            map.free(&mut arena).map_err(|e| e.to_string())?;
        }
        if arena.used_bytes() != 0 {
            return Err(format!("{pattern}: tables were not returned to the arena"));
        }
    }
    debug_assert_eq!(world.kind(), ModelKind::Direct);
    Ok((memory, creation))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn small_run_reports_every_case_and_keeps_its_invariants() {
        let report =
            run(&args(&["--ranks", "256", "--lookup-ranks", "16,64", "--lookups", "1000"]))
                .unwrap();
        assert_eq!(report["ave_bytes"], 12);
        assert_eq!(report["vc_bytes"], 480);
        let memory = report["memory"].as_array().unwrap();
        let patterns: Vec<&str> = memory.iter().map(|m| m["pattern"].as_str().unwrap()).collect();
        assert_eq!(patterns, ["odd_even_split", "dup", "reversed", "random"]);
        for m in memory {
            let total = m["av_bytes"].as_u64().unwrap()
                + m["rankmap_bytes"].as_u64().unwrap()
                + m["lut_bytes"].as_u64().unwrap();
            assert_eq!(m["total_bytes"].as_u64().unwrap(), total);
            assert!(m["vc_vcrt_bytes"].as_u64().unwrap() > total);
        }
        assert_eq!(memory[0]["lut_bytes"], 0, "odd/even splits need no table");
        assert_eq!(memory[3]["lut_bytes"], 10 * 256 * 4, "ten random luts of 256 ranks");
        let lookup = report["lookup"].as_array().unwrap();
        assert_eq!(lookup.len(), 2 * MODELS.len());
        let rank_of = report["rank_of"].as_array().unwrap();
        assert_eq!(rank_of.len(), 2 * MODELS.len());
        for row in rank_of {
            assert!(row["ns_per_receive"].as_f64().unwrap() > 0.0, "{row}");
            assert!(row["scan_ns_per_receive_before"].as_f64().is_some(), "{row}");
        }
        assert_eq!(report["create"].as_array().unwrap().len(), 4);
    }

    #[test]
    fn probes_run_for_every_model_and_reject_unknown_ones() {
        for model in MODELS.iter().chain(&["baseline"]) {
            let out = run(&args(&["--probe", model, "--calls", "100", "--ranks", "32"])).unwrap();
            assert_eq!(out["calls"], 100);
            // One sweep over all ranks: both ways sum the same addresses.
            let sweep = ["--probe", model, "--calls", "32", "--ranks", "32", "--via"];
            let entry = run(&args(&[&sweep[..], &["entry"]].concat())).unwrap();
            let address = run(&args(&[&sweep[..], &["address_word"]].concat())).unwrap();
            assert_eq!(address["checksum"], entry["checksum"], "{model}");
            assert_ne!(address["checksum"], 0, "{model}");
        }
        for model in MODELS {
            let out =
                run(&args(&["--probe", model, "--calls", "3", "--ranks", "32", "--via", "batch"]))
                    .unwrap();
            assert_ne!(out["checksum"], 0, "{model}");
        }
        assert!(run(&args(&["--probe", "baseline", "--via", "batch"])).is_err());
        assert!(run(&args(&["--probe", "lut", "--via", "nonsense"])).is_err());
        assert!(run(&args(&["--probe", "nonsense"])).is_err());
        assert!(run(&args(&["--ranks", "1"])).is_err());
        assert!(run(&args(&["--lookup-ranks", "16,x"])).is_err());
    }
}
