//! A point's figures from its repetitions' reports: throughput (received
//! and sent bits per second, loss, per-circuit and aggregate) or delay
//! (round-trip percentiles and histogram, pooled and per circuit), and
//! whether the receivers found anything wrong.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::points::Point;
use super::repeat::PointRun;
use super::stats::{percentile, Histogram, Summary};
use crate::echo::EchoReport;
use crate::env::Environment;
use crate::report::TransferReport;
use crate::spec::Protocol;

/// A finished point of either mode.
#[derive(Debug, Clone)]
pub enum PointResult {
    Throughput(ThroughputPoint),
    Delay(DelayPoint),
}

impl PointResult {
    pub fn point(&self) -> &Point {
        match self {
            PointResult::Throughput(t) => &t.point,
            PointResult::Delay(d) => &d.point,
        }
    }

    /// True when the point's figures are no result: too short, or
    /// impossible.
    pub fn no_result(&self) -> Option<&'static str> {
        match self {
            PointResult::Throughput(t) => no_result(t),
            PointResult::Delay(_) => None,
        }
    }

    /// False when a receiver found corrupted, duplicated or (TCP) missing
    /// data at any repetition, or its figures are impossible.
    pub fn clean(&self) -> bool {
        self.problems().is_empty()
    }

    pub fn problems(&self) -> &[String] {
        match self {
            PointResult::Throughput(t) => &t.problems,
            PointResult::Delay(d) => &d.problems,
        }
    }

    /// What the point ran on (its first repetition's record).
    pub fn target(&self) -> &Environment {
        match self {
            PointResult::Throughput(t) => &t.target,
            PointResult::Delay(d) => &d.target,
        }
    }

    /// How its repetitions ended.
    pub fn run(&self) -> &PointRun {
        match self {
            PointResult::Throughput(t) => &t.run,
            PointResult::Delay(d) => &d.run,
        }
    }

    pub fn run_mut(&mut self) -> &mut PointRun {
        match self {
            PointResult::Throughput(t) => &mut t.run,
            PointResult::Delay(d) => &mut d.run,
        }
    }

    /// The figure the repetitions were judged by, over them: received
    /// bit/s, or each repetition's mean round trip in µs.
    pub fn estimate(&self) -> Option<Summary> {
        match self {
            PointResult::Throughput(t) => Some(t.recv_bps),
            PointResult::Delay(d) => d.rep_mean_us,
        }
    }
}

/// Why a throughput point's figures are no result, if they are not.
pub fn no_result(t: &ThroughputPoint) -> Option<&'static str> {
    if t.impossible {
        Some("impossible")
    } else if t.too_short {
        Some("too short")
    } else {
        None
    }
}

/// One flow of one repetition.
#[derive(Debug, Clone, Serialize)]
pub struct FlowRep {
    pub protocol: Protocol,
    pub port: u16,
    pub recv_bps: f64,
    pub sent_bps: f64,
    /// UDP and raw only.
    pub lost_packets: Option<u64>,
    /// Datagrams the receiver expected (received + lost); UDP and raw only.
    #[serde(skip)]
    expected_packets: Option<u64>,
    /// Where the lost datagrams died (UDP and raw, where counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_where: Option<BTreeMap<String, u64>>,
    /// The shorter of the sender's and receiver's windows, in seconds.
    pub window_s: f64,
}

/// One repetition of a throughput point: aggregates over its flows.
#[derive(Debug, Clone, Serialize)]
pub struct TransferRep {
    /// Sum of the flows' received bits per second.
    pub recv_bps: f64,
    pub sent_bps: f64,
    /// Lost over expected datagrams of the UDP and raw flows, in percent.
    pub lost_percent: Option<f64>,
    pub lost_packets: Option<u64>,
    /// Where the lost datagrams died, over the flows that say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_where: Option<BTreeMap<String, u64>>,
    /// The shortest window of any flow, in seconds.
    pub window_s: f64,
    /// Each flow, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowRep>,
}

/// One circuit (flow) of a multi-flow point over all repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct CircuitFigures {
    pub protocol: Protocol,
    pub port: u16,
    pub recv_bps: Summary,
    pub lost_packets: Option<u64>,
}

