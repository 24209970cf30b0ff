//! Runs a recipe's `throughput` and `delay` runs with `stackscope sweep`'s
//! machinery (the reference stack on the run's link profile, the kernel
//! over loopback), each point repeated until the 95 % interval of its mean
//! is within the recipe's target or a cap, and turns the points into the
//! report's series and tables: n, the interval and the verdict per point,
//! per-circuit figures when flows ran at once, and IPv6 against IPv4
//! tested against the header-cost prediction when the recipe asks.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::{Map, Value};

use report::model::{Series, SeriesPoint, SweepRun, Table};
use traffic::kernel::KernelPath;
use traffic::spec::StackKind;
use traffic::sweep::busy;
use traffic::sweep::columns::{columns, Cell};
use traffic::sweep::load::LoadOn;
use traffic::sweep::repeat::verdict_text;
use traffic::sweep::{self, table, Event, Mode, Point, PointResult, Settings, Targets};

use super::recipe::{Prediction, Recipe, Run, SweepPlan, XAxis};

mod delay_circuits;
mod header_cost;

/// The reference stack's IPv4 and IPv6 path MTUs on `run`'s link (IPv6's
/// a tunnel's where the hosts' IPv6 takes one).
fn ref_paths(run: &Run) -> Result<header_cost::RefPaths> {
    use super::run::path_mtu::path_mtu;
    let topology = stack::topology::Topology::from_toml_str(run.link.topology_toml())
        .with_context(|| format!("the {} link profile", run.link.name()))?;
    Ok(Some((
        path_mtu(&topology, traffic::spec::Family::V4) as f64,
        path_mtu(&topology, traffic::spec::Family::V6) as f64,
    )))
}

/// Repetitions a sweep run makes at the least (for progress bars: the
/// repetitions a point adds past its minimum are not counted).
pub fn steps(plan: &SweepPlan, quick: bool) -> u64 {
    plan.grid(quick)
        .points(KernelPath::Loopback)
        .map_or(0, |p| p.len() as u64)
        * plan.target(quick).min_reps as u64
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
    let target = *plan.target(quick);
    let settings = Settings {
        target,
        targets: Targets {
            ref_link: None,
            kernel_path: KernelPath::Loopback,
            topology: Some(topology),
        },
        interleave: plan.interleave,
    };
    let outcome = sweep::run(&points, &settings, |event| match event {
        Event::Rep(p) if p.rep as usize <= target.min_reps => {
            progress.fetch_add(1, Ordering::Relaxed);
        }
        // Said once per run below, from the notes: a line per point
        // would bury the lab's output.
        Event::Rep(_) | Event::Busy(_) => {}
    })?;
    let stem = format!("{}-{}", recipe.name, run.id);
    let csv = format!("{stem}.csv");
    let path = dir.join(&csv);
    std::fs::write(&path, table::csv(grid.mode, &outcome.results))
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
        tables.push(match grid.mode {
            Mode::Throughput => circuits_table(results),
            Mode::Delay => delay_circuits::table(results),
        });
    }
    let mut points: Vec<Map<String, Value>> = results.iter().map(point_json).collect();
    if plan.predict == Some(Prediction::HeaderCost) {
        let ref_paths = ref_paths(run)?;
        let comparisons = header_cost::comparisons(results, ref_paths);
        tables.push(header_cost::table(run, &comparisons, ref_paths));
        // The test's figures beside the IPv6 point they judge.
        for (index, stack, comparison) in &comparisons {
            if let Some(point) = points.iter_mut().find(|p| p["point"] == *index) {
                let mut test = serde_json::json!(comparison);
                if let (Some(object), Some((mtu4, mtu6)), StackKind::Ref) =
                    (test.as_object_mut(), ref_paths, *stack)
                {
                    // Which path IPv6 took: a tunnel's flavour and MTUs.
                    object.insert("ipv6_over".into(), serde_json::json!(run.link.tunnel()));
                    object.insert("path_mtu_ipv4".into(), serde_json::json!(mtu4));
                    object.insert("path_mtu_ipv6".into(), serde_json::json!(mtu6));
                }
                point.insert("ipv6_vs_ipv4".into(), test);
            }
        }
    }
    let (y_label, log_x) = match grid.mode {
        Mode::Throughput => (
            "received Mbit/s",
            plan.x == XAxis::Size || plan.x == XAxis::Sockbuf,
        ),
        Mode::Delay if plan.x == XAxis::Load => ("round trip, mean µs", false),
        Mode::Delay => ("round trip, mean µs", plan.x == XAxis::Size),
    };
    let notes = notes(grid, &target, &outcome);
    for busy in notes
        .iter()
        .filter(|n| n.contains("busy") || n.contains("Busy"))
    {
        eprintln!("stackscope: warning: {stem}: {busy}");
    }
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
        reps: target.min_reps as u32,
        loads: if grid.loads.is_empty() {
            vec![0]
        } else {
            grid.loads.clone()
        },
        load_on: if grid.load_on.is_empty() {
            vec![LoadOn::Both.to_string()]
        } else {
            grid.load_on.iter().map(ToString::to_string).collect()
        },
        study: plan.study.clone(),
        points,
        x_label: plan.x.label().into(),
        y_label: y_label.into(),
        log_x,
        series: series(results, plan.x),
        tables,
        failure: outcome
            .failure
            .as_ref()
            .map(|f| format!("{}: {}", f.point, f.error)),
        notes,
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

