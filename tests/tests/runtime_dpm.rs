//! Dynamic processes through the launcher on real processes: parents that spawn children
//! (1, 4 and 8; nested; spawn_multiple; bad programs and sizes; children that die; 1,000
//! spawn/disconnect cycles), groups on two hosts that meet over TCP, two independently
//! started jobs that accept and connect (once with traffic, merge and collectives on the
//! inter-communicator, and 200 times in a row), join over a Unix and a TCP socket, and bad
//! ports (malformed, closed, forged, never accepted) that are the same error on every rank
//! within their timeout. Every job runs under the launcher's timeout.

use std::time::Duration;

use commcore_linux::dpm::names::NAMESERVER_ENV;
use commcore_linux::dpm::nameserver::NameServer;
use commcore_linux::launch::JobSpec;
use commcore_tests::jobs::{self, run_ok};
use commcore_tests::leftovers::shm_entries;

const RANK: &str = env!("CARGO_BIN_EXE_dpm_rank");
const TIMEOUT: Duration = Duration::from_secs(120);

fn job(procs: usize, args: &[&str]) -> JobSpec {
    jobs::job(RANK, procs, args, TIMEOUT)
}

/// Runs an accepting job of `a` ranks and a connecting job of `b` ranks at once, meeting
/// `cycles` times (the port name passed in a file, or through the name server at
/// `nameserver`); both must print `ok`.
fn accept_and_connect(a: usize, b: usize, cycles: usize, nameserver: Option<&str>) {
    let before = shm_entries();
    static JOBS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = JOBS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = match nameserver {
        Some(_) => format!("name:commcore-test-{}-{n}", std::process::id()),
        None => {
            let file =
                std::env::temp_dir().join(format!("commcore-dpm-test-{}-{n}", std::process::id()));
            file.to_string_lossy().into_owned()
        }
    };
    let cycles = cycles.to_string();
    let mut acceptor = job(a, &["accept", &file, &cycles]);
    let mut connector = job(b, &["connect", &file, &cycles]);
    connector.env.push(("COMMCORE_CPU_OFFSET".into(), a.to_string()));
    if let Some(address) = nameserver {
        for spec in [&mut acceptor, &mut connector] {
            spec.env.push((NAMESERVER_ENV.into(), address.into()));
        }
    }
    let (accepted, connected) = std::thread::scope(|scope| {
        let accepting = scope.spawn(|| run_ok(&acceptor));
        let connected = run_ok(&connector);
        (accepting.join(), connected)
    });
    assert_eq!(accepted.expect("the acceptor's thread").trim(), "ok");
    assert_eq!(connected.trim(), "ok");
    assert!(shm_entries().difference(&before).next().is_none(), "nothing left in /dev/shm");
}

#[test]
fn two_jobs_accept_and_connect_then_talk_merge_and_disconnect() {
    accept_and_connect(2, 3, 1, None);
    accept_and_connect(1, 1, 1, None);
}

#[test]
fn unrelated_jobs_find_each_other_through_a_name_server() {
    let server = NameServer::bind(Some("127.0.0.1:0".parse().unwrap()), None).unwrap();
    let address = server.addresses().unwrap()[0].to_string();
    std::thread::spawn(move || server.serve());
    accept_and_connect(2, 2, 2, Some(&address));
}

#[test]
fn two_jobs_disconnect_and_reconnect_200_times_without_growing() {
    accept_and_connect(1, 1, 200, None);
}

#[test]
fn two_processes_join_over_a_unix_and_a_tcp_socket() {
    for scenario in ["join-unix", "join-tcp"] {
        assert_eq!(run_ok(&job(2, &[scenario])).trim(), "ok", "{scenario}");
    }
}

#[test]
fn bad_ports_are_the_same_error_on_every_rank() {
    for procs in [1, 3] {
        assert_eq!(run_ok(&job(procs, &["bad-ports"])).trim(), "ok", "{procs} ranks");
    }
}

#[test]
fn parents_spawn_1_4_and_8_children_that_talk_merge_and_disconnect() {
    for children in ["1", "4", "8"] {
        assert_eq!(run_ok(&job(2, &["spawn", children, "1"])).trim(), "ok", "{children} children");
    }
}

#[test]
fn children_spawn_grandchildren_and_spawn_multiple_numbers_its_children() {
    assert_eq!(run_ok(&job(2, &["nested"])).trim(), "ok");
    assert_eq!(run_ok(&job(2, &["multiple"])).trim(), "ok");
}

#[test]
fn a_missing_program_and_bad_sizes_are_the_same_error_on_every_parent() {
    assert_eq!(run_ok(&job(3, &["spawn-bad"])).trim(), "ok");
}

#[test]
fn children_dying_before_during_and_after_are_errors_or_independence() {
    assert_eq!(run_ok(&job(2, &["spawn-dying"])).trim(), "ok");
}

#[test]
fn a_thousand_spawn_and_disconnect_cycles_grow_nothing() {
    let before = shm_entries();
    assert_eq!(run_ok(&job(1, &["spawn", "1", "1000"])).trim(), "ok");
    assert!(shm_entries().difference(&before).next().is_none(), "nothing left in /dev/shm");
}

/// Needs root (network namespaces): `scripts/test.sh` runs it with `--ignored`.
#[test]
#[ignore]
fn children_spawned_onto_another_host_meet_their_parents_over_tcp() {
    let before = shm_entries();
    for (procs, children) in [(2, "1"), (3, "3")] {
        let mut spec = job(procs, &["spawn-host", children, "10"]);
        spec.hosts = 2;
        assert_eq!(run_ok(&spec).trim(), "ok", "{procs} parents, {children} children");
    }
    // Children that die before, during and after: errors or independence, as on one host.
    let mut spec = job(2, &["spawn-dying-host"]);
    spec.hosts = 2;
    assert_eq!(run_ok(&spec).trim(), "ok");
    assert!(shm_entries().difference(&before).next().is_none(), "nothing left in /dev/shm");
}

/// Needs root (network namespaces): `scripts/test.sh` runs it with `--ignored`.
#[test]
#[ignore]
fn groups_on_two_hosts_accept_and_connect_over_tcp() {
    let before = shm_entries();
    for procs in [4, 5] {
        let mut spec = job(procs, &["hosts", "-", "20"]);
        spec.hosts = 2;
        assert_eq!(run_ok(&spec).trim(), "ok", "{procs} ranks on 2 hosts");
    }
    assert!(shm_entries().difference(&before).next().is_none(), "nothing left in /dev/shm");
}
