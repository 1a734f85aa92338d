//! `commcore nameserver`: the name service for unrelated jobs.
//!
//! ```text
//! commcore nameserver [--tcp IP:PORT] [--unix NAME]
//! ```
//!
//! Binds the listeners (default `--tcp 127.0.0.1:0`, a free port on this host; give
//! `--tcp 0.0.0.0:7100` to serve other hosts, `--unix NAME` for an abstract Unix socket),
//! prints one `COMMCORE_NAMESERVER=ADDR` line per listener on stdout, then serves until
//! killed. Jobs that set `COMMCORE_NAMESERVER` to one of those addresses share names.

use std::io::Write;
use std::net::SocketAddr;

use clap::Args;
use commcore_linux::dpm::names::NAMESERVER_ENV;
use commcore_linux::dpm::nameserver::NameServer;

/// `commcore nameserver`'s options.
#[derive(Args, Debug)]
pub struct NameserverArgs {
    /// Listen on this TCP address (port 0: a free one); default 127.0.0.1:0 when no
    /// --unix is given.
    #[arg(long, value_name = "IP:PORT")]
    pub tcp: Option<SocketAddr>,
    /// Listen on this abstract Unix socket name (no file is made).
    #[arg(long, value_name = "NAME")]
    pub unix: Option<String>,
}

/// Runs the name server; returns only on error.
pub fn run(args: &NameserverArgs) -> Result<(), String> {
    let tcp = match (args.tcp, &args.unix) {
        (None, None) => Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        (tcp, _) => tcp,
    };
    let server = NameServer::bind(tcp, args.unix.as_deref())
        .map_err(|e| format!("could not listen: {e}"))?;
    let addresses = server.addresses().map_err(|e| e.to_string())?;
    let mut stdout = std::io::stdout().lock();
    for addr in addresses {
        writeln!(stdout, "{NAMESERVER_ENV}={addr}").map_err(|e| e.to_string())?;
    }
    stdout.flush().map_err(|e| e.to_string())?;
    drop(stdout);
    server.serve().map_err(|e| format!("stopped: {e}"))
}