fn point_json(result: &PointResult) -> Map<String, Value> {
    let mut point: Map<String, Value> = columns(result)
        .iter()
        .map(|(name, cell)| (name.to_string(), cell_json(cell)))
        .collect();
    match result {
        // An object here; the CSV writes place=n pairs.
        PointResult::Throughput(t) => {
            point.insert("lost_where".into(), serde_json::json!(t.lost_where));
        }
        PointResult::Delay(d) => {
            // The repetitions' interval as one object and their spread,
            // for the published comparisons (`ci`, `stdev` with n = reps).
            point.extend(delay_circuits::by_repetition(d.rep_mean_us.as_ref()));
            // Each circuit's own round trips.
            if !d.circuits.is_empty() {
                point.insert(
                    "per_circuit".into(),
                    Value::Array(d.circuits.iter().map(delay_circuits::json).collect()),
                );
            }
        }
    }
    point
}

/// The repetitions' target and the points that missed it, the machine's
/// load, the minimum duration, and the points that are no result.
fn notes(grid: &sweep::Grid, target: &sweep::Target, outcome: &sweep::Outcome) -> Vec<String> {
    let results = &outcome.results;
    let mut notes = vec![target_note(grid.mode, target, results)];
    notes.extend(load_notes(&outcome.load_check, results));
    notes.extend(side_note(results));
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
                Some(noted_name(&t.point))
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

/// How busy the machine was: before the run, and the points during which
/// other processes used more than [`busy::BUSY_OTHERS_CPU`] CPUs (one
/// note for them all; each point's figure is its `others_cpu`).
fn load_notes(check: &busy::LoadCheck, results: &[PointResult]) -> Vec<String> {
    let others = check
        .others_cpu_before
        .map_or("others' CPU could not be read".into(), |o| {
            format!("other processes used {o:.2} CPUs")
        });
    let load = check.loadavg_before.map_or(String::new(), |l| {
        format!("; load average {l:.2}, the lab's own earlier runs included")
    });
    let before = format!(
        "Machine before the run: {others} in the {:.2} s before it{load} ({}).",
        busy::BEFORE_SAMPLE.as_secs_f64(),
        if check.busy_before() {
            "busy: figures may be slower and noisier than the machine can do"
        } else {
            "quiet"
        }
    );
    let busy: Vec<(usize, f64)> = results
        .iter()
        .filter_map(|r| {
            let others = r.run().others_cpu?;
            (others > busy::BUSY_OTHERS_CPU).then_some((r.point().index, others))
        })
        .collect();
    let mut notes = vec![before];
    if !busy.is_empty() {
        let (lo, hi) = busy
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), &(_, o)| {
                (lo.min(o), hi.max(o))
            });
        let points: Vec<String> = busy.iter().map(|(i, _)| i.to_string()).collect();
        notes.push(format!(
            "Busy machine: during {} of {} points other processes used more than {} CPUs \
             ({lo:.2} to {hi:.2}; each point's others_cpu in the CSV): point{} {}. Their \
             figures may be slower and noisier than the machine can do.",
            busy.len(),
            results.len(),
            busy::BUSY_OTHERS_CPU,
            if busy.len() == 1 { "" } else { "s" },
            points.join(", ")
        ));
    }
    notes
}

