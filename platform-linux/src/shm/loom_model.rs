//! loom models of the two shared-memory protocols, run with
//! `RUSTFLAGS="--cfg loom" cargo test -p commcore-linux --lib loom`.
//!
//! The ring and the doorbell live in memory shared between processes, where loom cannot
//! follow them, so these models restate each protocol step for step with loom's atomics:
//! the same orderings, the same fences, the same order of operations as `ring.rs` and
//! `runtime/fabric.rs`. A change to either protocol must be mirrored here.

use loom::cell::UnsafeCell;
use loom::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use loom::sync::atomic::{fence, AtomicU32, AtomicU64};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

const DEPTH: u64 = 2;

/// `ring.rs`: cells published by a sequence word, reused once `head` has passed them.
struct Ring {
    tail: AtomicU64,
    cached_head: AtomicU64,
    head: AtomicU64,
    sequence: [AtomicU64; DEPTH as usize],
    payload: [UnsafeCell<u64>; DEPTH as usize],
}

impl Ring {
    fn new() -> Ring {
        Ring {
            tail: AtomicU64::new(0),
            cached_head: AtomicU64::new(0),
            head: AtomicU64::new(0),
            sequence: [AtomicU64::new(0), AtomicU64::new(0)],
            payload: [UnsafeCell::new(0), UnsafeCell::new(0)],
        }
    }

    fn room_at(&self, tail: u64) -> bool {
        if tail.wrapping_sub(self.cached_head.load(Relaxed)) < DEPTH {
            return true;
        }
        let head = self.head.load(Acquire);
        self.cached_head.store(head, Relaxed);
        tail.wrapping_sub(head) < DEPTH
    }

    fn try_push(&self, value: u64) -> bool {
        let tail = self.tail.load(Relaxed);
        if !self.room_at(tail) {
            return false;
        }
        let cell = (tail % DEPTH) as usize;
        // SAFETY: the protocol gives the writer this cell; loom checks that no read of it
        // overlaps this write.
        self.payload[cell].with_mut(|p| unsafe { *p = value });
        self.sequence[cell].store(tail.wrapping_add(1), Release);
        self.tail.store(tail.wrapping_add(1), Relaxed);
        true
    }

    fn try_pop(&self) -> Option<u64> {
        let head = self.head.load(Relaxed);
        let cell = (head % DEPTH) as usize;
        if self.sequence[cell].load(Acquire) != head.wrapping_add(1) {
            return None;
        }
        // SAFETY: the acquire load saw the cell published; loom checks the claim.
        let value = self.payload[cell].with(|p| unsafe { *p });
        self.head.store(head.wrapping_add(1), Release);
        Some(value)
    }

    /// `TakeRun`: up to `max` cells read one after another, released by one store of
    /// `head` at the end.
    fn pop_run(&self, max: usize) -> Vec<u64> {
        let released = self.head.load(Relaxed);
        let mut head = released;
        let mut values = Vec::new();
        while values.len() < max {
            let cell = (head % DEPTH) as usize;
            if self.sequence[cell].load(Acquire) != head.wrapping_add(1) {
                break;
            }
            // SAFETY: as in try_pop: published, and ours until head is released past it.
            values.push(self.payload[cell].with(|p| unsafe { *p }));
            head = head.wrapping_add(1);
        }
        if head != released {
            self.head.store(head, Release);
        }
        values
    }
}

/// The writer of the ring models: pushes 1, 2 and 3, waiting for room (the ring holds two).
fn push_one_to_three(ring: &Arc<Ring>) -> thread::JoinHandle<()> {
    let ring = ring.clone();
    thread::spawn(move || {
        for value in 1..=3 {
            while !ring.try_push(value) {
                thread::yield_now();
            }
        }
    })
}

#[test]
fn loom_ring_delivers_every_cell_once_in_order_without_races() {
    loom::model(|| {
        let ring = Arc::new(Ring::new());
        let writer = push_one_to_three(&ring);
        let mut got = Vec::new();
        while got.len() < 3 {
            match ring.try_pop() {
                Some(value) => got.push(value),
                None => thread::yield_now(),
            }
        }
        writer.join().unwrap();
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(ring.try_pop(), None);
    });
}

#[test]
fn loom_ring_read_in_runs_delivers_every_cell_once_in_order_without_races() {
    loom::model(|| {
        let ring = Arc::new(Ring::new());
        let writer = push_one_to_three(&ring);
        let mut got = Vec::new();
        while got.len() < 3 {
            let run = ring.pop_run(2);
            if run.is_empty() {
                thread::yield_now();
            }
            got.extend(run);
        }
        writer.join().unwrap();
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(ring.try_pop(), None);
    });
}

/// `fabric.rs`: the doorbell word, the sleeping count and a futex (modelled by a mutex and
/// a condition variable: the value check and the sleep are atomic with respect to a wake,
/// as the kernel makes them), guarding one message flag.
///
/// This is the symmetric protocol (`WakeFence::Symmetric`, both sides fence). The default
/// asymmetric one replaces the waker's fence by the sleeper's `membarrier`, which runs a
/// fence on the waker's CPU on the sleeper's behalf; loom cannot run an action in another
/// thread, so that variant is argued in `fabric.rs` and exercised by the multi-process
/// tests with more ranks than cores, not modelled here.
struct Doorbell {
    bell: AtomicU32,
    sleeping: AtomicU32,
    message: AtomicU32,
    futex: Mutex<()>,
    wakeup: Condvar,
}

impl Doorbell {
    fn futex_wait(&self, expected: u32) {
        let guard = self.futex.lock().unwrap();
        if self.bell.load(Relaxed) == expected {
            drop(self.wakeup.wait(guard).unwrap());
        }
    }

    fn futex_wake(&self) {
        let _guard = self.futex.lock().unwrap();
        self.wakeup.notify_all();
    }

    /// `ShmTransport::sleep`, with the message as the ready condition (no timeout: a lost
    /// wakeup would hang the model, and loom reports it).
    fn sleep_until_message(&self) {
        while self.message.load(Acquire) == 0 {
            let seen = self.bell.load(Acquire);
            self.sleeping.fetch_add(1, Relaxed);
            fence(SeqCst);
            if self.message.load(Acquire) == 0 {
                self.futex_wait(seen);
            }
            self.sleeping.fetch_sub(1, Relaxed);
        }
    }

    /// A push followed by `ShmTransport::notify`.
    fn send(&self) {
        self.message.store(1, Release);
        fence(SeqCst);
        if self.sleeping.load(Relaxed) != 0 {
            self.bell.fetch_add(1, Release);
            self.futex_wake();
        }
    }
}

#[test]
fn loom_doorbell_never_loses_a_wakeup() {
    loom::model(|| {
        let doorbell = Arc::new(Doorbell {
            bell: AtomicU32::new(0),
            sleeping: AtomicU32::new(0),
            message: AtomicU32::new(0),
            futex: Mutex::new(()),
            wakeup: Condvar::new(),
        });
        let sender = {
            let doorbell = doorbell.clone();
            thread::spawn(move || doorbell.send())
        };
        doorbell.sleep_until_message();
        sender.join().unwrap();
    });
}