/// A throughput point's figures.
#[derive(Debug, Clone)]
pub struct ThroughputPoint {
    pub point: Point,
    pub target: Environment,
    /// Received bits per second (summed over flows) per repetition.
    pub recv_bps: Summary,
    pub sent_bps_mean: f64,
    /// UDP and raw: mean over repetitions of the lost percentage.
    pub lost_percent_mean: Option<f64>,
    /// UDP and raw: lost datagrams over all repetitions and flows.
    pub lost_packets_total: Option<u64>,
    /// Per circuit, when the point runs several flows.
    pub circuits: Vec<CircuitFigures>,
    /// UDP and raw: where the lost datagrams of all repetitions died
    /// (places adding up to `lost_packets_total` when every flow said).
    pub lost_where: Option<BTreeMap<String, u64>>,
    /// The shortest window of any repetition's flows, in seconds.
    pub shortest_window_s: f64,
    /// The minimum duration the point was to last.
    pub min_duration_s: Option<f64>,
    /// Some window was shorter than the minimum duration: the figures
    /// are not a result (the table says `too short`).
    pub too_short: bool,
    /// Some repetition's figures cannot be (more received than sent, a
    /// rate above the link's): a bug to find, not a result.
    pub impossible: bool,
    pub problems: Vec<String>,
    pub reps: Vec<TransferRep>,
    /// How the repetitions ended (set by the runner).
    pub run: PointRun,
}

fn flow_rep(report: &TransferReport) -> FlowRep {
    let spec = &report.start.test_start;
    let received = report.end.sum_received.as_ref();
    let datagrams = received.and_then(|r| r.datagrams.as_ref());
    FlowRep {
        protocol: spec.protocol,
        port: spec.port,
        recv_bps: received.map_or(0.0, |r| r.bits_per_second),
        sent_bps: report
            .end
            .sum_sent
            .as_ref()
            .map_or(0.0, |s| s.bits_per_second),
        lost_packets: datagrams.map(|d| d.lost_packets),
        expected_packets: datagrams.map(|d| d.packets + d.lost_packets),
        lost_where: datagrams.and_then(|d| d.lost_where.clone()),
        window_s: report.shortest_window().map_or(0.0, |w| w.as_secs_f64()),
    }
}

/// A window counts as long enough from this share of the minimum on. The
/// senders' windows are extended to the minimum itself; a receiver's can
/// be shorter — it starts late when its thread was not running while the
/// socket buffer filled (several flows on few CPUs), it ends early when
/// the last datagrams were lost — and still measure a rate; under half
/// the minimum it is too short to.
const WINDOW_SLACK: f64 = 0.5;

/// True when a window of `window_s` is too short for `min`.
pub fn too_short(window_s: f64, min: Option<Duration>) -> bool {
    min.is_some_and(|m| window_s < m.as_secs_f64() * WINDOW_SLACK)
}

/// What the receiver of `report` found wrong, if anything.
fn problem(report: &TransferReport) -> Option<String> {
    if report.is_clean() {
        return None;
    }
    let received = report.end.sum_received.as_ref()?;
    if let Some(d) = &received.datagrams {
        return Some(format!(
            "{} corrupted, {} duplicated datagrams",
            d.corrupted, d.duplicated
        ));
    }
    let sent = report.end.sum_sent.as_ref().map_or(0, |s| s.bytes);
    Some(match &received.stream {
        Some(s) => format!(
            "{} of {sent} bytes received; {} corrupted, {} missing, {} duplicated bytes, \
             {} reorderings",
            received.bytes, s.corrupted_bytes, s.missing_bytes, s.duplicated_bytes, s.reordered
        ),
        None => format!("{} of {sent} bytes received", received.bytes),
    })
}

impl ThroughputPoint {
    /// One flow's received bits per second (0 when nothing arrived): the
    /// figure each repetition is judged by, summed over its flows.
    pub fn received_bps(report: &TransferReport) -> f64 {
        flow_rep(report).recv_bps
    }

