//! Every `COMMCORE_*` setting, parsed once and strictly into one [`Settings`] value: a value
//! that does not parse is an error naming the variable, the value and what is accepted, the
//! same on every rank. The launcher checks the settings it passes before it starts ranks.

use std::fmt;
use std::sync::OnceLock;

use std::sync::atomic::Ordering::Acquire;

use commcore::cid::Algorithm;
use commcore::coll::Control;

use crate::shm::{Layout, Region};

/// Environment: the CID algorithm, `lowest`, `mask` or `highest` (the default: one MAX
/// reduction of one word per allocation).
pub const ENV_CID_ALGORITHM: &str = "COMMCORE_CID_ALGORITHM";
/// Environment: a control string for collective selection (`coll=^hier`, forcing per
/// operation and size, …), as core's `Control::parse` reads it.
pub const ENV_COLL: &str = "COMMCORE_COLL";
/// Environment: a boolean; off turns single-copy transfers off.
pub const ENV_SINGLE_COPY: &str = "COMMCORE_SINGLE_COPY";
/// Environment: messages above this many bytes go by single copy (default 131072: below it
/// the pipelined copy through the rings is faster on this machine).
pub const ENV_SINGLE_COPY_ABOVE: &str = "COMMCORE_SINGLE_COPY_ABOVE";
/// Environment: single copies above this many bytes are split between receiver and sender
/// (default 131072); `off` turns splitting off.
pub const ENV_SPLIT_COPY_ABOVE: &str = "COMMCORE_SPLIT_COPY_ABOVE";
/// Environment: microseconds a waiter polls before it starts yielding the CPU (default 200,
/// or 2 with more ranks than cores).
pub const ENV_SPIN_US: &str = "COMMCORE_SPIN_US";
/// Environment: microseconds a waiter yields the CPU between polls before it sleeps
/// (default 5 times the poll time, at least 2000).
pub const ENV_YIELD_US: &str = "COMMCORE_YIELD_US";
/// Environment: microseconds a shared-memory collective polls before it yields (default:
/// the runtime's poll time with a core per rank, 0 with more ranks than cores).
pub const ENV_COLL_SPIN_US: &str = "COMMCORE_COLL_SPIN_US";
/// Environment: `symmetric` makes every wake-up check fence on the waker's side too;
/// `auto` (the default) lets sleepers run a process-wide barrier when the kernel offers it.
pub const ENV_WAKE_FENCE: &str = "COMMCORE_WAKE_FENCE";
/// Environment: the largest message in bytes that the shared-memory collectives take.
pub const ENV_SHM_MAX: &str = "COMMCORE_SHM_MAX";
/// Environment: bytes per member from which the shared-memory collectives read members'
/// buffers in place, for every operation.
pub const ENV_SHM_SINGLE_COPY_FROM: &str = "COMMCORE_SHM_SINGLE_COPY_FROM";
/// Environment: `core` (the default) binds rank `r` to the `r mod CPUs`-th allowed CPU;
/// `none` leaves ranks unbound.
pub const ENV_BIND: &str = "COMMCORE_BIND";
/// Environment: a whole number: rank `r` binds to the `(offset + r) mod CPUs`-th allowed CPU
/// (the launcher sets it for spawned children, so they take the CPUs their parents leave
/// free; set it for a second job on the same host).
pub const ENV_CPU_OFFSET: &str = "COMMCORE_CPU_OFFSET";
/// Environment: `auto` (the default) reaches peers on this host through shared memory and
/// peers on other hosts over verbs where both ends have a device, else TCP; `tcp` sends
/// everything between two ranks over TCP;
/// `verbs` everything over verbs (a build with the `verbs` feature, on a machine with a
/// device).
pub const ENV_TRANSPORT: &str = "COMMCORE_TRANSPORT";
/// Environment: milliseconds a TCP send waits for a peer that takes nothing before the
/// peer counts as no longer reading (default 1000).
pub const ENV_TCP_SEND_TIMEOUT_MS: &str = "COMMCORE_TCP_SEND_TIMEOUT_MS";
/// Environment: `on_demand` (the default) connects verbs queue pairs at a pair's first
/// message; `eager` connects every pair of a job or of two groups that meet at once.
pub const ENV_VERBS_CONNECT: &str = "COMMCORE_VERBS_CONNECT";