/// Where a load on one side ran: the CPUs of the receiver, the sender
/// and the spinners, and the points whose pins did not hold (their load
/// ran wherever the scheduler put it, so they are not a side's figure).
fn side_note(results: &[PointResult]) -> Option<String> {
    let sided: Vec<&PointResult> = results
        .iter()
        .filter(|r| r.point().load_on != LoadOn::Both)
        .collect();
    if sided.is_empty() {
        return None;
    }
    let placed = sided.iter().find_map(|r| r.target().placement).map_or(
        "the receiver's and the sender's threads each on a CPU of their own".into(),
        |p| {
            format!(
                "the receiver's (server's) thread on CPU {}, the sender's (client's) on CPU {}",
                p.receiver_cpu, p.sender_cpu
            )
        },
    );
    let unpinned: Vec<String> = sided
        .iter()
        .filter(|r| r.run().pinned != Some(true))
        .map(|r| format!("point {} {}", r.point().index, noted_name(r.point())))
        .collect();
    let mut note = format!(
        "Load on one side: {placed}, the background processes pinned to the loaded side's \
         CPU (two vCPUs of one machine stand for the study's two machines)."
    );
    if unpinned.is_empty() {
        note.push_str(" Every pin held.");
    } else {
        note.push_str(&format!(
            " Not pinned (the kernel refused a pin, or one CPU): {} — their load and sides \
             ran where the scheduler put them, so they are no side's figure.",
            unpinned.join(", ")
        ));
    }
    Some(note)
}

/// How the points were repeated, and which stopped short of the target.
fn target_note(mode: Mode, target: &sweep::Target, results: &[PointResult]) -> String {
    let figure = match mode {
        Mode::Throughput => "received throughput",
        Mode::Delay => "round trip (each repetition's mean)",
    };
    let mut note = format!(
        "Each point was repeated at least {} times, then until the 95 % confidence interval \
         of its mean {figure} was within ±{} % of the mean, or {} repetitions, or {:.1} s.",
        target.min_reps,
        target.relative * 100.0,
        target.max_reps,
        target.max_time.as_secs_f64()
    );
    let missed: Vec<String> = results
        .iter()
        .filter(|r| !r.run().verdict.met())
        .map(|r| {
            let half = r
                .estimate()
                .and_then(|e| e.relative_half_width())
                .map_or("no interval".into(), |h| format!("±{:.2} %", h * 100.0));
            format!(
                "point {} {} ({}, {half})",
                r.point().index,
                noted_name(r.point()),
                verdict_text(r.run().verdict)
            )
        })
        .collect();
    if missed.is_empty() {
        note.push_str(" Every point met the target.");
    } else {
        note.push_str(&format!(
            " {} of {} points stopped at a cap with a wider interval (their means are less \
             certain than asked; the table's target column says so): {}.",
            missed.len(),
            results.len(),
            missed.join(", ")
        ));
    }
    note
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
            label.push_str(&format!(" buf {}", report::units::size(b)));
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
    if x != XAxis::Load && p.load > 0 {
        label.push_str(&format!(" load {}", p.load));
    }
    if p.load_on != LoadOn::Both {
        label.push_str(&format!(", load on {}", p.load_on));
    }
    label
}

fn x_of(p: &Point, x: XAxis) -> Option<f64> {
    match x {
        XAxis::Size => Some(p.size_bytes as f64),
        XAxis::Sockbuf => p.sockbuf_bytes.map(|b| b as f64),
        XAxis::Rate => p.rate_bps.map(|r| r as f64 / 1e6),
        XAxis::Load => Some(f64::from(p.load)),
    }
}