    /// From each repetition's reports (one per flow, in flow order).
    /// `None` without a repetition.
    pub fn new(point: Point, reps: &[Vec<TransferReport>]) -> Option<Self> {
        let target = reps.first()?.first()?.start.target.clone();
        let mut problems = Vec::new();
        let mut impossible = false;
        let mut rep_figures = Vec::new();
        for (r, reports) in reps.iter().enumerate() {
            let flows: Vec<FlowRep> = reports.iter().map(flow_rep).collect();
            for (f, report) in reports.iter().enumerate() {
                let flow = if reports.len() > 1 {
                    format!(" flow {}", f + 1)
                } else {
                    String::new()
                };
                if let Some(p) = problem(report) {
                    problems.push(format!("rep {}{flow}: {p}", r + 1));
                }
                for p in report.impossible() {
                    impossible = true;
                    problems.push(format!("rep {}{flow}: {p}", r + 1));
                }
            }
            let sum =
                |f: fn(&FlowRep) -> Option<u64>| flows.iter().filter_map(f).reduce(|a, b| a + b);
            let lost_packets = sum(|f| f.lost_packets);
            let expected = sum(|f| f.expected_packets);
            let lost_where = flows.iter().filter_map(|f| f.lost_where.as_ref()).fold(
                None,
                |acc: Option<BTreeMap<String, u64>>, w| {
                    let mut acc = acc.unwrap_or_default();
                    crate::losses::add(&mut acc, w);
                    Some(acc)
                },
            );
            rep_figures.push(TransferRep {
                lost_where,
                window_s: flows
                    .iter()
                    .map(|f| f.window_s)
                    .fold(f64::INFINITY, f64::min),
                recv_bps: flows.iter().map(|f| f.recv_bps).sum(),
                sent_bps: flows.iter().map(|f| f.sent_bps).sum(),
                lost_percent: lost_packets.zip(expected).map(|(lost, expected)| {
                    if expected > 0 {
                        lost as f64 * 100.0 / expected as f64
                    } else {
                        0.0
                    }
                }),
                lost_packets,
                flows: if flows.len() > 1 { flows } else { Vec::new() },
            });
        }
        let recv: Vec<f64> = rep_figures.iter().map(|r| r.recv_bps).collect();
        let lost_percents: Vec<f64> = rep_figures.iter().filter_map(|r| r.lost_percent).collect();
        let circuits = circuit_figures(&rep_figures);
        let min_duration = reps.first()?.first()?.start.test_start.min_duration;
        let shortest_window_s = rep_figures
            .iter()
            .map(|r| r.window_s)
            .fold(f64::INFINITY, f64::min);
        let lost_where = rep_figures
            .iter()
            .filter_map(|r| r.lost_where.as_ref())
            .fold(None, |acc: Option<BTreeMap<String, u64>>, w| {
                let mut acc = acc.unwrap_or_default();
                crate::losses::add(&mut acc, w);
                Some(acc)
            });
        Some(Self {
            lost_where,
            shortest_window_s,
            min_duration_s: min_duration.map(|d| d.as_secs_f64()),
            too_short: too_short(shortest_window_s, min_duration),
            impossible,
            point,
            target,
            recv_bps: Summary::of(&recv)?,
            sent_bps_mean: rep_figures.iter().map(|r| r.sent_bps).sum::<f64>()
                / rep_figures.len() as f64,
            lost_percent_mean: Summary::of(&lost_percents).map(|s| s.mean),
            lost_packets_total: rep_figures
                .iter()
                .filter_map(|r| r.lost_packets)
                .reduce(|a, b| a + b),
            circuits,
            problems,
            reps: rep_figures,
            run: PointRun::default(),
        })
    }
}

/// Each flow's figures across repetitions (flows keep their order in every
/// repetition).
fn circuit_figures(reps: &[TransferRep]) -> Vec<CircuitFigures> {
    let Some(first) = reps.first() else {
        return Vec::new();
    };
    (0..first.flows.len())
        .filter_map(|i| {
            let flows: Vec<&FlowRep> = reps.iter().filter_map(|r| r.flows.get(i)).collect();
            let recv: Vec<f64> = flows.iter().map(|f| f.recv_bps).collect();
            Some(CircuitFigures {
                protocol: flows.first()?.protocol,
                port: flows.first()?.port,
                recv_bps: Summary::of(&recv)?,
                lost_packets: flows
                    .iter()
                    .filter_map(|f| f.lost_packets)
                    .reduce(|a, b| a + b),
            })
        })
        .collect()
}

