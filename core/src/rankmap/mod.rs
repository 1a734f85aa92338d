//! Rank maps: a communicator's ranks to process-group entries, through compressed models.
//!
//! A communicator's [`RankMap`] answers `rank → (pgid, lpid)` ([`RankMap::translate`]) and
//! `rank → &Ave` ([`RankMap::entry`]) with one `match` over its model (and many ranks at
//! once with one `match` a batch: [`RankMap::translate_batch`]): *direct*
//! (`lpid = rank`), *offset*, *stride* (negative strides included, so a reversed
//! communicator is regular), *block-stride* (a multiply-high instead of a division), *lut*
//! (a table of lpids), *mlut* (a table of `(pgid, lpid)` packed in one word each: the pgid
//! above a per-table bit position, the lpid below), and strided *views* into a
//! parent's lut or mlut. Regular models take a few words; tables live in a caller-provided
//! [`TableArena`], counted by users and shared between a parent and the views and
//! duplicates made from it.
//!
//! Building: [`RankMap::direct`] and [`RankMap::contiguous`] for a group's world and self
//! communicators; [`create`] from a parent and an indirect mapping (child rank → parent rank),
//! which detects the pattern in one pass and composes it with the parent's model;
//! [`from_group`] and [`from_processes`] from explicit process lists; [`RankMap::dup`];
//! [`InterMaps`] for inter-communicators and their merge. [`RankMap::free`] gives a map back.
//!
//! ```
//! use core::sync::atomic::AtomicU32;
//! use commcore::av::{Address, Ave, NodeId, ProcessGroups, TransportId};
//! use commcore::rankmap::{create, ModelKind, RankMap, TableArena};
//!
//! // Group 0's address vector: 8 processes, 4 a node, filled by the runtime at start-up.
//! let av: Vec<Ave> = (0..8)
//!     .map(|l| Ave::new(Address::Inline(0x1000 + l), TransportId(0), NodeId(l as u32 / 4)).unwrap())
//!     .collect();
//! let mut groups: ProcessGroups<'_, 4> = ProcessGroups::new();
//! let pgid = groups.register(&av).unwrap();
//! let words: Vec<AtomicU32> = (0..64).map(|_| AtomicU32::new(0)).collect();
//! let mut arena: TableArena<'_, 8> = TableArena::new(&words);
//!
//! let world = RankMap::direct(pgid, groups.av(pgid));
//! // MPI_Comm_split into odd ranks, and a reversal of that: both regular, no table.
//! let odd = create(&world, &[1, 3, 5, 7], &groups, &mut arena).unwrap();
//! assert_eq!(odd.kind(), ModelKind::Stride);
//! let reversed = create(&odd, &[3, 2, 1, 0], &groups, &mut arena).unwrap();
//! assert_eq!(reversed.translate(0), Some((pgid, 7)));
//! assert_eq!(reversed.node(&groups, 3), Some(NodeId(0)));
//! // An irregular order needs a lut from the arena, returned when the map is freed.
//! let shuffled = create(&world, &[6, 0, 3], &groups, &mut arena).unwrap();
//! assert_eq!((shuffled.kind(), arena.used_bytes()), (ModelKind::Lut, 12));
//! shuffled.free(&mut arena).unwrap();
//! assert_eq!(arena.used_bytes(), 0);
//! ```

mod arena;
mod batch;
mod create;
mod detect;
mod error;
mod intercomm;
mod map;

pub use arena::TableArena;
pub use batch::BatchProcess;
pub use create::{create, from_group, from_processes};
pub use error::RankMapError;
pub use intercomm::InterMaps;
pub use map::{ModelKind, Rank, RankMap};
