//! loom models of the collective area's protocol (`coll_area.rs`, `runtime/shm_coll/`),
//! restated with loom's atomics as `loom_model.rs` does for the rings: cells reused after
//! `DEPTH` calls once every reader has published a later call (each cell's own call
//! word), a member's own buffer read in place until every reader's "done" call, staging
//! buffers taken in turn, and the sleeper count that tells a publisher to ring doorbells. A change to either must be mirrored here.

use loom::cell::UnsafeCell;
use loom::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use loom::sync::atomic::{fence, AtomicU32, AtomicU64};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

/// Fewer cells than the real area, so that reuse happens within a short model; three, so
/// that the probe of the latest call's cell differs from the cell a write needs free.
const DEPTH: u64 = 3;
const MEMBERS: usize = 2;
const CALLS: u64 = 5;

/// Two members' cells: each a call word and its data.
struct Area {
    calls: [[AtomicU64; DEPTH as usize]; MEMBERS],
    cells: [[UnsafeCell<u64>; DEPTH as usize]; MEMBERS],
}

impl Area {
    fn new() -> Area {
        Area {
            calls: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            cells: std::array::from_fn(|_| std::array::from_fn(|_| UnsafeCell::new(0))),
        }
    }

    fn call_word(&self, member: usize, call: u64) -> &AtomicU64 {
        &self.calls[member][(call % DEPTH) as usize]
    }

    /// `CollArea::cell_free`, with the writer's memory of what everyone published.
    fn cell_free(&self, me: usize, call: u64, free_through: &mut u64) -> bool {
        let needed = (call + 1).saturating_sub(DEPTH);
        if needed <= *free_through {
            return true;
        }
        let latest = call.saturating_sub(1).max(needed);
        let mut through = u64::MAX;
        for m in (0..MEMBERS).filter(|&m| m != me) {
            let word = self.call_word(m, latest).load(Acquire);
            let reached =
                if word >= latest { word } else { self.call_word(m, needed).load(Acquire) };
            through = through.min(reached);
            if through < needed {
                return false;
            }
        }
        *free_through = (*free_through).max(through.min(call));
        true
    }

    /// `contribute`: wait for the cell, write it, publish.
    fn contribute(&self, me: usize, call: u64, value: u64, free_through: &mut u64) {
        while !self.cell_free(me, call, free_through) {
            thread::yield_now();
        }
        // SAFETY: the protocol gives the cell to its member once readers moved on; loom
        // reports any read that overlaps this write.
        self.cells[me][(call % DEPTH) as usize].with_mut(|cell| unsafe { *cell = value });
        self.call_word(me, call).store(call, Release);
    }

    /// A reader's wait for `member`'s call, then its read.
    fn read(&self, member: usize, call: u64) -> u64 {
        while self.call_word(member, call).load(Acquire) < call {
            thread::yield_now();
        }
        // SAFETY: published (acquire above); the writer waits for our later call.
        self.cells[member][(call % DEPTH) as usize].with(|cell| unsafe { *cell })
    }
}

fn value(member: usize, call: u64) -> u64 {
    call * 10 + member as u64
}

#[test]
fn loom_allgather_reads_every_contribution_of_its_own_call() {
    loom::model(|| {
        let area = Arc::new(Area::new());
        let run = |area: Arc<Area>, me: usize| {
            let mut free_through = 0;
            for call in 1..=CALLS {
                area.contribute(me, call, value(me, call), &mut free_through);
                let other = 1 - me;
                assert_eq!(area.read(other, call), value(other, call));
            }
        };
        let peer = {
            let area = area.clone();
            thread::spawn(move || run(area, 1))
        };
        run(area, 0);
        peer.join().unwrap();
    });
}

#[test]
fn loom_bcast_root_runs_ahead_without_overwriting_unread_cells() {
    loom::model(|| {
        let area = Arc::new(Area::new());
        let root = {
            let area = area.clone();
            thread::spawn(move || {
                let mut free_through = 0;
                for call in 1..=CALLS {
                    area.contribute(0, call, value(0, call), &mut free_through);
                }
            })
        };
        for call in 1..=CALLS {
            assert_eq!(area.read(0, call), value(0, call));
            // The reader's "done": the root may reuse the cell.
            area.call_word(1, call).store(call, Release);
        }
        root.join().unwrap();
    });
}

