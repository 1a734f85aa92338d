//! `commcore bench coll` runs, reports every row, and its counted invariants hold (times are
//! never asserted).

use commcore::coll::{Algorithm, CollOp};
use commcore_cli::bench::coll;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_small_run_reports_every_row_and_keeps_its_invariants() {
    let report = coll::run(&args(&["--iters", "16", "--blocks", "1", "--ranks", "64"])).unwrap();
    let dispatch = report["dispatch"].as_array().unwrap();
    assert_eq!(dispatch.len(), 3);
    for row in dispatch {
        assert_eq!(row["ranks"], 8);
        assert!(row["direct_ns"].as_f64().unwrap() > 0.0);
        assert!(row["ratio"].as_f64().unwrap() > 0.0);
    }
    let schedule = report["schedule"].as_array().unwrap();
    for op in CollOp::ALL {
        for alg in
            Algorithm::ALL.into_iter().filter(|a| a.implements(op) && *a != Algorithm::Hierarchical)
        {
            let found =
                schedule.iter().any(|r| r["op"] == op.name() && r["algorithm"] == alg.name());
            assert!(found, "no schedule row for {op} {}", alg.name());
        }
    }
    assert!(schedule.iter().all(|r| r["steps"].as_u64().unwrap() > 0));
    let hier = report["hier"].as_array().unwrap();
    assert_eq!(hier.len(), 10);
    for row in hier {
        let (h, f) = (
            row["inter_node_messages"].as_u64().unwrap(),
            row["flat_inter_node_messages"].as_u64().unwrap(),
        );
        assert!(h <= f, "{row}");
        let cut = matches!(row["op"].as_str(), Some("bcast" | "reduce" | "allreduce"));
        if row["placement"] == "cyclic" && cut {
            assert!(4 * h <= f, "{row}");
        }
    }
}

#[test]
fn bad_options_are_errors() {
    assert!(coll::run(&args(&["--iters", "0"])).is_err());
    assert!(coll::run(&args(&["--ranks", "1"])).unwrap_err().contains("--ranks"));
    assert!(coll::run(&args(&["--ranks", "64,x"])).is_err());
    // `--procs` hands over to the real-process measurement, which checks its own options.
    assert!(coll::run(&args(&["--procs", "0"])).unwrap_err().contains("--procs"));
}
