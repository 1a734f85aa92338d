//! The verbs transport on the in-process fabric: connections on demand, data both ways,
//! long messages by RDMA read, credits and back-pressure, dead peers, broken queue pairs,
//! loss in the handshake, and every resource released at the end.

use std::time::{Duration, Instant};

use commcore::wire::{Header, Kind};

use super::device::WorkError;
use super::fabric::{Fabric, FabricDevice, Faults};
use super::simulate::{ring_pairs, run_job, small_settings};
use super::*;

const TOKEN: u128 = 0x5eed;

fn header(source: usize, tag: i32, length: usize) -> Header {
    Header {
        kind: Kind::Eager,
        context: 1,
        source: source as u32,
        tag,
        sequence: 0,
        length: length as u64,
    }
}

fn job(fabric: &Fabric, n: usize, settings: VerbsSettings) -> Vec<VerbsTransport<FabricDevice>> {
    let mut ts: Vec<_> = (0..n)
        .map(|r| VerbsTransport::new(fabric.device(), 0, r, settings, 40 + r as u64).unwrap())
        .collect();
    let addrs: Vec<_> = ts.iter().map(VerbsTransport::address).collect();
    for t in &mut ts {
        t.set_peers(addrs.clone()).unwrap();
    }
    ts
}

/// Polls every transport until `want` messages arrived at `at` (or 5 s passed).
fn collect(
    ts: &mut [VerbsTransport<FabricDevice>],
    at: usize,
    want: usize,
) -> Vec<(usize, Header, Vec<u8>)> {
    let mut got = Vec::new();
    let start = Instant::now();
    while got.len() < want {
        assert!(start.elapsed() < Duration::from_secs(5), "only {} of {want} arrived", got.len());
        for (r, t) in ts.iter_mut().enumerate() {
            if r == at {
                t.poll(|a| got.push((a.from, a.header, a.payload.to_vec()))).unwrap();
            } else {
                t.progress().unwrap();
            }
        }
    }
    got
}

#[test]
fn the_first_message_connects_on_demand_and_data_flows_both_ways_in_order() {
    let fabric = Fabric::new(1, Faults::default());
    let mut ts = job(&fabric, 3, VerbsSettings::new(TOKEN));
    for i in 0..100u8 {
        ts[0].send(2, &header(0, i32::from(i), 8), &[i; 8]).unwrap();
    }
    let got = collect(&mut ts, 2, 100);
    for (i, (from, h, payload)) in got.iter().enumerate() {
        assert_eq!((*from, h.tag, payload.as_slice()), (0, i as i32, &[i as u8; 8][..]));
    }
    ts[2].send(0, &header(2, 5, 3), b"abc").unwrap();
    let back = collect(&mut ts, 0, 1);
    assert_eq!(back[0].2, b"abc");
    assert!(ts[0].is_connected(2) && ts[2].is_connected(0));
    assert!(!ts[0].is_connected(1), "rank 1 was never talked to");
    assert_eq!(ts[1].resources().queue_pairs, 1, "only its UD queue pair");
    assert_eq!(ts[0].resources().queue_pairs, 2);
}

#[test]
fn a_long_message_is_read_by_rdma_into_the_receivers_buffer_and_the_sender_is_told() {
    let fabric = Fabric::new(2, Faults::default());
    // `payload` stays allocated across the rounds, so its registration may stay cached.
    let settings = VerbsSettings { reg_cache_keep_idle: true, ..VerbsSettings::new(TOKEN) };
    let mut ts = job(&fabric, 2, settings);
    let payload: Vec<u8> = (0..1 << 20).map(|i| (i * 7 % 251) as u8).collect();
    for round in 0..3 {
        // SAFETY: `payload` lives, unchanged, until its id is reported written below.
        unsafe { ts[0].send_lent(1, &header(0, round, payload.len()), &payload, 99).unwrap() };
        let mut remote = None;
        let start = Instant::now();
        while remote.is_none() {
            assert!(start.elapsed() < Duration::from_secs(5));
            ts[0].progress().unwrap();
            ts[1].poll(|a| remote = a.remote.map(|r| (a.from, a.header, r))).unwrap();
        }
        let (from, h, remote) = remote.unwrap();
        assert_eq!((from, h.length), (0, payload.len() as u64));
        let mut dst = vec![0u8; payload.len()];
        ts[1].read_remote(0, remote, &mut dst).unwrap();
        assert!(dst == payload, "round {round}: the read bytes differ");
        let start = Instant::now();
        loop {
            assert!(start.elapsed() < Duration::from_secs(5));
            ts[0].progress().unwrap();
            ts[1].progress().unwrap();
            if ts[0].take_written() == [99] {
                break;
            }
        }
    }
    let stats = ts[0].reg_stats();
    assert_eq!((stats.misses, stats.hits), (1, 2), "the sender's buffer registered once");
}

