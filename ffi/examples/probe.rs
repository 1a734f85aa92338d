//! The Rust side of `scripts/instructions.sh ffi`: the same work as `ffi/bench/probe.c`
//! does through the C ABI, through core's Rust API, in non-inlined probes that callgrind
//! counts.
//!
//!   probe translate MODEL CALLS   translate CALLS ranks round-robin through one map
//!   probe step OP RANKS REPS      step every rank's schedule of OP (allreduce:
//!                                 recursive doubling, bcast: binomial) REPS times;
//!                                 prints the probe's calls (END included)
//!
//! The maps: a world of 1024 processes (group 0) and a second group of 64; direct is the
//! world, offset ranks 100..612, stride the odd ranks, blockstride blocks of 4 every 16,
//! lut a shuffle of 512 ranks, mlut alternating ranks of the two groups.

use std::hint::black_box;
use std::sync::atomic::AtomicU32;

use commcore_core::av::{Address, Ave, Lpid, NodeId, Pgid, ProcessGroups, TransportId};
use commcore_core::coll::{Algorithm, CollArgs, CollOp, Ctx, Datatype, Schedule, Step};
use commcore_core::rankmap::{create, from_processes, RankMap, TableArena};

/// The translation probe: one call of the Rust API.
#[inline(never)]
fn probe_translate(map: &RankMap<'_>, rank: u32) -> Option<(Pgid, Lpid)> {
    map.translate(rank)
}

/// The schedule probe: one step of the Rust iterator.
#[inline(never)]
fn probe_step(schedule: &mut Schedule<'_>) -> Option<Step> {
    schedule.next()
}

/// The indirect array (child rank → world rank) of each model, as `probe.c` builds it.
pub fn indirect(model: &str) -> Option<Vec<u32>> {
    Some(match model {
        "offset" => (100..612).collect(),
        "stride" => (0..512).map(|i| 2 * i + 1).collect(),
        "blockstride" => (0..64).flat_map(|b| (0..4).map(move |i| b * 16 + i)).collect(),
        "lut" => (0..512u32).map(|i| (i * 389 + 7) % 1024).collect(),
        _ => return None,
    })
}

fn translate(model: &str, calls: u64) -> Result<u64, String> {
    let world_av: Vec<Ave> = (0..1024u64).map(entry).collect();
    let other_av: Vec<Ave> = (0..64u64).map(entry).collect();
    let mut groups: ProcessGroups<'_, 64> = ProcessGroups::new();
    let world_id = groups.register(&world_av).map_err(|e| e.to_string())?;
    let other_id = groups.register(&other_av).map_err(|e| e.to_string())?;
    let words: Vec<AtomicU32> = (0..4096).map(|_| AtomicU32::new(0)).collect();
    let mut arena: TableArena<'_, 4096> = TableArena::new(&words);
    let world = RankMap::direct(world_id, groups.av(world_id));
    let map = match (model, indirect(model)) {
        ("direct", _) => world,
        ("mlut", _) => {
            let members: Vec<(Pgid, Lpid)> = (0..128u32)
                .map(|i| if i % 2 == 0 { (world_id, i * 3) } else { (other_id, i / 2) })
                .collect();
            from_processes(&members, &groups, &mut arena).map_err(|e| e.to_string())?
        }
        (_, Some(indirect)) => {
            create(&world, &indirect, &groups, &mut arena).map_err(|e| e.to_string())?
        }
        _ => return Err(format!("unknown model {model}")),
    };
    if map.kind().name() != model {
        return Err(format!("{model} built a {} map", map.kind().name()));
    }
    let size = map.size();
    let mut sum = 0u64;
    for i in 0..calls {
        let (pgid, lpid) = probe_translate(black_box(&map), (i % size as u64) as u32)
            .ok_or("rank out of range")?;
        sum = sum.wrapping_add(pgid.0 as u64 + lpid as u64);
    }
    Ok(sum)
}

fn entry(lpid: u64) -> Ave {
    Ave::new(Address::Inline(0x1000 + lpid), TransportId(0), NodeId(lpid as u32 / 8))
        .unwrap_or(Ave::EMPTY)
}

fn step(op: &str, ranks: u32, reps: u64) -> Result<u64, String> {
    let (op, alg) = match op {
        "allreduce" => (CollOp::Allreduce, Algorithm::RecursiveDoubling),
        "bcast" => (CollOp::Bcast, Algorithm::Binomial),
        _ => return Err(format!("unknown operation {op}")),
    };
    let args = CollArgs::new(1024, Datatype::F64);
    // Calls of the probe, the last of each schedule included (it returns `None`).
    let mut calls = 0u64;
    for _ in 0..reps {
        for rank in 0..ranks {
            let ctx = Ctx::new(rank, ranks).map_err(|e| e.to_string())?;
            let mut schedule = Schedule::intra(op, alg, ctx, &args).map_err(|e| e.to_string())?;
            calls += 1;
            while probe_step(black_box(&mut schedule)).is_some() {
                calls += 1;
            }
        }
    }
    Ok(calls)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let number = |i: usize| args.get(i).and_then(|v| v.parse::<u64>().ok());
    let result = match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("translate"), Some(model)) => translate(model, number(3).unwrap_or(1_000_000)),
        (Some("step"), Some(op)) => {
            step(op, number(3).unwrap_or(64) as u32, number(4).unwrap_or(100))
        }
        _ => Err("usage: probe translate MODEL CALLS | probe step OP RANKS REPS".into()),
    };
    match result {
        Ok(check) => println!("{check}"),
        Err(e) => {
            eprintln!("probe: {e}");
            std::process::exit(1);
        }
    }
}
