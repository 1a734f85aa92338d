use std::time::{Duration, Instant};

use super::*;
use crate::dpm::names::{NameError, NameService};

const TIMEOUT: Duration = Duration::from_secs(5);

fn unique_unix_name(tag: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("commcore-test-ns-{tag}-{}-{n}", std::process::id())
}

/// A server on both listeners, serving on a background thread; returns its addresses.
fn start() -> Vec<ServerAddr> {
    let server =
        NameServer::bind(Some("127.0.0.1:0".parse().unwrap()), Some(&unique_unix_name("a")))
            .or_else(|_| NameServer::bind(Some("127.0.0.1:0".parse().unwrap()), None))
            .expect("bind a name server");
    let addresses = server.addresses().unwrap();
    thread::spawn(move || server.serve());
    addresses
}

#[test]
fn publish_lookup_unpublish_with_every_refusal() {
    for addr in start() {
        let mut owner = NameService::connect(&addr, TIMEOUT).unwrap();
        let mut other = NameService::connect(&addr, TIMEOUT).unwrap();
        let name = format!("ocean-{addr}").replace(' ', "_");
        assert!(matches!(other.lookup_name(&name), Err(NameError::NotPublished(_))));
        owner.publish_name(&name, "commcore-port:1;unix=x;token=00").unwrap();
        assert_eq!(other.lookup_name(&name).unwrap(), "commcore-port:1;unix=x;token=00");
        assert!(matches!(other.publish_name(&name, "p"), Err(NameError::AlreadyPublished(_))));
        assert!(matches!(owner.publish_name(&name, "p"), Err(NameError::AlreadyPublished(_))));
        assert!(matches!(other.unpublish_name(&name), Err(NameError::NotOwner(_))));
        owner.unpublish_name(&name).unwrap();
        assert!(matches!(owner.unpublish_name(&name), Err(NameError::NotPublished(_))));
        assert!(matches!(other.lookup_name(&name), Err(NameError::NotPublished(_))));
    }
}

#[test]
fn a_closed_connection_leaves_nothing_published() {
    let addr = &start()[0];
    let mut watcher = NameService::connect(addr, TIMEOUT).unwrap();
    {
        let mut owner = NameService::connect(addr, TIMEOUT).unwrap();
        owner.publish_name("short-lived", "p").unwrap();
        assert_eq!(watcher.lookup_name("short-lived").unwrap(), "p");
    }
    // The server notices the close on its connection thread: poll within a bound.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match watcher.lookup_name("short-lived") {
            Err(NameError::NotPublished(_)) => break,
            Ok(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
            other => panic!("the name outlived its publisher: {other:?}"),
        }
    }
}

#[test]
fn bad_input_is_refused_before_and_by_the_server() {
    let addr = &start()[0];
    let mut client = NameService::connect(addr, TIMEOUT).unwrap();
    assert!(matches!(client.publish_name("two words", "p"), Err(NameError::BadName)));
    assert!(matches!(client.publish_name("", "p"), Err(NameError::BadName)));
    assert!(matches!(client.publish_name("n", &"p".repeat(1024)), Err(NameError::BadPort)));
    assert!(matches!(client.lookup_name(&"n".repeat(256)), Err(NameError::BadName)));
    // A client that breaks the protocol is answered and disconnected.
    let ServerAddr::Tcp(tcp) = addr else { panic!("the first listener is TCP") };
    let mut raw = std::net::TcpStream::connect(tcp).unwrap();
    raw.set_read_timeout(Some(TIMEOUT)).unwrap();
    raw.write_all(b"steal everything\n").unwrap();
    let mut reply = String::new();
    raw.read_to_string(&mut reply).unwrap();
    assert_eq!(reply, "err bad-request\n");
    assert!(NameServer::bind(None, None).is_err());
}

#[test]
fn a_dead_or_silent_server_is_an_error_within_the_timeout() {
    let short = Duration::from_millis(300);
    // Nobody listens: refused at once.
    let gone = ServerAddr::Unix(unique_unix_name("gone"));
    assert!(matches!(NameService::connect(&gone, short), Err(NameError::Unreachable(..))));
    // A listener that never answers: the call times out, then the connection is broken.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = ServerAddr::Tcp(silent.local_addr().unwrap());
    let mut client = NameService::connect(&addr, short).unwrap();
    let started = Instant::now();
    assert!(matches!(client.lookup_name("x"), Err(NameError::TimedOut)));
    assert!(started.elapsed() < short * 4, "took {:?}", started.elapsed());
    assert!(matches!(client.lookup_name("x"), Err(NameError::Broken)));
    for text in ["", "tcp:", "tcp:1.2.3.4", "udp:1.2.3.4:5", "unix:", "unix:a b"] {
        assert!(matches!(ServerAddr::parse(text), Err(NameError::BadAddress(_))), "{text}");
    }
    assert_eq!(ServerAddr::parse("unix:ns").unwrap().to_string(), "unix:ns");
}
