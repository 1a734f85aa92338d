//! Rank maps against the naive reference: every cell of Table II, every model, negative
//! strides, views of views, inter-communicators and merges, refcounting of arena tables.

use commcore::av::{NodeId, Pgid};
use commcore::rankmap::{
    create, from_group, from_processes, InterMaps, ModelKind, RankMap, RankMapError, TableArena,
};
use commcore_tests::reference::{
    address_vectors, arena_words, check, indirect, node_of, parent, register, Pattern, RefMap,
    PARENT_KINDS, PATTERNS,
};
use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const GROUPS: usize = 4;
const TABLES: usize = 256;

fn is_regular(kind: ModelKind) -> bool {
    !kind.has_table()
}

#[test]
fn every_table_two_cell_matches_the_reference() {
    let avs = address_vectors(&[96, 40]);
    let groups = register::<GROUPS>(&avs);
    let storage = arena_words(1 << 16);
    let mut arena: TableArena<'_, TABLES> = TableArena::new(&storage);
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for kind in PARENT_KINDS {
        for pattern in PATTERNS {
            for _ in 0..40 {
                let (parent_map, parent_ref) = parent(&mut rng, kind, &groups, &mut arena);
                check(&parent_map, &parent_ref, &groups)
                    .unwrap_or_else(|e| panic!("parent {kind}: {e}"));
                let tables_before = arena.tables();
                let bytes_before = arena.used_bytes();
                let ind = indirect(&mut rng, pattern, parent_map.size());
                let child = create(&parent_map, &ind, &groups, &mut arena).expect("child builds");
                let child_ref = parent_ref.create(&ind).expect("indirect in range");
                check(&child, &child_ref, &groups)
                    .unwrap_or_else(|e| panic!("{kind} x {pattern:?} {ind:?}: {e}"));
                let regular_parent =
                    matches!(kind, "direct" | "offset" | "stride" | "negative_stride");
                let affine_pattern =
                    matches!(pattern, Pattern::Offset | Pattern::Stride | Pattern::NegativeStride);
                let contiguous_parent = matches!(kind, "direct" | "offset");
                if (regular_parent && affine_pattern)
                    || (contiguous_parent && pattern == Pattern::BlockStride)
                {
                    assert!(
                        is_regular(child.kind()),
                        "{kind} x {pattern:?} gave {:?}",
                        child.kind()
                    );
                }
                if parent_map.kind().has_table() && affine_pattern {
                    // A view or a regular reduction: never a new table.
                    assert_eq!(arena.tables(), tables_before, "{kind} x {pattern:?} copied");
                    assert_eq!(arena.used_bytes(), bytes_before);
                }
                if child.pgid().is_some() {
                    assert!(!matches!(child.kind(), ModelKind::Mlut | ModelKind::MlutStrideView));
                }
                child.free(&mut arena).expect("free child");
                parent_map.free(&mut arena).expect("free parent");
                assert_eq!(arena.used_bytes(), 0, "{kind} x {pattern:?} leaked");
            }
        }
    }
}