#[test]
fn loom_reduce_contributors_never_overwrite_what_the_root_still_reads() {
    // The root publishes each call before it reads the others' cells, so only the
    // `call + 1 - DEPTH` rule (not the reads) keeps a contributor that never reads off
    // a cell the root is reading.
    loom::model(|| {
        let area = Arc::new(Area::new());
        let contributor = {
            let area = area.clone();
            thread::spawn(move || {
                let mut free_through = 0;
                for call in 1..=CALLS {
                    area.contribute(1, call, value(1, call), &mut free_through);
                }
            })
        };
        let mut free_through = 0;
        for call in 1..=CALLS {
            area.contribute(0, call, value(0, call), &mut free_through);
            assert_eq!(area.read(1, call), value(1, call));
        }
        contributor.join().unwrap();
    });
}

#[test]
fn loom_single_copy_buffers_are_not_rewritten_while_the_other_side_copies() {
    // `single_copy.rs`, bcast: the root and the reader publish the addresses of their
    // buffers (the cells' values stand for them). The reader copies the head of the root's
    // buffer while the root writes the tail of the reader's; the root then publishes its
    // "done" (saying the tail is written), which the reader awaits before it reads its tail
    // and publishes its own done. Neither side touches its buffer again (the next bcast's
    // data, the user's reuse) before the other's done.
    loom::model(|| {
        let area = Arc::new(Area::new());
        let root_buffer = Arc::new(UnsafeCell::new(0u64));
        let reader_tail = Arc::new(UnsafeCell::new(0u64));
        let root = {
            let (area, root_buffer, reader_tail) =
                (area.clone(), root_buffer.clone(), reader_tail.clone());
            thread::spawn(move || {
                let mut free_through = 0;
                for bcast in 0..2 {
                    let publish = 2 * bcast + 1;
                    // SAFETY: the reader of the previous bcast published its done (awaited
                    // below) and reads this buffer only after the publish below.
                    root_buffer.with_mut(|b| unsafe { *b = value(0, publish) });
                    area.contribute(0, publish, publish, &mut free_through);
                    assert_eq!(area.read(1, publish), publish, "the reader's address");
                    // SAFETY: the reader published its address after it last touched its
                    // tail, and touches it again only after our done below.
                    reader_tail.with_mut(|t| unsafe { *t = value(0, publish) });
                    area.contribute(0, publish + 1, 1, &mut free_through);
                    while area.call_word(1, publish + 1).load(Acquire) < publish + 1 {
                        thread::yield_now();
                    }
                }
            })
        };
        let mut free_through = 0;
        for bcast in 0..2 {
            let publish = 2 * bcast + 1;
            // SAFETY: the root wrote the tail in the previous bcast before its done, which
            // we awaited; it writes again only after our publish below.
            reader_tail.with_mut(|t| unsafe { *t = 0 });
            area.contribute(1, publish, publish, &mut free_through);
            assert_eq!(area.read(0, publish), publish, "the root's address");
            // SAFETY: the root published this call after writing its buffer, and writes it
            // again only after our done below; loom reports any overlap.
            assert_eq!(root_buffer.with(|b| unsafe { *b }), value(0, publish));
            assert_eq!(area.read(0, publish + 1), 1, "the root wrote our tail");
            // SAFETY: the root's done (acquired just above) follows its write.
            assert_eq!(reader_tail.with(|t| unsafe { *t }), value(0, publish));
            area.call_word(1, publish + 1).store(publish + 1, Release);
        }
        root.join().unwrap();
    });
}

/// `staged.rs`: each member's staging buffers, each of one segment per member.
type Staging = [[[UnsafeCell<u64>; MEMBERS]; STAGING_BUFFERS]; MEMBERS];

/// Staging buffers per member: fewer than the real area's, so that reuse happens within a
/// short model.
const STAGING_BUFFERS: usize = 2;

/// `ShmColl::finish`: announce the call, then wait until every member has.
fn finish(area: &Area, me: usize, call: u64) {
    area.call_word(me, call).store(call, Release);
    for member in 0..MEMBERS {
        while area.call_word(member, call).load(Acquire) < call {
            thread::yield_now();
        }
    }
}

