//! The job's message links at start-up, joined through the launcher's exchange
//! (collective over the job), and which link reaches each rank.
//!
//! By default (`COMMCORE_TRANSPORT` unset) ranks of one host share memory, and a pair on
//! two hosts talks over verbs when both ends have an RDMA device, else over TCP; a build
//! without the `verbs` feature has only TCP between hosts. Every rank learns the same map
//! of devices (ranks publish theirs, or that they have none), so every rank decides each
//! pair alike and opens the same links: TCP when some pair needs it, verbs when some pair
//! can use it. `COMMCORE_TRANSPORT=tcp|verbs` puts every pair on one of them.

use std::net::Ipv4Addr;
use std::time::Duration;

use commcore::av::TransportId;

use super::engine::MessageLink;
use super::error::InitError;
use super::settings::{Settings, TransportSetting};
use crate::launch::exchange::Exchange;
use crate::tcp::{TcpSettings, TcpTransport};
use crate::transport;

/// A transport that carries a pair of ranks between hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Carrier {
    Tcp,
    Verbs,
}

/// The links a job opens and the carrier of each of this rank's peers.
#[derive(Debug, PartialEq, Eq)]
struct Plan {
    /// `None` for this rank and the peers it reaches through shared memory.
    carriers: Vec<Option<Carrier>>,
    tcp: bool,
    verbs: bool,
}

/// Decides every pair from the ranks' hosts and devices: the same links on every rank.
fn plan(rank: usize, hosts: &[u32], devices: &[bool], setting: TransportSetting) -> Plan {
    let size = hosts.len();
    let carrier = |peer: usize| match setting {
        _ if peer == rank => None,
        TransportSetting::Tcp => Some(Carrier::Tcp),
        TransportSetting::Verbs => Some(Carrier::Verbs),
        TransportSetting::Auto if hosts[peer] == hosts[rank] => None,
        TransportSetting::Auto if devices[peer] && devices[rank] => Some(Carrier::Verbs),
        TransportSetting::Auto => Some(Carrier::Tcp),
    };
    let (tcp, verbs) = match setting {
        TransportSetting::Tcp => (size > 1, false),
        TransportSetting::Verbs => (false, size > 1),
        TransportSetting::Auto => {
            let first = hosts.first().copied();
            let several_hosts = hosts.iter().any(|&h| Some(h) != first);
            // A rank without a device needs TCP to every other host; verbs needs devices
            // on two hosts.
            let with_device = |r: &usize| devices[*r];
            let mut device_hosts = (0..size).filter(with_device).map(|r| hosts[r]);
            let device_host = device_hosts.next();
            let verbs = device_hosts.any(|h| Some(h) != device_host);
            (several_hosts && devices.iter().any(|&has| !has), verbs)
        }
    };
    Plan { carriers: (0..size).map(carrier).collect(), tcp, verbs }
}

/// The job's links, link 0 first as the engine numbers them, and for each rank the link
/// and selector that reach it (`None`: shared memory, or this rank).
pub(super) struct JobLinks {
    pub links: Vec<MessageLink>,
    pub routes: Vec<Option<(usize, TransportId)>>,
}

