//! One constructor function per (operation, algorithm) pair, so that a selected module can
//! keep a function pointer per plan slot and a call skips the `(op, alg)` match.

use super::algo::Ctx;
use super::args::{Algorithm, CollArgs, CollOp};
use super::error::CollError;
use super::schedule::Schedule;

/// Builds the schedule of one fixed (operation, algorithm) pair.
pub type Ctor = for<'a> fn(Ctx, &CollArgs<'a>) -> Result<Schedule<'a>, CollError>;

macro_rules! ctors {
    ($($name:ident: $op:ident, $alg:ident;)*) => {
        $(
            fn $name<'a>(ctx: Ctx, args: &CollArgs<'a>) -> Result<Schedule<'a>, CollError> {
                Schedule::intra_inline(CollOp::$op, Algorithm::$alg, ctx, args)
            }
        )*

        /// The constructor of flat algorithm `alg` for `op`, if `alg` implements `op`.
        pub fn constructor(op: CollOp, alg: Algorithm) -> Result<Ctor, CollError> {
            match (op, alg) {
                $((CollOp::$op, Algorithm::$alg) => Ok($name),)*
                _ => Err(CollError::AlgorithmNotFor(alg, op)),
            }
        }
    };
}

ctors! {
    barrier_linear: Barrier, Linear;
    barrier_dissemination: Barrier, Dissemination;
    barrier_recursive_doubling: Barrier, RecursiveDoubling;
    bcast_linear: Bcast, Linear;
    bcast_binomial: Bcast, Binomial;
    bcast_scatter_allgather: Bcast, ScatterAllgather;
    reduce_linear: Reduce, Linear;
    reduce_binomial: Reduce, Binomial;
    reduce_reduce_scatter_gather: Reduce, ReduceScatterGather;
    allreduce_linear: Allreduce, Linear;
    allreduce_recursive_doubling: Allreduce, RecursiveDoubling;
    allreduce_ring: Allreduce, Ring;
    allreduce_rabenseifner: Allreduce, Rabenseifner;
    allgather_ring: Allgather, Ring;
    allgather_recursive_doubling: Allgather, RecursiveDoubling;
    allgather_bruck: Allgather, Bruck;
    allgatherv_ring: Allgatherv, Ring;
    allgatherv_recursive_doubling: Allgatherv, RecursiveDoubling;
    allgatherv_bruck: Allgatherv, Bruck;
    alltoall_linear: Alltoall, Linear;
    alltoall_pairwise: Alltoall, Pairwise;
    alltoall_bruck: Alltoall, Bruck;
    alltoallv_linear: Alltoallv, Linear;
    alltoallv_pairwise: Alltoallv, Pairwise;
    gather_linear: Gather, Linear;
    gather_binomial: Gather, Binomial;
    gatherv_linear: Gatherv, Linear;
    scatter_linear: Scatter, Linear;
    scatter_binomial: Scatter, Binomial;
    scatterv_linear: Scatterv, Linear;
    reduce_scatter_ring: ReduceScatter, Ring;
    reduce_scatter_reduce_then_scatter: ReduceScatter, ReduceThenScatter;
    reduce_scatter_block_ring: ReduceScatterBlock, Ring;
    reduce_scatter_block_reduce_then_scatter: ReduceScatterBlock, ReduceThenScatter;
    scan_linear: Scan, Linear;
    scan_recursive_doubling: Scan, RecursiveDoubling;
    exscan_linear: Exscan, Linear;
    exscan_recursive_doubling: Exscan, RecursiveDoubling;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_implemented_pair_has_a_constructor() {
        for op in CollOp::ALL {
            for alg in Algorithm::ALL {
                let flat = alg.implements(op) && alg != Algorithm::Hierarchical;
                assert_eq!(constructor(op, alg).is_ok(), flat, "{op} {}", alg.name());
            }
        }
    }
}