/// The plotted figure per point over its repetitions: Mbit/s received, or
/// the round trip in µs (the mean of each repetition's mean, with their
/// interval).
fn y_of(result: &PointResult) -> Option<stats::Estimate> {
    match result {
        PointResult::Throughput(t) => Some(t.recv_bps.scaled(1e-6)),
        PointResult::Delay(d) => d.rep_mean_us,
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
        let Some(xv) = x_of(p, x) else {
            continue;
        };
        // A mix's pooled delay mixes protocols: each circuit is a series.
        let ys: Vec<(String, stats::Estimate)> = match r {
            PointResult::Delay(d) if p.protocol.contains('+') => d
                .circuits
                .iter()
                .filter_map(|c| {
                    let label = format!(
                        "{}: circuit {} {}",
                        series_label(p, x),
                        c.circuit,
                        c.protocol
                    );
                    Some((label, c.round_trips.rep_mean_us?))
                })
                .collect(),
            _ => y_of(r)
                .map(|y| (series_label(p, x), y))
                .into_iter()
                .collect(),
        };
        for (label, y) in ys {
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

pub(super) fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

/// A point as the notes name it: its name, and its load when it has one
/// (the notes have no load column to tell levels apart).
fn noted_name(p: &Point) -> String {
    match load_text(p).as_str() {
        "-" => point_name(p),
        load => format!("{} load {load}", point_name(p)),
    }
}

/// `-`, `2` (anywhere), or `2 on server`.
fn load_text(p: &Point) -> String {
    match (p.load, p.load_on) {
        (0, LoadOn::Both) => "-".into(),
        (n, LoadOn::Both) => n.to_string(),
        (n, side) => format!("{n} on {side}"),
    }
}

pub(super) fn point_name(p: &Point) -> String {
    let mut name = format!("{} {}", p.stack, p.protocol);
    if let Some(f) = p.family {
        name.push_str(&format!(" {f}"));
    }
    name
}

/// `95.41 ± 0.31` (the mean's 95 % interval as mean ± half-width), or the
/// mean alone with `(n 1)` when one repetition gives no interval. A rate
/// or delay whose interval would reach below zero (a TCP flow beside UDP
/// read 526.02 ± 580.23 Mbit/s) is too skewed for its mean: its median
/// and the median's distribution-free interval instead, or a mark.
pub(super) fn mean_ci(e: &stats::Estimate, scale: f64, decimals: usize) -> String {
    use stats::PositiveReading;
    let h = e.half_width().unwrap_or(0.0);
    match e.positive_reading() {
        PositiveReading::Median { median, ci, mean } => format!(
            "median {:.decimals$} [{:.decimals$}, {:.decimals$}] (the mean, {:.decimals$} ± {:.decimals$}, is too skewed)",
            median * scale,
            ci.lo * scale,
            ci.hi * scale,
            mean * scale,
            h * scale
        ),
        PositiveReading::TooNoisy { mean, .. } => format!(
            "{:.decimals$} ± {:.decimals$} (too noisy: the interval reaches below zero)",
            mean * scale,
            h * scale
        ),
        PositiveReading::Mean { mean, ci: Some(_) } => {
            format!("{:.decimals$} ± {:.decimals$}", mean * scale, h * scale)
        }
        PositiveReading::Mean { mean, ci: None } => format!("{:.decimals$} (no CI)", mean * scale),
    }
}

/// The TCP congestion control each stack's points ran (`; TCP's
/// congestion control, as each stack ran it: cubic on ref and kernel`):
/// the kernel's as read back from its sockets, the reference stack's from
/// its connections' configuration; so a comparison of two stacks says
/// whether it compared one algorithm. Empty without TCP.
fn congestion_note(results: &[PointResult]) -> String {
    let ran = results.iter().filter_map(|r| {
        let name = r.target().congestion_control.as_deref()?;
        Some((r.point().stack, name))
    });
    congestion_text(ran)
}

/// [`congestion_note`] of (stack, algorithm) pairs, in order of first
/// appearance.
fn congestion_text<'a>(ran: impl Iterator<Item = (StackKind, &'a str)>) -> String {
    let mut by_algorithm: Vec<(&str, Vec<StackKind>)> = Vec::new();
    for (stack, name) in ran {
        match by_algorithm.iter_mut().find(|(n, _)| *n == name) {
            Some((_, stacks)) if stacks.contains(&stack) => {}
            Some((_, stacks)) => stacks.push(stack),
            None => by_algorithm.push((name, vec![stack])),
        }
    }
    if by_algorithm.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = by_algorithm
        .iter()
        .map(|(name, stacks)| {
            let stacks: Vec<String> = stacks.iter().map(StackKind::to_string).collect();
            format!("{name} on {}", stacks.join(" and "))
        })
        .collect();
    format!(
        "; TCP's congestion control, as each stack ran it: {}",
        parts.join(", ")
    )
}

/// `met`, or the cap that stopped the point and how wide its interval
/// was against the target: `rep cap: ±4.1 % > ±2 %`.
fn target_cell(result: &PointResult) -> String {
    let run = result.run();
    if run.verdict.met() {
        return format!("met (±{} %)", run.target_percent);
    }
    let half = result
        .estimate()
        .and_then(|e| e.relative_half_width())
        .map_or("no CI".into(), |h| format!("±{:.2} %", h * 100.0));
    format!(
        "{}: {half} > ±{} %",
        verdict_text(run.verdict),
        run.target_percent
    )
}

fn points_table(mode: Mode, results: &[PointResult]) -> Table {
    let mut table = Table {
        caption: format!(
            "Every point: n repetitions, the mean with its 95 % confidence interval \
             (mean ± half-width), and whether the interval met the target{}",
            congestion_note(results)
        ),
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
                "load",
                "n",
                "recv Mbit/s (95 % CI)",
                "median",
                "min",
                "max",
                "sent Mbit/s",
                "loss %",
                "window s",
                "target",
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
                        .map_or("default".into(), report::units::size),
                    p.rate_bps
                        .map_or("-".into(), |r| traffic::units::bits_per_second(r as f64)),
                    p.circuits.to_string(),
                    load_text(p),
                    t.recv_bps.n.to_string(),
                ];
                if let Some(why) = r.no_result() {
                    // No figure from a point too short to mean anything,
                    // nor from an impossible one.
                    row.extend([why, "-", "-", "-", "-", "-"].map(String::from));
                } else {
                    row.extend([
                        mean_ci(&t.recv_bps, 1e-6, 2),
                        mbps(t.recv_bps.median),
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
                if p.load_on != LoadOn::Both && t.run.pinned != Some(true) {
                    flags.push("not pinned: the load ran on no one side".into());
                }
                flags.extend(t.problems.iter().cloned());
                row.push(format!("{:.3}", t.shortest_window_s));
                row.push(target_cell(r));
                row.push(flags.join("; "));
                table.rows.push(row);
            }
        }
        Mode::Delay => {
            table.columns = [
                "point",
                "size B",
                "n",
                "samples",
                "mean µs (95 % CI)",
                "min",
                "p50",
                "p90",
                "p99",
                "max",
                "lost",
                "target",
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
                    d.reps.len().to_string(),
                    d.samples.to_string(),
                    d.rep_mean_us
                        .as_ref()
                        .map_or("-".into(), |e| mean_ci(e, 1.0, 1)),
                    opt(rtt.map(|s| s.min), 1),
                    opt(d.p50_us, 1),
                    opt(d.p90_us, 1),
                    opt(d.p99_us, 1),
                    opt(rtt.map(|s| s.max), 1),
                    d.lost.to_string(),
                    target_cell(r),
                ]);
            }
        }
    }
    table
}

