//! Delay points whose echo series ran at once (the XTP study's Table 6):
//! each circuit's round trip beside the same protocol alone at the same
//! size — the baseline the sweep runs in the same run — and their ratio,
//! with 95 % intervals; and each circuit's figures as `summary.json`
//! keeps them for the published comparisons.

use serde_json::{json, Map, Value};

use report::model::Table;
use stats::Difference;
use traffic::sweep::outcome::{DelayCircuit, DelayPoint};
use traffic::sweep::PointResult;

use super::{mean_ci, opt, point_name};

/// The repetitions' means as the published comparisons read them: their
/// 95 % interval as one object (`ci95_us`: `{lo, hi}`, null where it would
/// reach below zero, which a delay cannot) and their standard
/// deviation (`rep_stdev_us`); the count is `reps`. The series are the
/// independent draws, not the exchanges within one.
pub(super) fn by_repetition(by_rep: Option<&stats::Estimate>) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert(
        "ci95_us".into(),
        json!(by_rep
            .and_then(|e| e.positive_ci95())
            .map(|c| json!({"lo": c.lo, "hi": c.hi}))),
    );
    fields.insert("rep_stdev_us".into(), json!(by_rep.and_then(|e| e.stdev)));
    fields
}

/// One circuit's figures: pooled round trips (mean, stdev, percentiles
/// over its exchanges), the interval of its repetitions' means, how much
/// of it overlapped the others, and what its client found wrong (a
/// non-empty `problems` marks it as no figure).
pub(super) fn json(c: &DelayCircuit) -> Value {
    let t = &c.round_trips;
    let rtt = t.rtt_us.as_ref();
    let by_rep = t.rep_mean_us.as_ref();
    let mut fields = json!({
        "circuit": c.circuit,
        "protocol": c.protocol,
        "port": c.port,
        "reps": by_rep.map_or(0, |e| e.n),
        "samples": t.samples,
        "lost": t.lost,
        "corrupted": t.corrupted,
        "mean_us": rtt.map(|s| s.mean),
        "stdev_us": rtt.and_then(|s| s.stdev),
        "ci95_lo_us": by_rep.and_then(|e| e.positive_ci95()).map(|c| c.lo),
        "ci95_hi_us": by_rep.and_then(|e| e.positive_ci95()).map(|c| c.hi),
        "p50_us": t.p50_us,
        "p90_us": t.p90_us,
        "p99_us": t.p99_us,
        "overlap": c.overlap,
        "problems": c.problems.join("; "),
    });
    if let Value::Object(map) = &mut fields {
        map.extend(by_repetition(by_rep));
    }
    fields
}

/// The point of `results` that ran `circuit`'s protocol alone under the
/// same conditions as `point`.
fn alone<'a>(
    results: &'a [PointResult],
    point: &DelayPoint,
    circuit: &DelayCircuit,
) -> Option<&'a DelayPoint> {
    let p = &point.point;
    results.iter().find_map(|r| match r {
        PointResult::Delay(d)
            if d.point.circuits == 1
                && d.point.protocol == circuit.protocol.to_string()
                && (d.point.stack, d.point.family, d.point.size_bytes)
                    == (p.stack, p.family, p.size_bytes)
                && (d.point.sockbuf_bytes, d.point.count) == (p.sockbuf_bytes, p.count)
                && (d.point.load, d.point.load_on) == (p.load, p.load_on) =>
        {
            Some(d)
        }
        _ => None,
    })
}

/// `1.93 [1.85, 2.01]`, or the ratio alone when either side has no
/// spread to test.
fn ratio(alone: &stats::Estimate, together: &stats::Estimate) -> String {
    match Difference::welch(alone, together) {
        Some(d) => format!(
            "{:.2} [{:.2}, {:.2}]",
            d.ratio, d.ratio_ci95.lo, d.ratio_ci95.hi
        ),
        None if alone.mean != 0.0 => format!("{:.2} (no CI)", together.mean / alone.mean),
        None => "-".into(),
    }
}

