//! The two-process, two-thread deadlock of the multithreaded-allocation paper (§3.1).

use commcore::cid::{words_for, Algorithm, SpaceConfig};
use commcore_sim::cid_world::{deadlock_scenario, explore, SimFailure, World};

const W: usize = words_for(64);
const CONFIG: SpaceConfig = SpaceConfig { width: 64, eager: 32, threaded: true };
const SHIPPED: [Algorithm; 3] = [Algorithm::Lowest, Algorithm::Mask, Algorithm::Highest];

fn world(algorithm: Algorithm) -> World<W> {
    World::new(deadlock_scenario(), algorithm, CONFIG).unwrap()
}

#[test]
fn mask_without_sync_deadlocks_in_the_papers_scenario() {
    // The schedule of the paper's figure: each rank's thread-comm duplicate grabs the mask
    // first (threads 1 on rank 0 and 0 on rank 1), then the self duplicates spin.
    let mut w = world(Algorithm::MaskWithoutSync).with_stall_limit(10_000);
    // Thread indices are rank * 2 + thread.
    w.step(1).unwrap(); // rank 0, thread 1: dup(thread_comm[1]) holds rank 0's mask
    w.step(2).unwrap(); // rank 1, thread 0: dup(thread_comm[0]) holds rank 1's mask
    let failure = w.run(1).unwrap_err();
    let SimFailure::Deadlock { steps, spinning, stuck } = failure else { panic!("{failure:?}") };
    assert!(spinning && steps > 10_000, "{steps}");
    assert_eq!(stuck.len(), 4);
}

#[test]
fn exhaustive_exploration_finds_the_deadlock_without_sync() {
    let found = explore(world(Algorithm::MaskWithoutSync), 200_000);
    assert!(!found.truncated);
    assert!(found.finished > 0, "some interleavings complete: {found:?}");
    match found.failure {
        Some(SimFailure::Deadlock { stuck, .. }) => assert!(!stuck.is_empty()),
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn every_shipped_algorithm_completes_every_interleaving() {
    for algorithm in SHIPPED {
        let found = explore(world(algorithm), 200_000);
        assert!(!found.truncated, "{algorithm:?}: {found:?}");
        assert_eq!(found.failure, None, "{algorithm:?}");
        assert!(found.finished > 0 && found.states > 10, "{algorithm:?}: {found:?}");
        eprintln!("{algorithm:?}: {} states, {} finished", found.states, found.finished);
    }
}

#[test]
fn every_shipped_algorithm_completes_under_random_schedules() {
    for algorithm in SHIPPED {
        for seed in 0..200 {
            let mut w = world(algorithm);
            w.run(seed).unwrap_or_else(|f| panic!("{algorithm:?} seed {seed}: {f:?}"));
            // The self duplicates and the thread-comm duplicates are all live and distinct:
            // four predefined, one self duplicate, two thread-comm duplicates per rank.
            for rank in 0..2 {
                assert_eq!(w.spaces()[rank].live(), 4 + 1 + 2);
            }
        }
    }
}

/// Beyond the paper's scenario: three processes, two threads each, group creations on the
/// world told apart by tag, over overlapping groups, in every interleaving.
#[test]
fn every_shipped_algorithm_completes_every_interleaving_of_overlapping_group_creations() {
    use commcore_sim::cid_world::Script;
    for algorithm in SHIPPED {
        let mut script = Script::new(3, 2);
        script.allocate(0, Script::WORLD, 1, vec![0, 1, 2], vec![0, 1, 2]);
        script.allocate(1, Script::WORLD, 2, vec![0, 1], vec![0, 1]);
        script.allocate(1, Script::WORLD, 3, vec![1, 2], vec![1, 2]);
        let world = World::<W>::new(script, algorithm, CONFIG).unwrap();
        let found = explore(world, 400_000);
        assert!(!found.truncated, "{algorithm:?}: {found:?}");
        assert_eq!(found.failure, None, "{algorithm:?}");
        eprintln!("{algorithm:?}: {} states, {} finished", found.states, found.finished);
    }
}