/// One repetition of a delay point (over all its flows).
#[derive(Debug, Clone, Serialize)]
pub struct EchoRep {
    pub samples: usize,
    pub mean_us: Option<f64>,
    pub lost: u64,
    pub corrupted: u64,
    /// Runner naps inside measured exchanges ([`EchoReport::runner_naps`]).
    pub runner_naps: Option<u64>,
}

/// Round trips pooled over some series: what a delay point and each of
/// its circuits report.
#[derive(Debug, Clone, Serialize)]
pub struct RoundTrips {
    pub samples: usize,
    pub lost: u64,
    pub corrupted: u64,
    /// Mean, stdev, min and max in microseconds over the pooled
    /// exchanges; `None` when no exchange was answered.
    pub rtt_us: Option<Summary>,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// Each repetition's mean round trip, over the repetitions: what the
    /// CI target judges (the pooled samples of one series are not
    /// independent draws; the series are).
    pub rep_mean_us: Option<Summary>,
}

impl RoundTrips {
    /// `reps` holds each repetition's series (any number per repetition).
    fn of(reps: &[Vec<&EchoReport>]) -> (Self, Vec<u64>) {
        let mut pooled: Vec<u64> = reps
            .iter()
            .flatten()
            .flat_map(|r| r.rtt_ns.iter().copied())
            .collect();
        pooled.sort_unstable();
        let as_us: Vec<f64> = pooled.iter().map(|&ns| us(ns)).collect();
        let series = || reps.iter().flatten();
        let figures = Self {
            samples: pooled.len(),
            lost: series().map(|r| r.lost).sum(),
            corrupted: series().map(|r| r.corrupted).sum(),
            rtt_us: Summary::of(&as_us),
            p50_us: percentile(&pooled, 50).map(us),
            p90_us: percentile(&pooled, 90).map(us),
            p99_us: percentile(&pooled, 99).map(us),
            rep_mean_us: Summary::of(
                &reps
                    .iter()
                    .map(|rep| pooled_mean_us(rep.iter().copied()))
                    .collect::<Vec<_>>(),
            ),
        };
        (figures, pooled)
    }
}

/// One circuit (echo series) of a delay point with several, over all
/// repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct DelayCircuit {
    /// 1-based, in flow order (port = the point's first port + circuit − 1).
    pub circuit: usize,
    pub protocol: Protocol,
    pub port: u16,
    #[serde(flatten)]
    pub round_trips: RoundTrips,
    /// The share of this circuit's exchange time during which every other
    /// circuit was still exchanging, mean over repetitions: the shortest
    /// series' summed round trips over this one's (the series start
    /// together, stop-and-wait, so a series lasts about its summed round
    /// trips). Below 1 the circuit ran its last exchanges alone.
    pub overlap: Option<f64>,
    /// What its client found wrong.
    pub problems: Vec<String>,
}

