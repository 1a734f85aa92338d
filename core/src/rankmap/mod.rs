//! Rank maps: a communicator's ranks to process-group entries, through compressed models.
//!
//! A communicator's [`RankMap`] answers `rank → (pgid, lpid)` ([`RankMap::translate`]) and
//! `rank → &Ave` ([`RankMap::entry`]) with one `match` over its model: *direct*
//! (`lpid = rank`), *offset*, *stride* (negative strides included, so a reversed
//! communicator is regular), *block-stride* (a multiply-high instead of a division), *lut*
//! (a table of lpids), *mlut* (a table of `(pgid, lpid)` pairs), and strided *views* into a
//! parent's lut or mlut. Regular models take a few words; tables live in a caller-provided
//! [`TableArena`], counted by users and shared between a parent and the views and
//! duplicates made from it.
//!
//! Building: [`RankMap::direct`] and [`RankMap::contiguous`] for a group's world and self
//! communicators; [`create`] from a parent and an indirect mapping (child rank → parent rank),
//! which detects the pattern in one pass and composes it with the parent's model;
//! [`from_group`] and [`from_processes`] from explicit process lists; [`RankMap::dup`];
//! [`InterMaps`] for inter-communicators and their merge. [`RankMap::free`] gives a map back.

mod arena;
mod create;
mod detect;
mod error;
mod intercomm;
mod map;

pub use arena::TableArena;
pub use create::{create, from_group, from_processes};
pub use error::RankMapError;
pub use intercomm::InterMaps;
pub use map::{ModelKind, Rank, RankMap};
