//! What a report holds: sections (one per paper), their figures as series of points, and
//! the gaps a figure cannot fill here. The page, the plots and `results.json` are all drawn
//! from these values, so the numbers in a plot, its table and the JSON cannot disagree.

use serde_json::{json, Value};

/// One implementation's or one variant's values in a figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The legend entry, e.g. "commcore" or "Open MPI".
    pub name: String,
    /// `(x, y)` points; on a categorical axis `x` is the category's index.
    pub points: Vec<(f64, f64)>,
}

/// How a figure's horizontal axis is read.
#[derive(Clone, Debug, PartialEq)]
pub enum XAxis {
    /// Numbers, on a logarithmic scale when `log`.
    Numeric { label: String, log: bool },
    /// Named categories, e.g. rank-map models; points carry the category's index.
    Categories { label: String, names: Vec<String> },
}

/// One plot and the table under it.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// A stable identifier, used in the page and in `results.json`.
    pub id: String,
    /// The title above the plot.
    pub title: String,
    /// The horizontal axis.
    pub x: XAxis,
    /// The vertical axis' label, with its unit.
    pub y_label: String,
    /// Whether the vertical axis is logarithmic.
    pub y_log: bool,
    /// The plotted series; none is empty.
    pub series: Vec<Series>,
    /// Why some expected series or points are absent (a peer not installed, …).
    pub gaps: Vec<Gap>,
}

/// Something a paper shows that this run does not, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Gap {
    /// What is missing.
    pub what: String,
    /// Why it is missing here.
    pub reason: String,
}

/// One paper's part of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// A stable identifier (the paper's file name without `.txt`).
    pub id: String,
    /// The section's heading.
    pub title: String,
    /// What the paper claims, in our words.
    pub claim: String,
    /// One line: ahead, at or behind the paper's figure or the peer, by how much.
    pub verdict: String,
    /// The figures redrawn from this run.
    pub figures: Vec<Figure>,
    /// What the paper shows that cannot be measured here.
    pub gaps: Vec<Gap>,
}

impl Gap {
    /// A gap for `what`, missing because of `reason`.
    pub fn new(what: impl Into<String>, reason: impl Into<String>) -> Gap {
        Gap { what: what.into(), reason: reason.into() }
    }

    fn to_json(&self) -> Value {
        json!({"what": self.what, "reason": self.reason})
    }
}

impl Figure {
    /// An empty figure over a numeric axis.
    pub fn numeric(id: &str, title: &str, x_label: &str, x_log: bool, y_label: &str) -> Figure {
        Figure {
            id: id.into(),
            title: title.into(),
            x: XAxis::Numeric { label: x_label.into(), log: x_log },
            y_label: y_label.into(),
            y_log: false,
            series: Vec::new(),
            gaps: Vec::new(),
        }
    }

    /// An empty figure over named categories.
    pub fn categorical(
        id: &str,
        title: &str,
        x_label: &str,
        names: &[&str],
        y_label: &str,
    ) -> Figure {
        Figure {
            id: id.into(),
            title: title.into(),
            x: XAxis::Categories {
                label: x_label.into(),
                names: names.iter().map(|n| n.to_string()).collect(),
            },
            y_label: y_label.into(),
            y_log: false,
            series: Vec::new(),
            gaps: Vec::new(),
        }
    }

    /// This figure with a logarithmic vertical axis.
    pub fn log_y(mut self) -> Figure {
        self.y_log = true;
        self
    }

    /// Adds a point to the series `name` (created on first use). A value that is not a
    /// finite number, or not positive on a log axis, is left out and recorded as a gap,
    /// never plotted.
    pub fn add(&mut self, name: &str, x: f64, y: Option<f64>) {
        let x_log = matches!(self.x, XAxis::Numeric { log: true, .. });
        let usable = |v: f64, log: bool| v.is_finite() && (!log || v > 0.0);
        let Some(y) = y.filter(|y| usable(*y, self.y_log) && usable(x, x_log)) else {
            let at = self.x_text(x);
            self.gaps.push(Gap::new(format!("{name} at {at}"), "the run gave no usable value"));
            return;
        };
        match self.series.iter_mut().find(|s| s.name == name) {
            Some(series) => series.points.push((x, y)),
            None => self.series.push(Series { name: name.into(), points: vec![(x, y)] }),
        }
    }

    /// Adds a point at the category `name`; an unknown category is a gap.
    pub fn add_at(&mut self, series: &str, category: &str, y: Option<f64>) {
        let index = match &self.x {
            XAxis::Categories { names, .. } => names.iter().position(|n| n == category),
            XAxis::Numeric { .. } => None,
        };
        match index {
            Some(i) => self.add(series, i as f64, y),
            None => self.gaps.push(Gap::new(format!("{series} at {category}"), "no such category")),
        }
    }

