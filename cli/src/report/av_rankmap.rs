//! The address-vector and rank-map paper: address memory against processes per
//! communicator pattern, lookup time per model, and instructions per lookup per model
//! (callgrind) beside the paper's Table III.

use std::process::Command;

use serde_json::Value;

use super::figure::{verdict, Figure, Gap, Section};
use super::runner::{args, is, num, rows, Runner};
use super::scale::Scale;

/// The communicator patterns the rank-map benchmark creates, as it names them.
const PATTERNS: [&str; 4] = ["odd_even_split", "dup", "reversed", "random"];
/// The rank-map models, in the paper's order (blockstride is ours).
const MODELS: [&str; 6] = ["direct", "offset", "stride", "blockstride", "lut", "mlut"];
/// The paper's Table III: instructions per translation, AV-Rankmap, by model.
const PAPER_AV_RANKMAP: [(&str, f64); 5] =
    [("direct", 9.0), ("offset", 11.0), ("stride", 13.0), ("lut", 11.0), ("mlut", 15.0)];
/// The paper's Table III: instructions per translation of MPICH 3.2's VC-VCRT.
const PAPER_VC_VCRT: f64 = 7.0;

/// The section, from one rank-map run per world size and one callgrind count per model.
pub fn section(runner: &mut Runner, scale: &Scale) -> Section {
    let mut gaps = Vec::new();
    let mut memory = Figure::numeric(
        "rankmap_memory",
        "Address memory: world + split communicators",
        "processes",
        true,
        "bytes (address vector + rank maps)",
    )
    .log_y();
    let mut lookup = Figure::categorical(
        "rankmap_lookup",
        &format!("Lookup time per model, {} ranks", scale.lookup_ranks),
        "rank-map model",
        &MODELS,
        "ns per lookup",
    );
    let mut largest: Option<(f64, f64)> = None;
    for &world in &scale.rankmap_worlds {
        let lookup_ranks = if world == *scale.rankmap_worlds.last().unwrap_or(&world) {
            scale.lookup_ranks.min(world)
        } else {
            16
        };
        let run = runner.bench(
            &format!("rank maps: memory at {world} processes"),
            "rankmap",
            &args(&[
                ("--ranks", world.to_string()),
                ("--lookup-ranks", lookup_ranks.to_string()),
                ("--lookups", scale.rankmap_lookups.to_string()),
            ]),
        );
        let report = match run {
            Ok(report) => report,
            Err(message) => {
                gaps.push(Gap::new(format!("rank maps at {world} processes"), message));
                continue;
            }
        };
        let x = f64::from(world);
        for row in rows(&report, "memory") {
            let Some(pattern) = PATTERNS.iter().find(|p| is(row, "pattern", p)) else { continue };
            let model = row.get("model").and_then(Value::as_str).unwrap_or("?");
            memory.add(&format!("commcore, {pattern} ({model})"), x, num(row, "total_bytes"));
            memory.add(&format!("VC/VCRT, {pattern}"), x, num(row, "vc_vcrt_bytes"));
            if *pattern == "odd_even_split" {
                if let (Some(ours), Some(base)) =
                    (num(row, "total_bytes"), num(row, "vc_vcrt_bytes"))
                {
                    largest = Some((ours, base));
                }
            }
        }
        if lookup_ranks == scale.lookup_ranks.min(world) {
            for row in rows(&report, "lookup") {
                if num(row, "ranks") != Some(f64::from(lookup_ranks)) {
                    continue;
                }
                let Some(model) = MODELS.iter().find(|m| is(row, "model", m)) else { continue };
                lookup.add_at("commcore", model, num(row, "ns_per_lookup"));
                lookup.add_at("VC/VCRT baseline", model, num(row, "vc_vcrt_ns_per_lookup"));
            }
        }
    }
    let (instructions, mean_ratio) = instructions(runner, scale, &mut gaps);
    let memory_verdict = match largest {
        Some((ours, base)) => format!(
            "address memory at {} processes (odd/even split) against VC/VCRT: {}",
            scale.rankmap_worlds.last().copied().unwrap_or(0),
            verdict(ours, base, true)
        ),
        None => "address memory: not measured".into(),
    };
    let instructions_verdict = match mean_ratio {
        Some((ours, paper)) => format!(
            "instructions per lookup against the paper's Table III (mean of its models): {}",
            verdict(ours, paper, true)
        ),
        None => "instructions per lookup: not counted".into(),
    };
    gaps.extend([
        Gap::new(
            "cache misses per process (the paper's Table IV)",
            "hardware counters (PAPI) are not read by any of our benchmarks yet",
        ),
        Gap::new(
            "message issue rate on InfiniBand and Blue Gene/Q (Tables V and VI)",
            "this machine has no such network",
        ),
        Gap::new(
            "miniapp memory at 512K processes (Figures 4 and 5)",
            "the miniapps are not ported; the memory figure above covers the same range of \
             processes with the communicators the benchmark creates",
        ),
        Gap::new(
            "the peers' address memory",
            "Open MPI and MPICH do not report it; VC/VCRT is our model of MPICH 3.2's tables",
        ),
    ]);
    Section {
        id: "av-rankmap".into(),
        title: "Address vectors and rank maps".into(),
        claim: "Storing one small address entry per process and describing each communicator's \
                ranks by a compressed model (direct, offset, stride, lookup table) instead of a \
                table of large per-process objects cuts address memory by orders of magnitude at \
                scale, for a few more instructions per lookup."
            .into(),
        verdict: format!("{memory_verdict}; {instructions_verdict}"),
        figures: vec![memory, lookup, instructions],
        gaps,
    }
}

