//! `stackscope compare A B` end to end on two small synthetic result
//! directories: the changed figure is found, the unchanged ones are not
//! called significant, compare.html is written and well-formed, and bad
//! input is an error, not a panic.

mod common;

use std::path::{Path, PathBuf};

use common::{stackscope, stdout_json};
use serde_json::{json, Value};

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("stackscope-compare-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("make scratch dir");
        Self(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }

    fn write(&self, summary: &Value) {
        std::fs::write(self.0.join("summary.json"), summary.to_string()).expect("write summary");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An estimate of five values around `mean` (stdev 1 %).
fn estimate(mean: f64) -> Value {
    let stdev = mean * 0.01;
    let half = 2.776 * stdev / 5f64.sqrt();
    json!({"n": 5, "mean": mean, "median": mean, "stdev": stdev,
           "ci95": {"lo": mean - half, "hi": mean + half}, "median_ci95": null,
           "min": mean - 2.0 * stdev, "max": mean + 2.0 * stdev})
}

/// A summary with two runs of per-size latencies; `slow` multiplies the
/// udp run's 1000-byte stop latency, `reverse` lists runs and sizes in
/// the other order.
fn summary(slow: f64, reverse: bool, extra: bool) -> Value {
    let point = |size: u64, start: f64, stop: f64| {
        json!({"size": size, "messages": 5,
               "send": {"start_us": estimate(start), "stop_us": estimate(stop), "frames": 1}})
    };
    // Runs that took their passes in turn, in one machine state: compare
    // gives no verdict on a run of one pass or of unknown state.
    let mut runs = vec![
        json!({"id": "tcp", "points": [point(500, 2.0, 50.0), point(1000, 3.0, 90.0)],
            "core_trip_ns": 62.0, "cpu_speed_ns_per_kib": 29.0, "gauge_readings": 18}),
        json!({"id": "udp", "points": [point(500, 1.5, 40.0), point(1000, 2.5, 80.0 * slow)],
            "core_trip_ns": 62.0, "cpu_speed_ns_per_kib": 29.0, "gauge_readings": 18}),
    ];
    if reverse {
        runs.reverse();
        for run in &mut runs {
            run["points"].as_array_mut().unwrap().reverse();
        }
    }
    let mut s = json!({"title": "stackscope: test", "generated_unix": 1_795_361_766u64,
        "quick": true, "command": "stackscope lab --quick", "machine": {"cpus": 2},
        "calibration": {"counter_hz": 2.6e9},
        "experiments": [{"name": "xie1999", "title": "t", "runs": runs, "sweeps": []}]});
    if extra {
        s["calibration"]["new_figure"] = json!(1.0);
    }
    s
}

/// Tags open and close in order (void elements excepted), and no stray
/// `<` or `&` is left in the text.
fn assert_well_formed(html: &str) {
    const VOID: &[&str] = &["meta", "br", "hr", "img", "link", "input"];
    assert!(html.starts_with("<!DOCTYPE html>"), "no doctype");
    let mut open: Vec<String> = Vec::new();
    let mut rest = &html["<!DOCTYPE html>".len()..];
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..text[i..].find(';').map_or(text.len(), |e| i + e + 1)];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].contains(&entity),
                "stray & in {text:?}"
            );
        }
        let gt = rest[lt..].find('>').expect("unclosed tag") + lt;
        let tag = &rest[lt + 1..gt];
        assert!(!tag.contains('<'), "< inside a tag: {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else {
            let name = tag.split([' ', '/']).next().unwrap_or("").to_lowercase();
            if !VOID.contains(&name.as_str()) {
                open.push(name);
            }
        }
        rest = &rest[gt + 1..];
    }
    assert!(open.is_empty(), "never closed: {open:?}");
    assert!(rest.trim().is_empty());
}

