//! `commcore bench cid`.

/// Runs the benchmark.
pub fn run(_args: &[String]) -> Result<serde_json::Value, String> {
    Err("bench cid is not built yet".into())
}
