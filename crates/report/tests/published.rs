//! The studies' published values (experiments/published/*.toml): every
//! file parses, every entry resolves against what a quick lab writes (so a
//! renamed run or a moved field fails here instead of silently dropping a
//! comparison), ratios are ours / study, and what does not resolve is
//! reported, never a panic.
//!
//! `fixtures/quick-lab-summary.json` is a quick lab's summary.json cut to
//! the fields the entries read. Remake it after the model changes with
//!
//! ```sh
//! cargo run --release -p stackscope -- lab --quick --out /tmp/lab
//! jq -c '{experiments: [.experiments[] | {name, runs: [.runs[] | {id,
//!   send: (.send | del(.stop_steps, .stop_by_definition)),
//!   points: [.points[] | {size, send: (.send | {start_us: (.start_us|{n,mean,ci95,median,median_ci95}),
//!     stop_us: (.stop_us|{n,mean,ci95,median,median_ci95}), throughput_kbps})}],
//!   sender_profile: (.sender_profile | {categories, functions: [.functions[] | {name, share_of_stack}]}),
//!   components}],
//!   sweeps: [.sweeps[] | {id, points: [.points[] | {stack, protocol, family, size_bytes,
//!     sockbuf_bytes, circuits, reps, samples, mean_bps, sent_mean_bps, stdev_bps,
//!     mean_us, stdev_us, ci95_us, rep_stdev_us, per_circuit}], tables}]}]}' /tmp/lab/summary.json \
//!   > crates/report/tests/fixtures/quick-lab-summary.json
//! ```
//!
//! (`.ci/check-lab.py` checks the same against the lab CI has just run.)

use std::collections::BTreeSet;

use report::published::{self, Ours, Row};
use serde_json::{json, Value};

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/quick-lab-summary.json")).expect("fixture parses")
}

fn experiment<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no experiment {name} in the fixture"))
}

const STUDIES: [&str; 4] = ["xie1999", "papadopoulos1993", "taler1992", "draves1998"];

#[test]
fn every_file_parses_and_names_its_recipe() {
    assert_eq!(published::FILES.len(), 4);
    let mut names = BTreeSet::new();
    for (file, study) in published::FILES.iter().zip(published::studies()) {
        let study = study.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.0, format!("{}.toml", study.experiment));
        assert!(study.groups.iter().all(|g| !g.entries.is_empty()));
        names.insert(study.experiment.clone());
    }
    assert_eq!(names, STUDIES.iter().map(|s| s.to_string()).collect());
}

