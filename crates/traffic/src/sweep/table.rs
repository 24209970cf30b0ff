//! The sweep's files: `sweep.csv` (one header line, one row per point,
//! the scalar columns) and `sweep.json` (the same columns per point plus
//! what does not fit a cell: per-repetition values, per-circuit figures,
//! the round-trip histogram and what each point ran on).

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::busy::LoadCheck;
use super::columns::{columns, Cell};
use super::load::LoadOn;
use super::outcome::PointResult;
use super::points::Mode;
use super::repeat::Target;
use crate::env::Environment;
use crate::spec::StackKind;

/// The columns of `mode`, in order, for the header line (also when no
/// point finished).
pub fn header(mode: Mode) -> Vec<&'static str> {
    let specific: &[&str] = match mode {
        Mode::Throughput => &[
            "reps",
            "mean_bps",
            "median_bps",
            "ci95_lo_bps",
            "ci95_hi_bps",
            "stdev_bps",
            "min_bps",
            "max_bps",
            "sent_mean_bps",
            "lost_percent_mean",
            "lost_packets_total",
            "lost_where",
            "min_duration_s",
            "shortest_window_s",
            "too_short",
        ],
        Mode::Delay => &[
            "reps",
            "samples",
            "lost",
            "corrupted",
            "mean_us",
            "ci95_lo_us",
            "ci95_hi_us",
            "stdev_us",
            "min_us",
            "p50_us",
            "p90_us",
            "p99_us",
            "max_us",
            "runner_naps",
        ],
    };
    [
        "point",
        "stack",
        "protocol",
        "family",
        "size_bytes",
        "count",
        "sockbuf_bytes",
        "rate_bps",
        "circuits",
        "load_procs",
        "load_on",
        "load_cpu",
        "pinned",
    ]
    .into_iter()
    .chain(specific.iter().copied())
    .chain([
        "ci95_half_percent",
        "ci_target_percent",
        "verdict",
        "elapsed_s",
        "others_cpu",
        "core_trip_ns",
        "core_trip_min_ns",
        "core_trip_max_ns",
    ])
    .chain([
        "sockbuf_granted_send_bytes",
        "sockbuf_granted_recv_bytes",
        "congestion_control",
        "mtu_bytes",
        "clean",
        "problems",
    ])
    .collect()
}

/// The CSV text: header, then one row per point.
pub fn csv(mode: Mode, results: &[PointResult]) -> String {
    let mut out = header(mode).join(",");
    out.push('\n');
    for result in results {
        let row: Vec<String> = columns(result)
            .into_iter()
            .map(|(_, cell)| csv_cell(&cell))
            .collect();
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

fn csv_cell(cell: &Cell) -> String {
    match cell {
        Cell::Int(v) => v.to_string(),
        Cell::Float(v, decimals) if v.is_finite() => format!("{v:.decimals$}"),
        Cell::Float(..) | Cell::Empty => String::new(),
        Cell::Bool(b) => b.to_string(),
        Cell::Text(t) if t.contains([',', '"', '\n', '\r']) => {
            format!("\"{}\"", t.replace('"', "\"\""))
        }
        Cell::Text(t) => t.clone(),
    }
}

fn json_cell(cell: Cell) -> Value {
    match cell {
        Cell::Int(v) => v.into(),
        // serde_json writes a non-finite float as null.
        Cell::Float(v, _) => v.into(),
        Cell::Text(t) => t.into(),
        Cell::Bool(b) => b.into(),
        Cell::Empty => Value::Null,
    }
}

/// The machine every point ran on (each point's `target` adds its path,
/// buffers and congestion control).
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub kernel: String,
    pub cpu_model: String,
    pub cpus: usize,
    pub stackscope_version: &'static str,
}

impl Machine {
    fn of(env: &Environment) -> Self {
        Self {
            kernel: env.kernel.clone(),
            cpu_model: env.cpu_model.clone(),
            cpus: env.cpus,
            stackscope_version: env.stackscope_version,
        }
    }
}

/// What the JSON document describes.
#[derive(Debug, Clone, Copy)]
pub struct Sweep<'a> {
    pub mode: Mode,
    /// The command line that ran the sweep.
    pub command: &'a str,
    /// When each point had been repeated enough.
    pub target: &'a Target,
    /// The background load levels and where they ran (each point has its
    /// own in `load_procs` and `load_on`).
    pub loads: &'a [u32],
    pub load_on: &'a [LoadOn],
    /// How busy the machine was.
    pub load_check: &'a LoadCheck,
    pub results: &'a [PointResult],
    /// Why the sweep stopped early, if it did.
    pub failure: Option<&'a str>,
}

