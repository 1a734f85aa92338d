//! The demo's rank-map part: how common communicators of a large world are stored, and a
//! short rank-map benchmark report.

use std::sync::atomic::AtomicU32;

use commcore::av::{Address, Ave, NodeId, ProcessGroups, TransportId};
use commcore::rankmap::{create, InterMaps, RankMap, TableArena};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::bench::{option, rankmap, report};

/// Processes of the demo's world unless `--ranks` says otherwise.
const DEFAULT_RANKS: u32 = 65_536;

/// Runs the rank-map part of the demo.
pub fn run(args: &[String]) -> Result<(), String> {
    let ranks = option(args, "--ranks")?.unwrap_or(DEFAULT_RANKS);
    if !(16..=4_000_000).contains(&ranks) || ranks % 16 != 0 {
        return Err("--ranks must be a multiple of 16 between 16 and 4,000,000".into());
    }
    communicators(ranks)?;
    println!("\n== Benchmark at {ranks} ranks (the full run: commcore bench rankmap) ==");
    let bench_args: Vec<String> =
        ["--ranks", &ranks.to_string(), "--lookup-ranks", &format!("16,4096,{ranks}")]
            .map(String::from)
            .to_vec();
    report::emit(&rankmap::run(&bench_args)?, false);
    println!(
        "\nratio < 1: a lookup through our rank map is faster than through the VC-VCRT baseline.\n\
         Instruction counts per lookup: scripts/instructions.sh rankmap"
    );
    Ok(())
}

/// Builds the communicators applications use most and prints how each is stored.
fn communicators(n: u32) -> Result<(), String> {
    println!("== Rank maps: how a communicator's ranks reach its processes ==");
    println!(
        "Every process has one address-vector entry of {} bytes (the paper's VC took 480).",
        std::mem::size_of::<Ave>()
    );
    let entries = |pg: u16, len: u32| -> Result<Vec<Ave>, String> {
        (0..len)
            .map(|l| {
                let address = Address::Inline(((pg as u64) << 40) | l as u64);
                Ave::new(address, TransportId((l % 16 != 0) as u8), NodeId(l / 16))
                    .map_err(|e| e.to_string())
            })
            .collect()
    };
    let world_av = entries(0, n)?;
    let spawned_av = entries(1, n / 16)?;
    let mut groups: ProcessGroups<'_, 4> = ProcessGroups::new();
    let world_pg = groups.register(&world_av).map_err(|e| e.to_string())?;
    let spawned_pg = groups.register(&spawned_av).map_err(|e| e.to_string())?;
    let words: Vec<AtomicU32> = (0..4 * n as usize).map(|_| AtomicU32::new(0)).collect();
    let mut arena: TableArena<'_, 64> = TableArena::new(&words);
    let world = RankMap::direct(world_pg, groups.av(world_pg));
    println!(
        "World: {n} processes on {} nodes of 16; address vector {} KiB.\n",
        n / 16,
        std::mem::size_of_val(world_av.as_slice()) / 1024
    );
    let side = (n as f64).sqrt() as u32;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut shuffled: Vec<u32> = (0..n).collect();
    shuffled.shuffle(&mut rng);
    let cases: Vec<(&str, Vec<u32>)> = vec![
        ("MPI_Comm_dup(world)", (0..n).collect()),
        ("split: second half", (n / 2..n).collect()),
        ("split: even ranks", (0..n).step_by(2).collect()),
        ("world reversed", (0..n).rev().collect()),
        (
            "top-left quarter of a 2D grid",
            (0..n).filter(|r| r % side < side / 2 && r / side < side / 2).collect(),
        ),
        ("random permutation", shuffled),
    ];
    println!(
        "{:<32} {:>8}  {:<12} {:>12} {:>14}  rank 1 →",
        "communicator", "ranks", "model", "table bytes", "VCRT bytes"
    );
    let mut maps = Vec::new();
    for (name, indirect) in cases {
        let before = arena.used_bytes();
        let map =
            create(&world, &indirect, &groups, &mut arena).map_err(|e| format!("{name}: {e}"))?;
        let (pgid, lpid) = map.translate(1).ok_or("rank 1 missing")?;
        let node = map.node(&groups, 1).ok_or("rank 1 has no entry")?;
        println!(
            "{name:<32} {:>8}  {:<12} {:>12} {:>14}  process {lpid} of group {} on node {}",
            map.size(),
            map.kind().name(),
            arena.used_bytes() - before,
            indirect.len() * 4,
            pgid.0,
            node.0
        );
        maps.push(map);
    }
    let spawned = InterMaps {
        local: create(&world, &(0..n / 16).collect::<Vec<_>>(), &groups, &mut arena)
            .map_err(|e| e.to_string())?,
        remote: RankMap::direct(spawned_pg, groups.av(spawned_pg)),
    };
    let before = arena.used_bytes();
    let merged = spawned.merge(true, &groups, &mut arena).map_err(|e| e.to_string())?;
    let last = merged.translate(merged.size() - 1).ok_or("last rank missing")?;
    println!(
        "{:<32} {:>8}  {:<12} {:>12} {:>14}  last rank is process {} of group {}",
        "merge with a spawned group",
        merged.size(),
        merged.kind().name(),
        arena.used_bytes() - before,
        merged.size() as usize * 4,
        last.1,
        last.0 .0
    );
    println!(
        "\nRegular communicators cost {} bytes each, however many ranks they have; only irregular\n\
         ones (a random order, a merge across groups) need a table, shared by their views and dups.",
        std::mem::size_of::<RankMap<'_>>()
    );
    for map in maps.into_iter().chain([merged]) {
        map.free(&mut arena).map_err(|e| e.to_string())?;
    }
    spawned.free(&mut arena).map_err(|e| e.to_string())?;
    if arena.used_bytes() != 0 {
        return Err("tables were not returned to the arena".into());
    }
    Ok(())
}
