//! `commcore bench cid` runs at a small size and its invariants hold (never its times).

use serde_json::Value;

fn rows<'a>(report: &'a Value, list: &str) -> &'a [Value] {
    report[list].as_array().map(Vec::as_slice).unwrap_or_default()
}

#[test]
#[cfg_attr(miri, ignore)]
fn bench_cid_reports_every_row_and_its_invariants_hold() {
    let args: Vec<String> = ["--ranks", "16", "--allocations", "400", "--lookups", "2000"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let report = commcore_cli::bench::cid::run(&args).unwrap();
    let allocation = rows(&report, "allocation");
    assert_eq!(allocation.len(), 3 * 3 * 2);
    for row in allocation {
        assert_eq!(row["failures"], 0, "{row}");
        assert!(row["allreduces_max"].as_u64().unwrap() >= row["allreduces_p99"].as_u64().unwrap());
        if row["algorithm"] == "highest" && row["threads"] == 1 {
            // One MAX allreduce of one integer, always.
            assert_eq!(row["allreduces_max"], 1, "{row}");
            assert_eq!(row["bytes_mean"], 4.0, "{row}");
        }
        if row["algorithm"] == "mask" && row["threads"] == 1 {
            assert!(row["allreduces_max"].as_u64().unwrap() <= 2, "{row}");
        }
    }
    for row in rows(&report, "narrow_width") {
        assert_eq!(row["failures"], 0, "{row}");
        assert!(row["highest_cid"].as_u64().unwrap() < 256, "{row}");
    }
    let storage = rows(&report, "storage");
    assert_eq!(storage.len(), 2 * 3 * 4);
    for row in storage {
        let density = row["density_mean"].as_f64().unwrap();
        assert!(density > 0.0 && density <= 1.0, "{row}");
        if row["structure"] == "rbtree" {
            assert_eq!(density, 1.0);
        }
        // Only the folded store is set against the bare shapes it is built on.
        let floor = &row["shape_floor"];
        assert_eq!(floor.is_object(), row["structure"] == "folded", "{row}");
        for field in ["flat_ns", "masked_ns", "bit_field_ns", "two_load_xor_ns"]
            .iter()
            .filter(|_| floor.is_object())
        {
            assert!(floor[field].as_f64().is_some_and(|ns| ns > 0.0 && ns.is_finite()), "{row}");
        }
        if floor.is_object() {
            // A flat array is a one-load table (indexed by the CID itself) and never
            // shrinks, so it is never denser than the one-load bound.
            let bound = floor["one_load_density_mean"].as_f64().unwrap();
            let flat = storage
                .iter()
                .find(|r| {
                    r["structure"] == "flat"
                        && r["algorithm"] == row["algorithm"]
                        && r["scenario"] == row["scenario"]
                })
                .unwrap();
            let flat_density = flat["density_mean"].as_f64().unwrap();
            assert!(bound <= 1.0 && flat_density <= bound + 1e-9, "{row} {flat}");
            assert_eq!(floor["one_load_every_kth_insert"], 1, "{row}");
        }
    }
}

#[test]
fn bench_cid_refuses_bad_options() {
    let run = |args: &[&str]| {
        commcore_cli::bench::cid::run(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    };
    assert!(run(&["--ranks", "500"]).is_err());
    assert!(run(&["--ranks", "x"]).is_err());
    assert!(run(&["--part", "nothing"]).is_err());
    assert!(run(&["--width", "100", "--part", "storage", "--ranks", "4", "--allocations", "10"])
        .is_err());
}