/// A staged call of `staged.rs`.
#[derive(Clone, Copy)]
enum Staged {
    Allreduce,
    Reduce { root: usize },
    Bcast { root: usize },
    Allgather,
}

/// `StagingTurns` and `take_staging`: the buffer for the next use, and for a writer the
/// wait until every other member has published the call that ends the buffer's last use.
struct Turns {
    uses: usize,
    done: [u64; STAGING_BUFFERS],
}

impl Turns {
    fn take(&mut self, area: &Area, me: usize, done: u64, writes: bool) -> usize {
        let buffer = self.uses % STAGING_BUFFERS;
        self.uses += 1;
        let previous = std::mem::replace(&mut self.done[buffer], done);
        if writes {
            for member in (0..MEMBERS).filter(|&m| m != me) {
                while area.call_word(member, previous).load(Acquire) < previous {
                    thread::yield_now();
                }
            }
        }
        buffer
    }
}

fn staged_value(member: usize, k: usize, segment: usize) -> u64 {
    (100 * k + 10 * member + segment) as u64
}

/// `ShmColl`'s stage: `member` fills its buffer `buffer` with its values of call `k`.
fn stage(staging: &Staging, member: usize, buffer: usize, k: usize) {
    for segment in 0..MEMBERS {
        // SAFETY: loom reports any read of the previous contents that overlaps.
        staging[member][buffer][segment]
            .with_mut(|v| unsafe { *v = staged_value(member, k, segment) });
    }
}

/// One member's run of `calls`, checking every result.
fn run_staged(area: &Area, staging: &Staging, me: usize, calls: &[Staged]) {
    let mut turns = Turns { uses: 0, done: [0; STAGING_BUFFERS] };
    let mut call = 0;
    for (k, &staged) in calls.iter().enumerate() {
        match staged {
            Staged::Allreduce => {
                let (staged, folded) = (call + 1, call + 2);
                call += 2;
                let buffer = turns.take(area, me, folded + 1, true);
                stage(staging, me, buffer, k);
                finish(area, me, staged);
                // SAFETY: each member writes only its own segment until "folded".
                let sum: u64 =
                    (0..MEMBERS).map(|m| staging[m][buffer][me].with(|v| unsafe { *v })).sum();
                // SAFETY: nobody else reads this member's own segment before "folded".
                staging[me][buffer][me].with_mut(|v| unsafe { *v = sum });
                finish(area, me, folded);
                for member in (0..MEMBERS).filter(|&m| m != me) {
                    let expected: u64 = (0..MEMBERS).map(|m| staged_value(m, k, member)).sum();
                    // SAFETY: written before the owner's "folded"; loom checks the rest.
                    let result = staging[member][buffer][member].with(|v| unsafe { *v });
                    assert_eq!(result, expected, "allreduce {k}");
                }
            }
            Staged::Reduce { root } => {
                call += 1;
                let buffer = turns.take(area, me, call + 1, me != root);
                if me != root {
                    stage(staging, me, buffer, k);
                    area.call_word(me, call).store(call, Release);
                    continue;
                }
                finish(area, me, call);
                for segment in 0..MEMBERS {
                    // SAFETY: staged before the member published the call.
                    let sum: u64 = (0..MEMBERS)
                        .filter(|&m| m != root)
                        .map(|m| staging[m][buffer][segment].with(|v| unsafe { *v }))
                        .sum();
                    let expected: u64 = (0..MEMBERS)
                        .filter(|&m| m != root)
                        .map(|m| staged_value(m, k, segment))
                        .sum();
                    assert_eq!(sum, expected, "reduce {k}");
                }
            }
            Staged::Allgather => {
                call += 1;
                let buffer = turns.take(area, me, call + 1, true);
                stage(staging, me, buffer, k);
                finish(area, me, call);
                for member in (0..MEMBERS).filter(|&m| m != me) {
                    for segment in 0..MEMBERS {
                        // SAFETY: staged before the member published the call.
                        let value = staging[member][buffer][segment].with(|v| unsafe { *v });
                        assert_eq!(value, staged_value(member, k, segment), "allgather {k}");
                    }
                }
            }
            Staged::Bcast { root } => {
                call += 1;
                let buffer = turns.take(area, me, call, me == root);
                if me == root {
                    stage(staging, root, buffer, k);
                } else {
                    while area.call_word(root, call).load(Acquire) < call {
                        thread::yield_now();
                    }
                    for segment in 0..MEMBERS {
                        // SAFETY: staged before the root published the call.
                        let value = staging[root][buffer][segment].with(|v| unsafe { *v });
                        assert_eq!(value, staged_value(root, k, segment), "bcast {k}");
                    }
                }
                area.call_word(me, call).store(call, Release);
            }
        }
    }
}

