//! Two groups on different hosts meet over verbs when every process of both has an RDMA
//! device: each process opens a verbs transport of its own before the meeting, the roots
//! trade the groups' verbs addresses with their TCP ones ([`super::tcp_meet`]), and the
//! pair of groups runs a verbs link with the port's token (group A's processes first), as
//! the job's own ranks do between hosts. One process without a device puts the pair on
//! TCP: every process sees every member, so all decide alike.

use std::sync::Arc;
use std::time::Instant;

use commcore::port::Token;

use crate::runtime::engine::MessageLink;
use crate::shm::bridge::Bridge;
use crate::transport::verbs::VerbsAddress;

/// This process's verbs transport for a meeting (none in a build without verbs).
#[cfg(feature = "verbs")]
pub(super) type OwnVerbs = crate::transport::verbs::VerbsTransport<IbvDevice>;
#[cfg(feature = "verbs")]
use crate::transport::verbs::ibverbs::IbvDevice;

/// A build without verbs never has a transport to offer.
#[cfg(not(feature = "verbs"))]
pub(super) enum OwnVerbs {}

/// Opens a transport for a meeting under the port's `token` when this process has a
/// device and `COMMCORE_TRANSPORT` does not ask for TCP; a handshake may take until
/// `deadline`, as over TCP.
#[cfg(feature = "verbs")]
pub(super) fn open(token: Token, deadline: Instant, seed: u64) -> Option<OwnVerbs> {
    use crate::runtime::settings::{self, TransportSetting};
    use crate::transport::verbs::{ConnectMode, VerbsSettings};
    let settings = settings::current();
    if settings.transport == TransportSetting::Tcp {
        return None;
    }
    let device = IbvDevice::open().ok()?;
    let mut verbs = VerbsSettings::new(u128::from_le_bytes(token.0));
    if settings.verbs_eager {
        verbs.connect = ConnectMode::Eager;
    }
    let left = deadline.saturating_duration_since(Instant::now());
    verbs.handshake.timeout = (left.as_micros() as u64).max(100_000);
    OwnVerbs::new(device, 0, 0, verbs, seed).ok()
}

#[cfg(not(feature = "verbs"))]
pub(super) fn open(_token: Token, _deadline: Instant, _seed: u64) -> Option<OwnVerbs> {
    None
}

/// The address the other group reaches this process's transport at.
pub(super) fn address(own: &OwnVerbs) -> VerbsAddress {
    #[cfg(feature = "verbs")]
    return own.address();
    #[cfg(not(feature = "verbs"))]
    match *own {}
}

/// The link for the pair of groups: this process is `me` among `peers` (both groups'
/// addresses, A's first); `watch` is the launcher's failure word for the pair, if any.
/// With `COMMCORE_VERBS_CONNECT=eager` every pair is connected before it returns.
pub(super) fn link(
    own: OwnVerbs,
    (me, seed): (usize, u64),
    peers: Vec<VerbsAddress>,
    watch: Option<Arc<Bridge>>,
) -> Result<MessageLink, String> {
    #[cfg(feature = "verbs")]
    {
        let mut own = own;
        own.set_rank(me, seed);
        own.set_peers(peers).map_err(|e| e.to_string())?;
        if crate::runtime::settings::current().verbs_eager {
            own.wait_connected().map_err(|e| e.to_string())?;
        }
        Ok(MessageLink::verbs_watching(own, watch))
    }
    #[cfg(not(feature = "verbs"))]
    {
        let _ = (me, seed, peers, watch);
        match own {}
    }
}