/// One setting as the help texts list it: its variable, what it accepts, what it does.
pub struct SettingDoc {
    /// The environment variable.
    pub name: &'static str,
    /// The values it accepts, with an example.
    pub accepted: &'static str,
    /// What it changes.
    pub meaning: &'static str,
}

const BYTES: &str =
    "a byte count: a whole number, optionally with k, m or g (x1024), e.g. 4096 or 64k";
const MICROS: &str = "microseconds: a whole number, e.g. 200";
const BOOLEAN: &str = "1, on, true, yes or 0, off, false, no";

/// Every setting, in the order the help lists them.
pub const SETTINGS: &[SettingDoc] = &[
    SettingDoc {
        name: ENV_CID_ALGORITHM,
        accepted: "lowest, mask or highest (default)",
        meaning: "context-id agreement algorithm",
    },
    SettingDoc {
        name: ENV_COLL,
        accepted: "a control string, e.g. coll=^hier;allreduce:ring@4k-inf or coll=^shm",
        meaning:
            "collective selection: components to exclude or include, priorities, forced algorithms",
    },
    SettingDoc {
        name: ENV_SINGLE_COPY,
        accepted: BOOLEAN,
        meaning: "single-copy (process_vm_readv) transfers of long messages (default on)",
    },
    SettingDoc {
        name: ENV_SINGLE_COPY_ABOVE,
        accepted: BYTES,
        meaning: "messages above this go by single copy (default 128k)",
    },
    SettingDoc {
        name: ENV_SPLIT_COPY_ABOVE,
        accepted: "a byte count (as above) or off",
        meaning: "single copies above this are split between receiver and sender (default 128k)",
    },
    SettingDoc {
        name: ENV_SPIN_US,
        accepted: MICROS,
        meaning: "how long a waiter polls before it yields (default 200, 2 when oversubscribed)",
    },
    SettingDoc {
        name: ENV_YIELD_US,
        accepted: MICROS,
        meaning: "how long a waiter yields before it sleeps (default 5 x the poll time, >= 2000)",
    },
    SettingDoc {
        name: ENV_COLL_SPIN_US,
        accepted: MICROS,
        meaning: "how long a shared-memory collective polls before it yields",
    },
    SettingDoc {
        name: ENV_WAKE_FENCE,
        accepted: "auto (default) or symmetric",
        meaning: "symmetric: wakers fence too instead of sleepers running membarrier",
    },
    SettingDoc {
        name: ENV_SHM_MAX,
        accepted: BYTES,
        meaning: "largest message the shared-memory collectives take (default: any)",
    },
    SettingDoc {
        name: ENV_SHM_SINGLE_COPY_FROM,
        accepted: BYTES,
        meaning: "bytes per member from which shared-memory collectives read buffers in place",
    },
    SettingDoc {
        name: ENV_BIND,
        accepted: "core (default) or none",
        meaning: "core: rank r runs on the (r mod CPUs)-th allowed CPU; none: unbound",
    },
    SettingDoc {
        name: ENV_CPU_OFFSET,
        accepted: "a whole number, e.g. 4",
        meaning: "rank r binds to the (offset + r) mod CPUs-th CPU; also binds a job of one rank",
    },
    SettingDoc {
        name: ENV_TRANSPORT,
        accepted: "auto (default), tcp or verbs (a build with the verbs feature, and a device)",
        meaning: "auto: shared memory within a host; between hosts verbs where both ends \
                  have a device, else TCP; tcp or verbs: that transport between any two ranks",
    },
    SettingDoc {
        name: super::bootstrap::ENV_BOOTSTRAP,
        accepted: "launcher, pmi or pmix (default: the launcher the environment names)",
        meaning: "how World::init joins its job: commcore run, MPICH's mpiexec (PMI-1), or a \
                  PMIx server (mpirun.openmpi, srun --mpi=pmix; needs the pmix feature)",
    },
    SettingDoc {
        name: ENV_TCP_SEND_TIMEOUT_MS,
        accepted: "milliseconds: a whole number above 0, e.g. 1000",
        meaning: "how long a TCP send waits for a peer that reads nothing before failing",
    },
    SettingDoc {
        name: ENV_VERBS_CONNECT,
        accepted: "on_demand (default) or eager",
        meaning: "when verbs connections are made: at a pair's first message, or all at once \
                  when a job starts or two groups meet (the papers' baseline)",
    },
];