/// Instructions per lookup per model, counted by callgrind around the non-inlined probes
/// (as `scripts/instructions.sh` does), beside the paper's Table III. Also returns the
/// means of ours and the paper's over the paper's models.
fn instructions(
    runner: &mut Runner,
    scale: &Scale,
    gaps: &mut Vec<Gap>,
) -> (Figure, Option<(f64, f64)>) {
    let mut figure = Figure::categorical(
        "rankmap_instructions",
        "Instructions per lookup (callgrind) and the paper's Table III",
        "rank-map model",
        &MODELS,
        "instructions per lookup",
    );
    let has_valgrind =
        Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success());
    if !has_valgrind {
        figure.gaps.push(Gap::new("commcore's instruction counts", "valgrind is not installed"));
    } else {
        let baseline = count(runner, "baseline", "*probe_vc_vcrt*", scale.callgrind_calls);
        for model in MODELS {
            match count(runner, model, "*::probe_rankmap", scale.callgrind_calls) {
                Ok(n) => figure.add_at("commcore", model, Some(n)),
                Err(message) => figure.gaps.push(Gap::new(format!("commcore, {model}"), message)),
            }
            if let Ok(n) = &baseline {
                figure.add_at("VC/VCRT probe here", model, Some(*n));
            }
        }
        if let Err(message) = baseline {
            figure.gaps.push(Gap::new("the VC/VCRT probe's count", message));
        }
    }
    for (model, n) in PAPER_AV_RANKMAP {
        figure.add_at("paper: AV-Rankmap", model, Some(n));
        figure.add_at("paper: VC-VCRT", model, Some(PAPER_VC_VCRT));
    }
    let ours: Vec<f64> = PAPER_AV_RANKMAP
        .iter()
        .filter_map(|(m, _)| figure.value("commcore", MODELS.iter().position(|x| x == m)? as f64))
        .collect();
    let mean = (ours.len() == PAPER_AV_RANKMAP.len()).then(|| {
        let paper: f64 = PAPER_AV_RANKMAP.iter().map(|p| p.1).sum();
        (ours.iter().sum::<f64>() / ours.len() as f64, paper / PAPER_AV_RANKMAP.len() as f64)
    });
    if mean.is_none() && has_valgrind {
        gaps.push(Gap::new("the instruction verdict", "some models were not counted"));
    }
    (figure, mean)
}

/// One model's instructions per call under callgrind.
fn count(runner: &mut Runner, model: &str, symbol: &str, calls: u32) -> Result<f64, String> {
    let dir = std::env::temp_dir().join(format!("commcore-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = dir.join(format!("{model}.callgrind"));
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", file.display()))
        .arg(format!("--toggle-collect={symbol}"))
        .arg(runner.exe())
        .args(["bench", "rankmap", "--probe", model, "--via", "entry", "--json", "--calls"])
        .arg(calls.to_string());
    let counted =
        runner.run(&format!("rank maps: instructions of {model} (callgrind)"), &mut command);
    let text = std::fs::read_to_string(&file);
    let _ = std::fs::remove_dir_all(&dir);
    counted?;
    let text = text.map_err(|e| format!("no callgrind output: {e}"))?;
    let total = text
        .lines()
        .find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .ok_or("no instruction total in callgrind's output")?;
    Ok(total / f64::from(calls))
}
