//! Collectives whose ranks pass different lengths (erroneous programs): each call ends on
//! every rank, the ranks that can tell report it, and the next matching call is right.

use commcore::coll::{Datatype, ReduceOp};
use commcore_linux::runtime::{CollectiveError, Comm, P2pError};

use crate::coll::contribution;

/// The collectives the shared-memory areas serve that carry data.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Bcast,
    Reduce,
    Allreduce,
    Allgather,
    Alltoall,
}

/// Lengths per rank (a bcast's message, a reduction's vector, a block) that take each way
/// through the area against another: cells, staging buffers or single-copy reads, and
/// with single copy off and a bound set, the schedules.
const LENGTHS: [(usize, usize); 3] = [(8, 16), (8, 4096), (16, 200_000)];

/// Runs `kind` with `len` bytes per rank (call number `call` picks the values); `Ok` holds
/// the result where the rank receives one.
fn run(comm: &Comm, kind: Kind, call: u32, len: usize) -> Result<Vec<u8>, CollectiveError> {
    let (me, n) = (comm.rank(), comm.size());
    let mine = contribution(call, me, len);
    let all: Vec<u8> = (0..n).flat_map(|to| contribution(call + to as u32, me, len)).collect();
    match kind {
        Kind::Bcast => {
            let mut buf = if me == 0 { mine } else { vec![0; len] };
            comm.bcast(&mut buf, 0).map(|()| buf)
        }
        Kind::Reduce => {
            let mut out = vec![0; if me == 0 { len } else { 0 }];
            comm.reduce(&mine, &mut out, Datatype::U64, ReduceOp::Sum, 0).map(|()| out)
        }
        Kind::Allreduce => {
            let mut out = vec![0; len];
            comm.allreduce(&mine, &mut out, Datatype::U64, ReduceOp::Sum).map(|()| out)
        }
        Kind::Allgather => {
            let mut out = vec![0; len * n];
            comm.allgather(&mine, &mut out).map(|()| out)
        }
        Kind::Alltoall => {
            let mut out = vec![0; len * n];
            comm.alltoall(&all, &mut out).map(|()| out)
        }
    }
}

/// What `run` returns on rank `me` of `n` when every rank passes `len`.
fn expected(kind: Kind, call: u32, me: usize, n: usize, len: usize) -> Vec<u8> {
    let sum = || {
        let mut sum = vec![0u64; len / 8];
        for rank in 0..n {
            for (s, word) in sum.iter_mut().zip(contribution(call, rank, len).chunks_exact(8)) {
                *s = s.wrapping_add(u64::from_ne_bytes(word.try_into().unwrap()));
            }
        }
        sum.iter().flat_map(|s| s.to_ne_bytes()).collect()
    };
    match kind {
        Kind::Bcast => contribution(call, 0, len),
        Kind::Reduce if me != 0 => Vec::new(),
        Kind::Reduce | Kind::Allreduce => sum(),
        Kind::Allgather => (0..n).flat_map(|rank| contribution(call, rank, len)).collect(),
        Kind::Alltoall => {
            (0..n).flat_map(|from| contribution(call + me as u32, from, len)).collect()
        }
    }
}

/// Whether rank `me` must report a mismatch when rank `odd` alone passed another length:
/// a bcast's readers of another length than the root's, a reduce's root, everyone in the
/// calls where everyone reads everyone.
fn must_report(kind: Kind, me: usize, odd: usize) -> bool {
    match kind {
        Kind::Bcast => me != 0 && (odd == 0 || me == odd),
        Kind::Reduce => me == 0,
        Kind::Allreduce | Kind::Allgather | Kind::Alltoall => true,
    }
}

/// Allgather and alltoall where rank `odd`'s blocks sent are longer or shorter than those
/// it receives (as an MPI program whose send and receive counts differ): every rank
/// reports it, and the next call is right. Returns the last call number used.
fn own_blocks_differ(comm: &Comm, mut call: u32) -> u32 {
    use commcore::coll::{CollArgs, CollOp};
    let (me, n) = (comm.rank(), comm.size());
    for (kind, op) in [(Kind::Allgather, CollOp::Allgather), (Kind::Alltoall, CollOp::Alltoall)] {
        for (block, odd_sent) in [(40, 80), (40, 4), (40, 8192)] {
            for odd in [0, n - 1] {
                call += 1;
                let sent = if me == odd { odd_sent } else { block };
                let blocks = if matches!(kind, Kind::Alltoall) { n } else { 1 };
                let send = vec![me as u8; sent * blocks];
                let mut recv = vec![0; block * n];
                // As the MPI library calls them: an allgather's block is the one it sends,
                // an alltoall's the one it receives.
                let args_block = if matches!(kind, Kind::Allgather) { sent } else { block };
                let args = CollArgs::new(args_block, Datatype::U8);
                let result = comm.collective(op, &args, &send, &mut recv);
                assert!(
                    matches!(result, Err(CollectiveError::LengthMismatch { .. })),
                    "rank {me}: {op:?} of {block}-byte blocks where rank {odd} sent {odd_sent}: \
                     {result:?}"
                );
                call += 1;
                let got = run(comm, kind, call, block).expect("the next call");
                assert!(got == expected(kind, call, me, n, block), "rank {me}: {op:?} after");
            }
        }
    }
    call
}

pub(crate) fn mismatched_lengths(comm: &Comm) {
    let (me, n) = (comm.rank(), comm.size());
    let kinds = [Kind::Bcast, Kind::Reduce, Kind::Allreduce, Kind::Allgather, Kind::Alltoall];
    let mut call = 0;
    for kind in kinds {
        for (short, long) in LENGTHS {
            for (odd_len, others) in [(long, short), (short, long)] {
                // A reduce whose contributors disagree among themselves is left out: they do
                // not wait for the root, so nobody can bring them back in step.
                let odds: &[usize] = if matches!(kind, Kind::Reduce) { &[0] } else { &[0, n - 1] };
                for &odd in odds {
                    call += 1;
                    let len = if me == odd { odd_len } else { others };
                    let result = run(comm, kind, call, len);
                    if let Err(error) = &result {
                        assert!(
                            matches!(
                                error,
                                CollectiveError::LengthMismatch { .. }
                                    | CollectiveError::P2p(P2pError::Truncated { .. })
                            ),
                            "rank {me}, {kind:?} {len}: {error:?}"
                        );
                    }
                    assert!(
                        result.is_err() || !must_report(kind, me, odd),
                        "rank {me} of {n}: {kind:?} of {len} bytes where rank {odd} passed \
                         {odd_len} and the others {others}: no error"
                    );
                    for len in [short, long] {
                        call += 1;
                        let got = run(comm, kind, call, len).unwrap_or_else(|error| {
                            panic!("rank {me}: {kind:?} of {len} after a mismatch: {error}")
                        });
                        assert!(
                            got == expected(kind, call, me, n, len),
                            "rank {me}: {kind:?} of {len} after a mismatch gave wrong values"
                        );
                    }
                }
            }
        }
    }
    call = own_blocks_differ(comm, call);
    comm.barrier().unwrap();
    if me == 0 {
        println!("mismatched lengths: {call} calls on {n} ranks ended; the next ones right");
    }
}
