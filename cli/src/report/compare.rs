//! `--compare OLD_DIR`: this run against an earlier report's `results.json`, as a table of
//! ratios (new over old) for every point both runs have, and each figure redrawn with both.

use std::path::Path;

use serde_json::{json, Value};

use super::figure::{number, Figure, Gap, Section, Series, XAxis};

/// The comparison part of the page and of results.json.
pub struct Comparison {
    /// The earlier report's directory, as given.
    pub old_dir: String,
    /// `[figure, series, x, old, new, new/old]` for every point both runs have.
    pub rows: Vec<[String; 6]>,
    /// Each figure with the earlier run's series added.
    pub figures: Vec<Figure>,
    /// Figures the earlier run does not have.
    pub gaps: Vec<Gap>,
}

/// Reads an earlier report's `results.json`; a clear error when it is missing or not one.
pub fn load(dir: &Path) -> Result<Value, String> {
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("--compare: cannot read {}: {e}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| format!("--compare: {} is not JSON: {e}", path.display()))?;
    if !value.get("sections").is_some_and(Value::is_array) {
        return Err(format!(
            "--compare: {} is not a report's results (no sections)",
            path.display()
        ));
    }
    Ok(value)
}

/// This run's `sections` against the earlier `old` results.
pub fn compare(old_dir: &str, old: &Value, sections: &[Section]) -> Comparison {
    let mut comparison = Comparison {
        old_dir: old_dir.into(),
        rows: Vec::new(),
        figures: Vec::new(),
        gaps: Vec::new(),
    };
    for figure in sections.iter().flat_map(|s| &s.figures) {
        let Some(old_figure) = find_figure(old, &figure.id) else {
            comparison.gaps.push(Gap::new(&figure.title, "the earlier run has no such figure"));
            continue;
        };
        let mut both = figure.clone();
        both.id = format!("compare_{}", figure.id);
        both.title = format!("{} (now and earlier)", figure.title);
        both.gaps.clear();
        let old_series =
            old_figure.get("series").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        for series in old_series {
            let name = series.get("name").and_then(Value::as_str).unwrap_or("?");
            let mut earlier = Series { name: format!("{name} (earlier)"), points: Vec::new() };
            for point in
                series.get("points").and_then(Value::as_array).map_or(&[][..], Vec::as_slice)
            {
                let (Some(x_text), Some(y)) = (
                    point.get("x_text").and_then(Value::as_str),
                    point.get("y").and_then(Value::as_f64),
                ) else {
                    continue;
                };
                let x = match &figure.x {
                    XAxis::Categories { names, .. } => match names.iter().position(|n| n == x_text)
                    {
                        Some(i) => i as f64,
                        None => continue,
                    },
                    XAxis::Numeric { .. } => match point.get("x").and_then(Value::as_f64) {
                        Some(x) => x,
                        None => continue,
                    },
                };
                if let Some(new) = figure.value(name, x) {
                    comparison.rows.push([
                        figure.id.clone(),
                        name.into(),
                        x_text.into(),
                        number(y),
                        number(new),
                        format!("{:.3}", new / y),
                    ]);
                }
                // A log axis has no place for zero or less; such an old point stays in the table.
                if y.is_finite() && (y > 0.0 || !both.y_log) {
                    earlier.points.push((x, y));
                }
            }
            if !earlier.points.is_empty() {
                both.series.push(earlier);
            }
        }
        comparison.figures.push(both);
    }
    comparison
}

fn find_figure<'a>(old: &'a Value, id: &str) -> Option<&'a Value> {
    old.get("sections")?
        .as_array()?
        .iter()
        .filter_map(|s| s.get("figures")?.as_array())
        .flatten()
        .find(|f| f.get("id").and_then(Value::as_str) == Some(id))
}

impl Comparison {
    /// The comparison as JSON for results.json.
    pub fn to_json(&self) -> Value {
        json!({
            "old_dir": self.old_dir,
            "ratios": self.rows,
            "figures": self.figures.iter().map(Figure::to_json).collect::<Vec<_>>(),
            "gaps": self.gaps.iter().map(|g| json!({"what": g.what, "reason": g.reason})).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(y: f64) -> Section {
        let mut f = Figure::categorical("f", "F", "model", &["a", "b"], "ns");
        f.add_at("commcore", "a", Some(y));
        f.add_at("commcore", "b", Some(2.0 * y));
        Section {
            id: "s".into(),
            title: "S".into(),
            claim: String::new(),
            verdict: String::new(),
            figures: vec![f],
            gaps: vec![],
        }
    }

    #[test]
    fn ratios_are_new_over_old_and_plots_hold_both_runs() {
        let old = json!({"sections": [section(2.0).to_json()]});
        let c = compare("old", &old, &[section(1.0)]);
        assert_eq!(c.rows.len(), 2);
        assert_eq!(c.rows[0][5], "0.500");
        assert_eq!(c.figures[0].point_count(), 4);
        assert!(c.gaps.is_empty());
    }
}