#[test]
fn loom_staged_calls_never_rewrite_a_buffer_another_member_reads() {
    // Each buffer is filled again: by a root whose readers may lag (bcast after bcast), by
    // members that run ahead of a reduce's root, by allgathers with one area call each, by
    // a root after an allreduce, and by an allreduce after bcasts.
    use Staged::{Allgather, Allreduce, Bcast, Reduce};
    let sequences: [&[Staged]; 4] = [
        &[Allreduce, Allreduce, Allreduce],
        &[Reduce { root: 0 }, Reduce { root: 0 }, Reduce { root: 0 }],
        &[Allgather, Allgather, Allgather, Reduce { root: 1 }],
        &[Bcast { root: 0 }, Bcast { root: 0 }, Bcast { root: 0 }, Allreduce, Bcast { root: 1 }],
    ];
    for calls in sequences {
        loom::model(move || {
            let area = Arc::new(Area::new());
            let staging: Arc<Staging> = Arc::new(std::array::from_fn(|_| {
                std::array::from_fn(|_| std::array::from_fn(|_| UnsafeCell::new(0)))
            }));
            let peer = {
                let (area, staging) = (area.clone(), staging.clone());
                thread::spawn(move || run_staged(&area, &staging, 1, calls))
            };
            run_staged(&area, &staging, 0, calls);
            peer.join().unwrap();
        });
    }
}

/// `wait.rs`: a waiter counts itself in the area's sleepers, then sleeps through the
/// fabric (its own count, fence, check, futex); a publisher stores, fences, and rings
/// the doorbell when it sees a sleeper. The futex is a mutex and a condition variable.
struct Sleepers {
    published: AtomicU64,
    area_sleepers: AtomicU32,
    rank_sleeping: AtomicU32,
    bell: AtomicU32,
    futex: Mutex<()>,
    wakeup: Condvar,
}

impl Sleepers {
    fn wait_for_publish(&self) {
        while self.published.load(Acquire) == 0 {
            self.area_sleepers.fetch_add(1, Relaxed);
            let seen = self.bell.load(Acquire);
            self.rank_sleeping.fetch_add(1, Relaxed);
            fence(SeqCst);
            if self.published.load(Acquire) == 0 {
                let guard = self.futex.lock().unwrap();
                if self.bell.load(Relaxed) == seen {
                    drop(self.wakeup.wait(guard).unwrap());
                }
            }
            self.rank_sleeping.fetch_sub(1, Relaxed);
            self.area_sleepers.fetch_sub(1, Relaxed);
        }
    }

    fn publish(&self) {
        self.published.store(1, Release);
        fence(SeqCst);
        if self.area_sleepers.load(Relaxed) != 0 {
            // `ShmTransport::notify`.
            fence(SeqCst);
            if self.rank_sleeping.load(Relaxed) != 0 {
                self.bell.fetch_add(1, Release);
                let _guard = self.futex.lock().unwrap();
                self.wakeup.notify_all();
            }
        }
    }
}

#[test]
fn loom_a_publish_always_wakes_a_sleeping_member() {
    loom::model(|| {
        let state = Arc::new(Sleepers {
            published: AtomicU64::new(0),
            area_sleepers: AtomicU32::new(0),
            rank_sleeping: AtomicU32::new(0),
            bell: AtomicU32::new(0),
            futex: Mutex::new(()),
            wakeup: Condvar::new(),
        });
        let publisher = {
            let state = state.clone();
            thread::spawn(move || state.publish())
        };
        state.wait_for_publish();
        publisher.join().unwrap();
    });
}
