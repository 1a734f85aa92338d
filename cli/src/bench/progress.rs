//! Progress of long benchmarks on standard error, only when it is a terminal: standard
//! output (the JSON) stays clean, and a pipe or file gets nothing extra.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar, or nothing when standard error is not a terminal.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar of `total` steps.
    pub fn new(total: u64) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = ProgressBar::new(total);
        if let Ok(style) =
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// Starts a step described by `message`.
    pub fn start(&self, message: String) {
        if let Some(bar) = &self.0 {
            bar.set_message(message);
        }
    }

    /// Ends a step.
    pub fn done(&self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
