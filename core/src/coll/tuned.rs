//! The `tuned` component's decision table: which flat algorithm to run, from the
//! communicator size, the message size and the operation's commutativity. Every threshold
//! is here and nowhere else.

use super::args::{Algorithm, CollOp};

/// Bytes up to which a message counts as small.
pub const SMALL: usize = 2048;
/// Bytes from which a message counts as large.
pub const LARGE: usize = 64 * 1024;
/// Ranks up to which linear algorithms are used where they exist.
pub const FEW_RANKS: u32 = 3;

/// A decision for one operation on one communicator size, as a function of the message
/// size: `algs[i]` for the `i`-th of the ranges split at `splits`, separately for
/// commutative and non-commutative reductions. Modules precompute one per operation, so a
/// call decides with two comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Range boundaries in bytes, ascending: range 0 is `[0, splits[0])`.
    pub splits: [usize; 2],
    /// Per range, for commutative operations (and operations that do not reduce).
    pub commutative: [Algorithm; 3],
    /// Per range, for non-commutative reductions.
    pub ordered: [Algorithm; 3],
}

impl Plan {
    /// The same algorithm for every size and operation.
    pub const fn fixed(alg: Algorithm) -> Self {
        Self { splits: [usize::MAX; 2], commutative: [alg; 3], ordered: [alg; 3] }
    }

    /// `below` under `split` bytes, `above` from it.
    pub const fn split(split: usize, below: Algorithm, above: Algorithm) -> Self {
        Self {
            splits: [split, usize::MAX],
            commutative: [below, above, above],
            ordered: [below, above, above],
        }
    }

    /// The algorithm for a message of `bytes`.
    #[inline]
    pub fn pick(&self, bytes: usize, commutative: bool) -> Algorithm {
        let i = (bytes >= self.splits[0]) as usize + (bytes >= self.splits[1]) as usize;
        if commutative {
            self.commutative[i]
        } else {
            self.ordered[i]
        }
    }
}

/// `tuned`'s decision table: the plan for `op` on `size` ranks.
pub fn plan(op: CollOp, size: u32) -> Plan {
    use Algorithm as A;
    use CollOp as C;
    let few = size <= FEW_RANKS;
    let pow2 = size.is_power_of_two();
    // Allgather's switch is on the gathered total, `bytes * size`.
    let per_rank_large = LARGE.div_ceil(size.max(1) as usize);
    match op {
        C::Barrier => Plan::fixed(if pow2 { A::RecursiveDoubling } else { A::Dissemination }),
        C::Bcast if few => Plan::fixed(A::Linear),
        C::Bcast if size >= 8 => Plan::split(LARGE, A::Binomial, A::ScatterAllgather),
        C::Bcast => Plan::fixed(A::Binomial),
        C::Reduce if few => Plan::fixed(A::Linear),
        C::Reduce if size >= 8 => Plan::split(LARGE, A::Binomial, A::ReduceScatterGather),
        C::Reduce => Plan::fixed(A::Binomial),
        C::Allreduce if few => Plan::fixed(A::RecursiveDoubling),
        C::Allreduce => Plan {
            splits: [SMALL + 1, LARGE],
            commutative: [A::RecursiveDoubling, A::Rabenseifner, A::Ring],
            ordered: [A::RecursiveDoubling, A::Rabenseifner, A::Rabenseifner],
        },
        C::Allgather => {
            Plan::split(per_rank_large, if pow2 { A::RecursiveDoubling } else { A::Bruck }, A::Ring)
        }
        C::Allgatherv => Plan::split(per_rank_large, A::RecursiveDoubling, A::Ring),
        C::Alltoall if size >= 8 => Plan::split(257, A::Bruck, A::Pairwise),
        C::Alltoall | C::Alltoallv => Plan::fixed(A::Pairwise),
        C::Gather | C::Scatter if few => Plan::fixed(A::Linear),
        C::Gather | C::Scatter => Plan::split(LARGE, A::Binomial, A::Linear),
        C::Gatherv | C::Scatterv => Plan::fixed(A::Linear),
        C::ReduceScatter | C::ReduceScatterBlock => Plan {
            splits: [SMALL, usize::MAX],
            commutative: [A::ReduceThenScatter, A::Ring, A::Ring],
            ordered: [A::ReduceThenScatter; 3],
        },
        C::Scan | C::Exscan if few => Plan::fixed(A::Linear),
        C::Scan | C::Exscan => Plan::fixed(A::RecursiveDoubling),
    }
}

/// The algorithm `tuned` runs for `op` on `size` ranks with `bytes` of message (per rank
/// block for the gather family), for an operation that is `commutative` or not.
pub fn decide(op: CollOp, size: u32, bytes: usize, commutative: bool) -> Algorithm {
    plan(op, size).pick(bytes, commutative)
}

/// The algorithm the `basic` component runs: linear below `FEW_RANKS + 1` ranks,
/// logarithmic above, whatever the message size.
pub const fn basic(op: CollOp, size: u32) -> Algorithm {
    use Algorithm as A;
    use CollOp as C;
    let few = size <= FEW_RANKS;
    match op {
        C::Barrier | C::Allreduce | C::Scan | C::Exscan => {
            if few {
                A::Linear
            } else {
                A::RecursiveDoubling
            }
        }
        C::Bcast | C::Reduce | C::Gather | C::Scatter => {
            if few {
                A::Linear
            } else {
                A::Binomial
            }
        }
        C::Allgather | C::Allgatherv => {
            if few {
                A::Ring
            } else {
                A::RecursiveDoubling
            }
        }
        C::Alltoall | C::Alltoallv => {
            if few {
                A::Linear
            } else {
                A::Pairwise
            }
        }
        C::Gatherv | C::Scatterv => A::Linear,
        C::ReduceScatter | C::ReduceScatterBlock => A::ReduceThenScatter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_decision_names_an_algorithm_that_implements_the_op() {
        for op in CollOp::ALL {
            for size in [1, 2, 3, 4, 7, 8, 64, 4096] {
                assert!(basic(op, size).implements(op), "basic {op} {size}");
                for bytes in [0, 8, SMALL, LARGE, 1 << 20] {
                    for commutative in [false, true] {
                        let alg = decide(op, size, bytes, commutative);
                        assert!(alg.implements(op), "{op} {size} {bytes}");
                        if op.reduces() && !commutative {
                            assert!(!alg.reorders(), "{op} reorders non-commutative");
                        }
                    }
                }
            }
        }
    }
}
