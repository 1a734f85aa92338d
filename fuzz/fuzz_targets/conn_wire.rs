#![no_main]
//! Arbitrary datagram sequences and timeouts through three connection endpoints, and
//! arbitrary bytes through the point-to-point header decoder.
//!
//! The fuzzer schedules connects and closes, and delivers, duplicates, drops, reorders,
//! corrupts or invents datagrams between three endpoints, moves time, and polls events
//! when it chooses (so several handshakes can pass between two polls). Checked: nothing
//! panics (debug assertions on); no endpoint keeps more peers than its table holds; each
//! endpoint's events for a peer follow connected / superseded / failed in a consistent
//! order, and after a poll the connection it last reported is the one its getter returns;
//! and unless a datagram carrying the job's token was corrupted, two ends that are both
//! connected to each other agree on the connection.

use std::collections::{HashMap, HashSet};

use arbitrary::Arbitrary;
use commcore::conn::Identity;
use commcore::conn::{Addr, Config, ConnectionId, Endpoint, Event};
use commcore::wire::{Header, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

const ENDPOINTS: usize = 3;
const CAP: usize = 2;
const TOKEN: u128 = 0x0123_4567_89ab_cdef;
const CONFIG: Config = Config { token: TOKEN, initial_retry: 4, max_retry: 16, timeout: 100 };

#[derive(Arbitrary, Debug)]
enum Op {
    Connect {
        from: u8,
        to: u8,
    },
    Close {
        at: u8,
        peer: u8,
    },
    /// Delivers the pending datagram at this index (modulo the queue), removing it.
    Deliver(u8),
    /// Delivers a copy, leaving the datagram pending.
    Duplicate(u8),
    Drop(u8),
    /// Delivers a copy with one byte changed.
    Corrupt {
        index: u8,
        at: u8,
        xor: u8,
    },
    /// Arbitrary bytes to an endpoint.
    Invent {
        to: u8,
        bytes: Vec<u8>,
    },
    /// Advances time and runs every due timer.
    Advance(u8),
    /// Polls every endpoint's events (left waiting otherwise, so several handshakes can
    /// pass between two polls) and checks them.
    PollEvents,
}

#[derive(Arbitrary, Debug)]
struct Input {
    seeds: [u64; ENDPOINTS],
    header: Vec<u8>,
    ops: Vec<Op>,
}

struct Pending {
    from: usize,
    to: usize,
    bytes: Vec<u8>,
}

/// What an endpoint has told the platform about one peer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Told {
    Down,
    Up(ConnectionId),
}

struct Harness {
    now: u64,
    eps: Vec<Endpoint<CAP>>,
    /// What endpoint `i` told about each peer (corrupted datagrams can name any identity).
    told: HashMap<(usize, Identity), Told>,
    pending: Vec<Pending>,
    tampered: bool,
}

fn id(i: usize) -> Identity {
    Identity::new(1, i as u32)
}

impl Harness {
    fn told(&self, i: usize, peer: Identity) -> Told {
        self.told.get(&(i, peer)).copied().unwrap_or(Told::Down)
    }

    fn flush(&mut self) {
        for i in 0..ENDPOINTS {
            while let Some(d) = self.eps[i].poll_transmit(self.now) {
                let to = d.to.to_u64().expect("endpoints send to the addresses they were given");
                self.pending.push(Pending {
                    from: i,
                    to: to as usize,
                    bytes: d.payload().to_vec(),
                });
            }
            assert!(self.eps[i].peers() <= CAP);
        }
    }

    /// Takes every event, checks each against what the endpoint said before, then checks
    /// the getters and the two ends of every pair.
    fn poll_events(&mut self) {
        for i in 0..ENDPOINTS {
            while let Some(e) = self.eps[i].poll_event() {
                self.check_event(i, e);
            }
        }
        let peers: HashSet<Identity> =
            self.told.keys().map(|(_, p)| *p).chain((0..ENDPOINTS).map(id)).collect();
        for i in 0..ENDPOINTS {
            for &peer in &peers {
                let now = self.eps[i].connection(peer).map(|c| c.id);
                match self.told(i, peer) {
                    Told::Up(told) => assert_eq!(now, Some(told), "{i} -> {peer}"),
                    Told::Down => assert_eq!(now, None, "{i} -> {peer}: connected, never told"),
                }
            }
        }
        if !self.tampered {
            for i in 0..ENDPOINTS {
                for j in 0..ENDPOINTS {
                    if let (Told::Up(a), Told::Up(b)) = (self.told(i, id(j)), self.told(j, id(i))) {
                        assert_eq!(a, b, "{i} and {j} are connected by different connections");
                    }
                }
            }
        }
    }

