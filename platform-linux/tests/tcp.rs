//! The TCP transport between two real processes: the test process is rank 0, and it runs
//! rank 1 as a child (this same test binary, told its part by `TCP_TEST_PART`), handing it
//! its listening socket. Every wait has a deadline; children are killed on every path.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use commcore::wire::{Header, Kind};
use commcore_linux::tcp::{socket, PeerFault, TcpError, TcpSettings, TcpTransport};

const PART: &str = "TCP_TEST_PART";
const ADDRS: &str = "TCP_TEST_ADDRS";
const FD: &str = "TCP_TEST_FD";
const TOKEN: u128 = 0x5eed_0f7e_5700;

fn header(tag: i32, length: usize) -> Header {
    Header { kind: Kind::Eager, context: 1, source: 0, tag, sequence: 0, length: length as u64 }
}

/// A short send timeout where a test waits for it (a rank that stops reading), a long one
/// elsewhere, so that a loaded machine's slow start of the child is not taken for it.
fn settings() -> TcpSettings {
    let mut settings = TcpSettings::new(TOKEN);
    let stops_reading = std::env::var(PART).is_err()
        && std::thread::current().name().is_some_and(|n| n.contains("stops_reading"));
    settings.send_timeout = Duration::from_millis(if stops_reading { 700 } else { 5000 });
    settings
}

fn pattern(size: usize, salt: u8) -> Vec<u8> {
    (0..size).map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt)).collect()
}

/// The child's side: `Some(transport)` when this process is rank 1 of a test.
fn child_transport() -> Option<TcpTransport> {
    std::env::var(PART).ok()?;
    let addrs: Vec<SocketAddr> =
        std::env::var(ADDRS).ok()?.split(',').map(|a| a.parse().unwrap()).collect();
    let fd: i32 = std::env::var(FD).ok()?.parse().ok()?;
    // SAFETY: the parent handed us this listening socket's descriptor and nothing else owns it.
    let listener = unsafe { TcpListener::from_raw_fd(fd) };
    Some(TcpTransport::new(1, addrs, listener, settings(), 2).unwrap())
}

/// Rank 0 in this process, rank 1 in a child running `test` with `part`.
fn pair(test: &str, part: &str) -> (TcpTransport, KillOnDrop) {
    let listeners: Vec<TcpListener> =
        (0..2).map(|_| socket::listen(Ipv4Addr::LOCALHOST.into()).unwrap()).collect();
    let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
    let text: Vec<String> = addrs.iter().map(ToString::to_string).collect();
    let fd = listeners[1].as_raw_fd();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(PART, part)
        .env(ADDRS, text.join(","))
        .env(FD, fd.to_string());
    // SAFETY: runs between fork and exec and only calls fcntl and prctl.
    unsafe {
        command.pre_exec(move || {
            libc::fcntl(fd, libc::F_SETFD, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        })
    };
    let child = KillOnDrop(command.spawn().unwrap());
    let mut listeners = listeners.into_iter();
    let own = listeners.next().unwrap();
    drop(listeners);
    (TcpTransport::new(0, addrs, own, settings(), 1).unwrap(), child)
}

struct KillOnDrop(Child);

impl KillOnDrop {
    /// Waits up to 10 s for the child to exit and returns whether it succeeded.
    fn succeeded(&mut self) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn receive(
    transport: &mut TcpTransport,
    within: Duration,
) -> Result<(usize, Vec<u8>, i32), TcpError> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(arrival) = transport.poll()? {
            return Ok((arrival.from, arrival.payload, arrival.header.tag));
        }
        assert!(transport.wait(deadline)?, "nothing arrived within {within:?}");
    }
}

const SIZES: [usize; 6] = [0, 1, 8, 65_536, 1 << 20, 9 << 20];

#[test]
fn messages_of_every_size_cross_both_ways_in_order_after_simultaneous_connects() {
    if let Some(mut t) = child_transport() {
        for (i, &size) in SIZES.iter().enumerate() {
            t.send(0, &header(i as i32, size), &pattern(size, 1)).unwrap();
        }
        for (i, &size) in SIZES.iter().enumerate() {
            let (from, payload, tag) = receive(&mut t, Duration::from_secs(5)).unwrap();
            assert_eq!((from, tag), (0, i as i32));
            assert!(payload == pattern(size, 0), "payload of {size} bytes differs");
        }
        t.finish(Instant::now() + Duration::from_secs(5)).unwrap();
        std::process::exit(0);
    }
    let (mut t, mut child) = pair(
        "messages_of_every_size_cross_both_ways_in_order_after_simultaneous_connects",
        "sizes",
    );
    // Both ranks send first, so both dial at once; one connection must result.
    for (i, &size) in SIZES.iter().enumerate() {
        t.send(1, &header(i as i32, size), &pattern(size, 0)).unwrap();
    }
    for (i, &size) in SIZES.iter().enumerate() {
        let (from, payload, tag) = receive(&mut t, Duration::from_secs(5)).unwrap();
        assert_eq!((from, tag), (1, i as i32));
        assert!(payload == pattern(size, 1), "payload of {size} bytes differs");
        if i == 0 {
            // Rank 1 cannot finish before it has all of ours, so its connection is up.
            assert_eq!(t.connections(), 1);
        }
    }
    t.finish(Instant::now() + Duration::from_secs(5)).unwrap();
    assert!(child.succeeded(), "rank 1 failed");
}