/// Each circuit of the delay points that ran several at once, beside its
/// protocol alone.
pub(super) fn table(results: &[PointResult]) -> Table {
    let mut table = Table {
        caption: "Echo series running at once (the XTP study's Table 6): each circuit's mean \
                  round trip (the mean of its repetitions' means, with their 95 % interval) \
                  beside the same protocol alone at the same size, run in the same sweep, and \
                  the ratio (Welch; 95 % interval by the delta method). Beside others: the \
                  share of the circuit's exchange time during which every other circuit was \
                  still exchanging (from each series' summed round trips; the series start \
                  together) — under 100 % it ran its last exchanges alone."
            .into(),
        columns: [
            "point",
            "size B",
            "circuit",
            "n",
            "round trip µs (95 % CI)",
            "alone µs (95 % CI)",
            "× alone (95 % CI)",
            "beside others",
            "lost",
            "flags",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    for r in results {
        let PointResult::Delay(d) = r else { continue };
        for c in &d.circuits {
            let together = c.round_trips.rep_mean_us.as_ref();
            let baseline = alone(results, d, c);
            let alone_estimate = baseline.and_then(|b| b.rep_mean_us.as_ref());
            let mut flags = c.problems.clone();
            if baseline.is_none() {
                flags.push("no one-circuit point to set it against".into());
            }
            table.rows.push(vec![
                point_name(&d.point),
                d.point.size_bytes.to_string(),
                format!("{} {} port {}", c.circuit, c.protocol, c.port),
                together.map_or(0, |e| e.n).to_string(),
                together.map_or("-".into(), |e| mean_ci(e, 1.0, 1)),
                alone_estimate.map_or("-".into(), |e| mean_ci(e, 1.0, 1)),
                match (alone_estimate, together) {
                    (Some(a), Some(t)) => ratio(a, t),
                    _ => "-".into(),
                },
                opt(c.overlap.map(|o| o * 100.0), 0) + if c.overlap.is_some() { " %" } else { "" },
                c.round_trips.lost.to_string(),
                flags.join("; "),
            ]);
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use traffic::echo::EchoReport;
    use traffic::env::Environment;
    use traffic::spec::{EchoSpec, Family, Protocol, StackKind};
    use traffic::sweep::load::LoadOn;
    use traffic::sweep::points::Work;
    use traffic::sweep::Point;

    fn point(protocol: &str, circuits: u32) -> Point {
        Point {
            index: 1,
            stack: StackKind::Ref,
            protocol: protocol.into(),
            family: Some(Family::V4),
            size_bytes: 16384,
            count: 2,
            sockbuf_bytes: None,
            rate_bps: None,
            circuits,
            load: 0,
            load_on: LoadOn::Both,
            work: Work::Echo(Vec::new()),
        }
    }

    fn series(protocol: Protocol, port: u16, rtt_us: &[u64]) -> EchoReport {
        let mut spec = EchoSpec::new(protocol, Family::V4, 16384, rtt_us.len() as u64);
        spec.port = port;
        EchoReport {
            spec,
            target: Environment::detect(StackKind::Ref, "reference stack"),
            rtt_ns: rtt_us.iter().map(|us| us * 1000).collect(),
            lost: 0,
            corrupted: 0,
            runner_naps: None,
        }
    }

    fn f(v: &Value) -> f64 {
        v.as_f64().unwrap()
    }

    fn delay(point: Point, reps: &[Vec<EchoReport>]) -> PointResult {
        PointResult::Delay(DelayPoint::new(point, reps).unwrap())
    }

    #[test]
    fn each_circuit_stands_beside_its_protocol_alone() {
        // TCP alone 100 and 110 µs a repetition, XTP alone 200 and 220;
        // at once TCP 200 and 220 (×2), XTP 300 and 330 (×1.5).
        let results = [
            delay(
                point("tcp", 1),
                &[
                    vec![series(Protocol::Tcp, 5201, &[100, 100])],
                    vec![series(Protocol::Tcp, 5201, &[110, 110])],
                ],
            ),
            delay(
                point("xtp", 1),
                &[
                    vec![series(Protocol::Xtp, 5201, &[200, 200])],
                    vec![series(Protocol::Xtp, 5201, &[220, 220])],
                ],
            ),
            delay(
                point("tcp+xtp", 1),
                &[
                    vec![
                        series(Protocol::Tcp, 5201, &[200, 200]),
                        series(Protocol::Xtp, 5202, &[300, 300]),
                    ],
                    vec![
                        series(Protocol::Tcp, 5201, &[220, 220]),
                        series(Protocol::Xtp, 5202, &[330, 330]),
                    ],
                ],
            ),
        ];
        let t = table(&results);
        assert_eq!(t.rows.len(), 2, "a row per circuit: {:?}", t.rows);
        let col = |name: &str| t.columns.iter().position(|c| c == name).unwrap();
        let tcp = &t.rows[0];
        assert_eq!(tcp[col("circuit")], "1 tcp port 5201");
        assert_eq!(tcp[col("n")], "2");
        assert!(
            tcp[col("round trip µs (95 % CI)")].starts_with("210.0 ± "),
            "{tcp:?}"
        );
        assert!(
            tcp[col("alone µs (95 % CI)")].starts_with("105.0 ± "),
            "{tcp:?}"
        );
        assert!(
            tcp[col("× alone (95 % CI)")].starts_with("2.00 ["),
            "{tcp:?}"
        );
        let xtp = &t.rows[1];
        assert!(
            xtp[col("alone µs (95 % CI)")].starts_with("210.0 ± "),
            "{xtp:?}"
        );
        assert!(
            xtp[col("× alone (95 % CI)")].starts_with("1.50 ["),
            "{xtp:?}"
        );
        // TCP's 400 µs of exchanges against XTP's 600: XTP ran a third
        // of its time alone.
        assert_eq!(tcp[col("beside others")], "100 %");
        assert_eq!(xtp[col("beside others")], "67 %");
        assert_eq!(xtp[col("flags")], "");

        // Without its protocol alone a circuit says so.
        let t = table(&results[2..]);
        assert_eq!(t.rows[0][col("alone µs (95 % CI)")], "-");
        assert!(t.rows[0][col("flags")].contains("no one-circuit point"));
        // And summary.json's circuit names itself and its figures.
        let PointResult::Delay(d) = &results[2] else {
            unreachable!()
        };
        let j = json(&d.circuits[1]);
        assert_eq!(
            (&j["circuit"], &j["protocol"], &j["port"]),
            (&json!(2), &json!("xtp"), &json!(5202))
        );
        assert_eq!(
            (&j["samples"], &j["mean_us"], &j["reps"]),
            (&json!(4), &json!(315.0), &json!(2))
        );
        assert_eq!(j["problems"], "");
        // 300 and 330 µs: the interval of two means, t(1) = 12.706.
        let half = 12.706_204_7 * (15.0 * 2f64.sqrt()) / 2f64.sqrt();
        assert!(
            (f(&j["ci95_us"]["hi"]) - (315.0 + half)).abs() < 1e-3,
            "{j}"
        );
        assert!(
            (f(&j["rep_stdev_us"]) - 15.0 * 2f64.sqrt()).abs() < 1e-9,
            "{j}"
        );
    }

    fn estimate(values: &[f64]) -> stats::Estimate {
        stats::Estimate::of(values).unwrap()
    }

    #[test]
    fn the_ratio_has_welchs_interval_or_says_it_has_none() {
        let alone = estimate(&[10.0, 11.0, 9.0]);
        let together = estimate(&[20.0, 22.0, 18.0]);
        let text = ratio(&alone, &together);
        assert!(text.starts_with("2.00 ["), "{text}");
        let one = estimate(&[20.0]);
        assert_eq!(ratio(&alone, &one), "2.00 (no CI)");
    }
}
