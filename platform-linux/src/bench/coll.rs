//! `commcore bench coll`.

/// Runs the benchmark.
pub fn run(_args: &[String]) -> Result<serde_json::Value, String> {
    Err("bench coll is not built yet".into())
}