/// The run ids each path names (`runs[id=X]`, `sweeps[id=X]`) exist in the
/// recipe of the same name, and are of the kind the path expects: renaming
/// a run in a recipe fails here, without running the lab.
#[test]
fn every_key_names_a_run_of_its_recipe() {
    let recipes = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let summary = fixture();
    for study in published::studies() {
        let study = study.unwrap();
        let text =
            std::fs::read_to_string(recipes.join(format!("{}.toml", study.experiment))).unwrap();
        let recipe: toml::Value = toml::from_str(&text).unwrap();
        let kinds: Vec<(String, String)> = recipe["run"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["id"].as_str().unwrap().to_string(),
                    r["kind"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        // The paths with their placeholders filled, as the rows carry them,
        // and the references of relative figures.
        let rows = published::study_rows(&study, experiment(&summary, &study.experiment));
        let mut paths: Vec<String> = rows
            .iter()
            .filter_map(|r| match &r.ours {
                Ours::Measured { path, .. }
                | Ours::NotInThisRun { path, .. }
                | Ours::NoFigure { path, .. }
                | Ours::Unresolved { path, .. } => Some(path.clone()),
                Ours::NotReproduced { .. } => None,
            })
            .collect();
        for g in &study.groups {
            let keys = g
                .entries
                .iter()
                .filter_map(|e| e.ours.as_ref())
                .chain(g.ours.as_ref());
            paths.extend(keys.filter_map(|k| k.versus.clone()));
        }
        assert!(!paths.is_empty());
        for path in paths {
            let (list, rest) = path.split_once("[id=").unwrap_or_else(|| {
                panic!(
                    "{}: {path} does not start with runs[id=…] or sweeps[id=…]",
                    study.experiment
                )
            });
            let id = rest.split(']').next().unwrap();
            let kind = kinds
                .iter()
                .find(|(i, _)| i == id)
                .map(|(_, k)| k.as_str())
                .unwrap_or_else(|| {
                    panic!("{}: {path}: the recipe has no run {id:?}", study.experiment)
                });
            let expected = if kind == "messages" { "runs" } else { "sweeps" };
            assert_eq!(
                list, expected,
                "{}: {path}: run {id} is a {kind} run",
                study.experiment
            );
        }
    }
}

#[test]
fn every_entry_resolves_against_a_quick_lab() {
    let summary = fixture();
    for name in STUDIES {
        let rows = published::rows_for(name, experiment(&summary, name));
        assert!(!rows.is_empty(), "{name}: no row");
        let mut measured = 0;
        for row in &rows {
            match &row.ours {
                Ours::Measured { value, .. } => {
                    assert!(value.is_finite(), "{name} {}: {value}", row.quantity);
                    measured += 1;
                }
                Ours::NotInThisRun { .. } | Ours::NotReproduced { .. } | Ours::NoFigure { .. } => {}
                Ours::Unresolved { path, error } => {
                    panic!("{name} {} / {}: {path}: {error}", row.figure, row.quantity)
                }
            }
        }
        assert!(measured > 0, "{name}: nothing measured");
    }
}

/// Entries marked `full_only` are the only ones a quick lab may lack, and
/// they are said to be missing, not dropped.
#[test]
fn only_full_only_entries_are_missing_from_a_quick_lab() {
    let summary = fixture();
    for study in published::studies() {
        let study = study.unwrap();
        let rows = published::study_rows(&study, experiment(&summary, &study.experiment));
        let expected: usize = study
            .groups
            .iter()
            .map(|g| g.variants.len().max(1) * g.entries.len())
            .sum();
        assert_eq!(
            rows.len(),
            expected,
            "{}: one row per entry and variant",
            study.experiment
        );
        let mut i = 0;
        for g in &study.groups {
            for e in &g.entries {
                for _ in 0..g.variants.len().max(1) {
                    let row = &rows[i];
                    i += 1;
                    let missing = matches!(row.ours, Ours::NotInThisRun { .. });
                    assert!(
                        !missing || e.full_only,
                        "{} {}: not in the quick lab",
                        g.figure,
                        e.quantity
                    );
                }
            }
        }
    }
}

#[test]
fn a_renamed_run_is_reported_not_dropped() {
    let mut summary = fixture();
    let runs = summary["experiments"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e["name"] == "xie1999")
        .unwrap()["runs"]
        .as_array_mut()
        .unwrap();
    for run in runs.iter_mut() {
        if run["id"] == "tcp" {
            run["id"] = json!("tcp-renamed");
        }
    }
    let rows = published::rows_for("xie1999", experiment(&summary, "xie1999"));
    let before = published::rows_for("xie1999", experiment(&fixture(), "xie1999"));
    assert_eq!(rows.len(), before.len(), "no comparison dropped");
    let unresolved: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.ours, Ours::Unresolved { .. }))
        .collect();
    assert!(!unresolved.is_empty());
    assert!(
        unresolved.iter().all(|r| r.quantity.contains("TCP")),
        "only the TCP run's entries"
    );
    let html = published::render("xie1999", &rows);
    assert!(
        html.contains("unresolved: runs[id=tcp]"),
        "the report says which key broke"
    );
}

