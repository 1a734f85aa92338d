//! Runs the experiments behind the report: each benchmark as a child `commcore bench NAME
//! --json` (so a failing benchmark becomes a labelled gap, not the end of the report), and
//! one progress line per experiment on standard error, under a bar that shows the time
//! gone and the experiment running when standard error is a terminal.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

/// Runs benchmarks and external programs, and says how far it got.
pub struct Runner {
    exe: PathBuf,
    started: Instant,
    step: usize,
    /// The bar on a terminal; `None` writes plain lines.
    bar: Option<ProgressBar>,
}

/// A spinner with the time gone and the running experiment, on a terminal only.
fn terminal_bar() -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    Some(bar)
}

impl Runner {
    /// A runner whose benchmarks are run by this very executable.
    pub fn new() -> Result<Runner, String> {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
        Ok(Runner { exe, started: Instant::now(), step: 0, bar: terminal_bar() })
    }

    /// Seconds since the report started.
    pub fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Runs `commcore bench NAME ARGS --json` and returns its JSON object, saying `what`
    /// it measures on standard error before and how long it took after.
    pub fn bench(&mut self, what: &str, name: &str, args: &[String]) -> Result<Value, String> {
        let mut command = Command::new(&self.exe);
        command.arg("bench").arg(name).args(args).arg("--json");
        let output = self.run(what, &mut command)?;
        let line = output.lines().rev().find(|l| l.starts_with('{')).unwrap_or("");
        serde_json::from_str(line).map_err(|e| format!("commcore bench {name}: no JSON ({e})"))
    }

    /// Runs `command`, its standard output captured and returned, with progress lines.
    pub fn run(&mut self, what: &str, command: &mut Command) -> Result<String, String> {
        self.run_with(what, command, false)
    }

    /// Like [`Runner::run`], but the command's own progress lines go to standard error as
    /// it runs (for long runs such as the peers').
    pub fn run_showing(&mut self, what: &str, command: &mut Command) -> Result<String, String> {
        self.run_with(what, command, true)
    }

    fn run_with(
        &mut self,
        what: &str,
        command: &mut Command,
        show: bool,
    ) -> Result<String, String> {
        self.step += 1;
        let began = Instant::now();
        self.say(format!("report [{:>2}] {what} (at {:.0} s)", self.step, self.elapsed_secs()));
        if let Some(bar) = &self.bar {
            bar.set_message(format!("[{}] {what}", self.step));
            if show {
                // The command writes its own lines meanwhile: no bar drawn between them.
                bar.set_draw_target(ProgressDrawTarget::hidden());
            }
        }
        let output = command
            .stdin(Stdio::null())
            .stderr(if show { Stdio::inherit() } else { Stdio::piped() })
            .output();
        if let (Some(bar), true) = (&self.bar, show) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        let output =
            output.map_err(|e| format!("cannot start {:?}: {e}", command.get_program()))?;
        let secs = began.elapsed().as_secs_f64();
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("see above");
            self.say(format!("report [{:>2}] failed after {secs:.1} s: {last}", self.step));
            return Err(format!("{what} failed ({}): {last}", output.status));
        }
        self.say(format!("report [{:>2}] done in {secs:.1} s", self.step));
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// A progress line: above the bar on a terminal, plain otherwise.
    fn say(&self, line: String) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Ends the bar (the report is written).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// The executable the benchmarks run from.
    pub fn exe(&self) -> &std::path::Path {
        &self.exe
    }
}

/// Command-line arguments from `(flag, value)` pairs.
pub fn args(pairs: &[(&str, String)]) -> Vec<String> {
    pairs.iter().flat_map(|(f, v)| [f.to_string(), v.clone()]).collect()
}

/// The number at `key` in `value`, if it is one.
pub fn num(value: &Value, key: &str) -> Option<f64> {
    value.get(key).and_then(Value::as_f64)
}

/// The rows of the list at `key` (empty when absent).
pub fn rows<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// Whether `row[key]` is the string `text`.
pub fn is(row: &Value, key: &str, text: &str) -> bool {
    row.get(key).and_then(Value::as_str) == Some(text)
}