#[test]
fn a_peer_that_stops_receiving_is_back_pressure_then_an_error_naming_it() {
    let fabric = Fabric::new(3, Faults::default());
    let settings = VerbsSettings {
        credits: 4,
        queue_bytes: 4096,
        send_timeout: Duration::from_millis(100),
        ..VerbsSettings::new(TOKEN)
    };
    let mut ts = job(&fabric, 2, settings);
    ts[1].progress().unwrap();
    let start = Instant::now();
    let mut sent = 0;
    let err = loop {
        // Rank 1 moves its side of the handshake on but never takes a message.
        ts[1].progress().unwrap();
        match ts[0].send(1, &header(0, 0, 1000), &[1; 1000]) {
            Ok(()) => sent += 1,
            Err(e) => break e,
        }
        assert!(start.elapsed() < Duration::from_secs(5), "no back-pressure after {sent} sends");
    };
    assert!(
        matches!(err, VerbsError::Peer { rank: 1, fault: PeerFault::StoppedReading { .. } }),
        "{err}"
    );
    assert!(sent <= 4 + 5, "credits and the queue bound what is held: {sent} sent");
    assert!(err.to_string().contains("rank 1 stopped receiving"), "{err}");
    assert_eq!(ts[0].progress(), Ok(()), "reported once");
}

#[test]
fn credits_come_back_so_a_long_stream_keeps_flowing() {
    let fabric = Fabric::new(4, Faults::default());
    let settings = VerbsSettings { credits: 4, ..VerbsSettings::new(TOKEN) };
    let mut ts = job(&fabric, 2, settings);
    let mut got = 0;
    for i in 0..1000 {
        ts[0].send(1, &header(0, i, 16), &[3; 16]).unwrap();
        ts[1].poll(|_| got += 1).unwrap();
    }
    got += collect(&mut ts, 1, 1000 - got).len();
    assert_eq!(got, 1000);
}

#[test]
fn two_peers_out_of_credits_with_frames_queued_both_ways_hand_credits_back() {
    let fabric = Fabric::new(6, Faults::default());
    let settings = VerbsSettings { credits: 4, ..VerbsSettings::new(TOKEN) };
    let mut ts = job(&fabric, 2, settings);
    // Both send far past their credits before either takes anything: each side's credits
    // must come back although its own frames wait for credits too.
    for i in 0..40 {
        ts[0].send(1, &header(0, i, 16), &[1; 16]).unwrap();
        ts[1].send(0, &header(1, i, 16), &[2; 16]).unwrap();
    }
    let mut got = [0usize; 2];
    let start = Instant::now();
    while got != [40, 40] {
        assert!(start.elapsed() < Duration::from_secs(5), "stuck at {got:?} of 40 each");
        for (r, t) in ts.iter_mut().enumerate() {
            t.poll(|_| got[r] += 1).unwrap();
        }
    }
}

