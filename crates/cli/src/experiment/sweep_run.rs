//! Runs a recipe's `throughput` and `delay` runs with `stackscope sweep`'s
//! machinery (the reference stack on the run's link profile, the kernel
//! over loopback) and turns the points into the report's series and
//! tables: per-circuit figures when flows ran at once, and the header-cost
//! prediction beside measured TCP throughput when the recipe asks.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::{Map, Value};

use report::model::{Series, SeriesPoint, SweepRun, Table};
use traffic::kernel::KernelPath;
use traffic::spec::{Family, StackKind};
use traffic::sweep::columns::{columns, Cell};
use traffic::sweep::{self, table, Mode, Point, PointResult, Settings, Targets};

use super::recipe::{Prediction, Recipe, Run, SweepPlan, XAxis};

/// Repetitions a sweep run makes (for progress bars).
pub fn steps(plan: &SweepPlan, quick: bool) -> u64 {
    plan.grid(quick)
        .points(KernelPath::Loopback)
        .map_or(0, |p| p.len() as u64)
        * u64::from(plan.reps(quick))
}

pub fn run(
    recipe: &Recipe,
    run: &Run,
    plan: &SweepPlan,
    quick: bool,
    dir: &Path,
    progress: &Arc<AtomicU64>,
) -> Result<SweepRun> {
    // The reference stack reads its network from a file: write the link
    // profile beside the report (which also records what ran).
    let topologies = dir.join("topologies");
    std::fs::create_dir_all(&topologies)
        .with_context(|| format!("creating {}", topologies.display()))?;
    let topology = topologies.join(format!("{}.toml", run.link.name()));
    std::fs::write(&topology, run.link.topology_toml())
        .with_context(|| format!("writing {}", topology.display()))?;

    let grid = plan.grid(quick);
    let points = grid.points(KernelPath::Loopback)?;
    let settings = Settings {
        reps: plan.reps(quick),
        load: plan.load,
        targets: Targets {
            ref_link: None,
            kernel_path: KernelPath::Loopback,
            topology: Some(topology),
        },
    };
    let outcome = sweep::run(&points, &settings, |_| {
        progress.fetch_add(1, Ordering::Relaxed);
    })?;
    let stem = format!("{}-{}", recipe.name, run.id);
    let csv = format!("{stem}.csv");
    let path = dir.join(&csv);
    std::fs::write(&path, table::csv(grid.mode, &outcome.results, plan.load))
        .with_context(|| format!("writing {}", path.display()))?;

    let results = &outcome.results;
    let mut tables = vec![points_table(grid.mode, results)];
    if results
        .iter()
        .any(|r| matches!(r, PointResult::Throughput(t) if t.lost_where.is_some()))
    {
        tables.push(losses_table(results));
    }
    if results
        .iter()
        .any(|r| r.point().circuits > 1 || r.point().protocol.contains('+'))
    {
        tables.push(circuits_table(results));
    }
    if plan.predict == Some(Prediction::HeaderCost) {
        tables.push(header_cost_table(results, run.link.rate_bps()));
    }
    let (y_label, log_x) = match grid.mode {
        Mode::Throughput => (
            "received Mbit/s",
            plan.x == XAxis::Size || plan.x == XAxis::Sockbuf,
        ),
        Mode::Delay => ("round trip, mean µs", plan.x == XAxis::Size),
    };
    Ok(SweepRun {
        id: run.id.clone(),
        title: run
            .title
            .clone()
            .unwrap_or_else(|| format!("{:?} sweep", grid.mode)),
        mode: match grid.mode {
            Mode::Throughput => "throughput",
            Mode::Delay => "delay",
        }
        .into(),
        link: link_description(run, grid),
        link_bps: run.link.rate_bps().map(|b| b as f64),
        reps: settings.reps,
        load: plan.load,
        points: results.iter().map(|r| point_json(r, plan.load)).collect(),
        x_label: plan.x.label().into(),
        y_label: y_label.into(),
        log_x,
        series: series(results, plan.x),
        tables,
        failure: outcome
            .failure
            .as_ref()
            .map(|f| format!("{}: {}", f.point, f.error)),
        notes: notes(grid, results),
        csv,
    })
}

/// Where the stacks ran.
fn link_description(run: &Run, grid: &sweep::Grid) -> String {
    let mut parts = Vec::new();
    if grid.stacks.contains(&StackKind::Ref) {
        parts.push(format!("reference stack on {}", run.link.name()));
    }
    if grid.stacks.contains(&StackKind::Kernel) {
        parts.push("kernel over loopback".to_string());
    }
    parts.join(", ")
}

