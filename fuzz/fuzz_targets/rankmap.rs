#![no_main]
//! Arbitrary sequences of rank-map creations (regular and raw indirect mappings, explicit
//! process lists, dups, inter-communicator merges), translations and frees, each compared
//! with a naive reference: a plain list of `(pgid, lpid)` per communicator. At the end every
//! map is freed and the arena must be empty.

use std::sync::atomic::AtomicU32;

use arbitrary::{Arbitrary, Unstructured};
use commcore::av::{Address, Ave, NodeId, Pgid, ProcessGroups, TransportId};
use commcore::rankmap::{create, from_processes, InterMaps, RankMap, RankMapError, TableArena};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    /// An indirect mapping `offset + (i / block) × step + i mod block` (block 0: stride).
    Regular {
        parent: u8,
        offset: u16,
        step: i16,
        block: u8,
        len: u16,
    },
    /// Raw parent ranks, possibly out of range.
    Raw {
        parent: u8,
        ranks: Vec<u16>,
    },
    /// Explicit processes, possibly from both groups or unknown ones.
    Processes {
        members: Vec<(u8, u16)>,
    },
    Dup {
        parent: u8,
    },
    Merge {
        a: u8,
        b: u8,
        a_first: bool,
    },
    Free {
        which: u8,
    },
    Translate {
        which: u8,
        rank: u32,
    },
}

type Reference = Vec<(u16, u32)>;

fn address(pgid: u16, lpid: u32) -> u64 {
    ((pgid as u64) << 32) | lpid as u64
}

fn check(map: &RankMap<'_>, reference: &Reference, groups: &ProcessGroups<'_, 4>) {
    assert_eq!(map.size() as usize, reference.len());
    for (rank, &(pgid, lpid)) in reference.iter().enumerate() {
        assert_eq!(map.translate(rank as u32), Some((Pgid(pgid), lpid)), "{:?}", map.kind());
        let entry = map.entry(groups, rank as u32).expect("entry");
        assert_eq!(entry.address_word(), address(pgid, lpid));
        assert_eq!(map.address_word(groups, rank as u32), Some(address(pgid, lpid)));
    }
    assert_eq!(map.translate(map.size()), None);
    // The batch path agrees with one-at-a-time, and fails at the same first bad rank.
    let mut ranks: Vec<u32> = (0..map.size()).rev().collect();
    let mut out = vec![(Pgid(0), 0u32); ranks.len()];
    map.translate_batch(&ranks, &mut out).unwrap();
    for (&rank, &process) in ranks.iter().zip(&out) {
        assert_eq!(map.translate(rank), Some(process), "{:?}", map.kind());
    }
    ranks.push(map.size());
    out.push((Pgid(0), 0));
    let refused = map.translate_batch(&ranks, &mut out);
    let index = ranks.len() - 1;
    assert_eq!(
        refused,
        Err(RankMapError::RankOutOfRange { index, rank: map.size(), size: map.size() })
    );
    assert!(map.entry(groups, map.size()).is_none());
    assert!(map.address_word(groups, map.size()).is_none());
}