    fn check_event(&mut self, i: usize, e: Event) {
        match e {
            Event::Connected(c) => {
                assert_eq!(self.told(i, c.peer), Told::Down, "{i}: connected twice to {}", c.peer);
                assert!(c.id.initiator == id(i) || c.id.initiator == c.peer);
                self.told.insert((i, c.peer), Told::Up(c.id));
            }
            Event::Superseded { peer, id: old } => {
                assert_eq!(self.told(i, peer), Told::Up(old), "{i}: superseded {old:?}");
                self.told.insert((i, peer), Told::Down);
            }
            Event::Failed { peer, .. } => {
                assert_eq!(self.told(i, peer), Told::Down, "{i}: failed while connected to {peer}");
                assert!(self.eps[i].peer_state(peer).is_none());
            }
        }
    }

    fn deliver(&mut self, from: usize, to: usize, bytes: &[u8]) {
        if to < ENDPOINTS {
            self.eps[to].handle_datagram(self.now, Addr::from_u64(from as u64), bytes);
        }
    }

    fn pick(&self, k: u8) -> Option<usize> {
        (!self.pending.is_empty()).then(|| usize::from(k) % self.pending.len())
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Connect { from, to } => {
                let (from, to) = (usize::from(from) % ENDPOINTS, usize::from(to) % ENDPOINTS);
                let _ = self.eps[from].connect(self.now, id(to), Addr::from_u64(to as u64));
            }
            Op::Close { at, peer } => {
                let (at, peer) = (usize::from(at) % ENDPOINTS, usize::from(peer) % ENDPOINTS);
                self.eps[at].close(id(peer));
                self.told.insert((at, id(peer)), Told::Down);
            }
            Op::Deliver(k) => {
                if let Some(k) = self.pick(k) {
                    let p = self.pending.remove(k);
                    self.deliver(p.from, p.to, &p.bytes);
                }
            }
            Op::Duplicate(k) => {
                if let Some(k) = self.pick(k) {
                    let (from, to, bytes) =
                        (self.pending[k].from, self.pending[k].to, self.pending[k].bytes.clone());
                    self.deliver(from, to, &bytes);
                }
            }
            Op::Drop(k) => {
                if let Some(k) = self.pick(k) {
                    self.pending.remove(k);
                }
            }
            Op::Corrupt { index, at, xor } => {
                if let Some(k) = self.pick(index) {
                    let p = &self.pending[k];
                    let (from, to, mut bytes) = (p.from, p.to, p.bytes.clone());
                    let at = usize::from(at) % bytes.len();
                    bytes[at] ^= xor;
                    // Bytes 4..20 hold the token: a change elsewhere keeps it valid.
                    self.tampered |= xor != 0 && !(4..20).contains(&at);
                    self.deliver(from, to, &bytes);
                }
            }
            Op::Invent { to, bytes } => {
                let to = usize::from(to) % ENDPOINTS;
                self.eps[to].handle_datagram(self.now, Addr::from_u64(7), &bytes);
            }
            Op::PollEvents => self.poll_events(),
            Op::Advance(dt) => {
                self.now += u64::from(dt);
                for ep in &mut self.eps {
                    if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                        ep.handle_timeout(self.now);
                    }
                }
            }
        }
        self.flush();
    }
}

fuzz_target!(|input: Input| {
    match Header::decode(&input.header) {
        Ok(h) => assert_eq!(&h.encode()[..], &input.header[..HEADER_LEN]),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    let eps = (0..ENDPOINTS)
        .map(|i| Endpoint::new(id(i), Addr::from_u64(i as u64), CONFIG, input.seeds[i]).unwrap())
        .collect();
    let mut h = Harness { now: 0, eps, told: HashMap::new(), pending: Vec::new(), tampered: false };
    for op in input.ops.into_iter().take(512) {
        h.apply(op);
    }
    h.poll_events();
});
