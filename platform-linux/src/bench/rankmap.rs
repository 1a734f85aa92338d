//! `commcore bench rankmap`.

/// Runs the benchmark.
pub fn run(_args: &[String]) -> Result<serde_json::Value, String> {
    Err("bench rankmap is not built yet".into())
}