/// How ranks reach each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransportSetting {
    /// Shared memory within a host; between hosts verbs where both ends have a device
    /// (a build with the `verbs` feature), TCP otherwise.
    Auto,
    /// TCP between any two ranks (a rank still reaches itself through memory).
    Tcp,
    /// Verbs between any two ranks (a rank still reaches itself through memory).
    Verbs,
}

/// Whether a rank is bound to a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bind {
    /// Rank `r` on the `r mod CPUs`-th CPU it may use.
    Core,
    /// Left to the scheduler.
    None,
}

/// How wake-ups are fenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WakeFenceSetting {
    /// Sleepers run a process-wide barrier when every rank can.
    Auto,
    /// Every wake-up check fences on the waker's side too.
    Symmetric,
}

/// Every `COMMCORE_*` setting, parsed. `None` means unset: the runtime's default applies.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Settings {
    /// `COMMCORE_CID_ALGORITHM`.
    pub cid_algorithm: Algorithm,
    /// `COMMCORE_COLL`, checked by core's parser (empty when unset).
    pub coll: String,
    /// `COMMCORE_SINGLE_COPY`.
    pub single_copy: bool,
    /// `COMMCORE_SINGLE_COPY_ABOVE`.
    pub single_copy_above: Option<usize>,
    /// `COMMCORE_SPLIT_COPY_ABOVE`: `Some(None)` is `off`.
    pub split_copy_above: Option<Option<usize>>,
    /// `COMMCORE_SPIN_US`.
    pub spin_us: Option<u64>,
    /// `COMMCORE_YIELD_US`.
    pub yield_us: Option<u64>,
    /// `COMMCORE_COLL_SPIN_US`.
    pub coll_spin_us: Option<u64>,
    /// `COMMCORE_WAKE_FENCE`.
    pub wake_fence: WakeFenceSetting,
    /// `COMMCORE_SHM_MAX`.
    pub shm_max: Option<usize>,
    /// `COMMCORE_SHM_SINGLE_COPY_FROM`.
    pub shm_single_copy_from: Option<usize>,
    /// `COMMCORE_BIND`.
    pub bind: Bind,
    /// `COMMCORE_CPU_OFFSET`.
    pub cpu_offset: Option<usize>,
    /// `COMMCORE_TRANSPORT`.
    pub transport: TransportSetting,
    /// `COMMCORE_TCP_SEND_TIMEOUT_MS`.
    pub tcp_send_timeout_ms: Option<u64>,
    /// `COMMCORE_VERBS_CONNECT=eager`.
    pub verbs_eager: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            cid_algorithm: Algorithm::Highest,
            coll: String::new(),
            single_copy: true,
            single_copy_above: None,
            split_copy_above: None,
            spin_us: None,
            yield_us: None,
            coll_spin_us: None,
            wake_fence: WakeFenceSetting::Auto,
            shm_max: None,
            shm_single_copy_from: None,
            bind: Bind::Core,
            cpu_offset: None,
            transport: TransportSetting::Auto,
            tcp_send_timeout_ms: None,
            verbs_eager: false,
        }
    }
}

/// A setting whose value does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingError {
    /// The variable.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong and what is accepted.
    pub expected: String,
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} is not valid: {}; set it to such a value or unset it",
            self.name, self.value, self.expected
        )
    }
}

impl std::error::Error for SettingError {}

/// Collective component names a control string may use (core's and `shm`).
pub(super) const COLL_COMPONENTS: [&str; 5] = super::coll::NAMES;

impl Settings {
    /// The settings in this process's environment.
    pub fn from_env() -> Result<Settings, SettingError> {
        Settings::from_lookup(|name| std::env::var(name).ok())
    }