/// A delay point's figures: round-trip times of all repetitions (and all
/// circuits) pooled, and each circuit's own when several ran at once.
#[derive(Debug, Clone)]
pub struct DelayPoint {
    pub point: Point,
    pub target: Environment,
    pub samples: usize,
    pub lost: u64,
    pub corrupted: u64,
    /// Mean, stdev, min and max in microseconds; `None` when no exchange
    /// was answered.
    pub rtt_us: Option<Summary>,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub histogram: Histogram,
    /// Each repetition's mean round trip (over its circuits' exchanges),
    /// over the repetitions: what the CI target judges (the pooled samples
    /// of one series are not independent draws; the series are).
    pub rep_mean_us: Option<Summary>,
    /// Times the threaded runner put a thread to sleep inside a measured
    /// exchange, summed over the repetitions; `None` where there is no
    /// such runner (the kernel, the simulator).
    pub runner_naps: Option<u64>,
    /// Per circuit, when the point runs several echo series at once.
    pub circuits: Vec<DelayCircuit>,
    pub problems: Vec<String>,
    pub reps: Vec<EchoRep>,
    /// How the repetitions ended (set by the runner).
    pub run: PointRun,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The mean round trip of `series` pooled, in µs; NaN when nothing was
/// answered (left out of an estimate).
fn pooled_mean_us<'a>(series: impl Iterator<Item = &'a EchoReport>) -> f64 {
    let (sum, n) = series
        .flat_map(|r| r.rtt_ns.iter())
        .fold((0.0, 0usize), |(sum, n), &ns| (sum + us(ns), n + 1));
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

/// Each series' summed round trips over the shortest's inverse: see
/// [`DelayCircuit::overlap`]. `None` for a series with none.
fn overlaps(series: &[EchoReport]) -> Vec<Option<f64>> {
    let busy: Vec<u64> = series.iter().map(|r| r.rtt_ns.iter().sum()).collect();
    let shortest = busy.iter().copied().min().unwrap_or(0);
    busy.iter()
        .map(|&b| (b > 0).then(|| shortest as f64 / b as f64))
        .collect()
}

impl DelayPoint {
    /// One repetition's mean round trip in µs, over every exchange of its
    /// series; NaN when nothing was answered (left out of the estimate).
    pub fn rep_mean_us(series: &[EchoReport]) -> f64 {
        pooled_mean_us(series.iter())
    }

    /// From each repetition's reports (one per flow, in flow order).
    /// `None` without a repetition.
    pub fn new(point: Point, reps: &[Vec<EchoReport>]) -> Option<Self> {
        let target = reps.first()?.first()?.target.clone();
        let all: Vec<Vec<&EchoReport>> = reps.iter().map(|r| r.iter().collect()).collect();
        let (figures, pooled) = RoundTrips::of(&all);
        let several = reps.iter().any(|r| r.len() > 1);
        let mut problems = Vec::new();
        for (i, rep) in reps.iter().enumerate() {
            for (f, r) in rep.iter().enumerate().filter(|(_, r)| r.corrupted > 0) {
                let flow = if several {
                    format!(" circuit {}", f + 1)
                } else {
                    String::new()
                };
                problems.push(format!(
                    "rep {}{flow}: {} corrupted answers",
                    i + 1,
                    r.corrupted
                ));
            }
        }
        let circuits = if several {
            delay_circuits(reps)
        } else {
            Vec::new()
        };
        Some(Self {
            point,
            target,
            samples: figures.samples,
            lost: figures.lost,
            corrupted: figures.corrupted,
            rtt_us: figures.rtt_us,
            p50_us: figures.p50_us,
            p90_us: figures.p90_us,
            p99_us: figures.p99_us,
            histogram: Histogram::of(&pooled),
            rep_mean_us: figures.rep_mean_us,
            runner_naps: reps
                .iter()
                .filter_map(|rep| rep_naps(rep))
                .fold(None, |sum, n| Some(sum.unwrap_or(0) + n)),
            circuits,
            problems,
            run: PointRun::default(),
            reps: reps
                .iter()
                .map(|rep| EchoRep {
                    samples: rep.iter().map(|r| r.rtt_ns.len()).sum(),
                    mean_us: Some(Self::rep_mean_us(rep)).filter(|m| m.is_finite()),
                    lost: rep.iter().map(|r| r.lost).sum(),
                    corrupted: rep.iter().map(|r| r.corrupted).sum(),
                    runner_naps: rep_naps(rep),
                })
                .collect(),
        })
    }
}

/// One repetition's runner naps: each of its series counts the whole
/// run's, so the most any says.
fn rep_naps(rep: &[EchoReport]) -> Option<u64> {
    rep.iter().filter_map(|r| r.runner_naps).max()
}

/// Each circuit's round trips across repetitions (flows keep their order
/// in every repetition).
fn delay_circuits(reps: &[Vec<EchoReport>]) -> Vec<DelayCircuit> {
    let Some(first) = reps.first() else {
        return Vec::new();
    };
    let overlap_per_rep: Vec<Vec<Option<f64>>> = reps.iter().map(|r| overlaps(r)).collect();
    (0..first.len())
        .map(|i| {
            let own: Vec<Vec<&EchoReport>> = reps
                .iter()
                .map(|r| r.get(i).into_iter().collect())
                .collect();
            let (round_trips, _) = RoundTrips::of(&own);
            let shares: Vec<f64> = overlap_per_rep
                .iter()
                .filter_map(|o| o.get(i).copied().flatten())
                .collect();
            let problems = own
                .iter()
                .enumerate()
                .flat_map(|(rep, r)| r.iter().map(move |r| (rep, r)))
                .filter(|(_, r)| r.corrupted > 0)
                .map(|(rep, r)| format!("rep {}: {} corrupted answers", rep + 1, r.corrupted))
                .collect();
            DelayCircuit {
                circuit: i + 1,
                protocol: first[i].spec.protocol,
                port: first[i].spec.port,
                round_trips,
                overlap: (!shares.is_empty())
                    .then(|| shares.iter().sum::<f64>() / shares.len() as f64),
                problems,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::fixtures::{echo, point, tcp, udp};

    #[test]
    fn repetitions_give_mean_spread_and_total_loss() {
        // 1 MB/s and 3 MB/s = 8 and 24 Mbit/s; 10 % and 30 % lost.
        let reps = vec![
            vec![udp(5001, 1_000_000, 90, 10, 0)],
            vec![udp(5001, 3_000_000, 70, 30, 0)],
        ];
        let t = ThroughputPoint::new(point(1, "udp"), &reps).unwrap();
        assert_eq!(t.recv_bps.mean, 16e6);
        assert_eq!((t.recv_bps.min, t.recv_bps.max), (8e6, 24e6));
        assert!((t.recv_bps.stdev.unwrap() - 8e6 * 2f64.sqrt()).abs() < 1e-3);
        assert_eq!(t.sent_bps_mean, 16e6);
        assert!((t.lost_percent_mean.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(t.lost_packets_total, Some(40));
        assert!(t.problems.is_empty());
        assert!(t.circuits.is_empty(), "one flow has no per-circuit figures");
    }

    #[test]
    fn several_flows_add_up_and_keep_their_own_figures() {
        let reps = vec![
            vec![
                tcp(5001, 1_000_000, 1_000_000),
                udp(5002, 2_000_000, 75, 25, 0),
            ],
            vec![
                tcp(5001, 3_000_000, 3_000_000),
                udp(5002, 2_000_000, 100, 0, 0),
            ],
        ];
        let t = ThroughputPoint::new(point(1, "udp"), &reps).unwrap();
        // Aggregates: 8 + 16 and 24 + 16 Mbit/s.
        assert_eq!((t.recv_bps.min, t.recv_bps.max), (24e6, 40e6));
        // Loss over the datagram flow only: 25 of 100, then 0 of 100.
        assert_eq!(t.reps[0].lost_percent, Some(25.0));
        assert_eq!(t.lost_packets_total, Some(25));
        assert_eq!(t.circuits.len(), 2);
        assert_eq!(
            (t.circuits[0].protocol, t.circuits[0].port),
            (Protocol::Tcp, 5001)
        );
        assert_eq!(t.circuits[0].recv_bps.mean, 16e6);
        assert_eq!(t.circuits[0].lost_packets, None);
        assert_eq!(t.circuits[1].recv_bps.mean, 16e6);
        assert_eq!(t.circuits[1].lost_packets, Some(25));
    }

    #[test]
    fn damage_flags_the_point_and_says_where() {
        let reps = vec![
            vec![udp(5001, 1000, 10, 0, 0)],
            vec![udp(5001, 1000, 10, 0, 2)],
        ];
        let t = ThroughputPoint::new(point(1, "udp"), &reps).unwrap();
        assert_eq!(
            t.problems,
            vec!["rep 2: 2 corrupted, 0 duplicated datagrams"]
        );
        let result = PointResult::Throughput(t);
        assert!(!result.clean());
        assert!(ThroughputPoint::new(point(1, "udp"), &[]).is_none());
    }

    #[test]
    fn delay_pools_every_repetition() {
        let echoed = |rtt_us: &[u64], lost, corrupted| {
            echo(rtt_us.iter().map(|us| us * 1000).collect(), lost, corrupted)
        };
        let reps = vec![
            vec![echoed(&[10, 20, 30, 40, 50], 1, 0)],
            vec![echoed(&[60, 70, 80, 90, 100], 0, 0)],
        ];
        let d = DelayPoint::new(point(1, "udp"), &reps).unwrap();
        assert_eq!((d.samples, d.lost, d.corrupted), (10, 1, 0));
        let rtt = d.rtt_us.unwrap();
        assert_eq!((rtt.mean, rtt.min, rtt.max), (55.0, 10.0, 100.0));
        assert_eq!(
            (d.p50_us, d.p90_us, d.p99_us),
            (Some(50.0), Some(90.0), Some(100.0))
        );
        assert_eq!(d.histogram.buckets.iter().map(|b| b.count).sum::<u64>(), 10);
        assert_eq!(d.reps[1].mean_us, Some(80.0));
        // Judged by the series' means, 30 and 80 µs: n 2, not 10.
        let by_rep = d.rep_mean_us.unwrap();
        assert_eq!((by_rep.n, by_rep.mean), (2, 55.0));
        assert!(d.problems.is_empty());

        let bad = DelayPoint::new(point(1, "udp"), &[vec![echoed(&[], 5, 1)]]).unwrap();
        assert_eq!((bad.rtt_us, bad.p50_us), (None, None));
        assert_eq!(bad.problems, vec!["rep 1: 1 corrupted answers"]);
    }

    #[test]
    fn delay_circuits_keep_their_own_round_trips_and_say_how_long_they_overlapped() {
        let echoed = |rtt_us: &[u64], protocol, port| {
            let mut r = echo(rtt_us.iter().map(|us| us * 1000).collect(), 0, 0);
            r.spec.protocol = protocol;
            r.spec.port = port;
            r
        };
        // Circuit 1 (TCP) 10 and 20 µs a round trip; circuit 2 (XTP) 40
        // and 60: it ran its exchanges 3 and 5 times as long.
        let reps = vec![
            vec![
                echoed(&[10, 10], Protocol::Tcp, 5001),
                echoed(&[30, 30], Protocol::Xtp, 5002),
            ],
            vec![
                echoed(&[20, 20], Protocol::Tcp, 5001),
                echoed(&[50, 50], Protocol::Xtp, 5002),
            ],
        ];
        let d = DelayPoint::new(point(1, "tcp+xtp"), &reps).unwrap();
        // The point pools both: 8 exchanges, mean 27.5 µs; each
        // repetition's mean 20 and 35.
        assert_eq!(d.samples, 8);
        assert_eq!(d.rtt_us.unwrap().mean, 27.5);
        assert_eq!(d.rep_mean_us.unwrap().mean, 27.5);
        assert_eq!(d.reps[0].samples, 4);
        let [tcp, xtp] = &d.circuits[..] else {
            panic!("two circuits: {:?}", d.circuits)
        };
        assert_eq!(
            (tcp.circuit, tcp.protocol, tcp.port),
            (1, Protocol::Tcp, 5001)
        );
        assert_eq!(
            (xtp.circuit, xtp.protocol, xtp.port),
            (2, Protocol::Xtp, 5002)
        );
        assert_eq!(tcp.round_trips.samples, 4);
        assert_eq!(tcp.round_trips.rtt_us.unwrap().mean, 15.0);
        let by_rep = xtp.round_trips.rep_mean_us.unwrap();
        assert_eq!((by_rep.n, by_rep.mean), (2, 40.0));
        assert_eq!(tcp.overlap, Some(1.0));
        // 20/60 and 40/100 of XTP's time beside TCP.
        assert!((xtp.overlap.unwrap() - (1.0 / 3.0 + 0.4) / 2.0).abs() < 1e-12);
        assert!(d.problems.is_empty() && xtp.problems.is_empty());

        // A corrupted answer is the circuit's, named as such.
        let mut bad = reps.clone();
        bad[1][1].corrupted = 2;
        let d = DelayPoint::new(point(1, "tcp+xtp"), &bad).unwrap();
        assert_eq!(d.problems, vec!["rep 2 circuit 2: 2 corrupted answers"]);
        assert_eq!(d.circuits[1].problems, vec!["rep 2: 2 corrupted answers"]);
        // One series has no per-circuit figures.
        let alone = DelayPoint::new(point(1, "tcp"), &[vec![reps[0][0].clone()]]).unwrap();
        assert!(alone.circuits.is_empty());
    }

    #[test]
    fn a_point_shorter_than_its_minimum_is_marked_too_short_not_a_result() {
        // The fixtures' windows last 1 s.
        let with_min = |secs: f64| {
            let mut report = udp(5001, 1_000_000, 100, 0, 0);
            report.start.test_start.min_duration = Some(Duration::from_secs_f64(secs));
            ThroughputPoint::new(point(1, "udp"), &[vec![report]]).unwrap()
        };
        let long_enough = with_min(1.0);
        assert!(!long_enough.too_short);
        assert_eq!(no_result(&long_enough), None);
        let short = with_min(2.5);
        assert!(short.too_short);
        assert_eq!(short.shortest_window_s, 1.0);
        assert_eq!(no_result(&short), Some("too short"));
        let result = PointResult::Throughput(short);
        let table = crate::sweep::text::render(
            crate::sweep::Mode::Throughput,
            std::slice::from_ref(&result),
        );
        assert!(table.contains("too short"), "{table}");
        assert!(!table.contains("8.00"), "no figure printed: {table}");
        let cols = crate::sweep::columns::columns(&result);
        assert!(cols.contains(&("too_short", crate::sweep::columns::Cell::Bool(true))));
    }

    #[test]
    fn an_impossible_repetition_flags_the_point_instead_of_giving_a_figure() {
        // More bytes received than sent.
        let t = ThroughputPoint::new(point(1, "tcp"), &[vec![tcp(5001, 1000, 1000)]]).unwrap();
        assert!(!t.impossible);
        let mut report = tcp(5001, 1000, 1000);
        report.end.sum_received.as_mut().unwrap().bytes = 2000;
        let t = ThroughputPoint::new(point(1, "tcp"), &[vec![report]]).unwrap();
        assert!(t.impossible);
        assert!(
            t.problems
                .iter()
                .any(|p| p.contains("2000 bytes received of 1000 sent")),
            "{:?}",
            t.problems
        );
        assert_eq!(no_result(&t), Some("impossible"));
        assert!(!PointResult::Throughput(t).clean());
    }

    #[test]
    fn a_rate_above_the_links_is_impossible() {
        // 8 Mbit/s through a 4 Mbit/s link: TCP's both sides are
        // impossible; UDP's sender only offered that load.
        let mut report = tcp(5001, 1_000_000, 1_000_000);
        report.start.target.link_rate_bps = Some(4_000_000);
        let found = report.impossible();
        assert_eq!(found.len(), 2, "sent and received: {found:?}");
        assert!(found[0].starts_with("impossible: sent"), "{found:?}");
        let mut report = udp(5001, 1_000_000, 100, 0, 0);
        report.start.target.link_rate_bps = Some(4_000_000);
        let found = report.impossible();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("impossible: received"), "{found:?}");
        report.start.target.link_rate_bps = Some(10_000_000);
        assert!(report.impossible().is_empty());
    }

    #[test]
    fn a_paced_sender_faster_than_its_offered_load_is_impossible() {
        // 1 MB in a second is 8 Mbit/s.
        let mut report = udp(5001, 1_000_000, 100, 0, 0);
        report.start.test_start.rate_bps = Some(8_000_000);
        assert!(report.impossible().is_empty(), "{:?}", report.impossible());
        report.start.test_start.rate_bps = Some(7_900_000);
        let found = report.impossible();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("impossible: sent"), "{found:?}");
    }

    #[test]
    fn lost_places_add_up_over_repetitions() {
        let with_places = |lost: u64, place: &str| {
            let mut report = udp(5001, 1_000_000, 100 - lost, lost, 0);
            let d = report
                .end
                .sum_received
                .as_mut()
                .unwrap()
                .datagrams
                .as_mut()
                .unwrap();
            d.lost_where = Some([(place.to_string(), lost)].into_iter().collect());
            report
        };
        let t = ThroughputPoint::new(
            point(1, "udp"),
            &[
                vec![with_places(3, "wire_loss")],
                vec![with_places(4, "interface_queue_full")],
            ],
        )
        .unwrap();
        let places = t.lost_where.unwrap();
        assert_eq!(places["wire_loss"], 3);
        assert_eq!(places["interface_queue_full"], 4);
        assert_eq!(places.values().sum::<u64>(), t.lost_packets_total.unwrap());
    }
}
