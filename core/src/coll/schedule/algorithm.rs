//! Which algorithm a schedule runs, for hosts that report the provider of each call.

use super::{Flat, Kind, Recipe, Schedule};
use crate::coll::args::Algorithm;

impl Schedule<'_> {
    /// The algorithm this schedule runs: the flat algorithm's name, or
    /// [`Algorithm::Hierarchical`], [`Algorithm::Leaders`] (inter-communicators) or
    /// [`Algorithm::Linear`] (linear reduce + bcast pairs) for composed schedules.
    pub fn algorithm(&self) -> Algorithm {
        match &self.kind {
            Kind::Flat(flat) => flat.algorithm(),
            Kind::Phased(phased) => match phased.recipe {
                Recipe::Hier { .. } => Algorithm::Hierarchical,
                Recipe::Inter { .. } => Algorithm::Leaders,
                Recipe::LinearPair { .. } => Algorithm::Linear,
            },
        }
    }
}

impl Flat<'_> {
    /// The algorithm of this leaf.
    pub fn algorithm(&self) -> Algorithm {
        use Algorithm as A;
        match self {
            Flat::BarrierDissemination(_) => A::Dissemination,
            Flat::BarrierRecursiveDoubling(_)
            | Flat::AllreduceRecursiveDoubling(_)
            | Flat::AllgatherRecursiveDoubling(_)
            | Flat::ScanRecursiveDoubling(_) => A::RecursiveDoubling,
            Flat::BcastLinear(_)
            | Flat::ReduceLinear(_)
            | Flat::AlltoallLinear(_)
            | Flat::GatherScatterLinear(_)
            | Flat::ScanLinear(_) => A::Linear,
            Flat::BcastBinomial(_) | Flat::ReduceBinomial(_) | Flat::GatherScatterBinomial(_) => {
                A::Binomial
            }
            Flat::BcastScatterAllgather(_) => A::ScatterAllgather,
            Flat::ReduceScatterGather(_) => A::ReduceScatterGather,
            Flat::AllreduceRing(_) | Flat::AllgatherRing(_) | Flat::ReduceScatterRing(_) => A::Ring,
            Flat::AllreduceRabenseifner(_) => A::Rabenseifner,
            Flat::AllgatherBruck(_) | Flat::AlltoallBruck(_) => A::Bruck,
            Flat::AlltoallPairwise(_) => A::Pairwise,
            Flat::ReduceThenScatter(_) => A::ReduceThenScatter,
            Flat::Remote(_) | Flat::Unpack(_) => A::Leaders,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::coll::{Algorithm, CollArgs, CollOp, Ctx, Datatype, Schedule};

    #[test]
    fn a_schedule_names_the_algorithm_it_was_built_with() {
        let args = CollArgs::new(8, Datatype::I32);
        let ctx = Ctx::new(1, 8).unwrap();
        for (op, alg) in [
            (CollOp::Allreduce, Algorithm::Ring),
            (CollOp::Allreduce, Algorithm::RecursiveDoubling),
            (CollOp::Allreduce, Algorithm::Linear),
            (CollOp::Bcast, Algorithm::Binomial),
            (CollOp::Alltoall, Algorithm::Bruck),
        ] {
            assert_eq!(Schedule::intra(op, alg, ctx, &args).unwrap().algorithm(), alg);
        }
        let inter = Schedule::inter(CollOp::Allreduce, ctx, 3, &args).unwrap();
        assert_eq!(inter.algorithm(), Algorithm::Leaders);
    }
}
