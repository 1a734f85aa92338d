//! Printing a benchmark report: the JSON object itself, or the same figures as tables.

use serde_json::Value;

/// Prints `report` as one line of JSON when `json` is set, otherwise as readable tables:
/// scalar fields as `name: value`, each list of objects as a table with one column a key.
pub fn emit(report: &Value, json: bool) {
    if json {
        println!("{report}");
    } else {
        print!("{}", render_tables(report));
    }
}

/// Renders `report` as text tables (see [`emit`]).
pub fn render_tables(report: &Value) -> String {
    let mut out = String::new();
    let Value::Object(fields) = report else {
        out.push_str(&format!("{report}\n"));
        return out;
    };
    for (name, value) in fields {
        match value {
            Value::Array(rows) if rows.iter().all(Value::is_object) && !rows.is_empty() => {
                out.push_str(&format!("\n{name}\n"));
                out.push_str(&render_rows(rows));
            }
            Value::Object(_) => {
                out.push_str(&format!("\n{name}\n"));
                for line in render_tables(value).lines() {
                    out.push_str(&format!("  {line}\n"));
                }
            }
            other => out.push_str(&format!("{name}: {}\n", cell(other))),
        }
    }
    out
}

fn render_rows(rows: &[Value]) -> String {
    let mut columns: Vec<&str> = Vec::new();
    for row in rows {
        for key in row.as_object().into_iter().flat_map(|o| o.keys()) {
            if !columns.contains(&key.as_str()) {
                columns.push(key);
            }
        }
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| columns.iter().map(|c| row.get(*c).map(cell).unwrap_or_default()).collect())
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| cells.iter().map(|r| r[i].len()).chain([c.len()]).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    let line = |out: &mut String, items: &mut dyn Iterator<Item = &str>| {
        let parts: Vec<String> =
            items.zip(&widths).map(|(s, w)| format!("{s:>w$}", w = *w)).collect();
        out.push_str(&format!("  {}\n", parts.join("  ")));
    };
    line(&mut out, &mut columns.iter().copied());
    for row in &cells {
        line(&mut out, &mut row.iter().map(String::as_str));
    }
    out
}

fn cell(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{f:.3}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tables_show_every_column_and_scalar() {
        let text = render_tables(&json!({
            "ave_bytes": 12,
            "rows": [{"model": "direct", "ratio": 0.5}, {"model": "lut", "extra": 3}],
        }));
        assert!(text.contains("ave_bytes: 12"), "{text}");
        for word in ["model", "ratio", "extra", "direct", "lut", "0.500"] {
            assert!(text.contains(word), "missing {word} in {text}");
        }
    }
}
