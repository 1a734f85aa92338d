//! The connection handshake among 8–32 endpoints on a simulated network that loses,
//! duplicates and reorders datagrams: all pairs connect, simultaneous connects converge,
//! silent and dying peers fail within the bound, forged and stale datagrams change nothing.

use commcore::conn::{Addr, Config, Endpoint, Event, FailReason, Identity};
use commcore_sim::lossy_net::{Faults, SimError, World, WorldConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Virtual time units: one network latency is 10.
const LATENCY: u64 = 10;
const CONN: Config =
    Config { token: 0x5eed_cafe, initial_retry: 30, max_retry: 160, timeout: 20_000 };
/// Every connect is scheduled before this time.
const START_SPREAD: u64 = 200;
/// The longest a datagram is in flight (latency plus the most a reordering adds).
const MAX_FLIGHT: u64 = 21 * LATENCY;
const CAP: usize = 32;

fn config(endpoints: usize, rate: f64, seed: u64) -> WorldConfig {
    WorldConfig {
        endpoints,
        faults: Faults::uniform(rate, LATENCY),
        conn: CONN,
        seed,
        max_steps: 200_000,
    }
}

fn id(i: usize) -> Identity {
    World::<CAP>::identity(i)
}

fn peer_of(e: &Event) -> Identity {
    match e {
        Event::Connected(c) => c.peer,
        Event::Superseded { peer, .. } | Event::Failed { peer, .. } => *peer,
    }
}

/// Endpoint `i`'s events about endpoint `j`.
fn about(w: &World<CAP>, i: usize, j: usize) -> Vec<(u64, Event)> {
    w.events(i).iter().filter(|(_, e)| peer_of(e) == id(j)).copied().collect()
}

/// Every pair of endpoints ended with one connection that both ends report with the same
/// id, no failures, and every event within the deadline bound.
fn assert_all_connected(w: &World<CAP>, n: usize, what: &str) {
    for i in 0..n {
        let mut peers = Vec::new();
        for (at, e) in w.events(i) {
            assert!(*at <= START_SPREAD + CONN.timeout, "{what}: endpoint {i} event late: {e:?}");
            match e {
                Event::Connected(c) => peers.push(c.peer),
                Event::Failed { .. } | Event::Superseded { .. } => {
                    panic!("{what}: endpoint {i}: {e:?}")
                }
            }
        }
        peers.sort();
        let len = peers.len();
        peers.dedup();
        assert_eq!(peers.len(), len, "{what}: endpoint {i} connected to a peer twice");
        assert_eq!(len, n - 1, "{what}: endpoint {i} connected to {len} of {} peers", n - 1);
        for j in (0..n).filter(|&j| j != i) {
            let state = |a: usize, b: usize| w.endpoint(a).peer_state(id(b));
            let (mine, theirs) =
                match (w.endpoint(i).connection(id(j)), w.endpoint(j).connection(id(i))) {
                    (Some(m), Some(t)) => (m, t),
                    _ => panic!(
                        "{what}: {i}: {:?} {:?}; {j}: {:?} {:?}",
                        state(i, j),
                        about(w, i, j),
                        state(j, i),
                        about(w, j, i)
                    ),
                };
            assert_eq!(mine.id, theirs.id, "{what}: {i} and {j} disagree on the connection");
            assert!(mine.id.initiator == id(i) || mine.id.initiator == id(j));
            assert_eq!(mine.peer_addr.to_u64(), Some(j as u64), "{what}: {i} learnt {j}'s address");
        }
    }
}

/// Seeds per (size, rate); CI runs them all in a few seconds.
const SEEDS: u64 = 32;

#[test]
fn all_pairs_connect_at_0_10_and_30_percent_loss_duplication_and_reordering() {
    for n in [8, 16, 32] {
        for rate in [0.0, 0.1, 0.3] {
            let (mut worst_steps, mut worst_time) = (0, 0);
            for seed in 0..SEEDS {
                let mut w = World::<CAP>::new(config(n, rate, seed));
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xa11);
                for i in 0..n {
                    for j in i + 1..n {
                        // Odd seeds: both ends connect (often at once); even seeds: one end.
                        let first = if rng.gen_bool(0.5) { (i, j) } else { (j, i) };
                        w.connect_at(rng.gen_range(0..START_SPREAD), first.0, first.1);
                        if seed % 2 == 1 {
                            w.connect_at(rng.gen_range(0..START_SPREAD), first.1, first.0);
                        }
                    }
                }
                let what = format!("n={n} rate={rate} seed={seed}");
                let steps = w.run().unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_all_connected(&w, n, &what);
                if rate > 0.0 {
                    let s = w.net_stats();
                    assert!(s.lost > 0 && s.duplicated > 0 && s.reordered > 0, "{what}: {s:?}");
                }
                worst_steps = worst_steps.max(steps);
                let last = (0..n).flat_map(|i| w.events(i).iter().map(|(at, _)| *at)).max();
                worst_time = worst_time.max(last.unwrap_or(0));
            }
            eprintln!(
                "n={n:2} rate={rate:.1}: {SEEDS} seeds, all pairs connected, <= {worst_steps} \
                 steps, last connection at <= {} latencies",
                worst_time / LATENCY
            );
        }
    }
}