/// Each flow of the points that ran several at once.
fn circuits_table(results: &[PointResult]) -> Table {
    let mut table = Table {
        caption: "Flows running at once: each flow's share (mean with its 95 % interval over \
                  the point's repetitions; the point's target judged their sum)"
            .into(),
        columns: [
            "point",
            "size B",
            "flow",
            "n",
            "recv Mbit/s (95 % CI)",
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
                c.recv_bps.n.to_string(),
                mean_ci(&c.recv_bps, 1e-6, 2),
                opt(c.recv_bps.stdev.map(|s| s / 1e6), 2),
                c.lost_packets.map_or("-".into(), |l| l.to_string()),
            ]);
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_whose_interval_would_reach_below_zero_gives_its_median() {
        // Seven repetitions, two far off: mean ± half-width crosses zero.
        let skewed =
            stats::Estimate::of(&[100e6, 110e6, 120e6, 1800e6, 105e6, 115e6, 2500e6]).unwrap();
        assert!(skewed.half_width().unwrap() >= skewed.mean, "{skewed:?}");
        let text = mean_ci(&skewed, 1e-6, 2);
        assert!(text.starts_with("median 115.00 ["), "{text}");
        assert!(text.contains("too skewed"), "{text}");
        // Too few for the median's interval: marked instead.
        let few = stats::Estimate::of(&[100e6, 110e6, 120e6, 1800e6, 105e6]).unwrap();
        assert!(mean_ci(&few, 1e-6, 2).ends_with("(too noisy: the interval reaches below zero)"));
        let tight = stats::Estimate::of(&[95.2, 95.6, 95.4]).unwrap();
        assert_eq!(mean_ci(&tight, 1.0, 2).split(" ± ").next(), Some("95.40"));
    }

    #[test]
    fn the_caption_names_the_algorithm_each_stack_ran() {
        use StackKind::{Kernel, Ref};
        let same = [(Ref, "cubic"), (Kernel, "cubic"), (Ref, "cubic")];
        assert_eq!(
            congestion_text(same.into_iter()),
            "; TCP's congestion control, as each stack ran it: cubic on ref and kernel"
        );
        let differ = [(Ref, "cubic"), (Kernel, "bbr")];
        assert_eq!(
            congestion_text(differ.into_iter()),
            "; TCP's congestion control, as each stack ran it: cubic on ref, bbr on kernel"
        );
        assert_eq!(congestion_text(std::iter::empty()), "");
    }
}
