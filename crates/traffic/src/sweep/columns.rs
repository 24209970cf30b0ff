//! A point's scalar figures as named columns: the one list the CSV header,
//! the CSV rows and the JSON points are all made from, so they cannot
//! drift apart. Names are snake_case with their unit.

use super::outcome::{DelayPoint, PointResult, ThroughputPoint};

/// One value of a column.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Int(u64),
    /// A value and the decimals it is written with in the CSV.
    Float(f64, usize),
    Text(String),
    Bool(bool),
    /// Not applicable to this point (e.g. loss for TCP).
    Empty,
}

impl Cell {
    fn opt_int(v: Option<u64>) -> Self {
        v.map_or(Cell::Empty, Cell::Int)
    }

    fn opt_float(v: Option<f64>, decimals: usize) -> Self {
        v.map_or(Cell::Empty, |v| Cell::Float(v, decimals))
    }
}

/// Decimals: bits per second are whole, microseconds to the nanosecond.
const BPS: usize = 0;
const US: usize = 3;
const PERCENT: usize = 4;

/// The point's columns, in CSV order.
pub fn columns(result: &PointResult) -> Vec<(&'static str, Cell)> {
    let p = result.point();
    let mut cols = vec![
        ("point", Cell::Int(p.index as u64)),
        ("stack", Cell::Text(p.stack.to_string())),
        ("protocol", Cell::Text(p.protocol.clone())),
        (
            "family",
            p.family.map_or(Cell::Empty, |f| Cell::Text(f.to_string())),
        ),
        ("size_bytes", Cell::Int(p.size_bytes)),
        ("count", Cell::Int(p.count)),
        ("sockbuf_bytes", Cell::opt_int(p.sockbuf_bytes)),
        ("rate_bps", Cell::opt_int(p.rate_bps)),
        ("circuits", Cell::Int(u64::from(p.circuits))),
        ("load_procs", Cell::Int(u64::from(p.load))),
        ("load_on", Cell::Text(p.load_on.to_string())),
        (
            "load_cpu",
            Cell::opt_int(result.run().load_cpu.map(|c| c as u64)),
        ),
        (
            "pinned",
            result.run().pinned.map_or(Cell::Empty, Cell::Bool),
        ),
    ];
    match result {
        PointResult::Throughput(t) => throughput(t, &mut cols),
        PointResult::Delay(d) => delay(d, &mut cols),
    }
    repetitions(result, &mut cols);
    let target = result.target();
    let granted = target.sockbuf_granted;
    cols.extend([
        (
            "sockbuf_granted_send_bytes",
            Cell::opt_int(granted.send.map(|b| b as u64)),
        ),
        (
            "sockbuf_granted_recv_bytes",
            Cell::opt_int(granted.recv.map(|b| b as u64)),
        ),
        (
            "congestion_control",
            target
                .congestion_control
                .clone()
                .map_or(Cell::Empty, Cell::Text),
        ),
        ("mtu_bytes", Cell::opt_int(target.mtu.map(u64::from))),
        ("clean", Cell::Bool(result.clean())),
        ("problems", Cell::Text(result.problems().join("; "))),
    ]);
    cols
}

fn throughput(t: &ThroughputPoint, cols: &mut Vec<(&'static str, Cell)>) {
    let r = &t.recv_bps;
    cols.extend([
        ("reps", Cell::Int(r.n as u64)),
        ("mean_bps", Cell::Float(r.mean, BPS)),
        ("median_bps", Cell::Float(r.median, BPS)),
        (
            "ci95_lo_bps",
            Cell::opt_float(r.positive_ci95().map(|c| c.lo), BPS),
        ),
        (
            "ci95_hi_bps",
            Cell::opt_float(r.positive_ci95().map(|c| c.hi), BPS),
        ),
        ("stdev_bps", Cell::opt_float(r.stdev, BPS)),
        ("min_bps", Cell::Float(r.min, BPS)),
        ("max_bps", Cell::Float(r.max, BPS)),
        ("sent_mean_bps", Cell::Float(t.sent_bps_mean, BPS)),
        (
            "lost_percent_mean",
            Cell::opt_float(t.lost_percent_mean, PERCENT),
        ),
        ("lost_packets_total", Cell::opt_int(t.lost_packets_total)),
        (
            "lost_where",
            t.lost_where
                .as_ref()
                .map_or(Cell::Empty, |w| Cell::Text(places_text(w))),
        ),
        ("min_duration_s", Cell::opt_float(t.min_duration_s, US)),
        ("shortest_window_s", Cell::Float(t.shortest_window_s, US)),
        ("too_short", Cell::Bool(t.too_short)),
    ]);
}

/// The repetitions' verdict (issue 16): the mean's 95 % half-width as a
/// share of the mean beside its target, whether it was met, and how busy
/// the machine was meanwhile.
fn repetitions(result: &PointResult, cols: &mut Vec<(&'static str, Cell)>) {
    let run = result.run();
    let half = result
        .estimate()
        .and_then(|e| e.relative_half_width())
        .map(|r| r * 100.0);
    cols.extend([
        ("ci95_half_percent", Cell::opt_float(half, PERCENT)),
        (
            "ci_target_percent",
            Cell::Float(run.target_percent, PERCENT),
        ),
        (
            "verdict",
            Cell::Text(super::repeat::verdict_text(run.verdict).into()),
        ),
        ("elapsed_s", Cell::Float(run.elapsed_s, US)),
        ("others_cpu", Cell::opt_float(run.others_cpu, 2)),
        (
            "core_trip_ns",
            Cell::opt_float(run.core_trip.map(|t| t.median_ns), 0),
        ),
        (
            "core_trip_min_ns",
            Cell::opt_float(run.core_trip.map(|t| t.min_ns), 0),
        ),
        (
            "core_trip_max_ns",
            Cell::opt_float(run.core_trip.map(|t| t.max_ns), 0),
        ),
    ]);
}

/// `place=n;place=n`, places in name order (one CSV cell).
pub fn places_text(places: &std::collections::BTreeMap<String, u64>) -> String {
    places
        .iter()
        .map(|(place, n)| format!("{place}={n}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn delay(d: &DelayPoint, cols: &mut Vec<(&'static str, Cell)>) {
    let rtt = d.rtt_us.as_ref();
    cols.extend([
        ("reps", Cell::Int(d.reps.len() as u64)),
        ("samples", Cell::Int(d.samples as u64)),
        ("lost", Cell::Int(d.lost)),
        ("corrupted", Cell::Int(d.corrupted)),
        ("mean_us", Cell::opt_float(rtt.map(|s| s.mean), US)),
        (
            "ci95_lo_us",
            Cell::opt_float(
                d.rep_mean_us.and_then(|s| s.positive_ci95()).map(|c| c.lo),
                US,
            ),
        ),
        (
            "ci95_hi_us",
            Cell::opt_float(
                d.rep_mean_us.and_then(|s| s.positive_ci95()).map(|c| c.hi),
                US,
            ),
        ),
        ("stdev_us", Cell::opt_float(rtt.and_then(|s| s.stdev), US)),
        ("min_us", Cell::opt_float(rtt.map(|s| s.min), US)),
        ("p50_us", Cell::opt_float(d.p50_us, US)),
        ("p90_us", Cell::opt_float(d.p90_us, US)),
        ("p99_us", Cell::opt_float(d.p99_us, US)),
        ("max_us", Cell::opt_float(rtt.map(|s| s.max), US)),
        ("runner_naps", Cell::opt_int(d.runner_naps)),
    ]);
}
