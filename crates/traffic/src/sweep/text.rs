//! The readable table on stdout: one aligned line per point, rates in
//! Mbit/s and times in microseconds, each mean with the half-width of its
//! 95 % interval and whether that met the target (`met`, or the cap that
//! stopped it), flagged points marked, and under a multi-flow point one
//! line per circuit.

use super::load::LoadOn;
use super::outcome::{no_result, DelayCircuit, DelayPoint, PointResult, ThroughputPoint};
use super::points::{Mode, Point};
use super::repeat::{verdict_text, PointRun};

const MBIT: f64 = 1e6;

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

/// The background load: `-`, `2` (unpinned), `2 server`, and `!` when
/// a side's pins did not hold.
fn load_cell(p: &Point, run: &PointRun) -> String {
    if p.load == 0 && p.load_on == LoadOn::Both {
        return "-".into();
    }
    let mut cell = p.load.to_string();
    if p.load_on != LoadOn::Both {
        cell.push_str(&format!(" {}", p.load_on));
        if run.pinned != Some(true) {
            cell.push_str(" !unpinned");
        }
    }
    cell
}

/// The columns every point has.
fn common(p: &Point, run: &PointRun) -> Vec<String> {
    vec![
        p.index.to_string(),
        p.stack.to_string(),
        p.protocol.clone(),
        opt(p.family, |f| f.to_string()),
        p.size_bytes.to_string(),
        p.count.to_string(),
        opt(p.sockbuf_bytes, |b| b.to_string()),
        load_cell(p, run),
    ]
}

const COMMON: [&str; 8] = [
    "#", "stack", "proto", "family", "size", "count", "sockbuf", "load",
];

/// The mean's 95 % half-width as a share of it: `±1.3 %`; `-` without an
/// interval (one repetition).
fn half_width(e: Option<&stats::Estimate>) -> String {
    opt(e.and_then(|e| e.relative_half_width()), |r| {
        format!("±{:.2} %", r * 100.0)
    })
}

/// `met`, or the cap that stopped the point short of its target.
fn verdict(result: &PointResult) -> String {
    let run = result.run();
    format!("{} (±{} %)", verdict_text(run.verdict), run.target_percent)
}

fn throughput_row(t: &ThroughputPoint) -> Vec<String> {
    let mbit = |bps: f64| format!("{:.2}", bps / MBIT);
    let r = &t.recv_bps;
    let mut row = common(&t.point, &t.run);
    row.extend([opt(t.point.rate_bps, |b| mbit(b as f64)), r.n.to_string()]);
    if let Some(why) = no_result(t) {
        // Not a result: say so where the figures would be.
        row.extend([why.to_string(), "-".into(), "-".into(), "-".into()]);
        row.extend(["-".to_string(), "-".into()]);
    } else {
        row.extend([
            mbit(r.mean),
            half_width(Some(r)),
            mbit(r.min),
            mbit(r.max),
            mbit(t.sent_bps_mean),
            opt(t.lost_percent_mean, |l| format!("{l:.2}")),
        ]);
    }
    row
}

const THROUGHPUT: [&str; 9] = [
    "rate Mbit/s",
    "n",
    "recv Mbit/s",
    "95 % CI",
    "min",
    "max",
    "sent Mbit/s",
    "lost %",
    "target",
];

fn delay_row(d: &DelayPoint) -> Vec<String> {
    let us = |v: f64| format!("{v:.1}");
    let rtt = d.rtt_us.as_ref();
    let mut row = common(&d.point, &d.run);
    row.extend([
        d.reps.len().to_string(),
        d.samples.to_string(),
        d.lost.to_string(),
        opt(rtt.map(|s| s.mean), us),
        half_width(d.rep_mean_us.as_ref()),
        opt(d.p50_us, us),
        opt(d.p90_us, us),
        opt(d.p99_us, us),
        opt(rtt.map(|s| s.max), us),
        opt(d.runner_naps, |n| n.to_string()),
    ]);
    row
}

/// A circuit of a delay point: its mean round trip with the half-width
/// of its repetitions' interval, percentiles and how much of it ran
/// while every other circuit did.
fn delay_circuit_line(c: &DelayCircuit) -> String {
    let us = |v: f64| format!("{v:.1}");
    let t = &c.round_trips;
    format!(
        "    circuit {} {} port {}: mean {} µs {}, p50 {}, p99 {}, {} samples{}{}\n",
        c.circuit,
        c.protocol,
        c.port,
        opt(t.rtt_us.as_ref().map(|s| s.mean), us),
        half_width(t.rep_mean_us.as_ref()),
        opt(t.p50_us, us),
        opt(t.p99_us, us),
        t.samples,
        opt(c.overlap, |o| format!(
            ", {:.0} % beside the others",
            o * 100.0
        )),
        if t.lost > 0 {
            format!(", {} lost", t.lost)
        } else {
            String::new()
        },
    )
}

const DELAY: [&str; 11] = [
    "n", "samples", "lost", "mean µs", "95 % CI", "p50", "p90", "p99", "max", "naps", "target",
];

