//! The name service across processes: a real `commcore nameserver`, a job that publishes,
//! an unrelated job that looks the name up, the publisher killed, the server killed. Every
//! wait is bounded.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use commcore_linux::dpm::names::{NameError, NameService, ServerAddr, NAMESERVER_ENV};

const TIMEOUT: Duration = Duration::from_secs(20);
const CALL_TIMEOUT: Duration = Duration::from_secs(2);
const PORT: &str = "commcore-port:1;tcp=127.0.0.1:4000;token=00112233445566778899aabbccddeeff";
/// Tells a re-executed copy of this test binary which role to play.
const ROLE_ENV: &str = "COMMCORE_TEST_NAMES_ROLE";

/// A child process killed when dropped, so a failing test leaves nothing running, with its
/// stdout lines arriving on a channel.
struct Process {
    child: Child,
    lines: Receiver<String>,
}

impl Process {
    fn start(command: &mut Command) -> Process {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (send, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Process { child, lines }
    }

    /// What follows `prefix` on the next line holding it; fails the test after `TIMEOUT`.
    fn line(&self, prefix: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = self.lines.recv_timeout(left) else {
                panic!("no line starting with {prefix:?} within {TIMEOUT:?}")
            };
            // libtest writes "test child_role ... " before a role's own output.
            if let Some(at) = line.find(prefix) {
                return line[at + prefix.len()..].to_owned();
            }
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn role(role: &str, server: &str) -> Process {
    Process::start(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_role", "--ignored", "--nocapture", "--test-threads=1"])
            .env(ROLE_ENV, role)
            .env(NAMESERVER_ENV, server),
    )
}

/// Run by the re-executed binary: `publish` publishes and holds the name until stdin
/// closes; `lookup` prints what it finds.
#[test]
#[ignore = "a role of the cross-process test, which runs it"]
fn child_role() {
    let Ok(role) = std::env::var(ROLE_ENV) else { return };
    let mut names = NameService::from_env(CALL_TIMEOUT).unwrap_or_else(|e| panic!("{e}"));
    match role.as_str() {
        "publish" => {
            names.publish_name("ocean", PORT).unwrap();
            println!("ROLE published");
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
        }
        "lookup" => println!("ROLE found {}", names.lookup_name("ocean").unwrap()),
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn unrelated_processes_share_names_through_a_nameserver_process() {
    let server = Process::start(Command::new(env!("CARGO_BIN_EXE_commcore")).args([
        "nameserver",
        "--tcp",
        "127.0.0.1:0",
    ]));
    let address = server.line(&format!("{NAMESERVER_ENV}="));
    let addr = ServerAddr::parse(&address).unwrap();

    let publisher = role("publish", &address);
    assert_eq!(publisher.line("ROLE "), "published");
    let looker = role("lookup", &address);
    assert_eq!(looker.line("ROLE "), format!("found {PORT}"));

    // This test process is a third job: it sees the name, cannot take it, and sees it go
    // when the publisher is killed.
    let mut names = NameService::connect(&addr, CALL_TIMEOUT).unwrap();
    assert_eq!(names.lookup_name("ocean").unwrap(), PORT);
    assert!(matches!(names.publish_name("ocean", "p"), Err(NameError::AlreadyPublished(_))));
    assert!(matches!(names.unpublish_name("ocean"), Err(NameError::NotOwner(_))));
    drop(publisher);
    let deadline = Instant::now() + TIMEOUT;
    while names.lookup_name("ocean").is_ok() {
        assert!(Instant::now() < deadline, "a killed publisher's name stayed published");
        thread::sleep(Duration::from_millis(10));
    }
    assert!(matches!(names.lookup_name("ocean"), Err(NameError::NotPublished(_))));

    // A dead server: calls on the open connection and new connections fail in time.
    drop(server);
    let started = Instant::now();
    assert!(names.lookup_name("ocean").is_err());
    assert!(NameService::connect(&addr, CALL_TIMEOUT).is_err());
    assert!(started.elapsed() < 3 * CALL_TIMEOUT, "took {:?}", started.elapsed());
}

#[test]
fn the_nameserver_refuses_bad_options_and_the_client_needs_its_address() {
    let bad = [&["--tcp", "nowhere"][..], &["--tcp"], &["--port", "1"]];
    for args in bad {
        let output = Command::new(env!("CARGO_BIN_EXE_commcore"))
            .arg("nameserver")
            .args(args)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?} explains itself");
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_role", "--ignored", "--nocapture"])
        .env(ROLE_ENV, "lookup")
        .env_remove(NAMESERVER_ENV)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = [output.stdout, output.stderr].concat();
    assert!(String::from_utf8_lossy(&said).contains("COMMCORE_NAMESERVER is not set"));
}
