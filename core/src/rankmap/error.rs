//! What can go wrong when rank maps are built or freed.

use core::fmt;

use crate::av::Pgid;

/// Why a rank map could not be built, shared or freed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankMapError {
    /// Entry `index` of an indirect mapping names parent rank `rank`, but the parent has
    /// `size` ranks.
    ParentRankOutOfRange {
        /// Position in the indirect mapping.
        index: u32,
        /// The parent rank it names.
        rank: u32,
        /// The parent's size.
        size: u32,
    },
    /// Entry `index` names process `lpid`, but its group's address vector has `len` entries.
    LpidOutOfRange {
        /// Position in the list.
        index: u32,
        /// The process named.
        lpid: u32,
        /// Entries in the group's address vector.
        len: u32,
    },
    /// A process group is not registered.
    UnknownGroup(Pgid),
    /// A communicator would have more than `u32::MAX` ranks, or an mlut's largest pgid and
    /// lpid do not fit one 32-bit word together.
    TooLarge,
    /// The table arena has no free run of `words` words (the largest has `largest_free`).
    ArenaFull {
        /// Words the table needs.
        words: usize,
        /// The largest free run.
        largest_free: usize,
    },
    /// The table arena tracks as many tables as its capacity allows.
    ArenaTablesFull,
    /// The rank map's table does not come from this arena.
    ForeignTable,
    /// An output slice holds `given` entries; the communicator has `needed` ranks.
    OutputLength {
        /// Entries needed: one per rank.
        needed: u32,
        /// Entries the slice holds.
        given: usize,
    },
    /// `ranks[index]` of a batch translation is `rank`, but the map has `size` ranks.
    RankOutOfRange {
        /// Position in the batch.
        index: usize,
        /// The rank asked for.
        rank: u32,
        /// The map's size.
        size: u32,
    },
    /// A batch translation was given `ranks` ranks and room for `out` results.
    BatchLength {
        /// Ranks given.
        ranks: usize,
        /// Results the output slice holds.
        out: usize,
    },
}

impl fmt::Display for RankMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::ParentRankOutOfRange { index, rank, size } => write!(
                f,
                "indirect mapping entry {index} names parent rank {rank}, parent has {size} ranks"
            ),
            Self::LpidOutOfRange { index, lpid, len } => write!(
                f,
                "entry {index} names process {lpid}, its address vector has {len} entries"
            ),
            Self::UnknownGroup(p) => write!(f, "process group {} is not registered", p.0),
            Self::TooLarge => {
                f.write_str("communicator larger than u32::MAX ranks, or its mlut words overflow")
            }
            Self::ArenaFull { words, largest_free } => {
                write!(f, "table arena full: {words} words needed, largest free run {largest_free}")
            }
            Self::ArenaTablesFull => f.write_str("table arena tracks its maximum of tables"),
            Self::ForeignTable => f.write_str("rank map's table is not from this arena"),
            Self::OutputLength { needed, given } => {
                write!(f, "output holds {given} entries, the communicator has {needed} ranks")
            }
            Self::RankOutOfRange { index, rank, size } => {
                write!(f, "ranks[{index}] = {rank}, the map has {size} ranks")
            }
            Self::BatchLength { ranks, out } => {
                write!(f, "batch of {ranks} ranks, room for {out} results")
            }
        }
    }
}