/// A small study against a hand-made experiment: the figures, their units,
/// the ratio ours / study and its interval.
#[test]
fn ratio_scale_interval_and_versus() {
    let study = published::parse(
        "test.toml",
        r#"
study = "Test 2024"
experiment = "t"
seed = "t.txt"

[[group]]
figure = "Table 1"
seed_lines = "10-12"
conditions = "c"
difference = "d"
ours = { path = "sweeps[id=s]/points[family={family}]/bps", scale = 1e-6, stdev = "sd", n = "reps" }

[[group.entry]]
quantity = "v4"
value = 50
at = { family = "IPv4" }

[[group.entry]]
quantity = "v6 against v4"
value = 2
ours = { path = "sweeps[id=s]/points[family=IPv6]/bps", versus = "sweeps[id=s]/points[family=IPv4]/bps", scale = -1, stdev = "sd", n = "reps" }

[[group.entry]]
quantity = "zero study"
value = 0
at = { family = "IPv4" }

[[group.entry]]
quantity = "largest"
value = 100
ours = { path = "sweeps[id=s]/points[*]/bps", reduce = "max", scale = 1e-6 }
"#,
    )
    .unwrap();
    let exp = json!({"sweeps": [{"id": "s", "points": [
        {"family": "IPv4", "bps": 100e6, "sd": 2e6, "reps": 4},
        {"family": "IPv6", "bps": 98e6, "sd": 2e6, "reps": 4}]}]});
    let rows = published::study_rows(&study, &exp);
    assert_eq!(rows.len(), 4);

    let Ours::Measured { value, ci95, n, .. } = &rows[0].ours else {
        panic!("{:?}", rows[0].ours)
    };
    assert!((value - 100.0).abs() < 1e-9);
    assert_eq!(*n, Some(4));
    // t(3) · 2 / √4 = 3.182 Mbit/s either side.
    let ci = ci95.unwrap();
    assert!(
        (ci.hi - 103.182).abs() < 1e-3 && (ci.lo - 96.818).abs() < 1e-3,
        "{ci:?}"
    );
    assert!((rows[0].ratio.unwrap() - 2.0).abs() < 1e-12, "100 / 50");
    let r = rows[0].ratio_ci95.unwrap();
    assert!((r.lo - 96.818 / 50.0).abs() < 1e-4 && (r.hi - 103.182 / 50.0).abs() < 1e-4);
    assert_eq!(rows[0].source, "t.txt lines 10-12");

    // 98 against 100 is 2 % below: the degradation is +2, the ratio 1.
    let Ours::Measured { value, ci95, .. } = &rows[1].ours else {
        panic!("{:?}", rows[1].ours)
    };
    assert!((value - 2.0).abs() < 1e-9, "{value}");
    let ci = ci95.expect("Welch's interval");
    assert!(ci.lo < 2.0 && 2.0 < ci.hi && ci.lo < ci.hi, "{ci:?}");
    assert!((rows[1].ratio.unwrap() - 1.0).abs() < 1e-9);

    assert!(rows[2].ratio.is_none(), "no ratio to a zero");
    let Ours::Measured { value, .. } = &rows[3].ours else {
        panic!()
    };
    assert!((value - 100.0).abs() < 1e-9, "the larger of the two");
}