    /// The settings `lookup` gives (a variable's value, or `None` when unset).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Settings, SettingError> {
        let mut s = Settings::default();
        for doc in SETTINGS {
            let Some(value) = lookup(doc.name) else { continue };
            let bad =
                |expected: String| SettingError { name: doc.name, value: value.clone(), expected };
            let accepted = || format!("expected {}", doc.accepted);
            match doc.name {
                ENV_CID_ALGORITHM => {
                    s.cid_algorithm = match value.as_str() {
                        "lowest" => Algorithm::Lowest,
                        "mask" => Algorithm::Mask,
                        "highest" => Algorithm::Highest,
                        _ => return Err(bad(accepted())),
                    }
                }
                ENV_COLL => {
                    if let Err(e) = Control::parse(&value, &COLL_COMPONENTS) {
                        return Err(bad(format!("{e}; expected {}", doc.accepted)));
                    }
                    s.coll = value.clone();
                }
                ENV_SINGLE_COPY => {
                    s.single_copy = boolean(&value).ok_or_else(|| bad(accepted()))?
                }
                ENV_SINGLE_COPY_ABOVE => s.single_copy_above = Some(bytes(&value, bad)?),
                ENV_SPLIT_COPY_ABOVE => {
                    s.split_copy_above =
                        Some(if value == "off" { None } else { Some(bytes(&value, bad)?) })
                }
                ENV_SPIN_US => s.spin_us = Some(micros(&value, bad)?),
                ENV_YIELD_US => s.yield_us = Some(micros(&value, bad)?),
                ENV_COLL_SPIN_US => s.coll_spin_us = Some(micros(&value, bad)?),
                ENV_WAKE_FENCE => {
                    s.wake_fence = match value.as_str() {
                        "auto" => WakeFenceSetting::Auto,
                        "symmetric" => WakeFenceSetting::Symmetric,
                        _ => return Err(bad(accepted())),
                    }
                }
                ENV_SHM_MAX => s.shm_max = Some(bytes(&value, bad)?),
                ENV_SHM_SINGLE_COPY_FROM => s.shm_single_copy_from = Some(bytes(&value, bad)?),
                ENV_BIND => {
                    s.bind = match value.as_str() {
                        "core" => Bind::Core,
                        "none" => Bind::None,
                        _ => return Err(bad(accepted())),
                    }
                }
                ENV_CPU_OFFSET => match value.parse::<usize>() {
                    Ok(offset) => s.cpu_offset = Some(offset),
                    Err(_) => return Err(bad(accepted())),
                },
                ENV_TRANSPORT => {
                    s.transport = match value.as_str() {
                        "auto" => TransportSetting::Auto,
                        "tcp" => TransportSetting::Tcp,
                        "verbs" => TransportSetting::Verbs,
                        _ => return Err(bad(accepted())),
                    }
                }
                ENV_VERBS_CONNECT => {
                    s.verbs_eager = match value.as_str() {
                        "on_demand" => false,
                        "eager" => true,
                        _ => return Err(bad(accepted())),
                    }
                }
                ENV_TCP_SEND_TIMEOUT_MS => match value.parse::<u64>() {
                    Ok(ms) if ms > 0 => s.tcp_send_timeout_ms = Some(ms),
                    _ => return Err(bad(accepted())),
                },
                // Checked here with the others; `bootstrap` reads the choice.
                super::bootstrap::ENV_BOOTSTRAP
                    if !matches!(value.trim(), "launcher" | "pmi" | "pmix") =>
                {
                    return Err(bad(accepted()));
                }
                _ => {}
            }
        }
        Ok(s)
    }

    /// The settings that choose protocols, which every rank must share (a rank that reads
    /// a collective's bytes in place while its peer waits for them in the area would hang),
    /// each as (variable, a word encoding its parsed value).
    pub(super) fn job_wide(&self) -> [(&'static str, u64); JOB_WIDE] {
        const UNSET: u64 = u64::MAX;
        const OFF: u64 = u64::MAX - 1;
        let bytes = |v: Option<usize>| v.map_or(UNSET, |b| b as u64);
        [
            (ENV_SINGLE_COPY, u64::from(self.single_copy)),
            (
                ENV_SPLIT_COPY_ABOVE,
                self.split_copy_above.map_or(UNSET, |s| s.map_or(OFF, |b| b as u64)),
            ),
            (ENV_CID_ALGORITHM, self.cid_algorithm as u64),
            (ENV_COLL, fnv1a(self.coll.trim().as_bytes())),
            (ENV_SHM_MAX, bytes(self.shm_max)),
            (ENV_SHM_SINGLE_COPY_FROM, bytes(self.shm_single_copy_from)),
            (ENV_TRANSPORT, self.transport as u64),
        ]
    }

    /// The value of job-wide setting `name` for a message, from its word.
    pub(super) fn describe_job_wide(name: &str, word: u64) -> String {
        match (name, word) {
            (_, u64::MAX) => "unset".into(),
            (ENV_SPLIT_COPY_ABOVE, w) if w == u64::MAX - 1 => "off".into(),
            (ENV_SINGLE_COPY, 0) => "off".into(),
            (ENV_SINGLE_COPY, _) => "on".into(),
            (ENV_CID_ALGORITHM, w) => format!("algorithm {w}"),
            (ENV_TRANSPORT, 0) => "auto".into(),
            (ENV_TRANSPORT, 1) => "tcp".into(),
            (ENV_TRANSPORT, _) => "verbs".into(),
            (ENV_COLL, _) => "a different control string".into(),
            (_, w) => w.to_string(),
        }
    }
}

