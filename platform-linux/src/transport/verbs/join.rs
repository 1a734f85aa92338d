//! Joining a job over verbs: rank 0 publishes the handshake token, every rank opens its
//! transport and publishes its address (GID, LID, UD queue pair, key) through the
//! launcher's exchange, and reads every rank's.

use super::device::Device;
use super::{VerbsAddress, VerbsSettings, VerbsTransport};
use crate::launch::exchange::Exchange;

/// The key a rank's verbs address is published under.
const ADDRESS_KEY: &str = "verbs";
/// The key rank 0 publishes the job's handshake token under.
const TOKEN_KEY: &str = "verbs_token";

/// Opens `rank`'s transport of a job of `size` on `device` and learns every rank's address
/// over `kv`. Collective: every rank fences twice (the token, then the addresses).
pub fn join_with<D: Device>(
    kv: &mut dyn Exchange,
    device: D,
    rank: usize,
    size: usize,
    mut settings: VerbsSettings,
) -> Result<VerbsTransport<D>, String> {
    let token = crate::tcp::random();
    if rank == 0 {
        kv.put(TOKEN_KEY, &format!("{token:032x}")).map_err(|e| e.to_string())?;
    }
    kv.fence().map_err(|e| e.to_string())?;
    let text = kv.get(0, TOKEN_KEY).map_err(|e| e.to_string())?;
    settings.handshake.token = u128::from_str_radix(&text, 16)
        .map_err(|_| format!("rank 0's verbs token {text:?} is malformed"))?;
    let mut transport =
        VerbsTransport::new(device, 0, rank, settings, token as u64).map_err(|e| e.to_string())?;
    kv.put(ADDRESS_KEY, &transport.address().to_text()).map_err(|e| e.to_string())?;
    kv.fence().map_err(|e| e.to_string())?;
    let mut peers = Vec::with_capacity(size);
    for peer in 0..size {
        let text = kv.get(peer, ADDRESS_KEY).map_err(|e| e.to_string())?;
        let address = VerbsAddress::from_text(&text)
            .ok_or_else(|| format!("rank {peer} published a malformed verbs address {text:?}"))?;
        peers.push(address);
    }
    transport.set_peers(peers).map_err(|e| e.to_string())?;
    Ok(transport)
}