#[test]
fn what_does_not_resolve_is_reported_and_bad_files_are_errors() {
    let study = published::parse(
        "test.toml",
        r#"
study = "Test"
experiment = "t"
seed = "t.txt"
[[group]]
figure = "F"
seed_lines = "1"
conditions = "c"
difference = "d"
[[group.entry]]
quantity = "missing run"
value = 1
ours = { path = "runs[id=nope]/x" }
[[group.entry]]
quantity = "missing field"
value = 1
ours = { path = "runs[id=a]/nope" }
[[group.entry]]
quantity = "not a number"
value = 1
ours = { path = "runs[id=a]/name" }
[[group.entry]]
quantity = "ambiguous"
value = 1
ours = { path = "runs[*]/x" }
[[group.entry]]
quantity = "unfilled"
value = 1
ours = { path = "runs[id={run}]/x" }
[[group.entry]]
quantity = "bad cell"
value = 1
ours = { path = "runs[id=a]/t", cell = { row = "r", column = "nope" } }
[[group.entry]]
quantity = "full only"
value = 1
full_only = true
ours = { path = "runs[id=a]/pts[size=9]/x" }
[[group.entry]]
quantity = "table cell"
value = 2
ours = { path = "runs[id=a]/t", cell = { row = "ro", column = "c" } }
[[group.entry]]
quantity = "too short"
value = 1
ours = { path = "runs[id=a]/pts[size=8]/x" }
[[group.entry]]
quantity = "null"
value = 1
ours = { path = "runs[id=b]/y" }
[[group.entry]]
quantity = "dash"
value = 1
ours = { path = "runs[id=a]/t", cell = { row = "r2", column = "c" } }
"#,
    )
    .unwrap();
    let exp = json!({"runs": [
        {"id": "a", "x": 1, "name": "text", "pts": [{"size": 8, "x": 1, "too_short": true}],
         "t": {"caption": "", "columns": ["k", "c"], "rows": [["row", "+0.40 %"], ["r2", "-"]]}},
        {"id": "b", "x": 2, "y": null}]});
    let rows = published::study_rows(&study, &exp);
    let status: Vec<&str> = rows
        .iter()
        .map(|r| match r.ours {
            Ours::Measured { .. } => "measured",
            Ours::NotInThisRun { .. } => "not_in_this_run",
            Ours::NoFigure { .. } => "no_figure",
            Ours::NotReproduced { .. } => "not_reproduced",
            Ours::Unresolved { .. } => "unresolved",
        })
        .collect();
    assert_eq!(
        status,
        [
            "unresolved",
            "unresolved",
            "unresolved",
            "unresolved",
            "unresolved",
            "unresolved",
            "not_in_this_run",
            "measured",
            "no_figure",
            "no_figure",
            "no_figure"
        ]
    );
    let Ours::Measured { value, .. } = rows[7].ours else {
        unreachable!()
    };
    assert!((value - 0.4).abs() < 1e-12);
    assert!((rows[7].ratio.unwrap() - 0.2).abs() < 1e-12);

    // Any experiment at all: no panic.
    for exp in [
        json!(null),
        json!([1, 2]),
        json!({"runs": "x"}),
        json!({"runs": [null]}),
    ] {
        for name in STUDIES {
            let _ = published::rows_for(name, &exp);
        }
    }

    for (bad, why) in [
        ("study = 1", "not a string"),
        ("study = \"s\"\nexperiment = \"e\"\nseed = \"x\"\ngroup = []\nextra = 1", "unknown key"),
        (
            "study = \"s\"\nexperiment = \"e\"\nseed = \"x\"\n[[group]]\nfigure = \"f\"\nseed_lines = \"1\"\nconditions = \"c\"\ndifference = \"d\"\n[[group.entry]]\nquantity = \"q\"\nvalue = 1\n",
            "neither key nor reason",
        ),
        (
            "study = \"s\"\nexperiment = \"e\"\nseed = \"x\"\n[[group]]\nfigure = \"f\"\nseed_lines = \"1\"\nconditions = \"c\"\ndifference = \"d\"\nnot_reproduced = \"r\"\n[[group.entry]]\nquantity = \"q\"\nvalue = 1\nours = { path = \"a\" }\n",
            "key and reason",
        ),
        (
            "study = \"s\"\nexperiment = \"e\"\nseed = \"x\"\n[[group]]\nfigure = \"f\"\nseed_lines = \"1\"\nconditions = \"c\"\ndifference = \"d\"\n[[group.entry]]\nquantity = \"q\"\nvalue = 1\nours = { path = \"a[\" }\n",
            "bad path",
        ),
        (
            "study = \"s\"\nexperiment = \"e\"\nseed = \"x\"\n[[group]]\nfigure = \"f\"\nseed_lines = \"1\"\nconditions = \"c\"\ndifference = \"d\"\n[[group.entry]]\nquantity = \"q\"\nvalue = nan\nours = { path = \"a\" }\n",
            "not a number",
        ),
    ] {
        assert!(published::parse("bad.toml", bad).is_err(), "{why}");
    }
}

#[test]
fn the_section_shows_study_ours_and_ratio_escaped() {
    let summary = fixture();
    let rows = published::rows_for("draves1998", experiment(&summary, "draves1998"));
    let html = published::render("draves1998", &rows);
    assert!(html.contains("Draves, Mankin and Zill 1998"));
    assert!(
        html.contains("10995 ± 20"),
        "the study's value with its spread"
    );
    assert!(
        html.contains("Table 1 (10 Mb/s column)") && html.contains("1058 ± 4"),
        "the 10 Mb/s column, measured since the recipe runs a 10 Mbit/s wire"
    );
    assert!(!html.contains("10 Mb/s column) (not reproduced"));
    assert!(html.contains("(n 3)"));
    assert!(!html.contains("<script"));
    let mut rows = rows;
    rows[0].quantity = "<b>&".into();
    assert!(published::render("draves1998", &rows).contains("&lt;b&gt;&amp;"));
    assert_eq!(published::render("draves1998", &[]), "");
}
