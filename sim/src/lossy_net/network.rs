//! Datagrams in flight on a network that loses, duplicates and reorders them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// How often each fault strikes a datagram (probabilities in `0.0..=1.0`), and how long
/// datagrams take (virtual time units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Faults {
    /// A datagram vanishes.
    pub loss: f64,
    /// A datagram is delivered twice (each copy with its own delay).
    pub duplicate: f64,
    /// A datagram is held back by up to `reorder_delay` extra, so later ones overtake it.
    pub reorder: f64,
    /// Every datagram takes at least this long.
    pub latency: u64,
    /// The most extra delay a reordered datagram gets.
    pub reorder_delay: u64,
}

impl Faults {
    /// No faults: every datagram arrives once, after `latency`, in order.
    pub const fn none(latency: u64) -> Self {
        Self { loss: 0.0, duplicate: 0.0, reorder: 0.0, latency, reorder_delay: 0 }
    }

    /// Loss, duplication and reordering each at `rate`, reordered datagrams held back by
    /// up to 20 latencies.
    pub const fn uniform(rate: f64, latency: u64) -> Self {
        Self { loss: rate, duplicate: rate, reorder: rate, latency, reorder_delay: 20 * latency }
    }
}

/// What the network did to the datagrams it was given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetworkStats {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams lost.
    pub lost: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Datagrams held back.
    pub reordered: u64,
    /// Copies delivered.
    pub delivered: u64,
}

/// One copy of a datagram on its way.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct InFlight {
    /// When it arrives.
    pub at: u64,
    /// Ties on `at` go in send order.
    seq: u64,
    /// The destination's index.
    pub to: usize,
    /// The sender's index.
    pub from: usize,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// The datagrams in flight, ordered by arrival time.
#[derive(Debug)]
pub struct Network {
    faults: Faults,
    rng: ChaCha8Rng,
    queue: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    stats: NetworkStats,
}

impl Network {
    /// An empty network whose every random choice follows from `seed`.
    pub fn new(faults: Faults, seed: u64) -> Self {
        Self {
            faults,
            rng: ChaCha8Rng::seed_from_u64(seed),
            queue: BinaryHeap::new(),
            seq: 0,
            stats: NetworkStats::default(),
        }
    }

    /// Sends `bytes` from endpoint `from` to endpoint `to` at time `now`, through the faults.
    pub fn send(&mut self, now: u64, from: usize, to: usize, bytes: &[u8]) {
        self.stats.sent += 1;
        if self.rng.gen_bool(self.faults.loss) {
            self.stats.lost += 1;
            return;
        }
        let copies = if self.rng.gen_bool(self.faults.duplicate) { 2 } else { 1 };
        self.stats.duplicated += copies - 1;
        for _ in 0..copies {
            let mut at = now + self.faults.latency;
            if self.faults.reorder_delay > 0 && self.rng.gen_bool(self.faults.reorder) {
                self.stats.reordered += 1;
                at += self.rng.gen_range(1..=self.faults.reorder_delay);
            }
            self.inject(at, from, to, bytes.to_vec());
        }
    }

    /// Puts a datagram on the network as is, to arrive at `at` (a forger's, or a test's).
    pub fn inject(&mut self, at: u64, from: usize, to: usize, bytes: Vec<u8>) {
        self.seq += 1;
        self.queue.push(Reverse(InFlight { at, seq: self.seq, to, from, bytes }));
    }

    /// When the next datagram arrives.
    pub fn next_arrival(&self) -> Option<u64> {
        self.queue.peek().map(|Reverse(d)| d.at)
    }

    /// The next datagram arriving at or before `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<InFlight> {
        if self.next_arrival()? > now {
            return None;
        }
        self.stats.delivered += 1;
        self.queue.pop().map(|Reverse(d)| d)
    }

    /// Counts so far.
    pub fn stats(&self) -> NetworkStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deliveries(faults: Faults, seed: u64, sends: u64) -> (Vec<(u64, Vec<u8>)>, NetworkStats) {
        let mut net = Network::new(faults, seed);
        for k in 0..sends {
            net.send(k, 0, 1, &k.to_le_bytes());
        }
        let out = std::iter::from_fn(|| net.pop_due(u64::MAX)).map(|d| (d.at, d.bytes)).collect();
        (out, net.stats())
    }

    #[test]
    fn without_faults_every_datagram_arrives_once_in_order_after_the_latency() {
        let (out, stats) = deliveries(Faults::none(5), 1, 100);
        assert_eq!(out.len(), 100);
        for (k, (at, bytes)) in out.iter().enumerate() {
            assert_eq!((*at, bytes.as_slice()), (k as u64 + 5, &(k as u64).to_le_bytes()[..]));
        }
        assert_eq!((stats.lost, stats.duplicated, stats.reordered), (0, 0, 0));
    }

    #[test]
    fn faults_strike_at_their_rates_and_a_seed_repeats_a_run() {
        let faults = Faults::uniform(0.3, 10);
        let (out, stats) = deliveries(faults, 7, 10_000);
        assert_eq!(deliveries(faults, 7, 10_000).0, out, "same seed, same run");
        assert_ne!(deliveries(faults, 8, 10_000).0, out, "another seed, another run");
        let near = |count: u64, expected: f64| (count as f64 - expected).abs() < 0.1 * expected;
        assert!(near(stats.lost, 3_000.0), "{stats:?}");
        assert!(near(stats.duplicated, 0.3 * 7_000.0), "{stats:?}");
        assert!(near(stats.reordered, 0.3 * 1.3 * 7_000.0), "{stats:?}");
        assert_eq!(stats.delivered, stats.sent - stats.lost + stats.duplicated);
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0), "delivered in time order");
        let sent_as = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap());
        let overtaken = out.windows(2).filter(|w| sent_as(&w[0].1) > sent_as(&w[1].1)).count();
        assert!(overtaken > 100, "reordering lets later datagrams overtake: {overtaken}");
    }
}
