//! Address vectors: one 12-byte entry per process of a process group.
//!
//! - [`Ave`]: the entry. The network address inline (up to 64 bits), the transport selector
//!   and the node id in the spare word; an address too large to fit lives in an
//!   [`AddressStore`] and the entry holds its [`AddressHandle`].
//! - [`TransportTable`]: what the paper's VCs replicated per process (eager limits, function
//!   tables, queues) kept once per transport.
//! - [`ProcessGroups`]: the bounded registry of process groups; each [`Pgid`] owns one address
//!   vector, a `&[Ave]` the caller filled in its own storage (or hands over as `&mut [Ave]`
//!   to [`ProcessGroups::register_filled`]). A process is named by
//!   `(Pgid, Lpid)`: its group and its index in that group's address vector.

mod address_store;
mod ave;
mod groups;
mod transport;

pub use address_store::{AddressHandle, AddressStore, AddressStoreError};
pub use ave::{Address, Ave, AveError, NodeId, TransportId};
pub use groups::{GroupsError, Lpid, Pgid, ProcessGroups};
pub use transport::{TransportTable, TransportTableFull};
