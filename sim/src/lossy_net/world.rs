//! N connection endpoints on one simulated network, on virtual time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;

use commcore::conn::{Addr, Config, ConnError, Endpoint, Event, Identity, PeerState};

use super::network::{Faults, Network, NetworkStats};

/// How to build a [`World`].
#[derive(Clone, Copy, Debug)]
pub struct WorldConfig {
    /// Endpoints, named `Identity::new(0, i)` and reachable at `Addr::from_u64(i)`.
    pub endpoints: usize,
    /// The network's faults.
    pub faults: Faults,
    /// Every endpoint's handshake settings.
    pub conn: Config,
    /// Seeds the network and every endpoint's nonces.
    pub seed: u64,
    /// Steps (time advances) after which a run is declared a livelock.
    pub max_steps: u64,
}

/// Why a run did not end cleanly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The run took more than its step limit.
    Livelock {
        /// Steps taken.
        steps: u64,
        /// Virtual time reached.
        now: u64,
    },
    /// Nothing is in flight and no timer is set, yet `endpoint` has a handshake with `peer`
    /// open: it would wait forever.
    Deadlock {
        /// Steps taken.
        steps: u64,
        /// The stuck endpoint.
        endpoint: usize,
        /// The peer of its open handshake.
        peer: Identity,
    },
    /// A scheduled connect was refused.
    Refused {
        /// The endpoint that tried.
        endpoint: usize,
        /// Why.
        error: ConnError,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Livelock { steps, now } => {
                write!(f, "livelock: still running after {steps} steps (time {now})")
            }
            SimError::Deadlock { steps, endpoint, peer } => write!(
                f,
                "deadlock after {steps} steps: endpoint {endpoint} waits on {peer} with no timer"
            ),
            SimError::Refused { endpoint, error } => {
                write!(f, "endpoint {endpoint} could not connect: {error}")
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    Connect { from: usize, to: usize },
    Close { at: usize, peer: usize },
    Kill(usize),
}

/// The world: endpoints with a table of `CAP` peers each, the network, scheduled actions
/// and each endpoint's log of events.
pub struct World<const CAP: usize> {
    now: u64,
    steps: u64,
    max_steps: u64,
    endpoints: Vec<Endpoint<CAP>>,
    alive: Vec<bool>,
    events: Vec<Vec<(u64, Event)>>,
    actions: BinaryHeap<Reverse<(u64, Action)>>,
    net: Network,
    undeliverable: u64,
    /// Every datagram sent, as (sender, destination, bytes), while recording.
    recorded: Option<Vec<(usize, usize, Vec<u8>)>>,
}

/// SplitMix64: distinct seeds for the endpoints from the world's one.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<const CAP: usize> World<CAP> {
    /// A world at time 0 with nothing scheduled. Panics on a configuration the endpoints
    /// refuse (a test's mistake).
    pub fn new(config: WorldConfig) -> Self {
        let endpoints = (0..config.endpoints)
            .map(|i| {
                let seed = mix(config.seed ^ mix(i as u64));
                Endpoint::new(Self::identity(i), Addr::from_u64(i as u64), config.conn, seed)
                    .expect("the world's handshake settings are valid")
            })
            .collect();
        Self {
            now: 0,
            steps: 0,
            max_steps: config.max_steps,
            endpoints,
            alive: vec![true; config.endpoints],
            events: vec![Vec::new(); config.endpoints],
            actions: BinaryHeap::new(),
            net: Network::new(config.faults, config.seed),
            undeliverable: 0,
            recorded: None,
        }
    }

    /// Endpoint `i`'s identity.
    pub fn identity(i: usize) -> Identity {
        Identity::new(0, i as u32)
    }

    /// Endpoint `from` calls `connect` to endpoint `to` at time `at`.
    pub fn connect_at(&mut self, at: u64, from: usize, to: usize) {
        self.actions.push(Reverse((at, Action::Connect { from, to })));
    }

    /// Endpoint `at_endpoint` closes its connection (or handshake) with `peer` at time `at`,
    /// as a platform does on disconnect.
    pub fn close_at(&mut self, at: u64, at_endpoint: usize, peer: usize) {
        self.actions.push(Reverse((at, Action::Close { at: at_endpoint, peer })));
    }

    /// Endpoint `i` dies at time `at`: it sends nothing more and drops what arrives.
    pub fn kill_at(&mut self, at: u64, i: usize) {
        self.actions.push(Reverse((at, Action::Kill(i))));
    }

    /// A datagram from an address no endpoint has arrives at endpoint `to` at time `at`.
    pub fn inject(&mut self, at: u64, to: usize, bytes: Vec<u8>) {
        self.net.inject(at, self.endpoints.len(), to, bytes);
    }

    /// Starts keeping a copy of every datagram the endpoints send (to replay them later).
    pub fn record(&mut self) {
        self.recorded.get_or_insert_with(Vec::new);
    }

    /// The datagrams recorded so far, as (sender, destination, bytes).
    pub fn recorded(&self) -> &[(usize, usize, Vec<u8>)] {
        self.recorded.as_deref().unwrap_or(&[])
    }

    /// Virtual time now.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Endpoint `i`.
    pub fn endpoint(&self, i: usize) -> &Endpoint<CAP> {
        &self.endpoints[i]
    }

    /// Endpoint `i`'s events with the time each was polled.
    pub fn events(&self, i: usize) -> &[(u64, Event)] {
        &self.events[i]
    }

    /// The network's counts.
    pub fn net_stats(&self) -> NetworkStats {
        self.net.stats()
    }

    /// Datagrams addressed to no endpoint.
    pub fn undeliverable(&self) -> u64 {
        self.undeliverable
    }

    /// Runs until nothing is in flight, scheduled or timed, and returns the steps taken.
    pub fn run(&mut self) -> Result<u64, SimError> {
        self.run_until(u64::MAX)
    }

    /// Runs until time `end` or until nothing is left to do, whichever comes first.
    pub fn run_until(&mut self, end: u64) -> Result<u64, SimError> {
        loop {
            self.flush_all();
            let timers = (0..self.endpoints.len())
                .filter(|&i| self.alive[i])
                .filter_map(|i| self.endpoints[i].poll_timeout());
            let next_action = self.actions.peek().map(|Reverse((at, _))| *at);
            let next = timers.chain(self.net.next_arrival()).chain(next_action).min();
            let Some(next) = next else {
                self.check_no_open_handshake()?;
                return Ok(self.steps);
            };
            if next > end {
                return Ok(self.steps);
            }
            if self.steps >= self.max_steps {
                return Err(SimError::Livelock { steps: self.steps, now: self.now });
            }
            self.steps += 1;
            self.now = self.now.max(next);
            self.step()?;
        }
    }

    fn step(&mut self) -> Result<(), SimError> {
        let now = self.now;
        while self.actions.peek().is_some_and(|Reverse((at, _))| *at <= now) {
            let Some(Reverse((_, action))) = self.actions.pop() else { break };
            match action {
                Action::Kill(i) => self.alive[i] = false,
                Action::Connect { from, to } if self.alive[from] => {
                    let addr = Addr::from_u64(to as u64);
                    self.endpoints[from]
                        .connect(now, Self::identity(to), addr)
                        .map_err(|error| SimError::Refused { endpoint: from, error })?;
                    self.flush(from);
                }
                Action::Close { at, peer } => {
                    self.endpoints[at].close(Self::identity(peer));
                }
                Action::Connect { .. } => {}
            }
        }
        while let Some(d) = self.net.pop_due(now) {
            if d.to < self.endpoints.len() && self.alive[d.to] {
                let from = Addr::from_u64(d.from as u64);
                self.endpoints[d.to].handle_datagram(now, from, &d.bytes);
                self.flush(d.to);
            }
        }
        for i in 0..self.endpoints.len() {
            if self.alive[i] && self.endpoints[i].poll_timeout().is_some_and(|t| t <= now) {
                self.endpoints[i].handle_timeout(now);
                self.flush(i);
            }
        }
        Ok(())
    }

    fn flush_all(&mut self) {
        for i in 0..self.endpoints.len() {
            self.flush(i);
        }
    }

    /// Everything endpoint `i` has to send or report, as a platform does after each input.
    fn flush(&mut self, i: usize) {
        if !self.alive[i] {
            return;
        }
        let n = self.endpoints.len();
        while let Some(d) = self.endpoints[i].poll_transmit(self.now) {
            match d.to.to_u64().and_then(|to| usize::try_from(to).ok()).filter(|&to| to < n) {
                Some(to) => {
                    if let Some(r) = &mut self.recorded {
                        r.push((i, to, d.payload().to_vec()));
                    }
                    self.net.send(self.now, i, to, d.payload())
                }
                None => self.undeliverable += 1,
            }
        }
        while let Some(e) = self.endpoints[i].poll_event() {
            self.events[i].push((self.now, e));
        }
    }

    fn check_no_open_handshake(&self) -> Result<(), SimError> {
        for (i, ep) in self.endpoints.iter().enumerate().filter(|(i, _)| self.alive[*i]) {
            for j in 0..self.endpoints.len() {
                let peer = Self::identity(j);
                if matches!(ep.peer_state(peer), Some(PeerState::Connecting | PeerState::Accepting))
                {
                    return Err(SimError::Deadlock { steps: self.steps, endpoint: i, peer });
                }
            }
        }
        Ok(())
    }
}