fn cell_json(cell: &Cell) -> Value {
    match cell {
        Cell::Int(v) => Value::from(*v),
        Cell::Float(v, _) => serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number),
        Cell::Text(t) => Value::from(t.clone()),
        Cell::Bool(b) => Value::from(*b),
        Cell::Empty => Value::Null,
    }
}

fn point_json(result: &PointResult, load: u32) -> Map<String, Value> {
    let mut point: Map<String, Value> = columns(result, load)
        .iter()
        .map(|(name, cell)| (name.to_string(), cell_json(cell)))
        .collect();
    // An object here; the CSV writes place=n pairs.
    if let PointResult::Throughput(t) = result {
        point.insert("lost_where".into(), serde_json::json!(t.lost_where));
    }
    point
}

/// The minimum duration, and the points that are no result.
fn notes(grid: &sweep::Grid, results: &[PointResult]) -> Vec<String> {
    let mut notes = Vec::new();
    if grid.mode == Mode::Throughput {
        notes.push(match grid.min_duration {
            Some(d) => format!(
                "Every point ran at least {:.2} s (its sender went on past the byte count \
                 until then); a point with a receiver's window under half of that is \
                 marked too short.",
                d.as_secs_f64()
            ),
            None => "No minimum duration: points ran for their byte count only.".into(),
        });
    }
    let short: Vec<String> = results
        .iter()
        .filter_map(|r| match r {
            PointResult::Throughput(t) if t.too_short && !t.impossible => {
                Some(point_name(&t.point))
            }
            _ => None,
        })
        .collect();
    if !short.is_empty() {
        notes.push(format!(
            "{} point{} too short to be a result, left out of the plot and marked in the \
             table: {}.",
            short.len(),
            if short.len() == 1 { "" } else { "s" },
            short.join(", ")
        ));
    }
    let flagged = results.iter().filter(|r| !r.clean()).count();
    if flagged > 0 {
        notes.push(format!(
            "{flagged} point{} flagged (damaged data or impossible figures): see the table's \
             last column.",
            if flagged == 1 { "" } else { "s" }
        ));
    }
    notes
}

/// Where every lost datagram died, per point: the places add up to the
/// lost count (`unattributed`: what no counter explains).
fn losses_table(results: &[PointResult]) -> Table {
    let mut places: Vec<String> = results
        .iter()
        .filter_map(|r| match r {
            PointResult::Throughput(t) => t.lost_where.as_ref(),
            _ => None,
        })
        .flat_map(|w| w.keys().cloned())
        .filter(|k| k != traffic::losses::UNATTRIBUTED)
        .collect();
    places.sort();
    places.dedup();
    places.push(traffic::losses::UNATTRIBUTED.into());
    let mut columns = vec![
        "point".to_string(),
        "size B".into(),
        "offered".into(),
        "lost".into(),
    ];
    columns.extend(places.iter().map(|p| p.replace('_', " ")));
    let mut table = Table {
        caption: "Where the lost datagrams died (all repetitions; the places add up to the \
                  lost count)"
            .into(),
        columns,
        rows: Vec::new(),
    };
    for r in results {
        let PointResult::Throughput(t) = r else {
            continue;
        };
        let p = &t.point;
        let mut row = vec![
            point_name(p),
            p.size_bytes.to_string(),
            p.rate_bps
                .map_or("-".into(), |r| traffic::units::bits_per_second(r as f64)),
            t.lost_packets_total.map_or("-".into(), |l| l.to_string()),
        ];
        for place in &places {
            row.push(match &t.lost_where {
                Some(w) => w.get(place).copied().unwrap_or(0).to_string(),
                None => "-".into(),
            });
        }
        table.rows.push(row);
    }
    table
}

/// The series a point belongs to: what differs between points other than
/// the x axis.
fn series_label(p: &Point, x: XAxis) -> String {
    let mut label = format!("{} {}", p.stack, p.protocol);
    if let Some(family) = p.family {
        label.push_str(&format!(" {family}"));
    }
    if x != XAxis::Size {
        label.push_str(&format!(" {} B", p.size_bytes));
    }
    if x != XAxis::Sockbuf {
        if let Some(b) = p.sockbuf_bytes {
            label.push_str(&format!(" buf {}", traffic::units::bytes(b)));
        }
    }
    if x != XAxis::Rate {
        if let Some(r) = p.rate_bps {
            label.push_str(&format!(" {}", traffic::units::bits_per_second(r as f64)));
        }
    }
    if p.circuits > 1 {
        label.push_str(&format!(" ×{}", p.circuits));
    }
    label
}

