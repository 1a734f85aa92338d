//! The job's message link at start-up: TCP or verbs, joined through the launcher's
//! exchange (collective over the job).

use std::net::Ipv4Addr;
use std::time::Duration;

use super::engine::MessageLink;
use super::error::InitError;
use super::settings::Settings;
use crate::launch::exchange::Exchange;
use crate::tcp::{TcpSettings, TcpTransport};

/// Starts this rank's TCP transport: listens, and learns every rank's address through the
/// launcher's exchange (collective over the job). `away`: peers are on other machines, so
/// listen on an interface unless `COMMCORE_TCP_IP` names the address.
pub(super) fn join_tcp(
    exchange: Option<&mut dyn Exchange>,
    rank: usize,
    size: usize,
    away: bool,
    settings: &Settings,
) -> Result<MessageLink, InitError> {
    let bad = |m: String| InitError::Environment(m);
    let exchange =
        exchange.ok_or_else(|| bad("TCP needs the launcher's exchange (COMMCORE_KV_FD)".into()))?;
    let mut tcp = TcpSettings::new(0);
    // The runtime polls before it sleeps; the transport's wait is its sleep.
    tcp.spin = Duration::ZERO;
    if let Some(ms) = settings.tcp_send_timeout_ms {
        tcp.send_timeout = Duration::from_millis(ms);
    }
    let ip = match crate::tcp::listen_ip().map_err(|e| bad(e.to_string()))? {
        Some(ip) => ip,
        None if away => crate::tcp::interface_ip().ok_or_else(|| {
            bad(format!(
                "ranks run on several nodes and this one has no network interface up to \
                 listen on; set {} to its address",
                crate::tcp::ENV_LISTEN_IP
            ))
        })?,
        None => Ipv4Addr::LOCALHOST.into(),
    };
    let transport =
        TcpTransport::join_with(exchange, rank, size, ip, tcp).map_err(|e| bad(e.to_string()))?;
    Ok(MessageLink::tcp(transport))
}

/// Starts this rank's verbs transport on the machine's first RDMA device and learns every
/// rank's verbs address through the launcher's exchange (collective over the job).
#[cfg(feature = "verbs")]
pub(super) fn join_verbs(
    exchange: Option<&mut dyn Exchange>,
    rank: usize,
    size: usize,
) -> Result<MessageLink, InitError> {
    use crate::transport::verbs::{ibverbs::IbvDevice, join, VerbsSettings};
    let bad = |m: String| InitError::Transport(format!("COMMCORE_TRANSPORT=verbs: {m}"));
    let exchange = exchange
        .ok_or_else(|| bad("verbs needs the launcher's exchange (COMMCORE_KV_FD)".into()))?;
    let device = IbvDevice::open().map_err(|e| bad(e.to_string()))?;
    let transport =
        join::join_with(exchange, device, rank, size, VerbsSettings::new(0)).map_err(bad)?;
    Ok(MessageLink::verbs(transport))
}

/// Verbs in a build without them: the error that says so.
#[cfg(not(feature = "verbs"))]
pub(super) fn join_verbs(
    _exchange: Option<&mut dyn Exchange>,
    _rank: usize,
    _size: usize,
) -> Result<MessageLink, InitError> {
    Err(InitError::Transport(
        "COMMCORE_TRANSPORT=verbs, but this build has no verbs transport: build with the \
         `verbs` feature (cargo build --features commcore-linux/verbs)"
            .into(),
    ))
}

#[cfg(all(test, not(feature = "verbs")))]
mod tests {
    #[test]
    fn verbs_in_a_build_without_them_is_one_clear_error() {
        let error = super::join_verbs(None, 0, 2).err().expect("an error").to_string();
        assert!(error.contains("no verbs transport") && error.contains("`verbs` feature"));
    }
}
