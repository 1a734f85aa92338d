use std::string::ToString;
use std::sync::{Arc, Barrier, Mutex};
use std::vec::Vec;

use commcore::cid::store::Flat;
use commcore::cid::{words_for, Algorithm, SpaceConfig};

use super::*;

const W: usize = words_for(256);
const CONFIG: SpaceConfig = SpaceConfig { width: 256, eager: 64, threaded: false };
const ALGORITHMS: [Algorithm; 3] = [Algorithm::Lowest, Algorithm::Mask, Algorithm::Highest];

/// A kernel alone in its job: the allreduce over kernels leaves the words as they are.
struct Alone;

impl Allreduce for Alone {
    type Error = &'static str;
    fn allreduce(&mut self, _: ReduceOp, _: &mut [u32]) -> Result<(), &'static str> {
        Ok(())
    }
}

fn spaces(n: usize) -> Vec<CidSpace<W>> {
    (0..n).map(|_| CidSpace::new(CONFIG).unwrap()).collect()
}

fn members(spaces: &[CidSpace<W>], algorithm: Algorithm) -> Vec<Member<'_, W>> {
    spaces.iter().map(|space| Member { space, request: CidRequest::new(algorithm, 0, 0) }).collect()
}

#[test]
fn hosted_members_agree_on_a_cid_free_on_all_of_them() {
    for algorithm in ALGORITHMS {
        let spaces = spaces(8);
        // Each member is also in other communicators: different CIDs are taken.
        for (r, s) in spaces.iter().enumerate() {
            for c in 0..=r as u32 {
                s.claim(c * 3).unwrap();
            }
        }
        let mut seen = Vec::new();
        for _ in 0..20 {
            let mut ms = members(&spaces, algorithm);
            let mut stats = AgreeStats::default();
            let cid = agree(&mut ms, &mut Alone, 100, &mut stats).unwrap();
            assert!(stats.allreduces >= 1);
            assert!(!seen.contains(&cid), "{algorithm:?} reused {cid}");
            assert!(cid % 3 != 0 || cid > 21, "{algorithm:?} took a claimed cid {cid}");
            assert!(spaces.iter().all(|s| !s.is_free(cid) && s.is_quiescent()));
            seen.push(cid);
        }
        if algorithm == Algorithm::Lowest {
            // The lowest CIDs free everywhere, in order.
            let want: Vec<u32> = (1..).filter(|c| c % 3 != 0 || *c > 21).take(20).collect();
            assert_eq!(seen, want);
        }
    }
}

/// One of two kernels, each hosting some members; their allreduce meets in shared memory.
struct Pair {
    barrier: Arc<Barrier>,
    slot: Arc<Mutex<Option<Vec<u32>>>>,
}

impl Allreduce for Pair {
    type Error = ();
    fn allreduce(&mut self, op: ReduceOp, words: &mut [u32]) -> Result<(), ()> {
        {
            let mut slot = self.slot.lock().unwrap();
            match slot.as_mut() {
                None => *slot = Some(words.to_vec()),
                Some(acc) => op.fold(acc, words),
            }
        }
        self.barrier.wait();
        words.copy_from_slice(self.slot.lock().unwrap().as_ref().unwrap());
        if self.barrier.wait().is_leader() {
            *self.slot.lock().unwrap() = None;
        }
        self.barrier.wait();
        Ok(())
    }
}

#[test]
fn two_kernels_reduce_locally_then_over_their_allreduce() {
    for algorithm in ALGORITHMS {
        let barrier = Arc::new(Barrier::new(2));
        let slot = Arc::new(Mutex::new(None));
        let kernels: Vec<_> = (0..2u32)
            .map(|k| {
                let mut net = Pair { barrier: barrier.clone(), slot: slot.clone() };
                std::thread::spawn(move || {
                    let spaces = spaces(4);
                    // Kernel 0's members hold 0..10, kernel 1's hold 10..20.
                    for s in &spaces {
                        (k * 10..k * 10 + 10).for_each(|c| s.claim(c).unwrap());
                    }
                    let mut ms = members(&spaces, algorithm);
                    agree(&mut ms, &mut net, 100, &mut AgreeStats::default()).unwrap()
                })
            })
            .collect();
        let cids: Vec<Cid> = kernels.into_iter().map(|k| k.join().unwrap()).collect();
        assert_eq!(cids[0], cids[1], "{algorithm:?}");
        assert!(cids[0] >= 20, "{algorithm:?} agreed on {} taken by one kernel", cids[0]);
    }
}

#[test]
fn failures_are_errors_and_leave_no_holds() {
    let spaces = spaces(3);
    let mut none: [Member<'_, W>; 0] = [];
    let e = agree(&mut none, &mut Alone, 10, &mut AgreeStats::default()).unwrap_err();
    assert_eq!(e, AgreeError::NoMembers);

    let mut mixed = members(&spaces, Algorithm::Lowest);
    mixed[1].request = CidRequest::new(Algorithm::Mask, 0, 0);
    let e = agree(&mut mixed, &mut Alone, 10, &mut AgreeStats::default()).unwrap_err();
    assert_eq!(e, AgreeError::Mismatch);
    assert!(e.to_string().contains("same"));

    struct Broken;
    impl Allreduce for Broken {
        type Error = &'static str;
        fn allreduce(&mut self, _: ReduceOp, _: &mut [u32]) -> Result<(), &'static str> {
            Err("link down")
        }
    }
    let mut ms = members(&spaces, Algorithm::Mask);
    let e = agree(&mut ms, &mut Broken, 10, &mut AgreeStats::default()).unwrap_err();
    assert_eq!(e, AgreeError::Allreduce("link down"));
    assert_eq!(e.to_string(), "kernel allreduce: link down");

    // The lowest algorithm needs two allreduces (propose, confirm); one is allowed.
    let mut ms = members(&spaces, Algorithm::Lowest);
    let e = agree(&mut ms, &mut Alone, 1, &mut AgreeStats::default()).unwrap_err();
    assert_eq!(e, AgreeError::Stalled { rounds: 1 });

    (0..256).for_each(|c| spaces[2].claim(c).unwrap());
    let mut ms = members(&spaces, Algorithm::Lowest);
    let e = agree(&mut ms, &mut Alone, 1000, &mut AgreeStats::default()).unwrap_err();
    assert_eq!(e, AgreeError::Cid(CidError::Exhausted));
    assert!(spaces.iter().all(|s| s.is_quiescent()));
    assert_eq!(spaces[0].live(), 0, "a failed agreement claims nothing");
}

#[test]
fn the_shared_store_maps_and_unmaps() {
    let mut slots = [None; 16];
    let store: SharedStore<Flat<'_, u16>, u16> = SharedStore::new(Flat::new(&mut slots));
    assert!(store.is_empty());
    store.insert(3, 30).unwrap();
    assert_eq!(store.insert(3, 31), Err(StoreError::Occupied));
    assert_eq!(store.insert(16, 1), Err(StoreError::OutOfRange));
    assert_eq!((store.get(3), store.get(4), store.len()), (Some(30), None, 1));
    assert_eq!(store.remove(3), Some(30));
    assert_eq!(store.get(3), None);
}
