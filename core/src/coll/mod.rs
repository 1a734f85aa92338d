//! Collective components and schedules.
//!
//! - A collective algorithm is a [`Schedule`]: an iterator of one rank's [`Step`]s (send,
//!   receive, reduce, copy over [`Region`]s of the send, receive and scratch buffers, with
//!   `Wait` between rounds), generated on demand from O(1) state. Any executor runs it: the
//!   simulator in `commcore-linux`, a shared-memory runtime, a network.
//! - [`op`] and [`datatype`]: the reductions (built-in and user callbacks with their
//!   commutativity) over the built-in datatypes, including MINLOC/MAXLOC pairs.
//! - [`algo`]: the flat algorithms; [`hier`]: node-local + leaders + node-local phases over a
//!   [`NodeLayout`]; [`inter`]: inter-communicator collectives.
//! - [`component`]: components queried per communicator, modules with precomputed state,
//!   per-operation selection with gap filling, user control strings ([`control`]), and a
//!   [`CollTable`] whose call path is one dispatch.

pub mod algo;
pub mod args;
pub mod component;
pub mod control;
pub mod ctor;
pub mod datatype;
pub mod error;
pub mod hier;
pub mod inter;
pub mod layout;
pub mod op;
pub mod schedule;
pub mod step;
pub mod tuned;

pub use algo::Ctx;
pub use args::{Algorithm, Blocks, CollArgs, CollOp, Root};
pub use component::{CollTable, CommInfo, CommKind, Component, ComponentId, Module, ThreadLevel};
pub use control::{Control, ControlError};
pub use datatype::Datatype;
pub use error::CollError;
pub use layout::{LayoutError, NodeLayout};
pub use op::{reduce, Op, OpError, ReduceOp, UserOp};
pub use schedule::Schedule;
pub use step::{Buf, Group, Peer, Region, Step};