/// Job-wide settings (see [`Settings::job_wide`]).
pub(super) const JOB_WIDE: usize = 7;

/// A job-wide setting that differs between rank 0 and another rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The setting.
    pub name: &'static str,
    /// The first rank whose value differs from rank 0's.
    pub rank: usize,
    /// Rank 0's value.
    pub on_rank_0: String,
    /// That rank's value.
    pub on_rank: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Difference { name, rank, on_rank_0, on_rank } = self;
        write!(
            f,
            "{name} differs between ranks ({on_rank_0} on rank 0, {on_rank} on rank {rank}); \
             give every rank the same value, e.g. with `commcore run -x {name}=VALUE`"
        )
    }
}

/// The first job-wide setting in which a rank that has joined differs from rank 0, read
/// from the job's region (by every rank after the meeting, and by the launcher when a rank
/// fails, so that the difference is reported once).
pub(crate) fn difference(region: &Region, layout: &Layout) -> Option<Difference> {
    let joined = |r| region.atomic_u32(layout.state(r)).load(Acquire) != 0;
    if !joined(0) {
        return None;
    }
    let names = Settings::default().job_wide().map(|(name, _)| name);
    (1..layout.size()).filter(|&r| joined(r)).find_map(|rank| {
        (0..JOB_WIDE).find_map(|index| {
            let word = |r| region.atomic_u64(layout.job_setting(r, index)).load(Acquire);
            let (first, theirs) = (word(0), word(rank));
            (first != theirs).then(|| Difference {
                name: names[index],
                rank,
                on_rank_0: Settings::describe_job_wide(names[index], first),
                on_rank: Settings::describe_job_wide(names[index], theirs),
            })
        })
    })
}

fn fnv1a(bytes: &[u8]) -> u64 {
    // Never the "unset" word.
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    }) & (u64::MAX >> 1)
}

fn boolean(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => Some(true),
        "0" | "off" | "false" | "no" => Some(false),
        _ => None,
    }
}

/// A byte count: digits, optionally followed by k, m or g (binary).
fn bytes(text: &str, bad: impl Fn(String) -> SettingError) -> Result<usize, SettingError> {
    let lower = text.to_ascii_lowercase();
    let (digits, scale) = match lower.as_bytes().last() {
        Some(b'k') => (&lower[..lower.len() - 1], 1usize << 10),
        Some(b'm') => (&lower[..lower.len() - 1], 1 << 20),
        Some(b'g') => (&lower[..lower.len() - 1], 1 << 30),
        _ => (&lower[..], 1),
    };
    let number = digits
        .parse::<usize>()
        .ok()
        .filter(|_| digits.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| bad(format!("expected {BYTES}")))?;
    number.checked_mul(scale).ok_or_else(|| bad("the byte count is too large".into()))
}

