//! How big each experiment of the report is: the full run, `--quick` (under ten minutes on
//! a 2-vCPU machine) and the test-only tiny run (seconds, for checking the page itself).

/// Ping-pong sizes from 8 B to 1 MiB, including the sizes the peers' program measures.
const PINGPONG_SIZES: &str = "8,64,512,4096,32768,65536,262144,1048576";

/// The sizes of every experiment.
#[derive(Clone, Debug)]
pub struct Scale {
    /// Its name, as the page's header shows it.
    pub name: &'static str,
    /// World sizes of the rank-map memory figure.
    pub rankmap_worlds: Vec<u32>,
    /// Communicator size of the lookup-time figure.
    pub lookup_ranks: u32,
    /// Lookups per repetition in the rank-map benchmark.
    pub rankmap_lookups: u32,
    /// Probe calls per callgrind count.
    pub callgrind_calls: u32,
    /// Ranks of the simulated context-id world.
    pub cid_ranks: u32,
    /// Context-id allocations per stream.
    pub cid_allocations: u32,
    /// CID storage lookups per timing.
    pub cid_lookups: u32,
    /// Splits per split benchmark.
    pub split_iterations: u32,
    /// Collective dispatch iterations and blocks.
    pub dispatch_iters: u32,
    /// Dispatch blocks.
    pub dispatch_blocks: u32,
    /// Process counts of the collectives between processes.
    pub coll_procs: Vec<u32>,
    /// Iterations per batch and batches of those collectives.
    pub coll_iterations: u32,
    /// Batches of those collectives.
    pub coll_batches: u32,
    /// Jobs per path of the point-to-point benchmark.
    pub pt2pt_rounds: u32,
    /// Batches per point-to-point figure.
    pub pt2pt_batches: u32,
    /// Ping-pong sizes in bytes, comma-separated.
    pub pt2pt_sizes: &'static str,
    /// Repetitions per dynamic-process figure.
    pub dpm_reps: u32,
    /// `bench verbs` options: job sizes and connections per handshake row (empty: its own).
    pub verbs_args: &'static [(&'static str, &'static str)],
    /// Interleaved runs of the peer comparison.
    pub peer_runs: u32,
    /// Splits per peer split job (MPICH busy-polls when oversubscribed: its splits are slow).
    pub peer_split_iterations: u32,
    /// Seconds before a peer's dynamic-process job counts as hung (Open MPI's spawns hang
    /// now and then, and each hang costs this much).
    pub peer_job_timeout_secs: u32,
}

impl Scale {
    /// The full run: the papers' sizes where this machine allows.
    pub fn full() -> Scale {
        Scale {
            name: "full",
            rankmap_worlds: vec![1024, 4096, 16384, 65536, 262144, 786432],
            lookup_ranks: 786432,
            rankmap_lookups: 1 << 20,
            callgrind_calls: 1_000_000,
            cid_ranks: 128,
            cid_allocations: 10_000,
            cid_lookups: 1 << 20,
            split_iterations: 200,
            dispatch_iters: 100_000,
            dispatch_blocks: 15,
            coll_procs: vec![2, 4, 8],
            coll_iterations: 200,
            coll_batches: 5,
            pt2pt_rounds: 3,
            pt2pt_batches: 10,
            pt2pt_sizes: PINGPONG_SIZES,
            dpm_reps: 20,
            verbs_args: &[],
            peer_runs: 5,
            peer_split_iterations: 200,
            peer_job_timeout_secs: 30,
        }
    }

    /// `--quick`: every figure, fewer repetitions.
    pub fn quick() -> Scale {
        Scale {
            name: "quick",
            rankmap_worlds: vec![1024, 16384, 131072, 786432],
            lookup_ranks: 786432,
            rankmap_lookups: 100_000,
            callgrind_calls: 100_000,
            cid_ranks: 128,
            cid_allocations: 1000,
            cid_lookups: 1 << 17,
            split_iterations: 50,
            dispatch_iters: 20_000,
            dispatch_blocks: 5,
            coll_procs: vec![2, 4, 8],
            coll_iterations: 100,
            coll_batches: 3,
            pt2pt_rounds: 1,
            pt2pt_batches: 5,
            pt2pt_sizes: PINGPONG_SIZES,
            dpm_reps: 5,
            verbs_args: &[],
            peer_runs: 1,
            peer_split_iterations: 20,
            peer_job_timeout_secs: 15,
        }
    }

    /// The test-only tiny run: the smallest sizes that still give every figure its points.
    pub fn tiny() -> Scale {
        Scale {
            name: "tiny (test only)",
            rankmap_worlds: vec![1024, 4096],
            lookup_ranks: 1024,
            rankmap_lookups: 1000,
            callgrind_calls: 10_000,
            cid_ranks: 16,
            cid_allocations: 20,
            cid_lookups: 1 << 10,
            split_iterations: 5,
            dispatch_iters: 200,
            dispatch_blocks: 2,
            coll_procs: vec![2, 4],
            coll_iterations: 10,
            coll_batches: 1,
            pt2pt_rounds: 1,
            pt2pt_batches: 1,
            pt2pt_sizes: "8,4096,65536,1048576",
            dpm_reps: 1,
            verbs_args: &[("--ranks", "2,8"), ("--connections", "200")],
            peer_runs: 1,
            peer_split_iterations: 5,
            peer_job_timeout_secs: 15,
        }
    }
}