/// Sends to `peer` (moving traffic) until a call fails; the error. Fails the test after 2 s.
fn send_until_error(t: &mut VerbsTransport<FabricDevice>, peer: usize) -> VerbsError {
    let start = Instant::now();
    loop {
        let sent = t.send(peer, &header(0, 1, 8), &[0; 8]).and_then(|()| t.progress());
        if let Err(e) = sent {
            return e;
        }
        assert!(start.elapsed() < Duration::from_secs(2), "no error after 2 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_dead_peer_is_an_error_naming_it_within_two_seconds() {
    let fabric = Fabric::new(5, Faults::default());
    let mut ts = job(&fabric, 2, VerbsSettings::new(TOKEN));
    ts[0].send(1, &header(0, 0, 8), &[0; 8]).unwrap();
    collect(&mut ts, 1, 1);
    fabric.kill(1);
    let err = send_until_error(&mut ts[0], 1);
    assert_eq!(err, VerbsError::Peer { rank: 1, fault: PeerFault::Gone(WorkError::RetryExceeded) });
    assert!(err.to_string().contains("rank 1 is gone"));
    assert!(ts[0].send(1, &header(0, 2, 8), &[0; 8]).is_err(), "later sends fail too");
    assert_eq!(ts[0].progress(), Ok(()), "a failure is reported once, not again by progress");
}

#[test]
fn a_queue_pair_driven_to_error_fails_its_peer_only() {
    let fabric = Fabric::new(6, Faults::default());
    let mut ts = job(&fabric, 3, VerbsSettings::new(TOKEN));
    for p in [1, 2] {
        ts[0].send(p, &header(0, 0, 8), &[0; 8]).unwrap();
        collect(&mut ts, p, 1);
    }
    let (qps_before, _) = fabric.held(0);
    // The fabric numbers queue pairs in order: rank 0's RC queue pair for rank 1 is the
    // first one made after the three UD queue pairs.
    fabric.break_qp(0, device::Qpn(0x103));
    let err = ts[0].send(1, &header(0, 1, 8), &[0; 8]).and_then(|()| ts[0].progress());
    assert_eq!(err, Err(VerbsError::Peer { rank: 1, fault: PeerFault::Gone(WorkError::Flushed) }));
    assert_eq!(fabric.held(0).0, qps_before - 1, "the failed queue pair is destroyed");
    ts[0].send(2, &header(0, 1, 8), &[0; 8]).unwrap();
    assert_eq!(collect(&mut ts, 2, 1).len(), 1, "rank 2 is still reached");
}

#[test]
fn every_queue_pair_and_region_is_released_at_the_end_normal_or_failed() {
    let fabric = Fabric::new(7, Faults::default());
    let mut ts =
        job(&fabric, 3, VerbsSettings { connect: ConnectMode::Eager, ..VerbsSettings::new(TOKEN) });
    let start = Instant::now();
    while !ts.iter().all(VerbsTransport::settled) {
        assert!(start.elapsed() < Duration::from_secs(5));
        ts.iter_mut().for_each(|t| t.progress().unwrap());
    }
    assert!((0..3).all(|i| fabric.held(i).0 == 3), "eager: a UD and two RC queue pairs each");
    ts[0].finish().unwrap();
    fabric.kill(2);
    drop(ts);
    for i in 0..3 {
        assert_eq!(fabric.held(i), (0, 0), "device {i} still holds queue pairs or regions");
    }
}

#[test]
fn handshakes_survive_loss_duplication_and_reordering() {
    for (drop_ppm, seed) in [(0, 1), (100_000, 2), (300_000, 3)] {
        let faults = Faults { drop_ppm, duplicate_ppm: 50_000, reorder_ppm: 100_000 };
        let pairs = ring_pairs(32, 2);
        let run = run_job(32, &pairs, ConnectMode::OnDemand, faults, small_settings(TOKEN), seed)
            .unwrap();
        assert_eq!((run.connections, run.failed), (32, 0), "loss {drop_ppm} ppm");
        assert!(run.datagrams.iter().all(|&d| d >= 3), "three datagrams at least");
        if drop_ppm == 0 {
            assert!(run.datagrams.iter().all(|&d| d <= 4), "{:?}", run.datagrams);
        }
    }
}

#[test]
fn on_demand_resources_follow_the_peers_talked_to_and_eager_ones_the_job() {
    let settings = small_settings(TOKEN);
    let mut on_demand = Vec::new();
    let mut eager = Vec::new();
    for ranks in [4, 16] {
        let pairs = ring_pairs(ranks, 2);
        let run = |mode| run_job(ranks, &pairs, mode, Faults::default(), settings, 9).unwrap();
        on_demand.push(run(ConnectMode::OnDemand).resources);
        eager.push(run(ConnectMode::Eager).resources);
    }
    assert_eq!(on_demand[0].queue_pairs, 3, "UD + two neighbours");
    assert_eq!(on_demand[1].queue_pairs, 3, "flat in the job size");
    assert_eq!((eager[0].queue_pairs, eager[1].queue_pairs), (4, 16), "UD + every peer");
    assert!(eager[1].queue_bytes > on_demand[1].queue_bytes);
}

#[test]
fn a_device_error_names_itself_and_a_bad_rank_is_refused() {
    let fabric = Fabric::new(8, Faults::default());
    let mut ts = job(&fabric, 2, VerbsSettings::new(TOKEN));
    let err = ts[0].send(7, &header(0, 0, 1), &[1]).unwrap_err();
    assert_eq!(err, VerbsError::Peer { rank: 7, fault: PeerFault::NoSuchRank { size: 2 } });
    fabric.kill(1);
    let dead = fabric.device();
    let index = dead.index();
    fabric.kill(index);
    let refused = VerbsTransport::new(dead, 0, 0, VerbsSettings::new(TOKEN), 1).err();
    assert_eq!(refused, Some(VerbsError::Device(device::DeviceError::NoDevice)));
}

#[test]
fn a_peer_whose_device_never_reports_the_failure_is_found_by_the_watch() {
    let fabric = Fabric::new(9, Faults::default());
    // Longer than the fabric's retry budget: a silenced peer never fails by the budget.
    let settings =
        VerbsSettings { ack_timeout: Duration::from_millis(700), ..VerbsSettings::new(TOKEN) };
    let mut ts = job(&fabric, 2, settings);
    ts[0].send(1, &header(0, 0, 8), &[0; 8]).unwrap();
    collect(&mut ts, 1, 1);
    fabric.silence(1);
    let start = Instant::now();
    let err = send_until_error(&mut ts[0], 1);
    assert!(
        matches!(err, VerbsError::Peer { rank: 1, fault: PeerFault::Unresponsive { .. } }),
        "{err}"
    );
    assert!(start.elapsed() >= Duration::from_millis(700), "not before the ack timeout");
}

/// The launcher's exchange for ranks that are threads: puts into one table, fences at a
/// barrier.
struct ThreadExchange {
    rank: usize,
    table: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<(usize, String), String>>>,
    barrier: std::sync::Arc<std::sync::Barrier>,
}

impl crate::launch::exchange::Exchange for ThreadExchange {
    fn put(
        &mut self,
        key: &str,
        value: &str,
    ) -> Result<(), crate::launch::exchange::ExchangeError> {
        self.table.lock().unwrap().insert((self.rank, key.into()), value.into());
        Ok(())
    }

    fn fence(&mut self) -> Result<(), crate::launch::exchange::ExchangeError> {
        self.barrier.wait();
        Ok(())
    }

    fn get(
        &mut self,
        rank: usize,
        key: &str,
    ) -> Result<String, crate::launch::exchange::ExchangeError> {
        let value = self.table.lock().unwrap().get(&(rank, key.to_string())).cloned();
        value
            .ok_or(crate::launch::exchange::ExchangeError { launcher: "test", message: key.into() })
    }
}

#[test]
fn a_transport_numbered_after_it_opened_talks_under_its_new_rank() {
    // A group that meets another learns its numbering after publishing its address.
    let fabric = Fabric::new(12, Faults::default());
    let settings = VerbsSettings::new(TOKEN);
    let mut ts: Vec<_> = (0..2)
        .map(|r| VerbsTransport::new(fabric.device(), 0, 0, settings, 7 + r).unwrap())
        .collect();
    ts[1].set_rank(1, 99);
    assert_eq!(ts[1].rank(), 1);
    let addrs: Vec<_> = ts.iter().map(VerbsTransport::address).collect();
    for t in &mut ts {
        t.set_peers(addrs.clone()).unwrap();
    }
    ts[1].send(0, &header(1, 5, 3), b"one").unwrap();
    let got = collect(&mut ts, 0, 1);
    assert_eq!((got[0].0, got[0].2.as_slice()), (1, &b"one"[..]));
    ts[0].send(1, &header(0, 6, 4), b"zero").unwrap();
    let got = collect(&mut ts, 1, 1);
    assert_eq!((got[0].0, got[0].2.as_slice()), (0, &b"zero"[..]));
}

/// Joins `with_device.len()` ranks, each a thread, through one exchange; rank `r` brings a
/// device when `with_device[r]`.
fn join_threads(with_device: &[bool]) -> Vec<join::Joined<FabricDevice>> {
    let fabric = Fabric::new(12, Faults::default());
    let table = std::sync::Arc::default();
    let size = with_device.len();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(size));
    let joins: Vec<_> = (0..size)
        .map(|rank| {
            let device = with_device[rank].then(|| fabric.device());
            let (table, barrier) = (std::sync::Arc::clone(&table), std::sync::Arc::clone(&barrier));
            std::thread::spawn(move || {
                let mut kv = ThreadExchange { rank, table, barrier };
                let settings = VerbsSettings::new(0);
                join::join_where_present(&mut kv, device, rank, size, settings).unwrap()
            })
        })
        .collect();
    joins.into_iter().map(|j| j.join().unwrap()).collect()
}

#[test]
fn ranks_without_a_device_are_known_to_all_and_a_message_to_one_is_an_error() {
    let joined = join_threads(&[true, true, false]);
    for j in &joined {
        assert_eq!(j.devices, [true, true, false]);
        assert!(j.open_error.is_none());
    }
    let mut ts: Vec<_> = joined.into_iter().filter_map(|j| j.transport).collect();
    assert_eq!(ts.len(), 2, "the rank without a device opens no transport");
    let error = ts[0].send(2, &header(0, 1, 8), &[0; 8]).expect_err("rank 2 has no device");
    assert_eq!(error, VerbsError::Peer { rank: 2, fault: PeerFault::NoDevice });
    assert!(error.to_string().contains("has no RDMA device"), "{error}");
    // The ranks that have one still talk.
    ts[0].send(1, &header(0, 3, 4), b"ping").unwrap();
    let got = collect(&mut ts, 1, 1);
    assert_eq!((got[0].0, got[0].2.as_slice()), (0, &b"ping"[..]));
}

#[test]
fn ranks_learn_each_others_addresses_and_token_through_the_exchange() {
    let joined = join_threads(&[true, true]);
    let mut ts: Vec<_> = joined.into_iter().map(|j| j.transport.expect("a transport")).collect();
    ts[0].send(1, &header(0, 3, 4), b"ping").unwrap();
    let got = collect(&mut ts, 1, 1);
    assert_eq!((got[0].0, got[0].2.as_slice()), (0, &b"ping"[..]));
}
