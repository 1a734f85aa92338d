//! `commcore report` on the test-only tiny scale: the page and results.json are whole and
//! agree, and a real browser (headless Chromium) renders every plot. Both run in
//! `scripts/test.sh`'s report step (`--ignored`: the tiny run starts ~40 s of benchmark
//! processes, too slow for every `cargo test`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// Every section the page must have: one per paper, and point-to-point.
const SECTIONS: [&str; 6] = [
    "av-rankmap",
    "cid-allocation-tradeoffs",
    "cid-multithreaded",
    "coll-components",
    "dpm-infiniband",
    "pt2pt",
];

/// The tiny report's directory under target/, built once per test binary.
fn tiny_report() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/report-tiny");
        let _ = std::fs::remove_dir_all(&dir);
        let status = Command::new(env!("CARGO_BIN_EXE_commcore"))
            .args(["report", "--tiny", "--out"])
            .arg(&dir)
            .status()
            .expect("start commcore report");
        assert!(status.success(), "commcore report --tiny failed: {status}");
        dir
    })
}

fn results(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    serde_json::from_str(&text).expect("results.json parses")
}

/// The text between `start` and the next `end` after it, from `from` on.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let i = text.find(start)? + start.len();
    let j = text[i..].find(end)?;
    Some(&text[i..i + j])
}

/// The cells of a table body's rows.
fn table_rows(tbody: &str) -> Vec<Vec<String>> {
    tbody
        .split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<td>")
                .skip(1)
                .map(|c| c.split("</td>").next().unwrap_or("").to_string())
                .collect()
        })
        .collect()
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&")
}

#[test]
#[ignore = "runs the benchmarks (~40 s); scripts/test.sh runs it in its report step"]
fn tiny_report_is_whole_and_agrees_with_its_results() {
    let dir = tiny_report();
    let html = std::fs::read_to_string(dir.join("index.html")).expect("index.html");
    let json = results(dir);
    for id in SECTIONS {
        assert!(
            html.contains(&format!("data-section=\"{id}\"")),
            "section {id} missing from the page"
        );
    }
    assert!(!html.contains("NaN") && !html.contains("inf<"), "a non-number on the page");
    assert!(
        !html.contains("<script") && !html.contains("src=\"http"),
        "the page must be self-contained"
    );
    assert!(!html.contains("data-gap=\""), "a figure without points in the tiny run");
    let sections = json["sections"].as_array().expect("sections");
    let ids: Vec<&str> = sections.iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(ids, SECTIONS);
    let mut figures = 0;
    for section in sections {
        assert!(
            !section["verdict"].as_str().unwrap_or("").is_empty(),
            "no verdict in {}",
            section["id"]
        );
        assert!(
            !section["claim"].as_str().unwrap_or("").is_empty(),
            "no claim in {}",
            section["id"]
        );
        for figure in section["figures"].as_array().expect("figures") {
            figures += 1;
            let id = figure["id"].as_str().expect("figure id");
            let start = format!("data-figure=\"{id}\" data-points=\"");
            let chunk = between(&html, &start, "</figure>")
                .unwrap_or_else(|| panic!("figure {id} not on the page"));
            let declared: usize =
                chunk.split('"').next().and_then(|n| n.parse().ok()).expect("data-points");
            let svg = between(chunk, "<svg", "</svg>").unwrap_or_else(|| panic!("no plot in {id}"));
            let circles = svg.matches("<circle").count();
            let rows = table_rows(between(chunk, "<tbody>", "</tbody>").expect("table"));
            assert!(circles > 0, "{id}: an empty plot");
            assert_eq!(circles, rows.len(), "{id}: plot points against table rows");
            assert_eq!(declared, rows.len(), "{id}: data-points against table rows");
            let json_rows = figure["rows"].as_array().expect("rows");
            assert_eq!(json_rows.len(), rows.len(), "{id}: results.json rows against the table");
            for (row, json_row) in rows.iter().zip(json_rows) {
                let cells: Vec<String> = json_row
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap().to_string())
                    .collect();
                let shown: Vec<String> = row.iter().map(|c| unescape(c)).collect();
                assert_eq!(shown, cells, "{id}: a table row differs from results.json");
            }
            let series = figure["series"].as_array().expect("series");
            assert!(!series.is_empty(), "{id}: no series");
            let mut points = 0;
            for s in series {
                let pts = s["points"].as_array().expect("points");
                assert!(!pts.is_empty(), "{id}: empty series {}", s["name"]);
                for p in pts {
                    let y =
                        p["y"].as_f64().unwrap_or_else(|| panic!("{id}: y is not a number: {p}"));
                    assert!(y.is_finite(), "{id}: y = {y}");
                    if figure["y_log"].as_bool() == Some(true) {
                        assert!(y > 0.0, "{id}: {y} on a log axis");
                    }
                }
                points += pts.len();
            }
            assert_eq!(points, rows.len(), "{id}: series points against rows");
        }
    }
    assert!(figures >= 20, "only {figures} figures");
    let header = json["header"].as_array().expect("header");
    for name in ["CPU", "vCPUs", "commcore", "date (UTC)", "command", "run time"] {
        assert!(header.iter().any(|h| h["name"] == name), "header lacks {name}");
        assert!(html.contains(&format!("<th>{name}</th>")), "page header lacks {name}");
    }
}