fn x_of(p: &Point, x: XAxis) -> Option<f64> {
    match x {
        XAxis::Size => Some(p.size_bytes as f64),
        XAxis::Sockbuf => p.sockbuf_bytes.map(|b| b as f64),
        XAxis::Rate => p.rate_bps.map(|r| r as f64 / 1e6),
    }
}

/// The plotted figure per point over its repetitions: Mbit/s received, or
/// the round trip in µs.
fn y_of(result: &PointResult) -> Option<stats::Estimate> {
    match result {
        PointResult::Throughput(t) => Some(t.recv_bps.scaled(1e-6)),
        PointResult::Delay(d) => d.rtt_us,
    }
}

fn series(results: &[PointResult], x: XAxis) -> Vec<Series> {
    let mut by_label: BTreeMap<String, Vec<SeriesPoint>> = BTreeMap::new();
    let mut order = Vec::new();
    for r in results {
        let p = r.point();
        // A point too short to be a result is not plotted as one.
        if r.no_result().is_some() {
            continue;
        }
        let (Some(xv), Some(y)) = (x_of(p, x), y_of(r)) else {
            continue;
        };
        let label = series_label(p, x);
        if !by_label.contains_key(&label) {
            order.push(label.clone());
        }
        by_label.entry(label).or_default().push(SeriesPoint {
            x: xv,
            y: y.mean,
            stdev: y.stdev,
            ci95: y.ci95,
        });
    }
    order
        .into_iter()
        .map(|label| {
            let mut points = by_label.remove(&label).unwrap_or_default();
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series { label, points }
        })
        .collect()
}