#[test]
fn everyone_connecting_to_everyone_at_once_converges_on_the_lower_identity() {
    for seed in 0..SEEDS {
        for rate in [0.0, 0.3] {
            let n = 16;
            let mut w = World::<CAP>::new(config(n, rate, seed));
            for i in 0..n {
                for j in (0..n).filter(|&j| j != i) {
                    w.connect_at(0, i, j);
                }
            }
            let what = format!("rate={rate} seed={seed}");
            w.run().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_all_connected(&w, n, &what);
            for i in 0..n {
                for j in i + 1..n {
                    let c = w.endpoint(i).connection(id(j)).unwrap();
                    assert_eq!(c.id.initiator, id(i), "{what}: pair {i},{j}");
                }
            }
        }
    }
}

#[test]
fn a_peer_that_never_answers_fails_at_the_deadline() {
    for rate in [0.0, 0.3] {
        let mut w = World::<CAP>::new(config(3, rate, 7));
        w.kill_at(0, 1);
        w.connect_at(50, 0, 1);
        w.connect_at(60, 0, 9); // no endpoint has this address
        w.connect_at(70, 0, 2);
        w.run().unwrap();
        let events = w.events(0);
        let failed_at = |peer| {
            events.iter().find_map(|(at, e)| match e {
                Event::Failed { peer: p, reason: FailReason::NoAnswer } if *p == peer => Some(*at),
                _ => None,
            })
        };
        assert_eq!(failed_at(id(1)), Some(50 + CONN.timeout));
        assert_eq!(failed_at(id(9)), Some(60 + CONN.timeout));
        assert!(w.endpoint(0).connection(id(2)).is_some());
        assert_eq!(w.endpoint(0).peers(), 1, "failed peers leave no state");
        assert!(w.undeliverable() > 0);
    }
}

#[test]
fn a_peer_that_dies_mid_handshake_fails_within_the_bound_and_the_others_connect() {
    let n = 12;
    for seed in 0..SEEDS {
        for rate in [0.0, 0.1, 0.3] {
            let mut w = World::<CAP>::new(config(n, rate, seed));
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            for i in 0..n {
                for j in i + 1..n {
                    w.connect_at(rng.gen_range(0..START_SPREAD), i, j);
                }
            }
            // Dies while the first requests are in flight to it or being answered.
            let victim = rng.gen_range(0..n);
            let death = rng.gen_range(0..START_SPREAD + 4 * LATENCY);
            w.kill_at(death, victim);
            let what = format!("rate={rate} seed={seed} victim={victim}");
            w.run().unwrap_or_else(|e| panic!("{what}: {e}"));
            for i in (0..n).filter(|&i| i != victim) {
                let mut with_victim = 0;
                for (at, e) in w.events(i) {
                    // A handshake the victim began may reach us up to a flight after death.
                    let bound = (START_SPREAD).max(death + MAX_FLIGHT) + CONN.timeout;
                    assert!(*at <= bound, "{what}: late {e:?}");
                    match e {
                        Event::Failed { peer, .. } => {
                            assert_eq!(*peer, id(victim), "{what}: {i}: {e:?}");
                            with_victim += 1;
                        }
                        Event::Connected(c) if c.peer == id(victim) => with_victim += 1,
                        Event::Connected(_) => {}
                        Event::Superseded { .. } => panic!("{what}: {i}: {e:?}"),
                    }
                }
                // Lower endpoints connect to the victim; it may die before it connects to
                // the higher ones.
                let expected = if i < victim { 1..=1 } else { 0..=1 };
                assert!(
                    expected.contains(&with_victim),
                    "{what}: {i} ended {with_victim} handshakes with the victim"
                );
                for j in (0..n).filter(|&j| j != i && j != victim) {
                    let a = w.endpoint(i).connection(id(j)).map(|c| c.id);
                    assert!(a.is_some(), "{what}: {i} and {j} not connected");
                    assert_eq!(a, w.endpoint(j).connection(id(i)).map(|c| c.id));
                }
            }
        }
    }
}