/// Microseconds: digits only, at most an hour (a longer poll would never end usefully).
fn micros(text: &str, bad: impl Fn(String) -> SettingError) -> Result<u64, SettingError> {
    const HOUR_US: u64 = 3_600_000_000;
    let number = text
        .parse::<u64>()
        .ok()
        .filter(|_| text.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| bad(format!("expected {MICROS}")))?;
    if number > HOUR_US {
        return Err(bad(format!("expected at most {HOUR_US} (an hour)")));
    }
    Ok(number)
}

static CURRENT: OnceLock<Settings> = OnceLock::new();

/// Installs the settings `World::init` parsed; later calls keep the first.
pub(super) fn install(settings: Settings) -> &'static Settings {
    CURRENT.get_or_init(|| settings)
}

/// This process's settings: those `World::init` installed (the runtime reads none before).
pub(super) fn current() -> &'static Settings {
    CURRENT.get_or_init(|| Settings::from_env().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<Settings, SettingError> {
        Settings::from_lookup(|name| {
            pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn every_setting_refuses_a_bad_value_naming_it() {
        for doc in SETTINGS {
            let error = parse(&[(doc.name, "weird!")]).unwrap_err();
            assert_eq!(error.name, doc.name);
            let text = error.to_string();
            assert!(text.contains(doc.name) && text.contains("\"weird!\""), "{text}");
        }
        assert!(parse(&[(ENV_SHM_MAX, "-5")]).is_err());
        assert!(parse(&[(ENV_SHM_MAX, "+5")]).is_err());
        assert!(parse(&[(ENV_SHM_MAX, "99999999999999999999g")]).is_err());
        assert!(parse(&[(ENV_SPIN_US, "3600000001")]).is_err());
        assert!(parse(&[(ENV_SINGLE_COPY, "maybe")]).is_err());
        let coll = parse(&[(ENV_COLL, "coll=^nosuch")]).unwrap_err().to_string();
        assert!(coll.contains("unknown collective component") && coll.contains("nosuch"), "{coll}");
    }

    #[test]
    fn good_values_parse() {
        let s = parse(&[
            (ENV_SHM_MAX, "64k"),
            (ENV_SINGLE_COPY, "off"),
            (ENV_SPLIT_COPY_ABOVE, "off"),
            (ENV_BIND, "none"),
            (ENV_CID_ALGORITHM, "mask"),
            (ENV_COLL, "coll=^shm"),
            (ENV_TRANSPORT, "tcp"),
            (ENV_TCP_SEND_TIMEOUT_MS, "2500"),
            (ENV_VERBS_CONNECT, "eager"),
        ])
        .unwrap();
        assert!(s.verbs_eager);
        assert!(parse(&[(ENV_VERBS_CONNECT, "lazy")]).is_err());
        assert_eq!(s.transport, TransportSetting::Tcp);
        assert_eq!(s.tcp_send_timeout_ms, Some(2500));
        assert!(parse(&[(ENV_TCP_SEND_TIMEOUT_MS, "0")]).is_err());
        assert_eq!(s.shm_max, Some(65536));
        assert!(!s.single_copy);
        assert_eq!(s.split_copy_above, Some(None));
        assert_eq!(s.bind, Bind::None);
        assert_eq!(s.cid_algorithm, Algorithm::Mask);
        assert_eq!(parse(&[]).unwrap(), Settings::default());
    }

    #[test]
    fn agreement_compares_parsed_values() {
        let a = parse(&[(ENV_SHM_MAX, "65536")]).unwrap();
        let b = parse(&[(ENV_SHM_MAX, "64k")]).unwrap();
        assert_eq!(a.job_wide(), b.job_wide());
        let c = parse(&[(ENV_SINGLE_COPY, "on")]).unwrap();
        assert_eq!(c.job_wide(), Settings::default().job_wide());
    }
}