fn mbps(bps: f64) -> String {
    format!("{:.2}", bps / 1e6)
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

fn point_name(p: &Point) -> String {
    let mut name = format!("{} {}", p.stack, p.protocol);
    if let Some(f) = p.family {
        name.push_str(&format!(" {f}"));
    }
    name
}

fn points_table(mode: Mode, results: &[PointResult]) -> Table {
    let mut table = Table {
        caption: "Every point (mean over the repetitions)".into(),
        ..Table::default()
    };
    match mode {
        Mode::Throughput => {
            table.columns = [
                "point",
                "size B",
                "sockbuf",
                "offered",
                "circuits",
                "recv Mbit/s",
                "± stdev",
                "min",
                "max",
                "sent Mbit/s",
                "loss %",
                "window s",
                "flags",
            ]
            .map(String::from)
            .to_vec();
            for r in results {
                let PointResult::Throughput(t) = r else {
                    continue;
                };
                let p = &t.point;
                let mut row = vec![
                    point_name(p),
                    p.size_bytes.to_string(),
                    p.sockbuf_bytes
                        .map_or("default".into(), traffic::units::bytes),
                    p.rate_bps
                        .map_or("-".into(), |r| traffic::units::bits_per_second(r as f64)),
                    p.circuits.to_string(),
                ];
                if let Some(why) = r.no_result() {
                    // No figure from a point too short to mean anything,
                    // nor from an impossible one.
                    row.extend([why, "-", "-", "-", "-", "-"].map(String::from));
                } else {
                    row.extend([
                        mbps(t.recv_bps.mean),
                        opt(t.recv_bps.stdev.map(|s| s / 1e6), 2),
                        mbps(t.recv_bps.min),
                        mbps(t.recv_bps.max),
                        mbps(t.sent_bps_mean),
                        opt(t.lost_percent_mean, 2),
                    ]);
                }
                let mut flags: Vec<String> = Vec::new();
                if t.too_short {
                    flags.push("too short".into());
                }
                flags.extend(t.problems.iter().cloned());
                row.push(format!("{:.3}", t.shortest_window_s));
                row.push(flags.join("; "));
                table.rows.push(row);
            }
        }
        Mode::Delay => {
            table.columns = [
                "point", "size B", "samples", "mean µs", "± stdev", "min", "p50", "p90", "p99",
                "max", "lost",
            ]
            .map(String::from)
            .to_vec();
            for r in results {
                let PointResult::Delay(d) = r else { continue };
                let p = &d.point;
                let rtt = d.rtt_us.as_ref();
                table.rows.push(vec![
                    point_name(p),
                    p.size_bytes.to_string(),
                    d.samples.to_string(),
                    opt(rtt.map(|s| s.mean), 1),
                    opt(rtt.and_then(|s| s.stdev), 1),
                    opt(rtt.map(|s| s.min), 1),
                    opt(d.p50_us, 1),
                    opt(d.p90_us, 1),
                    opt(d.p99_us, 1),
                    opt(rtt.map(|s| s.max), 1),
                    d.lost.to_string(),
                ]);
            }
        }
    }
    table
}

/// Each flow of the points that ran several at once.
fn circuits_table(results: &[PointResult]) -> Table {
    let mut table = Table {
        caption: "Flows running at once: each flow's share".into(),
        columns: [
            "point",
            "size B",
            "flow",
            "recv Mbit/s",
            "± stdev",
            "lost packets",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    for r in results {
        let PointResult::Throughput(t) = r else {
            continue;
        };
        for c in &t.circuits {
            table.rows.push(vec![
                point_name(&t.point),
                t.point.size_bytes.to_string(),
                format!("{:?} port {}", c.protocol, c.port).to_lowercase(),
                mbps(c.recv_bps.mean),
                opt(c.recv_bps.stdev.map(|s| s / 1e6), 2),
                c.lost_packets.map_or("-".into(), |l| l.to_string()),
            ]);
        }
    }
    table
}

/// TCP payload bytes per full 1500-byte frame: MTU less the IP header,
/// the TCP header and its timestamp option (RFC 7323 §3, 12 bytes with
/// padding).
fn tcp_payload_per_frame(family: Family) -> f64 {
    let ip = match family {
        Family::V4 => 20.0,
        Family::V6 => 40.0,
    };
    1500.0 - ip - 20.0 - 12.0
}

/// Bytes a full frame holds the virtual wire for: the MTU and the
/// Ethernet header (the wire does not model preamble, FCS or gap).
const FRAME_BYTES: f64 = 1514.0;

/// Measured TCP throughput per family beside the header-cost prediction:
/// on a wire of `rate` bits/s, payload goes at rate × payload / frame.
fn header_cost_table(results: &[PointResult], rate: Option<u64>) -> Table {
    let mut table = Table {
        caption: "TCP throughput, IPv4 against IPv6, beside what the header bytes alone predict"
            .into(),
        columns: [
            "point",
            "size B",
            "recv Mbit/s",
            "± stdev",
            "predicted Mbit/s",
            "measured / predicted",
            "IPv6 vs IPv4 measured",
            "IPv6 vs IPv4 predicted",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    let predicted_drop =
        1.0 - tcp_payload_per_frame(Family::V6) / tcp_payload_per_frame(Family::V4);
    let tcp: Vec<_> = results
        .iter()
        .filter_map(|r| match r {
            PointResult::Throughput(t) if t.point.protocol == "tcp" => Some(t),
            _ => None,
        })
        .collect();
    for t in &tcp {
        let p = &t.point;
        let Some(family) = p.family else { continue };
        // The wire's rate applies to the reference stack; the kernel ran
        // over loopback, which has none.
        let predicted = rate
            .filter(|_| p.stack == StackKind::Ref)
            .map(|r| r as f64 * tcp_payload_per_frame(family) / FRAME_BYTES);
        let v4 = tcp.iter().find(|o| {
            o.point.stack == p.stack
                && o.point.family == Some(Family::V4)
                && o.point.size_bytes == p.size_bytes
                && o.point.sockbuf_bytes == p.sockbuf_bytes
        });
        let (measured_drop, predicted_drop) = match (family, v4) {
            (Family::V6, Some(v4)) if v4.recv_bps.mean > 0.0 => (
                format!(
                    "{:+.2} %",
                    (t.recv_bps.mean / v4.recv_bps.mean - 1.0) * 100.0
                ),
                format!("{:+.2} %", -predicted_drop * 100.0),
            ),
            _ => ("-".into(), "-".into()),
        };
        table.rows.push(vec![
            point_name(p),
            p.size_bytes.to_string(),
            mbps(t.recv_bps.mean),
            opt(t.recv_bps.stdev.map(|s| s / 1e6), 2),
            opt(predicted.map(|b| b / 1e6), 2),
            opt(predicted.map(|b| t.recv_bps.mean / b), 3),
            measured_drop,
            predicted_drop,
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_cost_is_twenty_bytes_of_a_full_segment() {
        // The MSR study's arithmetic (`003_…` §5): 20 more header bytes
        // out of about 1460 payload bytes, some 1.4 %.
        let drop = 1.0 - tcp_payload_per_frame(Family::V6) / tcp_payload_per_frame(Family::V4);
        assert!((drop - 20.0 / 1448.0).abs() < 1e-12, "{drop}");
        // 100 Mbit/s of 1514-byte frames carrying 1448 payload bytes.
        let v4 = 100e6 * tcp_payload_per_frame(Family::V4) / FRAME_BYTES;
        assert!((v4 / 1e6 - 95.64).abs() < 0.01, "{v4}");
    }
}