/// Opens the links this rank's job needs (`hosts[r]`: rank `r`'s host). `away`: hosts are
/// other machines, so TCP listens on an interface.
pub(super) fn join_job(
    mut exchange: Option<&mut dyn Exchange>,
    rank: usize,
    hosts: &[u32],
    away: bool,
    settings: &Settings,
) -> Result<JobLinks, InitError> {
    let size = hosts.len();
    let setting = settings.transport;
    let several_hosts = hosts.iter().any(|&h| h != hosts[0]);
    if size <= 1 || (setting == TransportSetting::Auto && !several_hosts) {
        return Ok(JobLinks { links: Vec::new(), routes: vec![None; size] });
    }
    let probe = match setting {
        TransportSetting::Tcp => false,
        TransportSetting::Verbs => true,
        TransportSetting::Auto => cfg!(feature = "verbs"),
    };
    let (verbs, devices) = if probe {
        let exchange = exchange.as_deref_mut().ok_or_else(|| no_exchange("verbs"))?;
        join_devices(
            exchange,
            rank,
            size,
            setting == TransportSetting::Verbs,
            settings.verbs_eager,
        )?
    } else {
        (None, vec![false; size])
    };
    let plan = plan(rank, hosts, &devices, setting);
    let mut links = Vec::new();
    let mut tcp_link = None;
    if plan.tcp {
        links.push(join_tcp(exchange, rank, size, away, settings)?);
        tcp_link = Some(0);
    }
    let mut verbs_link = None;
    if let (true, Some(verbs)) = (plan.verbs, verbs) {
        verbs_link = Some(links.len());
        links.push(verbs);
    }
    let route = |carrier: Option<Carrier>| match carrier? {
        Carrier::Tcp => Some((tcp_link?, transport::TCP)),
        Carrier::Verbs => Some((verbs_link?, transport::VERBS)),
    };
    Ok(JobLinks { links, routes: plan.carriers.into_iter().map(route).collect() })
}

fn no_exchange(what: &str) -> InitError {
    InitError::Environment(format!("{what} needs the launcher's exchange (COMMCORE_KV_FD)"))
}

