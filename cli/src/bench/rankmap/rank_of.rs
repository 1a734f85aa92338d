//! The `rank_of` rows of `commcore bench rankmap`: what a receiver pays per message to learn
//! the sender's rank in the communicator.
//!
//! The runtime's sender writes its own communicator rank into the message's header (it
//! knows it without translating anything), and the receiver decodes the header and reads
//! the field: the same work for every rank-map model, timed here over core's wire header
//! ([`commcore::wire::Header`]), one header per sender. For contrast each row also times what
//! the runtime did before: scanning the communicator's ranks for the one whose process sent
//! the message (constant for the direct model, up to `size` translations for the others),
//! over a few receives from random senders.

use std::hint::black_box;
use std::time::Instant;

use commcore::av::Pgid;
use commcore::rankmap::{ModelKind, RankMap};
use commcore::wire::{Header, Kind, HEADER_LEN};
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Receives whose old scan is timed per row (each scans up to the communicator's size).
const SCANS: usize = 16;

/// The headers the senders of an `n`-rank communicator write, one per sender.
pub fn headers(n: u32) -> Vec<[u8; HEADER_LEN]> {
    (0..n)
        .map(|source| {
            let header =
                Header { kind: Kind::Eager, context: 6, source, tag: 1, sequence: 0, length: 8 };
            header.encode()
        })
        .collect()
}

/// One repetition: each header of `headers` received `rounds` times.
#[inline(never)]
pub fn sweep(headers: &[[u8; HEADER_LEN]], rounds: usize) -> u64 {
    let mut sum = 0u64;
    for _ in 0..rounds {
        for bytes in headers {
            let bytes = black_box(bytes);
            sum = sum.wrapping_add(Header::decode(bytes).map_or(0, |h| u64::from(h.source)));
        }
    }
    sum
}

/// The removed receive path: the communicator rank whose process is `process`, by scanning.
#[inline(never)]
fn scan(map: &RankMap<'_>, process: (Pgid, u32)) -> u32 {
    if map.kind() == ModelKind::Direct {
        return process.1;
    }
    (0..map.size()).find(|&r| map.translate(r) == Some(process)).unwrap_or(u32::MAX)
}

/// Nanoseconds per receive of the old scan, over [`SCANS`] random senders.
pub fn scan_ns(map: &RankMap<'_>, seed: u64) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let processes: Vec<(Pgid, u32)> =
        (0..SCANS).filter_map(|_| map.translate(rng.gen_range(0..map.size()))).collect();
    let t = Instant::now();
    let mut sum = 0u64;
    for &process in &processes {
        sum = sum.wrapping_add(u64::from(scan(black_box(map), process)));
    }
    black_box(sum);
    t.elapsed().as_nanos() as f64 / processes.len().max(1) as f64
}