#[test]
fn a_changed_figure_is_found_and_nothing_else() {
    let a = Scratch::new("a");
    let b = Scratch::new("b");
    a.write(&summary(1.0, false, false));
    b.write(&summary(3.0, true, true));
    let out = stackscope(&["compare", a.arg(), b.arg()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with(&format!("A: {}", a.arg())), "{text}");
    assert!(text.contains("began 20261122-153606 UTC"), "{text}");
    // 8 estimates tested; frames ×4, messages ×4, the gauges ×6 and
    // counter_hz untested.
    assert!(
        text.contains("Figures both have: 23\n  tested (a spread on both sides): 8 "),
        "{text}"
    );
    assert!(text.contains("Holm–Bonferroni"), "{text}");
    assert!(text.contains("Only in A: 0; only in B: 1"), "{text}");
    assert!(text.contains("Significant differences: 1\n"), "{text}");
    let changed = "experiments[xie1999].runs[udp].points[size=1000].send.stop_us  B slower";
    assert!(text.contains(changed), "{text}");
    assert!(text.contains("B/A 3.000 ["), "{text}");
    assert!(text.contains("Not significant: 7 tested figures"), "{text}");
    // With 1 % spreads and n 5, Holm over 8 tests marks changes of a few
    // per cent: the line says how blind "not significant" was.
    assert!(
        text.contains(
            "Not significant is not unchanged: for half the tested figures only a change of "
        ),
        "{text}"
    );
    let html = std::fs::read_to_string(b.path().join("compare.html")).expect("compare.html in B");
    assert_well_formed(&html);
    assert!(html.contains("Significant differences (1)"));
    assert!(html.contains("runs[udp].points[size=1000].send.stop_us"));
    assert!(html.contains("smallest markable change"));

    // --all lists every figure, the one-sided one too.
    let out = stackscope(&["compare", "--all", a.arg(), b.arg()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Only in B: 1\n  calibration.new_figure"),
        "{text}"
    );
    assert!(text.contains("experiments[xie1999].runs[tcp].points[size=500].send.frames"));
}

#[test]
fn identical_runs_differ_nowhere_and_json_says_so() {
    let a = Scratch::new("same-a");
    let b = Scratch::new("same-b");
    let out_dir = Scratch::new("same-out");
    a.write(&summary(1.0, false, false));
    b.write(&summary(1.0, true, false));
    let report = out_dir.path().join("nested");
    let out = stackscope(&[
        "compare",
        "--json",
        "--correction",
        "bh",
        "--out",
        report.to_str().unwrap(),
        a.arg(),
        b.arg(),
    ]);
    let json = stdout_json(&out);
    assert_eq!(json["tested"].as_array().unwrap().len(), 8);
    assert!(json["tested"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["significant"] == false && t["difference"]["ratio"] == 1.0));
    assert!(json["correction"].as_str().unwrap().contains("Benjamini"));
    assert!(json["only_a"].as_array().unwrap().is_empty());
    assert!(report.join("compare.html").is_file());
    assert!(!b.path().join("compare.html").exists());
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let good = Scratch::new("bad-good");
    good.write(&summary(1.0, false, false));
    let not_json = Scratch::new("bad-notjson");
    std::fs::write(not_json.path().join("summary.json"), "{ nope").unwrap();
    let not_lab = Scratch::new("bad-notlab");
    not_lab.write(&json!({"mode": "throughput", "points": []}));
    let other = Scratch::new("bad-other");
    let mut s = summary(1.0, false, false);
    s["experiments"][0]["name"] = json!("taler1992");
    other.write(&s);
    let empty = Scratch::new("bad-empty");
    let missing = good.path().join("no-such-dir");
    let cases = [
        (missing.to_str().unwrap(), "no such result directory"),
        (empty.arg(), "reading"),
        (not_json.arg(), "not JSON"),
        (not_lab.arg(), "no \"experiments\" list"),
        (other.arg(), "share no recipe"),
    ];
    for (b, expect) in cases {
        let out = stackscope(&["compare", good.arg(), b]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{b}: succeeded");
        assert!(err.contains(expect), "{b}: {err}");
        assert!(!err.contains("panicked"), "{b}: {err}");
    }
}
