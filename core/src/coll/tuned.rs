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

/// The algorithm `tuned` runs for `op` on `size` ranks with `bytes` of message (per rank
/// block for the gather family), for an operation that is `commutative` or not.
pub const fn decide(op: CollOp, size: u32, bytes: usize, commutative: bool) -> Algorithm {
    use Algorithm as A;
    use CollOp as C;
    let pow2 = size.is_power_of_two();
    match op {
        C::Barrier => {
            if pow2 {
                A::RecursiveDoubling
            } else {
                A::Dissemination
            }
        }
        C::Bcast => {
            if size <= FEW_RANKS {
                A::Linear
            } else if bytes >= LARGE && size >= 8 {
                A::ScatterAllgather
            } else {
                A::Binomial
            }
        }
        C::Reduce => {
            if size <= FEW_RANKS {
                A::Linear
            } else if bytes >= LARGE && size >= 8 {
                A::ReduceScatterGather
            } else {
                A::Binomial
            }
        }
        C::Allreduce => {
            if bytes <= SMALL || size <= FEW_RANKS {
                A::RecursiveDoubling
            } else if bytes >= LARGE && commutative {
                A::Ring
            } else {
                A::Rabenseifner
            }
        }
        C::Allgather => {
            if bytes * (size as usize) >= LARGE {
                A::Ring
            } else if pow2 {
                A::RecursiveDoubling
            } else {
                A::Bruck
            }
        }
        C::Allgatherv => {
            if bytes * (size as usize) >= LARGE {
                A::Ring
            } else {
                A::RecursiveDoubling
            }
        }
        C::Alltoall => {
            if bytes <= 256 && size >= 8 {
                A::Bruck
            } else {
                A::Pairwise
            }
        }
        C::Alltoallv => A::Pairwise,
        C::Gather | C::Scatter => {
            if size <= FEW_RANKS || bytes >= LARGE {
                A::Linear
            } else {
                A::Binomial
            }
        }
        C::Gatherv | C::Scatterv => A::Linear,
        C::ReduceScatter | C::ReduceScatterBlock => {
            if commutative && bytes >= SMALL {
                A::Ring
            } else {
                A::ReduceThenScatter
            }
        }
        C::Scan | C::Exscan => {
            if size <= FEW_RANKS {
                A::Linear
            } else {
                A::RecursiveDoubling
            }
        }
    }
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
