//! Waiting for a child process under a time limit and taking what it printed.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::Child;
use std::time::{Duration, Instant};

/// How a run of a command ended.
pub struct Ended {
    /// The exit status as a shell shows it (128 + signal when killed).
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

fn reader(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    })
}

/// Waits for `child` (its output piped) for at most `limit`; kills it and panics, naming
/// `what`, past it.
pub fn finish(mut child: Child, limit: Duration, what: &str) -> Ended {
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{what}` did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let status = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    Ended { status, stdout: out.join().unwrap_or_default(), stderr: err.join().unwrap_or_default() }
}