/// The table, header first; "!" ends the line of a flagged point.
pub fn render(mode: Mode, results: &[PointResult]) -> String {
    let header: Vec<String> = COMMON
        .iter()
        .chain(match mode {
            Mode::Throughput => THROUGHPUT.iter(),
            Mode::Delay => DELAY.iter(),
        })
        .map(|h| h.to_string())
        .collect();
    let rows: Vec<(Vec<String>, &PointResult)> = results
        .iter()
        .map(|r| {
            let mut row = match r {
                PointResult::Throughput(t) => throughput_row(t),
                PointResult::Delay(d) => delay_row(d),
            };
            row.push(verdict(r));
            (row, r)
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for (row, _) in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, &w))| {
                // Names left, figures right, as tables of numbers read.
                let pad = w - cell.chars().count();
                if (1..=3).contains(&i) {
                    format!("{cell}{}", " ".repeat(pad))
                } else {
                    format!("{}{cell}", " ".repeat(pad))
                }
            })
            .collect();
        padded.join("  ")
    };
    let mut out = line(&header);
    out.push('\n');
    for (row, result) in &rows {
        out.push_str(&line(row));
        if !result.clean() {
            out.push_str("  ! ");
            out.push_str(&result.problems().join("; "));
        }
        out.push('\n');
        if let PointResult::Throughput(t) = result {
            if let Some(places) = t.lost_where.as_ref() {
                if t.lost_packets_total.is_some_and(|l| l > 0) {
                    out.push_str(&format!(
                        "    lost where: {}\n",
                        super::columns::places_text(places)
                    ));
                }
            }
            for (i, c) in t.circuits.iter().enumerate() {
                out.push_str(&format!(
                    "    circuit {} {} port {}: recv {:.2} Mbit/s mean, {:.2}..{:.2}{}\n",
                    i + 1,
                    c.protocol,
                    c.port,
                    c.recv_bps.mean / MBIT,
                    c.recv_bps.min / MBIT,
                    c.recv_bps.max / MBIT,
                    c.lost_packets
                        .map_or(String::new(), |l| format!(", {l} lost")),
                ));
            }
        }
        if let PointResult::Delay(d) = result {
            for c in &d.circuits {
                out.push_str(&delay_circuit_line(c));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::fixtures::{echo, point, tcp, udp};

    fn delay(index: usize, rtt_ns: Vec<u64>, corrupted: u64) -> PointResult {
        let mut p = point(index, "udp");
        p.size_bytes = 16;
        PointResult::Delay(DelayPoint::new(p, &[vec![echo(rtt_ns, 0, corrupted)]]).unwrap())
    }

    #[test]
    fn columns_line_up_and_flagged_points_are_marked() {
        let results = [
            delay(1, vec![10_000, 20_000, 30_000], 0),
            delay(12, vec![1_234_567_000], 1),
        ];
        let text = render(Mode::Delay, &results);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with(" #  stack   proto  family"), "{text}");
        // Right-aligned figures end in the same column (counted in
        // characters: the header has a µ).
        let end = |l: &str, what: &str| {
            let at = l.rfind(what).unwrap() + what.len();
            l[..at].chars().count()
        };
        let mean = lines[1].find("20.0").unwrap() + 4;
        assert_eq!(end(lines[0], "mean µs"), lines[1][..mean].chars().count());
        assert_eq!(end(lines[0], "max"), end(lines[1], "30.0"));
        assert_eq!(end(lines[0], "max"), end(lines[2], "1234567.0"));
        assert!(lines[2].contains("1234567.0"), "{text}");
        assert!(lines[2].ends_with("! rep 1: 1 corrupted answers"), "{text}");
        assert!(!lines[1].contains('!'));
    }

    #[test]
    fn a_point_that_missed_its_target_says_which_cap_stopped_it() {
        let reps = vec![
            vec![tcp(5001, 1_000_000, 1_000_000)],
            vec![tcp(5001, 2_000_000, 2_000_000)],
        ];
        let mut t = ThroughputPoint::new(point(1, "tcp"), &reps).unwrap();
        t.run.verdict = crate::sweep::Verdict::RepCap;
        let text = render(Mode::Throughput, &[PointResult::Throughput(t)]);
        let row = text.lines().nth(1).unwrap();
        // 8 and 16 Mbit/s: mean 12, half-width t(1)·5.657/√2 = 50.82 Mbit/s
        // (12.7062·4), 423.54 % of the mean.
        assert!(row.contains(" 12.00 "), "{text}");
        assert!(row.contains("±423.54 %"), "{text}");
        assert!(row.ends_with("rep cap (±2 %)"), "{text}");
    }

    #[test]
    fn several_flows_get_a_line_per_circuit_under_the_aggregate() {
        // 8 + 16 Mbit/s in one repetition.
        let reps = vec![vec![
            tcp(5001, 1_000_000, 1_000_000),
            udp(5002, 2_000_000, 90, 10, 0),
        ]];
        let mut p = point(1, "tcp+udp");
        p.rate_bps = Some(50_000_000);
        let t = ThroughputPoint::new(p, &reps).unwrap();
        let text = render(Mode::Throughput, &[PointResult::Throughput(t)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].contains("recv Mbit/s"));
        assert!(lines[1].contains("tcp+udp"));
        assert!(lines[1].contains(" 50.00 "), "the offered rate: {text}");
        assert!(lines[1].contains(" 24.00 "), "the aggregate: {text}");
        assert_eq!(
            lines[2],
            "    circuit 1 tcp port 5001: recv 8.00 Mbit/s mean, 8.00..8.00"
        );
        assert_eq!(
            lines[3],
            "    circuit 2 udp port 5002: recv 16.00 Mbit/s mean, 16.00..16.00, 10 lost"
        );
    }
}