/// Chromium, run as root in a container: no sandbox, no GPU, no first-run or background
/// network, a fresh profile.
fn chromium(profile: &Path) -> Option<Command> {
    let name = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|n| Command::new(n).arg("--version").output().is_ok_and(|o| o.status.success()))?;
    let mut command = Command::new(name);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    Some(command)
}

#[test]
#[ignore = "needs the tiny report and Chromium; scripts/test.sh runs it in its report step"]
fn browser_renders_every_plot() {
    let dir = tiny_report().canonicalize().expect("report directory");
    let profile = dir.join("chromium-profile");
    let _ = std::fs::remove_dir_all(&profile);
    let Some(mut dump) = chromium(&profile) else {
        assert!(
            std::env::var_os("COMMCORE_REQUIRE_BROWSER").is_none(),
            "chromium is not installed"
        );
        eprintln!("skipped: chromium is not installed (apt-get install chromium)");
        return;
    };
    let url = format!("file://{}", dir.join("index.html").display());
    let output = dump.arg("--dump-dom").arg(&url).output().expect("run chromium --dump-dom");
    assert!(
        output.status.success(),
        "chromium --dump-dom: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dom = String::from_utf8_lossy(&output.stdout);
    let json = results(&dir);
    let mut plots = 0;
    for figure in
        json["sections"].as_array().unwrap().iter().flat_map(|s| s["figures"].as_array().unwrap())
    {
        let id = figure["id"].as_str().unwrap();
        let chunk = between(&dom, &format!("data-figure=\"{id}\""), "</figure>")
            .unwrap_or_else(|| panic!("{id} not in the DOM"));
        assert!(chunk.contains("<svg") && chunk.contains("<circle"), "{id}: no plot in the DOM");
        plots += 1;
    }
    assert!(plots >= 20, "{plots} plots in the DOM");
    // The first screen, and the whole page in one tall shot (kept under target/).
    for (name, size) in
        [("screenshot-first-screen.png", "1520,900"), ("screenshot.png", "1520,12000")]
    {
        let shot = dir.join(name);
        let _ = std::fs::remove_file(&shot);
        let _ = std::fs::remove_dir_all(&profile);
        let mut command = chromium(&profile).expect("chromium");
        let output = command
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("--window-size={size}"))
            .arg(&url)
            .output()
            .expect("run chromium --screenshot");
        assert!(
            output.status.success(),
            "chromium --screenshot: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let colours = distinct_colours(&shot);
        assert!(colours >= 8, "{name}: only {colours} distinct colours, the page looks blank");
    }
    let _ = std::fs::remove_dir_all(&profile);
}

/// How many distinct RGB colours a PNG has.
fn distinct_colours(path: &Path) -> usize {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    assert!(channels >= 3, "a grey screenshot");
    let mut seen = std::collections::HashSet::new();
    for pixel in buf[..info.buffer_size()].chunks(channels) {
        seen.insert((pixel[0], pixel[1], pixel[2]));
    }
    seen.len()
}

#[test]
fn a_bad_compare_directory_is_a_clear_error_before_any_experiment() {
    let out = std::env::temp_dir().join(format!("commcore-report-test-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_commcore"))
        .args(["report", "--tiny", "--compare", "/nonexistent/old-report", "--out"])
        .arg(&out)
        .output()
        .expect("start commcore report");
    let _ = std::fs::remove_dir_all(&out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--compare: cannot read /nonexistent/old-report/results.json"),
        "{stderr}"
    );
    assert!(!stderr.contains("report [ 1]"), "it ran experiments first: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
