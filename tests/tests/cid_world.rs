//! The simulated world: every shipped algorithm under seeded random multi-threaded
//! allocation, group-collective creation with tags, and reuse of freed CIDs.

use commcore::cid::{words_for, Algorithm, SpaceConfig};
use commcore_sim::cid_world::{stress, Participation, Script, SimFailure, StressConfig, World};

const W: usize = words_for(2048);
const CONFIG: SpaceConfig = SpaceConfig { width: 2048, eager: 64, threaded: true };
const SHIPPED: [Algorithm; 3] = [Algorithm::Lowest, Algorithm::Mask, Algorithm::Highest];

/// 100,000 allocations per algorithm: 20 seeded worlds of 16 ranks × 4 threads, each thread
/// running its own stream of 1,250 splits, cycling through the participation criteria.
/// The world checks agreement, uniqueness and reuse after every allocation and free.
#[test]
#[cfg_attr(miri, ignore)]
fn hundred_thousand_random_multithreaded_allocations_per_algorithm() {
    let scenarios = [Participation::SmallComm, Participation::LargeComm, Participation::FewLive];
    for algorithm in SHIPPED {
        let mut allocations = 0;
        for seed in 0..20u64 {
            let participation = scenarios[seed as usize % 3];
            let config = StressConfig {
                ranks: 16,
                threads: 4,
                per_stream: 1250,
                participation,
                max_live: participation.default_max_live().min(200),
                seed,
            };
            let mut world = World::<W>::new(stress(config), algorithm, CONFIG).unwrap();
            world
                .run(seed)
                .unwrap_or_else(|f| panic!("{algorithm:?} seed {seed}: {f}\n{}", world.describe()));
            for outcome in world.outcomes() {
                assert!(
                    matches!(outcome.result, Some(Ok(_))),
                    "{algorithm:?} seed {seed}: {outcome:?}"
                );
            }
            allocations += world.outcomes().len();
        }
        assert!(allocations >= 100_000, "{allocations}");
    }
}

#[test]
fn concurrent_group_creations_on_one_parent_are_told_apart_by_tag() {
    for algorithm in SHIPPED {
        for seed in 0..50 {
            let mut script = Script::new(8, 4);
            // Four overlapping groups of the world, each created by its own thread with its
            // own tag, twice over, the first generation freed in between.
            let groups: [Vec<usize>; 4] =
                [vec![0, 1, 2, 3], vec![2, 3, 4, 5], vec![4, 5, 6, 7, 0], vec![1, 3, 5, 7]];
            let mut made = Vec::new();
            for generation in 0..2 {
                for (t, group) in groups.iter().enumerate() {
                    let tag = (generation * 4 + t) as u32 + 1;
                    made.push((
                        script.allocate(t, Script::WORLD, tag, group.clone(), group.clone()),
                        t,
                        group.clone(),
                    ));
                }
                if generation == 0 {
                    for (comm, t, group) in &made {
                        script.free(*t, *comm, group);
                    }
                }
            }
            let mut world = World::<W>::new(script, algorithm, CONFIG).unwrap();
            world.run(seed).unwrap_or_else(|f| panic!("{algorithm:?} seed {seed}: {f}"));
            for (comm, _, group) in &made[4..] {
                let cids: Vec<_> = group.iter().map(|&r| world.cid_of(r, *comm)).collect();
                assert!(
                    cids.iter().all(|c| c.is_some() && *c == cids[0]),
                    "{algorithm:?}: {cids:?}"
                );
            }
            // Ranks outside a group never took part: its allreduces had only the group.
            for rank in 0..8 {
                for (comm, _, group) in &made[4..] {
                    assert_eq!(world.cid_of(rank, *comm).is_some(), group.contains(&rank));
                }
            }
        }
    }
}

#[test]
fn freed_cids_are_reused_by_lowest_and_mask() {
    for algorithm in [Algorithm::Lowest, Algorithm::Mask] {
        let mut script = Script::new(4, 1);
        let all: Vec<usize> = (0..4).collect();
        let first = script.allocate(0, Script::WORLD, 0, all.clone(), all.clone());
        script.free(0, first, &all);
        script.allocate(0, Script::WORLD, 0, all.clone(), all.clone());
        let mut world =
            World::<W>::new(script, algorithm, SpaceConfig { threaded: false, ..CONFIG }).unwrap();
        world.run(3).unwrap();
        let [a, b] = [world.outcomes()[0].result, world.outcomes()[1].result];
        assert_eq!(a, b, "{algorithm:?} did not reuse the freed cid");
        assert_eq!(a, Some(Ok(2)));
    }
}

#[test]
fn highest_in_an_eight_bit_space_never_fails_with_200_live() {
    let config = StressConfig {
        ranks: 32,
        threads: 1,
        per_stream: 10_000,
        participation: Participation::SmallComm,
        max_live: 200,
        seed: 5,
    };
    let narrow = SpaceConfig { width: 256, eager: 32, threaded: false };
    let mut world =
        World::<{ words_for(256) }>::new(stress(config), Algorithm::Highest, narrow).unwrap();
    world.run(5).unwrap();
    let outcomes = world.outcomes();
    assert_eq!(outcomes.len(), 10_000);
    assert!(outcomes.iter().all(|o| matches!(o.result, Some(Ok(cid)) if cid < 256)));
    // The width was reached: some allocations took the fallback mask round.
    assert!(outcomes.iter().any(|o| o.allreduces == 2));
    assert!(outcomes.iter().all(|o| o.allreduces <= 2));
}

#[test]
fn a_world_with_a_stuck_member_is_a_deadlock_not_a_hang() {
    // Rank 1 never joins the allocation rank 0 starts: rank 0 waits forever.
    let mut script = Script::new(2, 1);
    script.allocate(0, Script::WORLD, 0, vec![0, 1], vec![0, 1]);
    script.programs[1][0].clear();
    let mut world = World::<W>::new(script, Algorithm::Mask, CONFIG).unwrap();
    match world.run(0) {
        Err(SimFailure::Deadlock { spinning: false, stuck, .. }) => assert_eq!(stuck, vec![(0, 0)]),
        other => panic!("{other:?}"),
    }
}
