//! `commcore demo`: the main job on its embedded default.

/// Runs the demo.
pub fn run(_args: &[String]) -> Result<(), String> {
    Err("the demo is not built yet".into())
}