    /// Puts the vertical axis on a log scale when the values span more than `SPAN` (peers
    /// oversubscribed on 2 vCPUs can be 100x slower), so that the smallest stay readable.
    pub fn choose_y_scale(&mut self) {
        const SPAN: f64 = 50.0;
        let ys = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
        let (lo, hi) =
            ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| (a.min(y), b.max(y)));
        if lo > 0.0 && hi / lo > SPAN {
            self.y_log = true;
        }
    }

    /// The label of the horizontal axis.
    pub fn x_label(&self) -> &str {
        match &self.x {
            XAxis::Numeric { label, .. } | XAxis::Categories { label, .. } => label,
        }
    }

    /// How `x` is written in tables: the category's name, or the number.
    pub fn x_text(&self, x: f64) -> String {
        match &self.x {
            XAxis::Categories { names, .. } => {
                names.get(x as usize).cloned().unwrap_or_else(|| format!("{x}"))
            }
            XAxis::Numeric { .. } => number(x),
        }
    }

    /// The table under the plot: one row per plotted point, `[series, x, y]`.
    pub fn rows(&self) -> Vec<[String; 3]> {
        self.series
            .iter()
            .flat_map(|s| {
                s.points.iter().map(|&(x, y)| [s.name.clone(), self.x_text(x), number(y)])
            })
            .collect()
    }

    /// The number of plotted points.
    pub fn point_count(&self) -> usize {
        self.series.iter().map(|s| s.points.len()).sum()
    }

    /// The y value of `series` at `x`, if plotted.
    pub fn value(&self, series: &str, x: f64) -> Option<f64> {
        let s = self.series.iter().find(|s| s.name == series)?;
        s.points.iter().find(|p| p.0 == x).map(|p| p.1)
    }

    /// The figure as JSON: axes, series with their points, and the table's rows.
    pub fn to_json(&self) -> Value {
        let series: Vec<Value> = self
            .series
            .iter()
            .map(|s| {
                let points: Vec<Value> = s
                    .points
                    .iter()
                    .map(|&(x, y)| json!({"x": x, "x_text": self.x_text(x), "y": y}))
                    .collect();
                json!({"name": s.name, "points": points})
            })
            .collect();
        let (x_log, categories) = match &self.x {
            XAxis::Numeric { log, .. } => (*log, Value::Null),
            XAxis::Categories { names, .. } => (false, json!(names)),
        };
        json!({
            "id": self.id,
            "title": self.title,
            "x_label": self.x_label(),
            "x_log": x_log,
            "categories": categories,
            "y_label": self.y_label,
            "y_log": self.y_log,
            "series": series,
            "rows": self.rows(),
            "gaps": self.gaps.iter().map(Gap::to_json).collect::<Vec<_>>(),
        })
    }
}

impl Section {
    /// The section as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "title": self.title,
            "claim": self.claim,
            "verdict": self.verdict,
            "figures": self.figures.iter().map(Figure::to_json).collect::<Vec<_>>(),
            "gaps": self.gaps.iter().map(Gap::to_json).collect::<Vec<_>>(),
        })
    }
}

/// A number as tables show it: integers whole, others to four significant digits.
pub fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

/// Ahead, at or behind: `ours` against `reference`, for a figure where lower (`lower`) or
/// higher is better; within 5 % is "at".
pub fn verdict(ours: f64, reference: f64, lower: bool) -> String {
    if !(ours.is_finite() && reference.is_finite()) || ours <= 0.0 || reference <= 0.0 {
        return "no comparison (a value is missing)".into();
    }
    let better = if lower { reference / ours } else { ours / reference };
    if (0.95..=1.05).contains(&better) {
        format!("at ({better:.2}x)")
    } else if better > 1.0 {
        format!("ahead by {better:.2}x")
    } else {
        format!("behind by {:.2}x", 1.0 / better)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusable_values_become_gaps_not_points() {
        let mut f = Figure::numeric("f", "t", "ranks", true, "bytes").log_y();
        f.add("a", 10.0, Some(5.0));
        f.add("a", 100.0, Some(f64::NAN));
        f.add("a", 1000.0, Some(0.0));
        f.add("b", 10.0, None);
        assert_eq!(f.point_count(), 1);
        assert_eq!(f.series.len(), 1);
        assert_eq!(f.gaps.len(), 3);
        assert_eq!(f.rows(), vec![["a".to_string(), "10".into(), "5".into()]]);
    }

    #[test]
    fn a_wide_span_of_values_gets_a_log_axis() {
        let mut f = Figure::numeric("f", "t", "procs", false, "us");
        f.add("a", 2.0, Some(1.0));
        f.add("b", 2.0, Some(20.0));
        f.choose_y_scale();
        assert!(!f.y_log);
        f.add("b", 4.0, Some(100.0));
        f.choose_y_scale();
        assert!(f.y_log);
    }

    #[test]
    fn categories_name_their_rows() {
        let mut f = Figure::categorical("f", "t", "model", &["direct", "lut"], "ns");
        f.add_at("commcore", "lut", Some(1.5));
        f.add_at("commcore", "nope", Some(1.0));
        assert_eq!(f.rows(), vec![["commcore".to_string(), "lut".into(), "1.500".into()]]);
        assert_eq!(f.gaps.len(), 1);
    }

    #[test]
    fn verdicts_say_which_way_and_how_much() {
        assert_eq!(verdict(1.0, 2.0, true), "ahead by 2.00x");
        assert_eq!(verdict(2.0, 1.0, true), "behind by 2.00x");
        assert_eq!(verdict(1.0, 1.02, true), "at (1.02x)");
        assert_eq!(verdict(3.0, 1.0, false), "ahead by 3.00x");
    }
}
