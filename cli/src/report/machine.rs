//! The page's header: the machine, the code and the run that produced the figures.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// What the header states before the run, as `(name, value)` rows in order.
pub fn header(command: &str, scale: &str) -> Vec<(String, String)> {
    vec![
        ("CPU".to_string(), cpu_model().unwrap_or_else(|| "unknown".into())),
        (
            "vCPUs".into(),
            std::thread::available_parallelism().map_or("unknown".into(), |n| n.to_string()),
        ),
        ("commcore".into(), format!("{} ({})", env!("CARGO_PKG_VERSION"), commit())),
        ("date (UTC)".into(), utc_now()),
        ("command".into(), command.to_string()),
        ("scale".into(), scale.to_string()),
    ]
}

/// The 1-minute load average, which says how much else the machine ran (the figures of a
/// 2-vCPU machine under a load of 8 are not those of an idle one).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

/// The checked-out commit, with "+ changes" when the work tree differs from it.
fn commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(hash) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("commit {hash} + changes")
            } else {
                format!("commit {hash}")
            }
        }
        None => "commit unknown (not in a git work tree)".into(),
    }
}

/// Now as `YYYY-MM-DD HH:MM:SS`.
pub fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The calendar date of a day number counted from 1970-01-01 (proleptic Gregorian, in
/// 400-year eras of 146,097 days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_become_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_513), (2026, 3, 1));
    }
}