#[test]
fn reversed_and_strided_communicators_are_regular() {
    let avs = address_vectors(&[1000]);
    let groups = register::<GROUPS>(&avs);
    let storage = arena_words(16);
    let mut arena: TableArena<'_, 4> = TableArena::new(&storage);
    let world = RankMap::direct(Pgid(0), groups.av(Pgid(0)));
    let world_ref = RefMap::world(0, 1000);
    let cases: [(Vec<u32>, ModelKind); 6] = [
        ((0..1000).rev().collect(), ModelKind::Stride),
        ((0..1000).step_by(2).collect(), ModelKind::Stride),
        ((500..1000).collect(), ModelKind::Offset),
        ((0..1000).collect(), ModelKind::Direct),
        ((0..1000).filter(|r| r % 10 < 4).collect(), ModelKind::BlockStride),
        ((0..1000).rev().filter(|r| r % 10 >= 6).collect(), ModelKind::Lut),
    ];
    for (ind, expected) in cases {
        if expected == ModelKind::Lut {
            // Descending runs have no regular form; the arena of 16 words is too small for
            // the table: an error, not a panic.
            assert!(matches!(
                create(&world, &ind, &groups, &mut arena),
                Err(RankMapError::ArenaFull { .. })
            ));
            continue;
        }
        let child = create(&world, &ind, &groups, &mut arena).unwrap();
        assert_eq!(child.kind(), expected, "{ind:?}");
        check(&child, &world_ref.create(&ind).unwrap(), &groups).unwrap();
        // Reversing an affine map gives an affine map: still no table. (A reversed
        // block-stride map has descending runs, which no regular model describes.)
        let back: Vec<u32> = (0..child.size()).rev().collect();
        let storage = arena_words(1000);
        let mut big: TableArena<'_, 1> = TableArena::new(&storage);
        let twice = create(&child, &back, &groups, &mut big).unwrap();
        assert_eq!(twice.kind().has_table(), expected == ModelKind::BlockStride);
        check(&twice, &world_ref.create(&ind).unwrap().create(&back).unwrap(), &groups).unwrap();
        twice.free(&mut big).unwrap();
    }
    assert_eq!(arena.used_bytes(), 0);
    // Descending runs through a reversed parent are ascending runs: block-stride, no table.
    let reversed =
        create(&world, &(0..1000).rev().collect::<Vec<_>>(), &groups, &mut arena).unwrap();
    let runs: Vec<u32> = (0..100).flat_map(|b| (0..4).rev().map(move |i| b * 10 + i)).collect();
    let child = create(&reversed, &runs, &groups, &mut arena).unwrap();
    assert_eq!(child.kind(), ModelKind::BlockStride);
    let reversed_ref = world_ref.create(&(0..1000).rev().collect::<Vec<_>>()).unwrap();
    check(&child, &reversed_ref.create(&runs).unwrap(), &groups).unwrap();
}

#[test]
fn views_of_views_share_one_table() {
    let avs = address_vectors(&[4096]);
    let groups = register::<GROUPS>(&avs);
    let storage = arena_words(8192);
    let mut arena: TableArena<'_, 8> = TableArena::new(&storage);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let world = RankMap::direct(Pgid(0), groups.av(Pgid(0)));
    let mut perm: Vec<u32> = (0..4096).collect();
    perm.shuffle(&mut rng);
    let lut = create(&world, &perm, &groups, &mut arena).unwrap();
    let mut reference = RefMap::world(0, 4096).create(&perm).unwrap();
    assert_eq!((lut.kind(), arena.used_bytes()), (ModelKind::Lut, 4096 * 4));
    let mut chain = vec![lut];
    // offset, stride, negative stride, offset again: each a view of the previous view.
    let steps: [fn(u32) -> Vec<u32>; 4] = [
        |n| (10..n - 10).collect(),
        |n| (1..n).step_by(3).collect(),
        |n| (0..n).rev().step_by(2).collect(),
        |n| (5..n / 2).collect(),
    ];
    for step in steps {
        let prev = chain.last().unwrap();
        let ind = step(prev.size());
        let view = create(prev, &ind, &groups, &mut arena).unwrap();
        reference = reference.create(&ind).unwrap();
        check(&view, &reference, &groups).unwrap();
        assert!(
            matches!(view.kind(), ModelKind::Lut | ModelKind::LutStrideView),
            "{:?}",
            view.kind()
        );
        assert_eq!(arena.tables(), 1, "views never copy");
        chain.push(view);
    }
    assert_eq!(arena.users(chain[0].table().unwrap()), Some(5));
    // Freed in any order, the table goes with the last user.
    let last = chain.remove(2);
    for map in chain {
        map.free(&mut arena).unwrap();
        assert_eq!(arena.used_bytes(), 4096 * 4);
    }
    last.free(&mut arena).unwrap();
    assert_eq!((arena.used_bytes(), arena.tables()), (0, 0));
}