/// Rank 1 sends one message and then does `then`; rank 0 must see `fault` within 2 s.
fn peer_fault(test: &str, part: &str, then: fn(&mut TcpTransport), expect: fn(&PeerFault) -> bool) {
    if let Some(mut t) = child_transport() {
        t.send(0, &header(1, 8), &[7; 8]).unwrap();
        // The fault comes once rank 0 has the message (a reset would discard it unread).
        let (from, _, tag) = receive(&mut t, Duration::from_secs(5)).unwrap();
        assert_eq!((from, tag), (0, 9));
        then(&mut t);
        std::process::exit(0);
    }
    let (mut t, mut child) = pair(test, part);
    receive(&mut t, Duration::from_secs(5)).unwrap();
    let start = Instant::now();
    // The go for the child's fault: the fault may already show in this very send.
    let go = t.send(1, &header(9, 0), &[]);
    if part == "killed" {
        child.0.kill().unwrap();
    }
    let outcome = loop {
        if let Err(error) = &go {
            break *error;
        }
        // Rank 0 keeps sending, as a rank pushing data to a slow peer would.
        let sent = t.send(1, &header(2, 1 << 20), &[0; 1 << 20]);
        let waited = sent.and_then(|()| t.wait(Instant::now() + Duration::from_millis(10)));
        if let Err(error) = waited {
            break error;
        }
        assert!(start.elapsed() < Duration::from_secs(3), "no error after 3 s");
    };
    let elapsed = start.elapsed();
    match &outcome {
        TcpError::Peer { rank: 1, fault } if expect(fault) => {}
        other => panic!("unexpected outcome: {other}"),
    }
    assert!(elapsed < Duration::from_secs(2), "error took {elapsed:?}");
    assert!(outcome.to_string().contains("rank 1"), "{outcome}");
    // Every later call reports the same error.
    assert_eq!(t.poll().unwrap_err(), outcome);
}

#[test]
fn a_killed_rank_is_named_within_two_seconds() {
    peer_fault(
        "a_killed_rank_is_named_within_two_seconds",
        "killed",
        |_| std::thread::sleep(Duration::from_secs(30)),
        |f| matches!(f, PeerFault::Closed | PeerFault::Broken(_)),
    );
}

#[test]
fn a_reset_connection_is_named_within_two_seconds() {
    peer_fault(
        "a_reset_connection_is_named_within_two_seconds",
        "reset",
        |t| {
            assert!(t.reset(0));
            std::thread::sleep(Duration::from_secs(30));
        },
        |f| matches!(f, PeerFault::Broken(_)),
    );
}

#[test]
fn a_rank_that_stops_reading_fills_a_bounded_queue_and_is_named() {
    peer_fault(
        "a_rank_that_stops_reading_fills_a_bounded_queue_and_is_named",
        "stops_reading",
        |_| std::thread::sleep(Duration::from_secs(30)),
        |f| matches!(f, PeerFault::StoppedReading { queued, .. } if *queued <= (4 << 20) + (1 << 20) + 64),
    );
}

#[test]
fn a_rank_that_never_answers_fails_the_send_after_the_handshake_timeout() {
    let silent = socket::listen(Ipv4Addr::LOCALHOST.into()).unwrap();
    let own = socket::listen(Ipv4Addr::LOCALHOST.into()).unwrap();
    let addrs = vec![own.local_addr().unwrap(), silent.local_addr().unwrap()];
    let mut settings = settings();
    settings.handshake.timeout = 300_000;
    let mut t = TcpTransport::new(0, addrs, own, settings, 3).unwrap();
    let start = Instant::now();
    t.send(1, &header(0, 8), &[1; 8]).unwrap();
    let error = loop {
        match t.wait(Instant::now() + Duration::from_secs(2)) {
            Err(error) => break error,
            Ok(_) => assert!(start.elapsed() < Duration::from_secs(2), "no error after 2 s"),
        }
    };
    assert_eq!(error, TcpError::Peer { rank: 1, fault: PeerFault::NoAnswer });
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_millis(290) && elapsed < Duration::from_secs(1),
        "{elapsed:?}"
    );
    assert!(error.to_string().contains("rank 1 did not answer"), "{error}");
}
