//! What a job may leave behind, for the tests that check it leaves nothing: entries in
//! /dev/shm, processes of its group, processes whose command line holds a marker.

use std::collections::BTreeSet;

/// The names in /dev/shm, except those of other MPI libraries that may run beside the
/// tests on a shared machine (Open MPI's `vader_segment.*`): commcore's region is a memfd
/// and never appears there, so any other new name is a leftover.
pub fn shm_entries() -> BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.starts_with("vader_segment"))
                .collect()
        })
        .unwrap_or_default()
}

/// The live (not zombie) processes of process group `pgid`: a zombie whose parent died
/// waits for init to reap it, which some containers' init never does.
pub fn live_in_group(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
            fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str())
        })
        .collect()
}

/// Whether no process is left in process group `pgid`.
pub fn group_is_gone(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks whether the group exists.
    let result = unsafe { libc::killpg(pgid, 0) };
    result == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// The processes (pid, process group) whose command line contains `marker`, zombies left out.
pub fn processes_with(marker: &str) -> Vec<(i32, i32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline);
            if !text.contains(marker) {
                return None;
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // Fields after the command's closing parenthesis: state, ppid, pgrp, ...
            let rest = stat.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if fields.first() == Some(&"Z") {
                return None;
            }
            Some((pid, fields.get(2)?.parse().ok()?))
        })
        .collect()
}

/// A marker no other process has: the test's name, this process's id and a counter.
pub fn marker(test: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!("commcore-test-{test}-{}-{}", std::process::id(), NEXT.fetch_add(1, Relaxed))
}

/// What a job over several hosts could leave: the machine's network namespaces (by
/// `lsns`) and the links in this namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    /// Network namespaces.
    pub namespaces: usize,
    /// Links in this namespace.
    pub links: usize,
}

impl Network {
    /// The counts now. A listing that failed is taken again: `lsns` gives up when a process
    /// it reads ends meanwhile (other tests' jobs do), and a count of 0 from it (there is
    /// always this process's namespace) would make the next count look like growth.
    pub fn now() -> Network {
        let count = |program: &str, args: &[&str]| {
            for _ in 0..50 {
                let output = std::process::Command::new(program).args(args).output();
                if let Ok(o) = output.as_ref() {
                    let lines = String::from_utf8_lossy(&o.stdout).lines().count();
                    if o.status.success() && lines > 0 {
                        return lines;
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            panic!("`{program} {}` gave no listing in 50 tries", args.join(" "));
        };
        Network {
            namespaces: count("lsns", &["-n", "-t", "net"]),
            links: count("ip", &["-o", "link"]),
        }
    }

    /// Whether something was added since `before` (only growth is a leftover: other programs
    /// on the machine may end theirs meanwhile).
    pub fn grew_since(&self, before: &Network) -> bool {
        self.namespaces > before.namespaces || self.links > before.links
    }
}