/// Starts this rank's TCP transport: listens, and learns every rank's address through the
/// launcher's exchange (collective over the job). `away`: peers are on other machines, so
/// listen on an interface unless `COMMCORE_TCP_IP` names the address.
fn join_tcp(
    exchange: Option<&mut dyn Exchange>,
    rank: usize,
    size: usize,
    away: bool,
    settings: &Settings,
) -> Result<MessageLink, InitError> {
    let bad = |m: String| InitError::Environment(m);
    let exchange = exchange.ok_or_else(|| no_exchange("TCP"))?;
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

/// Learns which ranks have an RDMA device and opens this rank's verbs transport on its
/// first one if it has one (collective: every rank takes part). `strict`
/// (`COMMCORE_TRANSPORT=verbs`): every rank must have one, else the error names a rank
/// without. `eager`: connects every pair with devices before it returns.
#[cfg(feature = "verbs")]
fn join_devices(
    exchange: &mut dyn Exchange,
    rank: usize,
    size: usize,
    strict: bool,
    eager: bool,
) -> Result<(Option<MessageLink>, Vec<bool>), InitError> {
    use crate::transport::verbs::{ibverbs::IbvDevice, join, ConnectMode, VerbsSettings};
    let bad = |m: String| InitError::Transport(format!("COMMCORE_TRANSPORT=verbs: {m}"));
    let (device, open_error) = match IbvDevice::open() {
        Ok(device) => (Some(device), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut verbs = VerbsSettings::new(0);
    if eager {
        verbs.connect = ConnectMode::Eager;
    }
    let mut joined = join::join_where_present(exchange, device, rank, size, verbs).map_err(bad)?;
    if strict {
        if let Some(error) = open_error.or(joined.open_error) {
            return Err(bad(error));
        }
        if let Some(missing) = joined.devices.iter().position(|&has| !has) {
            return Err(bad(format!("rank {missing} has no RDMA device")));
        }
    }
    if let (true, Some(transport)) = (eager, joined.transport.as_mut()) {
        transport.wait_connected().map_err(|e| bad(e.to_string()))?;
    }
    Ok((joined.transport.map(MessageLink::verbs), joined.devices))
}

/// Verbs in a build without them: no device anywhere, or, when verbs are demanded, the
/// error that says so.
#[cfg(not(feature = "verbs"))]
fn join_devices(
    _exchange: &mut dyn Exchange,
    _rank: usize,
    size: usize,
    strict: bool,
    _eager: bool,
) -> Result<(Option<MessageLink>, Vec<bool>), InitError> {
    if strict {
        return Err(InitError::Transport(
            "COMMCORE_TRANSPORT=verbs, but this build has no verbs transport: build with the \
             `verbs` feature (cargo build --features commcore-linux/verbs)"
                .into(),
        ));
    }
    Ok((None, vec![false; size]))
}

#[cfg(test)]
mod tests {
    use super::{plan, Carrier, TransportSetting};
    #[cfg(not(feature = "verbs"))]
    use crate::launch::exchange::ExchangeError;

    /// An exchange that fails every call: the error must come before any is made.
    #[cfg(not(feature = "verbs"))]
    struct Refusing;

    #[cfg(not(feature = "verbs"))]
    impl crate::launch::exchange::Exchange for Refusing {
        fn put(&mut self, _: &str, _: &str) -> Result<(), ExchangeError> {
            Err(ExchangeError { launcher: "test", message: "put".into() })
        }
        fn fence(&mut self) -> Result<(), ExchangeError> {
            Err(ExchangeError { launcher: "test", message: "fence".into() })
        }
        fn get(&mut self, _: usize, _: &str) -> Result<String, ExchangeError> {
            Err(ExchangeError { launcher: "test", message: "get".into() })
        }
    }

    #[cfg(not(feature = "verbs"))]
    #[test]
    fn verbs_in_a_build_without_them_is_one_clear_error() {
        let mut kv = Refusing;
        let error =
            super::join_devices(&mut kv, 0, 2, true, false).err().expect("an error").to_string();
        assert!(error.contains("no verbs transport") && error.contains("`verbs` feature"));
    }

    #[test]
    fn pairs_on_two_hosts_take_verbs_only_where_both_ends_have_a_device() {
        // Ranks 0 and 1 on host 0, 2 and 3 on host 1; rank 3 has no device.
        let hosts = [0, 0, 1, 1];
        let devices = [true, true, true, false];
        let at = |rank| plan(rank, &hosts, &devices, TransportSetting::Auto);
        let (tcp, verbs) = (Some(Carrier::Tcp), Some(Carrier::Verbs));
        assert_eq!(at(0).carriers, [None, None, verbs, tcp]);
        assert_eq!(at(3).carriers, [tcp, tcp, None, None]);
        assert_eq!(at(2).carriers, [verbs, verbs, None, None]);
        // Every rank opens both links, and each pair is decided alike at both ends.
        for rank in 0..4 {
            let p = at(rank);
            assert!(p.tcp && p.verbs);
            for peer in 0..4 {
                assert_eq!(p.carriers[peer], at(peer).carriers[rank], "pair {rank}-{peer}");
            }
        }
    }

    #[test]
    fn a_link_opens_only_where_some_pair_needs_it() {
        let auto = TransportSetting::Auto;
        // Devices everywhere: no TCP at all.
        let p = plan(0, &[0, 1, 2], &[true; 3], auto);
        assert!(!p.tcp && p.verbs);
        // Devices on one host only: nothing to use them for between hosts.
        let p = plan(0, &[0, 0, 1], &[true, true, false], auto);
        assert!(p.tcp && !p.verbs);
        assert_eq!(p.carriers, [None, None, Some(Carrier::Tcp)]);
        // One host: no link, whatever the devices.
        let p = plan(1, &[0, 0], &[true, true], auto);
        assert!(!p.tcp && !p.verbs && p.carriers == [None, None]);
        // Forced: every other rank over the one transport, within a host too.
        let p = plan(1, &[0, 0, 1], &[false; 3], TransportSetting::Tcp);
        assert_eq!(p.carriers, [Some(Carrier::Tcp), None, Some(Carrier::Tcp)]);
        assert!(p.tcp && !p.verbs);
        let p = plan(0, &[0, 0], &[true; 2], TransportSetting::Verbs);
        assert!(!p.tcp && p.verbs && p.carriers == [None, Some(Carrier::Verbs)]);
    }
}
