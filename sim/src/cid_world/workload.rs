//! Scripts: the paper's stress benchmark and the two-process deadlock scenario.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::script::{CommId, Script};

/// How the stress benchmark picks a new communicator's members.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Participation {
    /// 8 to 16 ranks of a parent at least that large; up to 1,000 live communicators.
    SmallComm,
    /// The world's size less 0 to 8, from a parent at least that large; up to 1,000 live
    /// communicators.
    LargeComm,
    /// As `SmallComm`, with at most 32 live communicators.
    FewLive,
}

impl Participation {
    /// The scenario's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Participation::SmallComm => "small_comm",
            Participation::LargeComm => "large_comm",
            Participation::FewLive => "few_live",
        }
    }

    /// The live-communicator cap of the scenario, per process.
    pub fn default_max_live(self) -> usize {
        match self {
            Participation::SmallComm | Participation::LargeComm => 1000,
            Participation::FewLive => 32,
        }
    }
}

/// The stress benchmark's shape.
#[derive(Clone, Copy, Debug)]
pub struct StressConfig {
    /// Ranks in the world.
    pub ranks: usize,
    /// Threads per rank; each runs its own stream.
    pub threads: usize,
    /// `comm_split`-style allocations per stream.
    pub per_stream: usize,
    /// The participation criterion.
    pub participation: Participation,
    /// Live communicators (besides the stream's root) across all streams before an
    /// iteration frees one first.
    pub max_live: usize,
    /// The seed of every stream's choices.
    pub seed: u64,
}

/// The stress benchmark as a script. Each stream (one per thread) is rooted at the world
/// when single-threaded, at its own duplicate of the world otherwise (a group creation
/// over the world with the stream's tag). Each iteration frees a random live communicator
/// first when the stream holds its share of `max_live`, draws the new communicator's size
/// from the participation criterion, picks a random live parent at least that large (the
/// root always qualifies), splits it (the allreduces run over the parent; the ranks left
/// out free the CID at once), and one iteration in five frees a random communicator other
/// than the root.
pub fn stress(config: StressConfig) -> Script {
    let mut script = Script::new(config.ranks, config.threads);
    let world: Vec<usize> = (0..config.ranks).collect();
    let cap = (config.max_live / config.threads).max(1);
    for stream in 0..config.threads {
        let mut rng = ChaCha8Rng::seed_from_u64(
            config.seed ^ (stream as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        let root = if config.threads == 1 {
            Script::WORLD
        } else {
            script.allocate(stream, Script::WORLD, stream as u32 + 1, world.clone(), world.clone())
        };
        let mut live: Vec<(CommId, Vec<usize>)> = Vec::new();
        let free_random =
            |script: &mut Script, live: &mut Vec<(CommId, Vec<usize>)>, rng: &mut ChaCha8Rng| {
                if !live.is_empty() {
                    let (comm, members) = live.swap_remove(rng.gen_range(0..live.len()));
                    script.free(stream, comm, &members);
                }
            };
        for _ in 0..config.per_stream {
            if live.len() >= cap {
                free_random(&mut script, &mut live, &mut rng);
            }
            let size = match config.participation {
                // The world less 0 to 8 ranks, split from a parent at least that large.
                Participation::LargeComm => {
                    config.ranks - rng.gen_range(0..=8usize).min(config.ranks - 1)
                }
                Participation::SmallComm | Participation::FewLive => {
                    rng.gen_range(8..=16usize).min(config.ranks)
                }
            };
            let candidates: Vec<usize> =
                (0..live.len()).filter(|&i| live[i].1.len() >= size).collect();
            let pick = rng.gen_range(0..=candidates.len());
            let (parent, members) = if pick == candidates.len() {
                (root, world.clone())
            } else {
                live[candidates[pick]].clone()
            };
            let mut keep: Vec<usize> = members.choose_multiple(&mut rng, size).copied().collect();
            keep.sort_unstable();
            let comm = script.allocate(stream, parent, 0, members, keep.clone());
            live.push((comm, keep));
            if rng.gen_range(0..5) == 0 {
                free_random(&mut script, &mut live, &mut rng);
            }
        }
    }
    script
}

/// The deadlock scenario of the multithreaded-allocation paper (§3.1): two processes,
/// two threads each; thread `t` of rank `t` first duplicates its self communicator, then
/// every thread `t` duplicates `thread_comm[t]`, the communicator of thread `t` on both
/// ranks (CIDs 2 and 3).
pub fn deadlock_scenario() -> Script {
    let mut script = Script::new(2, 2);
    let thread_comms = [script.predefine(2, vec![0, 1]), script.predefine(3, vec![0, 1])];
    for (t, &thread_comm) in thread_comms.iter().enumerate() {
        script.allocate(t, Script::self_comm(t), 0, vec![t], vec![t]);
        script.allocate(t, thread_comm, 0, vec![0, 1], vec![0, 1]);
    }
    script
}
