//! loom models of the state threads share: every interleaving of two threads of one
//! process allocating (and freeing) against one [`CidSpace`].

extern crate std;

use loom::sync::Arc;
use loom::thread;

use super::*;

const W: usize = words_for(128);

/// Drives a request whose communicator has this process as its only member, so each
/// allreduce returns the contribution itself. A voided round yields to the other thread.
fn allocate_alone(space: &CidSpace<W>, algorithm: Algorithm, parent: Cid) -> Cid {
    let mut request = CidRequest::<W>::new(algorithm, parent, 0);
    let mut rounds = 0;
    loop {
        let words = match request.poll(space).expect("request failed") {
            Step::Done(cid) => return cid,
            Step::Wait => {
                thread::yield_now();
                continue;
            }
            Step::Allreduce { words, .. } => std::vec::Vec::from(words),
        };
        request.handle_allreduce(space, &words).expect("handle failed");
        rounds += 1;
        if rounds > 2 {
            thread::yield_now();
        }
    }
}

fn two_threads_get_distinct_cids(algorithm: Algorithm, threaded: bool) {
    loom::model(move || {
        let config = SpaceConfig { width: 64, eager: 32, threaded };
        let space = Arc::new(CidSpace::<W>::new(config).unwrap());
        let other = Arc::clone(&space);
        let child = thread::spawn(move || allocate_alone(&other, algorithm, 1));
        let mine = allocate_alone(&space, algorithm, 2);
        let theirs = child.join().unwrap();
        assert_ne!(mine, theirs);
        assert!(!space.is_free(mine) && !space.is_free(theirs));
        assert_eq!(space.live(), 2);
        assert!(space.is_quiescent());
    });
}

#[test]
fn loom_mask_threads_take_turns() {
    two_threads_get_distinct_cids(Algorithm::Mask, true);
}

#[test]
fn loom_mask_without_sync_threads_take_turns_when_alone() {
    two_threads_get_distinct_cids(Algorithm::MaskWithoutSync, true);
}

#[test]
fn loom_lowest_threads_reserve_apart() {
    two_threads_get_distinct_cids(Algorithm::Lowest, true);
}

#[test]
fn loom_highest_threads_confirm() {
    two_threads_get_distinct_cids(Algorithm::Highest, true);
}

#[test]
fn loom_free_during_allocation_is_never_lost() {
    loom::model(|| {
        let config = SpaceConfig { width: 64, eager: 32, threaded: true };
        let space = Arc::new(CidSpace::<W>::new(config).unwrap());
        space.claim(0).unwrap();
        let other = Arc::clone(&space);
        let freer = thread::spawn(move || other.release(0).unwrap());
        let cid = allocate_alone(&space, Algorithm::Mask, 5);
        freer.join().unwrap();
        assert!(cid <= 1, "the eager segment's lowest free cid is 0 or 1, got {cid}");
        assert_eq!(space.live(), 1);
        assert!(space.is_quiescent());
    });
}

/// Two threads on eager lanes: apart, each holds its own lane at once; on one lane, one
/// of them falls back to the base mask. Either way the CIDs differ.
fn lanes_give_distinct_cids(same_lane: bool) {
    loom::model(move || {
        let config = SpaceConfig { width: 128, eager: 64, threaded: true };
        let space = Arc::new(CidSpace::<W>::with_eager_lanes(config, 2).unwrap());
        let lane = |parent: Cid| space.eager_lane(u64::from(parent) << 32).0;
        let other_parent = (2..).find(|p| (lane(*p) == lane(1)) == same_lane).unwrap();
        let other = Arc::clone(&space);
        let child = thread::spawn(move || allocate_alone(&other, Algorithm::Mask, other_parent));
        let mine = allocate_alone(&space, Algorithm::Mask, 1);
        let theirs = child.join().unwrap();
        assert_ne!(mine, theirs);
        assert_eq!(space.live(), 2);
        assert!(space.is_quiescent());
    });
}

#[test]
fn loom_mask_lanes_apart_hold_at_once() {
    lanes_give_distinct_cids(false);
}

#[test]
fn loom_mask_lanes_shared_take_turns() {
    lanes_give_distinct_cids(true);
}
