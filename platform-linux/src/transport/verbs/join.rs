//! Joining a job over verbs: rank 0 publishes the handshake token, every rank opens its
//! transport and publishes its address (GID, LID, UD queue pair, key) through the
//! launcher's exchange, and reads every rank's. A rank without a device takes part too
//! and publishes that it has none, so that every rank learns the same map of devices.

use super::device::Device;
use super::{VerbsAddress, VerbsSettings, VerbsTransport};
use crate::launch::exchange::Exchange;

/// The key a rank's verbs address is published under.
const ADDRESS_KEY: &str = "verbs";
/// The key rank 0 publishes the job's handshake token under.
const TOKEN_KEY: &str = "verbs_token";
/// What a rank without a device publishes under [`ADDRESS_KEY`].
const NO_DEVICE: &str = "none";

/// Opens `rank`'s transport of a job of `size` on `device` and learns every rank's address
/// over `kv`; an error names the first rank without a device. Collective, as
/// [`join_where_present`].
pub fn join_with<D: Device>(
    kv: &mut dyn Exchange,
    device: D,
    rank: usize,
    size: usize,
    settings: VerbsSettings,
) -> Result<VerbsTransport<D>, String> {
    let joined = join_where_present(kv, Some(device), rank, size, settings)?;
    if let Some(error) = joined.open_error {
        return Err(error);
    }
    match joined.devices.iter().position(|&has| !has) {
        Some(missing) => Err(format!("rank {missing} has no RDMA device")),
        None => joined.transport.ok_or_else(|| "this rank's transport did not open".into()),
    }
}

/// What [`join_where_present`] learned.
pub struct Joined<D: Device> {
    /// This rank's transport, if it has a device that opened.
    pub transport: Option<VerbsTransport<D>>,
    /// Which ranks have a device (the same on every rank).
    pub devices: Vec<bool>,
    /// Why this rank's device did not open, if it did not.
    pub open_error: Option<String>,
}

/// Opens `rank`'s transport if it has a `device`, and learns which ranks have one (the
/// same answer on every rank) and their addresses. Collective: every rank fences twice
/// (the token, then the addresses), with a device or without.
pub fn join_where_present<D: Device>(
    kv: &mut dyn Exchange,
    device: Option<D>,
    rank: usize,
    size: usize,
    mut settings: VerbsSettings,
) -> Result<Joined<D>, String> {
    let token = crate::tcp::random();
    if rank == 0 {
        kv.put(TOKEN_KEY, &format!("{token:032x}")).map_err(|e| e.to_string())?;
    }
    kv.fence().map_err(|e| e.to_string())?;
    let text = kv.get(0, TOKEN_KEY).map_err(|e| e.to_string())?;
    settings.handshake.token = u128::from_str_radix(&text, 16)
        .map_err(|_| format!("rank 0's verbs token {text:?} is malformed"))?;
    // A device that fails to open still lets this rank take part in both fences, so that
    // the others do not wait on it.
    let opened = device.map(|d| VerbsTransport::new(d, 0, rank, settings, token as u64));
    let (mut transport, published, open_error) = match opened {
        Some(Ok(transport)) => {
            let text = transport.address().to_text();
            (Some(transport), text, None)
        }
        Some(Err(e)) => (None, NO_DEVICE.to_string(), Some(e.to_string())),
        None => (None, NO_DEVICE.to_string(), None),
    };
    kv.put(ADDRESS_KEY, &published).map_err(|e| e.to_string())?;
    kv.fence().map_err(|e| e.to_string())?;
    let mut peers = Vec::with_capacity(size);
    for peer in 0..size {
        let text = kv.get(peer, ADDRESS_KEY).map_err(|e| e.to_string())?;
        if text == NO_DEVICE {
            peers.push(None);
            continue;
        }
        let address = VerbsAddress::from_text(&text)
            .ok_or_else(|| format!("rank {peer} published a malformed verbs address {text:?}"))?;
        peers.push(Some(address));
    }
    let devices = peers.iter().map(Option::is_some).collect();
    if let Some(transport) = transport.as_mut() {
        transport.set_reachable_peers(peers).map_err(|e| e.to_string())?;
    }
    Ok(Joined { transport, devices, open_error })
}
