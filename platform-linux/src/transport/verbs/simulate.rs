//! Whole jobs of verbs transports on one in-process fabric with virtual time: the
//! handshake under datagram loss and the resources each process holds, for the tests and
//! `commcore bench verbs`. Each rank talks to its ring neighbours (`talk_to` of them); a
//! run that stops making progress is reported with its step count, never hangs.

use commcore::wire::{Header, Kind};

use super::fabric::FabricDevice;
use super::fabric::{Fabric, Faults};
use super::transport::{ConnectMode, Resources, VerbsSettings, VerbsTransport};

/// The most steps a simulated job may take before it counts as stuck.
pub const STEP_LIMIT: u64 = 1_000_000;

/// What one simulated job did.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRun {
    /// Connections made (one per pair).
    pub connections: usize,
    /// Connections that failed.
    pub failed: usize,
    /// Handshake datagrams of each pair, both directions together.
    pub datagrams: Vec<u64>,
    /// What rank 0 holds once connected.
    pub resources: Resources,
    /// Steps the simulation took.
    pub steps: u64,
}

/// Why a simulation did not finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// Nothing could move and connections were still open.
    Deadlock {
        /// The step it stopped at.
        step: u64,
    },
    /// [`STEP_LIMIT`] steps passed.
    Livelock,
    /// A transport could not be made.
    Setup(String),
}

/// The pairs a job of `ranks` makes when each rank talks to `talk_to` ring neighbours.
pub fn ring_pairs(ranks: usize, talk_to: usize) -> Vec<(usize, usize)> {
    let reach = talk_to.min(ranks.saturating_sub(1)).div_ceil(2);
    let mut pairs = Vec::new();
    for r in 0..ranks {
        for d in 1..=reach {
            let p = (r + d) % ranks;
            let pair = (r.min(p), r.max(p));
            if p != r && !pairs.contains(&pair) {
                pairs.push(pair);
            }
        }
    }
    pairs
}

/// Settings small enough that thousands of simulated processes fit (handshake runs).
pub fn small_settings(token: u128) -> VerbsSettings {
    VerbsSettings {
        eager_max: 256,
        srq_buffers: 8,
        send_buffers: 8,
        ud_buffers: 16,
        ..VerbsSettings::new(token)
    }
}

/// Runs a job of `ranks` processes whose pairs in `pairs` each exchange one 8-byte
/// message (the lower rank sends first, which makes the connection), with `mode`'s
/// connections and `faults` on handshake datagrams.
pub fn run_job(
    ranks: usize,
    pairs: &[(usize, usize)],
    mode: ConnectMode,
    faults: Faults,
    settings: VerbsSettings,
    seed: u64,
) -> Result<JobRun, SimError> {
    let fabric = Fabric::virtual_time(seed, faults);
    let settings = VerbsSettings { connect: mode, ..settings };
    let mut ts: Vec<VerbsTransport<FabricDevice>> = Vec::with_capacity(ranks);
    for r in 0..ranks {
        let seed = seed ^ (r as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let t = VerbsTransport::new(fabric.device(), 0, r, settings, seed)
            .map_err(|e| SimError::Setup(e.to_string()))?;
        ts.push(t);
    }
    let addrs: Vec<_> = ts.iter().map(VerbsTransport::address).collect();
    let header =
        Header { kind: Kind::Eager, context: 0, source: 0, tag: 0, sequence: 0, length: 8 };
    for t in &mut ts {
        t.set_peers(addrs.clone()).map_err(|e| SimError::Setup(e.to_string()))?;
    }
    for &(a, b) in pairs {
        // A send fails only once its peer failed, which the count below sees.
        let _ = ts[a].send(b, &Header { source: a as u32, ..header }, &[7; 8]);
    }
    let mut step = 0u64;
    loop {
        for t in &mut ts {
            while t.progress().is_err() {}
            while t.poll(|_| {}).is_err() {}
        }
        if ts.iter().all(VerbsTransport::settled) {
            break;
        }
        step += 1;
        if step >= STEP_LIMIT {
            return Err(SimError::Livelock);
        }
        let next = ts.iter().filter_map(VerbsTransport::next_timer).min();
        match next {
            Some(t) => fabric.advance_to(t),
            None => return Err(SimError::Deadlock { step }),
        }
    }
    let all_pairs: Vec<(usize, usize)> = match mode {
        ConnectMode::OnDemand => pairs.to_vec(),
        ConnectMode::Eager => {
            (0..ranks).flat_map(|a| (a + 1..ranks).map(move |b| (a, b))).collect()
        }
    };
    let failed = all_pairs
        .iter()
        .filter(|&&(a, b)| !ts[a].is_connected(b) || !ts[b].is_connected(a))
        .count();
    let datagrams =
        all_pairs.iter().map(|&(a, b)| ts[a].datagrams_to(b) + ts[b].datagrams_to(a)).collect();
    Ok(JobRun {
        connections: all_pairs.len(),
        failed,
        datagrams,
        resources: ts[0].resources(),
        steps: step,
    })
}