fn pick(live: &[(RankMap<'_>, Reference)], i: u8) -> usize {
    i as usize % live.len()
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let sizes = [u.int_in_range(0..=300u32).unwrap_or(0), u.int_in_range(1..=40u32).unwrap_or(1)];
    let avs: Vec<Vec<Ave>> = sizes
        .iter()
        .enumerate()
        .map(|(pg, &n)| {
            (0..n)
                .map(|l| {
                    Ave::new(Address::Inline(address(pg as u16, l)), TransportId(0), NodeId(l))
                        .unwrap()
                })
                .collect()
        })
        .collect();
    let mut groups: ProcessGroups<'_, 4> = ProcessGroups::new();
    for av in &avs {
        groups.register(av).unwrap();
    }
    let words: Vec<AtomicU32> = (0..2048).map(|_| AtomicU32::new(0)).collect();
    let mut arena: TableArena<'_, 16> = TableArena::new(&words);
    let mut live: Vec<(RankMap<'_>, Reference)> = vec![
        (RankMap::direct(Pgid(0), groups.av(Pgid(0))), (0..sizes[0]).map(|l| (0, l)).collect()),
        (RankMap::direct(Pgid(1), groups.av(Pgid(1))), (0..sizes[1]).map(|l| (1, l)).collect()),
    ];
    let arena_error = |e: &RankMapError| {
        matches!(e, RankMapError::ArenaFull { .. } | RankMapError::ArenaTablesFull)
    };
    let Ok(ops) = Vec::<Op>::arbitrary(&mut u) else { return };
    for op in ops.into_iter().take(64) {
        match op {
            Op::Regular { parent, offset, step, block, len } => {
                let p = pick(&live, parent);
                let psize = live[p].0.size() as i64;
                let (o, s, b) = (offset as i64, step as i64, block as i64);
                let ind: Vec<i64> = (0..len.min(512) as i64)
                    .map(|i| if b == 0 { o + i * s } else { o + (i / b) * s + i % b })
                    .collect();
                if ind.iter().any(|&r| r < 0 || r >= psize) {
                    continue;
                }
                let ind: Vec<u32> = ind.into_iter().map(|r| r as u32).collect();
                let reference: Reference = ind.iter().map(|&r| live[p].1[r as usize]).collect();
                match create(&live[p].0, &ind, &groups, &mut arena) {
                    Ok(map) => live.push((map, reference)),
                    Err(e) => assert!(arena_error(&e), "{e}"),
                }
            }
            Op::Raw { parent, ranks } => {
                let p = pick(&live, parent);
                let ind: Vec<u32> = ranks.iter().map(|&r| r as u32).collect();
                let reference: Option<Reference> =
                    ind.iter().map(|&r| live[p].1.get(r as usize).copied()).collect();
                match (create(&live[p].0, &ind, &groups, &mut arena), reference) {
                    (Ok(map), Some(reference)) => live.push((map, reference)),
                    (Err(RankMapError::ParentRankOutOfRange { .. }), None) => {}
                    (Err(e), Some(_)) => assert!(arena_error(&e), "{e}"),
                    (Ok(_), None) => panic!("out-of-range indirect mapping accepted"),
                    (Err(e), None) => assert!(arena_error(&e), "{e}"),
                }
            }
            Op::Processes { members } => {
                let members: Vec<(Pgid, u32)> =
                    members.iter().map(|&(p, l)| (Pgid(p as u16 % 3), l as u32)).collect();
                let valid = members
                    .iter()
                    .all(|&(p, l)| (p.0 as usize) < sizes.len() && l < sizes[p.0 as usize]);
                match from_processes(&members, &groups, &mut arena) {
                    Ok(map) => {
                        assert!(valid, "invalid processes accepted");
                        live.push((map, members.iter().map(|&(p, l)| (p.0, l)).collect()));
                    }
                    Err(e) => assert!(!valid || arena_error(&e), "{e}"),
                }
            }
            Op::Dup { parent } => {
                let p = pick(&live, parent);
                match live[p].0.dup(&mut arena) {
                    Ok(map) => {
                        let reference = live[p].1.clone();
                        live.push((map, reference));
                    }
                    Err(e) => assert!(arena_error(&e), "{e}"),
                }
            }
            Op::Merge { a, b, a_first } => {
                let (a, b) = (pick(&live, a), pick(&live, b));
                let (Ok(local), Ok(remote)) =
                    (live[a].0.dup(&mut arena), live[b].0.dup(&mut arena))
                else {
                    continue;
                };
                let inter = InterMaps { local, remote };
                let (x, y) =
                    if a_first { (&live[a].1, &live[b].1) } else { (&live[b].1, &live[a].1) };
                let reference: Reference = x.iter().chain(y).copied().collect();
                match inter.merge(a_first, &groups, &mut arena) {
                    Ok(map) => live.push((map, reference)),
                    Err(e) => assert!(arena_error(&e), "{e}"),
                }
                inter.free(&mut arena).unwrap();
            }
            Op::Free { which } => {
                if live.len() > 2 {
                    let i = 2 + which as usize % (live.len() - 2);
                    live.swap_remove(i).0.free(&mut arena).unwrap();
                }
            }
            Op::Translate { which, rank } => {
                let (map, reference) = &live[pick(&live, which)];
                let expected = reference.get(rank as usize).map(|&(p, l)| (Pgid(p), l));
                assert_eq!(map.translate(rank), expected);
                let expected = expected.map(|(p, l)| address(p.0, l));
                assert_eq!(map.entry(&groups, rank).map(Ave::address_word), expected);
                assert_eq!(map.address_word(&groups, rank), expected);
            }
        }
        if let Some((map, reference)) = live.last() {
            check(map, reference, &groups);
        }
    }
    for (map, reference) in &live {
        check(map, reference, &groups);
    }
    for (map, _) in live {
        map.free(&mut arena).unwrap();
    }
    assert_eq!(arena.used_bytes(), 0);
});