#[test]
fn tables_are_freed_exactly_with_their_last_user() {
    let avs = address_vectors(&[512, 64]);
    let groups = register::<GROUPS>(&avs);
    let storage = arena_words(4096);
    let mut arena: TableArena<'_, 16> = TableArena::new(&storage);
    let world = RankMap::direct(Pgid(0), groups.av(Pgid(0)));
    let reversed_halves: Vec<u32> = (0..256).rev().chain(256..512).collect();
    let lut = create(&world, &reversed_halves, &groups, &mut arena).unwrap();
    assert_eq!(arena.used_bytes(), 512 * 4);
    let dup = lut.dup(&mut arena).unwrap();
    // Across the boundary of the halves: irregular, so a view (a part within one half
    // would reduce to a regular model and need no table at all).
    let view = create(&dup, &(200..300).collect::<Vec<_>>(), &groups, &mut arena).unwrap();
    assert_eq!(view.kind(), ModelKind::Lut);
    let inside = create(&dup, &(100..200).collect::<Vec<_>>(), &groups, &mut arena).unwrap();
    assert_eq!(inside.kind(), ModelKind::Stride);
    assert_eq!(arena.used_bytes(), 512 * 4, "dups and views share");
    assert_eq!(arena.users(lut.table().unwrap()), Some(3));
    let mixed: Vec<(Pgid, u32)> = (0..64).flat_map(|l| [(Pgid(0), l * 2), (Pgid(1), l)]).collect();
    let mlut = from_processes(&mixed, &groups, &mut arena).unwrap();
    assert_eq!(mlut.kind(), ModelKind::Mlut);
    assert_eq!(arena.used_bytes(), 512 * 4 + 128 * 4);
    lut.free(&mut arena).unwrap();
    dup.free(&mut arena).unwrap();
    assert_eq!(arena.used_bytes(), 512 * 4 + 128 * 4);
    view.free(&mut arena).unwrap();
    assert_eq!(arena.used_bytes(), 128 * 4);
    mlut.free(&mut arena).unwrap();
    assert_eq!(arena.used_bytes(), 0);
}

#[test]
fn intercomm_maps_merge_to_the_smallest_model() {
    let avs = address_vectors(&[300, 50]);
    let groups = register::<GROUPS>(&avs);
    let storage = arena_words(4096);
    let mut arena: TableArena<'_, 16> = TableArena::new(&storage);
    let world = RankMap::direct(Pgid(0), groups.av(Pgid(0)));
    let world_ref = RefMap::world(0, 300);
    // Two halves of one world: merged back in order it is direct again.
    let low: Vec<u32> = (0..150).collect();
    let high: Vec<u32> = (150..300).collect();
    let inter = InterMaps {
        local: create(&world, &low, &groups, &mut arena).unwrap(),
        remote: create(&world, &high, &groups, &mut arena).unwrap(),
    };
    let merged = inter.merge(true, &groups, &mut arena).unwrap();
    assert_eq!(merged.kind(), ModelKind::Direct);
    check(&merged, &world_ref, &groups).unwrap();
    // Remote first: one group, two runs → block-stride would need equal runs; a lut, never
    // an mlut.
    let swapped = inter.merge(false, &groups, &mut arena).unwrap();
    assert_eq!(swapped.pgid(), Some(Pgid(0)));
    let swapped_ref =
        RefMap::merge(&world_ref.create(&high).unwrap(), &world_ref.create(&low).unwrap());
    check(&swapped, &swapped_ref, &groups).unwrap();
    // A spawned group: local is our world's odd ranks, remote all of group 1.
    let odd: Vec<u32> = (1..300).step_by(2).collect();
    let spawned = InterMaps {
        local: create(&world, &odd, &groups, &mut arena).unwrap(),
        remote: RankMap::direct(Pgid(1), groups.av(Pgid(1))),
    };
    assert_eq!(spawned.local.kind(), ModelKind::Stride);
    let mlut = spawned.merge(false, &groups, &mut arena).unwrap();
    assert_eq!(mlut.kind(), ModelKind::Mlut);
    let mlut_ref = RefMap::merge(&RefMap::world(1, 50), &world_ref.create(&odd).unwrap());
    check(&mlut, &mlut_ref, &groups).unwrap();
    // An mlut child whose members share one group collapses to a lut, or to a regular model.
    let only_group1: Vec<u32> = (0..50).rev().collect();
    let collapsed = create(&mlut, &only_group1, &groups, &mut arena).unwrap();
    assert_eq!(collapsed.kind(), ModelKind::Stride);
    assert_eq!(collapsed.pgid(), Some(Pgid(1)));
    check(&collapsed, &mlut_ref.create(&only_group1).unwrap(), &groups).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut shuffled: Vec<u32> = (50..200).collect();
    shuffled.shuffle(&mut rng);
    let group0 = create(&mlut, &shuffled, &groups, &mut arena).unwrap();
    assert_eq!((group0.kind(), group0.pgid()), (ModelKind::Lut, Some(Pgid(0))));
    check(&group0, &mlut_ref.create(&shuffled).unwrap(), &groups).unwrap();
    for map in [merged, swapped, mlut, collapsed, group0] {
        map.free(&mut arena).unwrap();
    }
    inter.free(&mut arena).unwrap();
    spawned.free(&mut arena).unwrap();
    assert_eq!(arena.used_bytes(), 0);
}

