//! Benchmarks behind `commcore bench NAME`: each prints one JSON object (`--json`) or a
//! readable table of the same figures.

pub mod cid;
mod cid_floor;
mod cid_one_load;
pub mod coll;
pub mod coll_procs;
pub mod pt2pt;
pub mod rankmap;
pub mod report;
pub mod split;
pub mod stats;

/// A benchmark's entry point: its own arguments in, its JSON report out.
pub type BenchFn = fn(&[String]) -> Result<serde_json::Value, String>;

/// Every benchmark by name.
pub const BENCHES: &[(&str, BenchFn)] = &[
    ("rankmap", rankmap::run),
    ("cid", cid::run),
    ("coll", coll::run),
    ("pt2pt", pt2pt::run),
    ("split", split::run),
    ("coll-procs", coll_procs::run),
];

/// The value after `--name` in `args`, parsed; `Ok(None)` when the flag is absent.
pub fn option<T: std::str::FromStr>(args: &[String], name: &str) -> Result<Option<T>, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => {
            let text = args.get(i + 1).ok_or_else(|| format!("{name} needs a value"))?;
            text.parse().map(Some).map_err(|_| format!("{name}: cannot parse {text:?}"))
        }
    }
}
