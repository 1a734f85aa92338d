//! Dynamic process management: the pieces that do not need the message path.
//!
//! - [`fds`]: descriptor handover over a Unix socket, the way jobs on one host will give
//!   each other their shared-memory regions.
//! - [`names`]: `publish_name` / `lookup_name` / `unpublish_name` against a name server
//!   ([`nameserver`]) that unrelated jobs reach through `COMMCORE_NAMESERVER`;
//!   [`names_wire`] is the line protocol between them.
//!
//! Spawn, accept/connect, join, disconnect and merge are not built yet: they need the
//! runtime's many-process-group message path and the TCP transport.

pub mod fds;
pub mod names;
pub mod names_wire;
pub mod nameserver;