#[test]
fn bad_input_is_an_error() {
    let avs = address_vectors(&[10]);
    let groups = register::<GROUPS>(&avs);
    let storage = arena_words(8);
    let mut arena: TableArena<'_, 1> = TableArena::new(&storage);
    let world = RankMap::direct(Pgid(0), groups.av(Pgid(0)));
    assert_eq!(
        create(&world, &[3, 10], &groups, &mut arena).err(),
        Some(RankMapError::ParentRankOutOfRange { index: 1, rank: 10, size: 10 })
    );
    assert_eq!(
        create(&world, &[3, 1, 4, 11], &groups, &mut arena).err(),
        Some(RankMapError::ParentRankOutOfRange { index: 3, rank: 11, size: 10 })
    );
    assert_eq!(arena.used_bytes(), 0, "a failed fill returns its table");
    assert_eq!(
        from_group(Pgid(0), &[1, 12], &groups, &mut arena).err(),
        Some(RankMapError::LpidOutOfRange { index: 1, lpid: 12, len: 10 })
    );
    assert_eq!(
        from_group(Pgid(3), &[1], &groups, &mut arena).err(),
        Some(RankMapError::UnknownGroup(Pgid(3)))
    );
    assert_eq!(
        from_processes(&[(Pgid(0), 1), (Pgid(2), 0)], &groups, &mut arena).err(),
        Some(RankMapError::UnknownGroup(Pgid(2)))
    );
    let lut = create(&world, &[3, 1, 4, 5, 9, 2, 6, 8], &groups, &mut arena).unwrap();
    assert_eq!(
        create(&world, &[5, 3, 8], &groups, &mut arena).err(),
        Some(RankMapError::ArenaTablesFull)
    );
    let other_storage = arena_words(8);
    let mut other: TableArena<'_, 1> = TableArena::new(&other_storage);
    let dup = lut.dup(&mut arena).unwrap();
    assert_eq!(dup.free(&mut other), Err(RankMapError::ForeignTable));
    lut.free(&mut arena).unwrap();
    assert!(RankMap::contiguous(Pgid(0), groups.av(Pgid(0)), 8, 3).is_err());
    let mut nodes = [NodeId(99); 9];
    assert_eq!(
        world.nodes_into(&groups, &mut nodes),
        Err(RankMapError::OutputLength { needed: 10, given: 9 })
    );
    let mut nodes = [NodeId(99); 10];
    world.nodes_into(&groups, &mut nodes).unwrap();
    assert_eq!(nodes.to_vec(), (0..10).map(node_of).collect::<Vec<_>>());
    assert_eq!(
        RankMap::contiguous(Pgid(0), groups.av(Pgid(0)), 7, 3).unwrap().translate(2),
        Some((Pgid(0), 9))
    );
}

#[test]
fn sizes_zero_one_and_786_432() {
    const BIG: u32 = 786_432;
    let avs = address_vectors(&[2 * BIG]);
    let groups = register::<GROUPS>(&avs);
    let storage = arena_words(4 * BIG as usize);
    let mut arena: TableArena<'_, 8> = TableArena::new(&storage);
    let world = RankMap::direct(Pgid(0), groups.av(Pgid(0)));
    let world_ref = RefMap::world(0, 2 * BIG);
    let mut rng = ChaCha8Rng::seed_from_u64(786_432);
    let mut random: Vec<u32> = (0..2 * BIG).collect();
    random.shuffle(&mut rng);
    random.truncate(BIG as usize);
    let cases: [(Vec<u32>, ModelKind); 6] = [
        ((0..BIG).collect(), ModelKind::Direct),
        ((BIG..2 * BIG).collect(), ModelKind::Offset),
        ((0..2 * BIG).step_by(2).collect(), ModelKind::Stride),
        ((0..2 * BIG).rev().step_by(2).collect(), ModelKind::Stride),
        ((0..2 * BIG).filter(|r| r % 8 < 4).collect(), ModelKind::BlockStride),
        (random, ModelKind::Lut),
    ];
    for (ind, expected) in cases {
        assert_eq!(ind.len(), BIG as usize);
        let map = create(&world, &ind, &groups, &mut arena).unwrap();
        assert_eq!(map.kind(), expected);
        let reference = world_ref.create(&ind).unwrap();
        check(&map, &reference, &groups).unwrap();
        // A child of the big map: a random subset, checked rank by rank too.
        let half = indirect(&mut rng, Pattern::Irregular, BIG);
        let child = create(&map, &half, &groups, &mut arena).unwrap();
        check(&child, &reference.create(&half).unwrap(), &groups).unwrap();
        child.free(&mut arena).unwrap();
        map.free(&mut arena).unwrap();
    }
    for n in [0u32, 1] {
        for pattern in PATTERNS {
            let mut ind = indirect(&mut rng, pattern, 2 * BIG);
            ind.truncate(n as usize);
            if ind.len() < n as usize {
                ind.push(rng.gen_range(0..2 * BIG));
            }
            let map = create(&world, &ind, &groups, &mut arena).unwrap();
            assert!(!map.kind().has_table(), "size {n} needs no table");
            check(&map, &world_ref.create(&ind).unwrap(), &groups).unwrap();
        }
    }
    assert_eq!(arena.used_bytes(), 0);
}

