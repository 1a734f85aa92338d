//! The page: one self-contained HTML file (styles inline, plots as inline SVG, no scripts),
//! a header on the machine and the run, then one section per paper with its claim, verdict,
//! plots, the table of every plotted point and the labelled gaps.

use super::compare::Comparison;
use super::figure::{Figure, Gap, Section};
use super::plot;

const STYLE: &str = "body{font-family:sans-serif;max-width:1500px;margin:1em auto;padding:0 1em;color:#222}\
h1{margin-bottom:.2em}table{border-collapse:collapse;margin:.4em 0}\
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right;font-size:13px}\
th{background:#eef}td:first-child,th:first-child{text-align:left}\
.header td{text-align:left}.claim{font-style:italic}\
.verdict{font-weight:bold;background:#f4f8e8;padding:.3em .6em;border-left:4px solid #6a4}\
figure{display:inline-block;vertical-align:top;margin:.5em 1em .5em 0;max-width:720px}\
figure table{max-height:none}.gaps li{color:#844}section{border-top:2px solid #ccd;margin-top:1.5em}";

/// The whole page.
pub fn page(
    header: &[(String, String)],
    sections: &[Section],
    comparison: Option<&Comparison>,
) -> Result<String, String> {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<title>commcore report</title><style>");
    out.push_str(STYLE);
    out.push_str("</style></head><body>\n<h1>commcore report</h1>\n<table class=\"header\">");
    for (name, value) in header {
        out.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>", esc(name), esc(value)));
    }
    out.push_str("</table>\n<p>Sections: ");
    let links: Vec<String> = sections
        .iter()
        .map(|s| format!("<a href=\"#{}\">{}</a>", esc(&s.id), esc(&s.title)))
        .collect();
    out.push_str(&links.join(" · "));
    out.push_str("</p>\n");
    for section in sections {
        out.push_str(&render_section(section)?);
    }
    if let Some(comparison) = comparison {
        out.push_str(&render_comparison(comparison)?);
    }
    out.push_str("</body></html>\n");
    Ok(out)
}

fn render_section(section: &Section) -> Result<String, String> {
    let mut out = format!(
        "<section id=\"{0}\" data-section=\"{0}\">\n<h2>{1}</h2>\n",
        esc(&section.id),
        esc(&section.title)
    );
    if section.id != "pt2pt" {
        out.push_str(&format!("<p>Paper: <code>{}.txt</code></p>\n", esc(&section.id)));
    }
    out.push_str(&format!("<p class=\"claim\">Claim: {}</p>\n", esc(&section.claim)));
    out.push_str(&format!("<p class=\"verdict\">Verdict: {}</p>\n", esc(&section.verdict)));
    for figure in &section.figures {
        out.push_str(&render_figure(figure)?);
    }
    out.push_str(&render_gaps("What this run cannot show", &section.gaps));
    out.push_str("</section>\n");
    Ok(out)
}

/// A plot, the table of its points and its gaps; a figure without points is a gap itself.
pub fn render_figure(figure: &Figure) -> Result<String, String> {
    let id = esc(&figure.id);
    if figure.point_count() == 0 {
        let mut gaps = figure.gaps.clone();
        gaps.insert(0, Gap::new(&figure.title, "no points in this run"));
        return Ok(format!(
            "<figure data-gap=\"{id}\">{}</figure>\n",
            render_gaps(&figure.title, &gaps)
        ));
    }
    let svg = plot::svg(figure)?;
    let mut out = format!(
        "<figure id=\"fig-{id}\" data-figure=\"{id}\" data-points=\"{}\">\n",
        figure.point_count()
    );
    out.push_str(&svg);
    out.push_str(&format!(
        "\n<table class=\"points\" data-figure=\"{id}\"><thead><tr><th>series</th><th>{}</th><th>{}</th></tr></thead><tbody>",
        esc(figure.x_label()),
        esc(&figure.y_label)
    ));
    for [series, x, y] in figure.rows() {
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&series),
            esc(&x),
            esc(&y)
        ));
    }
    out.push_str("</tbody></table>\n");
    out.push_str(&render_gaps("Not in this plot", &figure.gaps));
    out.push_str("</figure>\n");
    Ok(out)
}

fn render_gaps(heading: &str, gaps: &[Gap]) -> String {
    if gaps.is_empty() {
        return String::new();
    }
    let mut out = format!("<div class=\"gaps\"><p>{}:</p><ul>", esc(heading));
    for gap in gaps {
        out.push_str(&format!("<li data-gap><b>{}</b>: {}</li>", esc(&gap.what), esc(&gap.reason)));
    }
    out.push_str("</ul></div>\n");
    out
}

fn render_comparison(comparison: &Comparison) -> Result<String, String> {
    let mut out = String::from(
        "<section id=\"compare\" data-section=\"compare\">\n<h2>Against an earlier run</h2>\n",
    );
    out.push_str(&format!(
        "<p>Earlier run: <code>{}</code>, ratios new / old.</p>\n",
        esc(&comparison.old_dir)
    ));
    out.push_str("<table class=\"ratios\"><thead><tr><th>figure</th><th>series</th><th>x</th><th>old</th><th>new</th><th>new / old</th></tr></thead><tbody>");
    for row in &comparison.rows {
        out.push_str("<tr>");
        for cell in row {
            out.push_str(&format!("<td>{}</td>", esc(cell)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>\n");
    for figure in &comparison.figures {
        out.push_str(&render_figure(figure)?);
    }
    out.push_str(&render_gaps("Not compared", &comparison.gaps));
    out.push_str("</section>\n");
    Ok(out)
}

/// `text` with HTML's special characters escaped.
pub fn esc(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