/// `{"mode", "command", "environment", "repeat": {"min_reps",
/// "max_reps", "max_time_s", "ci_target_percent"}, "loads", "load_on",
/// "load_check": {"cores", "loadavg_before", "others_cpu_before", "warnings"}, "failure",
/// "points": [...]}`.
pub fn json(sweep: &Sweep<'_>) -> Value {
    let environment = match sweep.results.first() {
        Some(first) => Machine::of(first.target()),
        None => Machine::of(&Environment::detect(StackKind::Kernel, "")),
    };
    let points: Vec<Value> = sweep.results.iter().map(json_point).collect();
    json!({
        "mode": sweep.mode,
        "command": sweep.command,
        "environment": environment,
        "repeat": {
            "min_reps": sweep.target.min_reps,
            "max_reps": sweep.target.max_reps,
            "max_time_s": sweep.target.max_time.as_secs_f64(),
            "ci_target_percent": sweep.target.relative * 100.0,
        },
        "loads": sweep.loads,
        "load_on": sweep.load_on,
        "load_check": sweep.load_check,
        "failure": sweep.failure,
        "points": points,
    })
}

fn json_point(result: &PointResult) -> Value {
    let mut point: Map<String, Value> = columns(result)
        .into_iter()
        .map(|(name, cell)| (name.to_string(), json_cell(cell)))
        .collect();
    // A list here; the CSV joins it into one cell.
    point.insert("problems".into(), json!(result.problems()));
    point.insert("target".into(), json!(result.target()));
    match result {
        PointResult::Throughput(t) => {
            // An object here; the CSV writes it as place=n pairs.
            point.insert("lost_where".into(), json!(t.lost_where));
            point.insert("per_rep".into(), json!(t.reps));
            if !t.circuits.is_empty() {
                point.insert("per_circuit".into(), json!(t.circuits));
            }
        }
        PointResult::Delay(d) => {
            point.insert("per_rep".into(), json!(d.reps));
            point.insert("histogram".into(), json!(d.histogram));
            if !d.circuits.is_empty() {
                point.insert("per_circuit".into(), json!(d.circuits));
            }
        }
    }
    Value::Object(point)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Family;
    use crate::sweep::fixtures::{echo, point, tcp};
    use crate::sweep::outcome::{DelayPoint, ThroughputPoint};

    /// Point 3, TCP over IPv4 with a 4 KiB buffer: 8000 then 4000 bit/s,
    /// half the second repetition's bytes missing.
    fn throughput() -> PointResult {
        let mut p = point(3, "tcp");
        p.family = Some(Family::V4);
        p.sockbuf_bytes = Some(4096);
        p.load = 2;
        p.load_on = LoadOn::Server;
        let reps = vec![vec![tcp(5001, 1000, 1000)], vec![tcp(5001, 1000, 500)]];
        let mut t = ThroughputPoint::new(p, &reps).unwrap();
        t.run.load_cpu = Some(0);
        t.run.pinned = Some(false);
        PointResult::Throughput(t)
    }

    fn delay() -> PointResult {
        let reps = [echo(vec![1500, 2500, 40_000], 2, 0)];
        PointResult::Delay(DelayPoint::new(point(1, "udp"), &[reps.to_vec()]).unwrap())
    }

    #[test]
    fn the_header_names_exactly_the_columns_of_each_mode() {
        let names = |r: &PointResult| -> Vec<&str> {
            columns(r).into_iter().map(|(name, _)| name).collect()
        };
        assert_eq!(names(&throughput()), header(Mode::Throughput));
        assert_eq!(names(&delay()), header(Mode::Delay));
    }

    #[test]
    fn csv_has_a_header_and_a_row_per_point_with_units_in_the_names() {
        let results = [throughput(), throughput()];
        let text = csv(Mode::Throughput, &results);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let head = split_csv(lines[0]);
        let row = split_csv(lines[1]);
        let at = |name: &str| row[head.iter().position(|h| h == name).unwrap()].as_str();
        assert_eq!(at("point"), "3");
        assert_eq!(at("family"), "IPv4");
        assert_eq!(at("sockbuf_bytes"), "4096");
        assert_eq!(at("rate_bps"), "", "TCP is unpaced");
        assert_eq!(at("load_procs"), "2");
        assert_eq!(at("load_on"), "server");
        assert_eq!(at("load_cpu"), "0");
        assert_eq!(at("pinned"), "false", "a refused pin is said");
        assert_eq!(at("reps"), "2");
        // 8000 and 4000 bit/s.
        assert_eq!(
            (at("mean_bps"), at("min_bps"), at("max_bps")),
            ("6000", "4000", "8000")
        );
        assert_eq!(at("lost_percent_mean"), "");
        assert_eq!(at("congestion_control"), "cubic");
        assert_eq!(at("clean"), "false");
        assert!(at("problems").starts_with("rep 2: 500 of 1000 bytes received"));
        // The same number of cells as header names in every row.
        assert!(lines.iter().all(|l| split_csv(l).len() == head.len()));
    }

    /// Splits one CSV line, honouring quotes (RFC 4180).
    fn split_csv(line: &str) -> Vec<String> {
        let (mut cells, mut cell, mut quoted) = (Vec::new(), String::new(), false);
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    cell.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => cells.push(std::mem::take(&mut cell)),
                _ => cell.push(c),
            }
        }
        cells.push(cell);
        cells
    }

    #[test]
    fn csv_quotes_what_would_break_a_row() {
        assert_eq!(csv_cell(&Cell::Text("a, b".into())), "\"a, b\"");
        assert_eq!(
            csv_cell(&Cell::Text("say \"hi\"".into())),
            "\"say \"\"hi\"\"\""
        );
        assert_eq!(csv_cell(&Cell::Float(1.23456, 3)), "1.235");
        assert_eq!(csv_cell(&Cell::Float(f64::NAN, 3)), "");
        assert_eq!(csv_cell(&Cell::Empty), "");
    }

    #[test]
    fn json_has_the_csv_columns_and_more() {
        let results = [delay()];
        let doc = json(&Sweep {
            mode: Mode::Delay,
            command: "stackscope sweep --mode delay",
            target: &Target::default(),
            loads: &[0],
            load_on: &[LoadOn::Both],
            load_check: &LoadCheck {
                cores: 2,
                loadavg_before: Some(1.5),
                others_cpu_before: Some(0.75),
                warnings: vec!["busy".into()],
            },
            results: &results,
            failure: None,
        });
        assert_eq!(doc["mode"], "delay");
        assert_eq!(doc["command"], "stackscope sweep --mode delay");
        assert!(doc["environment"]["kernel"]
            .as_str()
            .unwrap()
            .starts_with("Linux"));
        let p = &doc["points"][0];
        for name in header(Mode::Delay) {
            assert!(p.get(name).is_some(), "{name} missing");
        }
        assert_eq!(p["samples"], 3);
        assert_eq!(p["lost"], 2);
        assert_eq!(p["p50_us"], 2.5);
        assert_eq!(p["max_us"], 40.0);
        assert_eq!(p["target"]["stack"], "ref");
        assert_eq!(p["problems"], json!([]));
        let buckets = p["histogram"].as_array().unwrap();
        assert_eq!(buckets.len(), 30);
        assert_eq!(
            buckets[1],
            json!({"lo_us": 1.0, "hi_us": 1.778, "count": 1})
        );
        assert_eq!(buckets[2]["count"], 1, "2.5 µs is in [1.778, 3.162)");
        assert_eq!(p["per_rep"][0]["samples"], 3);
        assert_eq!(doc["repeat"]["ci_target_percent"], 2.0);
        assert_eq!(doc["load_check"]["warnings"][0], "busy");
        assert_eq!(
            (&doc["loads"], &doc["load_on"]),
            (&json!([0]), &json!(["both"]))
        );
        // Nothing pinned under `both`: no CPU, no verdict on pins.
        assert_eq!(
            (&p["load_on"], &p["load_cpu"], &p["pinned"]),
            (&json!("both"), &Value::Null, &Value::Null)
        );
        // One series: no interval, and said so.
        assert_eq!(p["ci95_lo_us"], Value::Null);
        assert_eq!(p["verdict"], "not judged");
    }
}