#[test]
fn forged_stale_and_garbage_datagrams_are_counted_and_change_nothing() {
    let n = 8;
    // Datagrams of another job (another token), from the identities of this one.
    let other_job: Vec<Vec<u8>> = {
        let bad = Config { token: 1, ..CONN };
        let mut e = Endpoint::<CAP>::new(id(2), Addr::from_u64(2), bad, 5).unwrap();
        for j in (0..n).filter(|&j| j != 2) {
            e.connect(0, id(j), Addr::from_u64(j as u64)).unwrap();
        }
        std::iter::from_fn(|| e.poll_transmit(0)).map(|d| d.payload().to_vec()).collect()
    };
    for seed in 0..SEEDS {
        let mut w = World::<CAP>::new(config(n, 0.1, seed));
        w.record();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for i in 0..n {
            for j in i + 1..n {
                w.connect_at(rng.gen_range(0..START_SPREAD), i, j);
            }
        }
        // Half-way through the connects, every datagram so far is replayed later, long
        // after the network could have delayed it: stale, with this job's token.
        w.run_until(START_SPREAD / 2).unwrap();
        let stale: Vec<(usize, Vec<u8>)> =
            w.recorded().iter().map(|(_, to, b)| (*to, b.clone())).collect();
        assert!(!stale.is_empty());
        for (k, (to, bytes)) in stale.into_iter().enumerate() {
            let at = START_SPREAD / 2 + rng.gen_range(0..4 * START_SPREAD);
            w.inject(at, to, bytes.clone());
            if k % 3 == 0 {
                w.inject(at + MAX_FLIGHT, to, bytes);
            }
        }
        for k in 0..300u64 {
            let at = rng.gen_range(0..4 * START_SPREAD);
            let to = rng.gen_range(0..n);
            let bytes = match k % 3 {
                0 => (0..rng.gen_range(0..100)).map(|_| rng.gen()).collect(),
                1 => other_job[rng.gen_range(0..other_job.len())].clone(),
                _ => {
                    // A valid-looking datagram with one byte flipped.
                    let mut b = other_job[rng.gen_range(0..other_job.len())].clone();
                    let at = rng.gen_range(0..b.len());
                    b[at] ^= 1 << rng.gen_range(0..8);
                    b
                }
            };
            w.inject(at, to, bytes);
        }
        let what = format!("seed={seed}");
        w.run().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_all_connected(&w, n, &what);
        let stats: Vec<_> = (0..n).map(|i| w.endpoint(i).stats()).collect();
        let refused: u64 = stats.iter().map(|s| s.malformed + s.bad_token + s.misdirected).sum();
        let stale: u64 = stats.iter().map(|s| s.unsolicited + s.duplicates + s.bad_nonce).sum();
        assert!(refused >= 300, "{what}: only {refused} of 300 forged datagrams were refused");
        assert!(stale > 0, "{what}: no stale datagram was noticed");
    }
}

#[test]
fn closing_and_reconnecting_200_times_supersedes_the_old_connection_at_the_other_end() {
    for rate in [0.0, 0.3] {
        let mut w = World::<CAP>::new(config(2, rate, 3));
        w.connect_at(0, 0, 1);
        let period = 3 * CONN.timeout;
        for k in 1..=200u64 {
            // Alternately each end closes its side and connects again.
            let (a, b) = if k % 2 == 0 { (0, 1) } else { (1, 0) };
            w.close_at(k * period, a, b);
            w.connect_at(k * period + 1, a, b);
        }
        w.run().unwrap_or_else(|e| panic!("rate={rate}: {e}"));
        for i in 0..2 {
            let ids: Vec<_> = w
                .events(i)
                .iter()
                .filter_map(|(_, e)| match e {
                    Event::Connected(c) => Some(c.id),
                    Event::Failed { .. } => panic!("rate={rate}: {i}: {e:?}"),
                    Event::Superseded { .. } => None,
                })
                .collect();
            assert_eq!(ids.len(), 201, "rate={rate}: endpoint {i}");
            let superseded =
                w.events(i).iter().filter(|(_, e)| matches!(e, Event::Superseded { .. }));
            assert_eq!(superseded.count(), 100, "rate={rate}: the other end closed 100 times");
        }
        let final_ids = (0..2).map(|i| w.endpoint(i).connection(id(1 - i)).map(|c| c.id));
        let final_ids: Vec<_> = final_ids.collect();
        assert!(final_ids[0].is_some());
        assert_eq!(final_ids[0], final_ids[1], "rate={rate}");
    }
}

#[test]
fn a_run_over_its_step_limit_is_reported_as_a_livelock_with_its_step_count() {
    let mut w = World::<CAP>::new(WorldConfig { max_steps: 5, ..config(4, 0.3, 1) });
    for i in 1..4 {
        w.connect_at(0, 0, i);
    }
    assert_eq!(w.run(), Err(SimError::Livelock { steps: 5, now: w.now() }));
    assert!(w.run().unwrap_err().to_string().contains("5 steps"));
}
