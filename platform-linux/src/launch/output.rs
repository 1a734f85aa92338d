//! Ranks' output through the launcher: each rank's standard output and error are read from
//! pipes and written out as whole lines (prefixed `[rank] ` when tagged, `[job.rank] ` for
//! a spawned job's), so lines of different ranks never mix mid-line.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest piece written at once: a longer line is cut (and each piece prefixed), so a
/// rank that never ends its line cannot grow the launcher's memory without bound.
const MAX_LINE: usize = 64 * 1024;

/// How ranks' lines are written.
#[derive(Clone, Copy)]
pub(super) struct Lines {
    tag: bool,
}

impl Lines {
    pub(super) fn new(tag: bool) -> Lines {
        Lines { tag }
    }

    /// Starts forwarding `child`'s piped standard output and error, tagged `label` when
    /// tagging; returns the readers.
    pub(super) fn forward(self, label: &str, child: &mut Child) -> Vec<JoinHandle<()>> {
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.extend(self.spawn(label.into(), out, false));
        }
        if let Some(err) = child.stderr.take() {
            readers.extend(self.spawn(label.into(), err, true));
        }
        readers
    }

    /// A reader thread; none if no thread can be made (the pipe closes, and the rank's
    /// writes fail instead of blocking).
    fn spawn(
        self,
        rank: String,
        pipe: impl Read + Send + 'static,
        to_stderr: bool,
    ) -> Option<JoinHandle<()>> {
        let reader = std::thread::Builder::new().name("commcore-output".into()).spawn(move || {
            let mut reader = BufReader::new(pipe);
            let mut line = Vec::new();
            loop {
                line.clear();
                match (&mut reader).take(MAX_LINE as u64).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if to_stderr {
                            self.write(&rank, &line, &mut io::stderr().lock());
                        } else {
                            self.write(&rank, &line, &mut io::stdout().lock());
                        }
                    }
                }
            }
        });
        reader.ok()
    }

    /// Writes one line (or piece) in one call under the stream's lock.
    fn write(self, rank: &str, line: &[u8], out: &mut impl Write) {
        let mut whole = Vec::with_capacity(line.len() + 12);
        if self.tag {
            let _ = write!(whole, "[{rank}] ");
        }
        whole.extend_from_slice(line);
        if !line.ends_with(b"\n") {
            whole.push(b'\n');
        }
        let _ = out.write_all(&whole);
        let _ = out.flush();
    }
}

/// Waits for the readers to reach the end of their pipes, for at most 2 s (a process that
/// escaped the job could hold a pipe open).
pub(super) fn finish(readers: Vec<JoinHandle<()>>) {
    let deadline = Instant::now() + Duration::from_secs(2);
    for reader in readers {
        while !reader.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if reader.is_finished() {
            let _ = reader.join();
        }
    }
}

/// Reads all of rank 0's output on a thread.
pub(super) fn capture(mut stdout: ChildStdout) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    })
}

/// The captured output.
pub(super) fn captured(reader: JoinHandle<Vec<u8>>) -> Vec<u8> {
    reader.join().unwrap_or_default()
}
