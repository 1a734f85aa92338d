//! What can go wrong when a collective is scheduled or selected.

use core::fmt;

use super::args::{Algorithm, CollOp};
use super::datatype::Datatype;

/// An error scheduling or selecting a collective. Every variant is detected before a
/// single step is produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollError {
    /// The root is not a rank of the group it must be in (or is missing where one is needed).
    BadRoot,
    /// A count or displacement list is missing or does not have one entry per rank, or
    /// (alltoallv) a rank's send and receive blocks for itself differ in length.
    BadBlocks,
    /// The reduction is not defined on the datatype.
    OpDatatype(&'static str, Datatype),
    /// The algorithm combines operands out of rank order and the operation does not commute.
    NotCommutative(Algorithm),
    /// The algorithm does not implement this operation.
    AlgorithmNotFor(Algorithm, CollOp),
    /// The operation does not exist on an inter-communicator (scan, exscan).
    NotOnInterComm(CollOp),
    /// A byte size overflows `usize`.
    TooLarge,
    /// No selected module implements the operation.
    NoModule(CollOp),
    /// The hierarchical algorithm needs a node layout the communicator was not given.
    NoLayout,
    /// More answering components or forced ranges than a table holds.
    Capacity,
}

impl fmt::Display for CollError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadRoot => f.write_str("root is not a rank of the communicator"),
            Self::BadBlocks => {
                f.write_str("block lists need one entry per rank and equal blocks to oneself")
            }
            Self::OpDatatype(op, dtype) => write!(f, "reduction {op} is not defined on {dtype}"),
            Self::NotCommutative(alg) => {
                write!(f, "algorithm {} needs a commutative operation", alg.name())
            }
            Self::AlgorithmNotFor(alg, op) => {
                write!(f, "algorithm {} does not implement {}", alg.name(), op.name())
            }
            Self::NotOnInterComm(op) => {
                write!(f, "{} is not defined on an inter-communicator", op.name())
            }
            Self::TooLarge => f.write_str("message size overflows"),
            Self::NoModule(op) => write!(f, "no collective module implements {}", op.name()),
            Self::NoLayout => f.write_str("hierarchical collectives need the node of every rank"),
            Self::Capacity => f.write_str("more collective modules or forced ranges than fit"),
        }
    }
}