/// One random scenario: maps built from random parents with random indirect mappings, dups,
/// merges and frees, each compared with the reference; at the end the arena is empty.
fn scenario(seed: u64) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let sizes = [rng.gen_range(0..200), rng.gen_range(1..60)];
    let avs = address_vectors(&sizes);
    let groups = register::<GROUPS>(&avs);
    let storage = arena_words(1 << 14);
    let mut arena: TableArena<'_, 64> = TableArena::new(&storage);
    let mut live: Vec<(RankMap<'_>, RefMap)> = vec![
        (RankMap::direct(Pgid(0), groups.av(Pgid(0))), RefMap::world(0, sizes[0])),
        (RankMap::direct(Pgid(1), groups.av(Pgid(1))), RefMap::world(1, sizes[1])),
    ];
    for _ in 0..40 {
        let op = rng.gen_range(0..10);
        let pick = rng.gen_range(0..live.len());
        match op {
            0..=5 => {
                let pattern = *PATTERNS.choose(&mut rng).expect("patterns");
                let ind = indirect(&mut rng, pattern, live[pick].0.size());
                let reference = live[pick].1.create(&ind).ok_or("reference rejects")?;
                match create(&live[pick].0, &ind, &groups, &mut arena) {
                    Ok(map) => live.push((map, reference)),
                    Err(RankMapError::ArenaFull { .. } | RankMapError::ArenaTablesFull) => {}
                    Err(e) => return Err(format!("create: {e}")),
                }
            }
            6 => {
                if let Ok(map) = live[pick].0.dup(&mut arena) {
                    let reference = live[pick].1.clone();
                    live.push((map, reference));
                }
            }
            7 => {
                let other = rng.gen_range(0..live.len());
                let (a, b) = (live[pick].0.dup(&mut arena), live[other].0.dup(&mut arena));
                let (local, remote) = match (a, b) {
                    (Ok(local), Ok(remote)) => (local, remote),
                    (a, b) => {
                        for map in [a, b].into_iter().flatten() {
                            map.free(&mut arena).map_err(|e| e.to_string())?;
                        }
                        continue;
                    }
                };
                let inter = InterMaps { local, remote };
                let first = rng.gen_bool(0.5);
                let reference = if first {
                    RefMap::merge(&live[pick].1, &live[other].1)
                } else {
                    RefMap::merge(&live[other].1, &live[pick].1)
                };
                if let Ok(map) = inter.merge(first, &groups, &mut arena) {
                    live.push((map, reference));
                }
                inter.free(&mut arena).map_err(|e| e.to_string())?;
            }
            _ => {
                if live.len() > 2 {
                    let (map, _) = live.swap_remove(pick.max(2));
                    map.free(&mut arena).map_err(|e| e.to_string())?;
                }
            }
        }
        for (map, reference) in &live {
            check(map, reference, &groups)?;
        }
    }
    for (map, _) in live {
        map.free(&mut arena).map_err(|e| e.to_string())?;
    }
    if arena.used_bytes() != 0 {
        return Err(format!("{} bytes leaked", arena.used_bytes()));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_parents_and_indirect_arrays_match_the_reference(seed in any::<u64>()) {
        if let Err(e) = scenario(seed) {
            prop_assert!(false, "seed {seed}: {e}");
        }
    }
}
