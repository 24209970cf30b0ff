//! Tests every paired figure with a spread (Welch's t-test, B against A)
//! and corrects the p-values for testing hundreds of figures at once:
//! at 5 % each, 300 figures of two runs of the same code would show some
//! 15 "significant" differences by chance alone.

use clap::ValueEnum;
use report::compare_html::{Gauge, Measured, StateDiff, TestedFigure, UntestedFigure};
use stats::{Difference, Estimate};

use super::walk::{Figure, Pair, Reading};

/// How p-values are corrected for the number of figures tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Correction {
    /// Holm–Bonferroni: the chance of calling even one unchanged figure
    /// significant stays under 5 % (family-wise error rate).
    Holm,
    /// Benjamini–Hochberg: at most 5 % of the figures called significant
    /// are expected to be unchanged (false-discovery rate); finds more
    /// real changes when many figures moved.
    Bh,
    /// Each figure at 5 % on its own (expect 5 % of the unchanged ones
    /// called significant).
    None,
}

impl Correction {
    pub fn describe(self) -> &'static str {
        match self {
            Correction::Holm => "Holm–Bonferroni (family-wise error rate)",
            Correction::Bh => "Benjamini–Hochberg (false-discovery rate)",
            Correction::None => "nothing (each test at the level on its own)",
        }
    }

    /// The corrected p-values, in the order of `p`.
    pub fn adjust(self, p: &[f64]) -> Vec<f64> {
        let m = p.len();
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
        let mut adjusted = vec![0.0; m];
        match self {
            Correction::None => adjusted.copy_from_slice(p),
            // Step down: the k-th smallest (k from 0) times m − k, never
            // below the one before.
            Correction::Holm => {
                let mut running: f64 = 0.0;
                for (k, &i) in order.iter().enumerate() {
                    running = running.max(((m - k) as f64 * p[i]).min(1.0));
                    adjusted[i] = running;
                }
            }
            // Step up: the k-th smallest (k from 1) times m / k, never
            // above the one after.
            Correction::Bh => {
                let mut running: f64 = 1.0;
                for (k, &i) in order.iter().enumerate().rev() {
                    running = running.min((m as f64 / (k + 1) as f64 * p[i]).min(1.0));
                    adjusted[i] = running;
                }
            }
        }
        adjusted
    }
}

/// When a difference is called significant.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub correction: Correction,
    /// The level the corrected p-value must be below.
    pub alpha: f64,
    /// The smallest relative change worth a verdict (0.02 is 2 %): the
    /// 95 % interval of B/A must lie wholly outside 1 ± threshold, as
    /// criterion's noise threshold. A busy machine moves figures by a
    /// few per cent between runs; that is no change of the code.
    pub threshold: f64,
}

impl Rule {
    /// The raw p-value a lone changed figure among `m` tested needs to be
    /// marked: α/m under Holm and Benjamini–Hochberg alike (its rank is
    /// first), α uncorrected.
    fn lone_level(&self, m: usize) -> f64 {
        match self.correction {
            Correction::None => self.alpha,
            Correction::Holm | Correction::Bh => self.alpha / m.max(1) as f64,
        }
    }

    fn significant(&self, p_adjusted: f64, d: &Difference) -> bool {
        p_adjusted < self.alpha
            && (d.ratio_ci95.lo > 1.0 + self.threshold || d.ratio_ci95.hi < 1.0 - self.threshold)
    }
}

/// One pair's test, before correction.
enum Outcome {
    Tested(Box<Test>),
    Untested(UntestedFigure),
}

struct Test {
    kind: &'static str,
    a: Measured,
    b: Measured,
    difference: Difference,
    /// What Welch's test sees of each side.
    estimates: (Estimate, Estimate),
}

/// Tests every pair, corrects the p-values of those tested and marks
/// the significant ones by `rule`.
pub fn test_all(pairs: &[Pair], rule: &Rule) -> (Vec<TestedFigure>, Vec<UntestedFigure>) {
    let mut tested: Vec<(&Pair, Test, Option<StateDiff>, bool)> = Vec::new();
    let mut untested = Vec::new();
    for pair in pairs {
        match test(pair) {
            Outcome::Tested(t) => tested.push((pair, *t, machine_differed(pair), one_pass(pair))),
            Outcome::Untested(figure) => untested.push(figure),
        }
    }
    let p: Vec<f64> = tested
        .iter()
        .map(|(_, t, _, _)| t.difference.p_value)
        .collect();
    let adjusted = rule.correction.adjust(&p);
    let lone_level = rule.lone_level(p.len());
    let tested = tested
        .into_iter()
        .zip(adjusted)
        .map(|((pair, t, machine_differed, one_pass), p_adjusted)| {
            let path = pair.path.clone();
            // A difference between runs in different machine states is the
            // machine's: it gets no verdict, and is listed as such.
            // So is one between two single passes: within a pass the
            // values share the run's state, and their interval does not
            // reach as far as a second run lands.
            // And an intercept below zero on either side is no result, so
            // neither is its change.
            let significant = machine_differed.is_none()
                && !one_pass
                && !pair.intercept_below_zero.contains(&true)
                && rule.significant(p_adjusted, &t.difference);
            TestedFigure {
                machine_differed,
                one_pass,
                intercept_below_zero: pair.intercept_below_zero,
                verdict: significant
                    .then(|| verdict(&path, t.difference.ratio))
                    .flatten()
                    .map(str::to_string),
                path,
                kind: t.kind.to_string(),
                a: t.a,
                b: t.b,
                difference: t.difference,
                detectable: smallest_marked(
                    &t.estimates.0,
                    &t.estimates.1,
                    lone_level,
                    rule.threshold,
                ),
                p_adjusted,
                significant,
            }
        })
        .collect();
    (tested, untested)
}

/// The gauge, with both sides' readings, by which the figure was not
/// measured in one machine state on both sides; `None` when every gauge
/// both sides give agrees.
///
/// The core round trip (`traffic::core_trip`) has two states far apart
/// (60 and 320 ns) and little noise within one, so where a side does not
/// say how many readings it took (a sweep point) any reading of either
/// side in the other state counts: the sides' states differ, or either
/// side's repetitions spanned two. Where both took more than two, their
/// medians are compared as below. Other processes' CPU use
/// (`traffic::sweep::busy`) differs when one side had more than half a
/// CPU's worth beside it that the other had not. The wake round trip and
/// the CPUs' speed (`traffic::wake_trip`, `traffic::cpu_speed`) have outlying
/// readings within one state and more states between (the CPUs' speed:
/// 19.5 to 50 ns/KiB within one quick run, and a run whose passes take
/// turns with others' meets several by design), so the sides' medians —
/// the state each side's repetitions mostly ran in — are compared; but a
/// side read only before and after one window, whose two readings differ,
/// ran in two states in unknown shares and counts as differing.
fn machine_differed(pair: &Pair) -> Option<StateDiff> {
    let by_range =
        |gauge: Gauge, [a, b]: [Option<Reading>; 2], states_differ: fn(f64, f64) -> bool| {
            let (a, b) = (a?, b?);
            let (lo, hi) = (a.range[0].min(b.range[0]), a.range[1].max(b.range[1]));
            states_differ(lo, hi).then(|| state_diff(gauge, a, b))
        };
    let by_median = |gauge: Gauge,
                     [a, b]: [Option<Reading>; 2],
                     states_differ: fn(f64, f64) -> bool| {
        let (a, b) = (a?, b?);
        // Two readings are one window's before and after: if they
        // differ, the window ran in two states in shares no median
        // can tell.
        let one_window_spans =
            |r: Reading| r.count.is_some_and(|n| n <= 2) && states_differ(r.range[0], r.range[1]);
        (states_differ(a.median, b.median) || one_window_spans(a) || one_window_spans(b))
            .then(|| state_diff(gauge, a, b))
    };
    let [a, b] = pair.states;
    // A run read many times (passes taking turns with others') meets the
    // core trip's other state now and then by design: its median says
    // where it mostly ran, as for the other gauges.
    let many = |r: Option<Reading>| r.and_then(|r| r.count).is_some_and(|n| n > 2);
    let core = if many(a.core) && many(b.core) {
        by_median
    } else {
        by_range
    };
    core(
        Gauge::CoreTrip,
        [a.core, b.core],
        traffic::core_trip::states_differ,
    )
    .or_else(|| {
        by_median(
            Gauge::WakeTrip,
            [a.wake, b.wake],
            traffic::wake_trip::states_differ,
        )
    })
    .or_else(|| {
        by_median(
            Gauge::CpuSpeed,
            [a.cpu, b.cpu],
            traffic::cpu_speed::states_differ,
        )
    })
    .or_else(|| {
        // Other processes' CPU: one side ran beside other work the other
        // did not have (a difference of more than a busy point's share).
        let (x, y) = (a.others?, b.others?);
        ((x - y).abs() > traffic::sweep::busy::BUSY_OTHERS_CPU).then_some(StateDiff {
            gauge: Gauge::OthersCpu,
            ranges: [[x, x], [y, y]],
            medians: [x, y],
        })
    })
}

/// Either side read its gauges only before its one window and after it
/// (`gauge_readings` 2): the figure's values all come from one pass. A
/// side that read no gauge at all around the figure (a kernel run of a
/// lab before they did) cannot say otherwise, nor in what state it ran,
/// and counts the same.
fn one_pass(pair: &Pair) -> bool {
    pair.states.iter().any(|g| {
        let readings = [g.core, g.wake, g.cpu];
        readings.iter().all(Option::is_none)
            || readings
                .iter()
                .flatten()
                .any(|r| r.count.is_some_and(|n| n <= 2))
    })
}

fn state_diff(gauge: Gauge, a: Reading, b: Reading) -> StateDiff {
    StateDiff {
        gauge,
        ranges: [a.range, b.range],
        medians: [a.median, b.median],
    }
}

fn test(pair: &Pair) -> Outcome {
    if let (Some((a, ma)), Some((b, mb))) = (testable(&pair.a), testable(&pair.b)) {
        let same_kind = matches!(
            (&pair.a, &pair.b),
            (Figure::Spread { .. }, Figure::Spread { .. })
                | (Figure::Coefficient { .. }, Figure::Coefficient { .. })
        );
        if same_kind {
            if let Some(difference) = Difference::welch(&a, &b) {
                let kind = match pair.a {
                    Figure::Coefficient { .. } => "coefficient",
                    _ => "means",
                };
                return Outcome::Tested(Box::new(Test {
                    kind,
                    a: ma,
                    b: mb,
                    difference,
                    estimates: (a, b),
                }));
            }
        }
    }
    let (a, b) = (central(&pair.a), central(&pair.b));
    Outcome::Untested(UntestedFigure {
        path: pair.path.clone(),
        a,
        b,
        ratio: (a != 0.0).then(|| b / a),
        intercept_below_zero: pair.intercept_below_zero,
    })
}

/// The smallest rise of B's mean, relative to A's, that would have been
/// marked (B's spread kept): raw p below `level` and B/A's interval
/// outside 1 ± `threshold`. A smaller change cannot be seen whatever the
/// data; one of this size is seen about half the time. (A fall needs the
/// same difference, so the same share of A unless that exceeds 100 %.) Found by
/// bisection on Welch's test itself; `None` for a zero mean or when no
/// change up to a millionfold would do.
fn smallest_marked(a: &Estimate, b: &Estimate, level: f64, threshold: f64) -> Option<f64> {
    if a.mean == 0.0 {
        return None;
    }
    let marked = |rise: f64| {
        let shifted = Estimate {
            mean: a.mean + rise * a.mean.abs(),
            ..*b
        };
        Difference::welch(a, &shifted)
            .is_some_and(|d| d.p_value < level && d.ratio_ci95.lo > 1.0 + threshold)
    };
    let mut hi = 1e-3;
    while !marked(hi) {
        hi *= 2.0;
        if hi > 1e6 {
            return None;
        }
    }
    let mut lo = 0.0;
    // 40 halvings: far finer than any figure's interval.
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if marked(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

fn central(f: &Figure) -> f64 {
    match *f {
        Figure::Spread { mean, .. } => mean,
        Figure::Coefficient { value, .. } => value,
        Figure::Number(x) => x,
    }
}

/// The estimate Welch's test needs and what the output shows, for a
/// figure with a spread.
///
/// A fitted coefficient with interval ±h from n points has standard error
/// se = h / t₀.₉₇₅(n − 2) and n − 2 degrees of freedom. As an estimate of
/// n − 1 values with stdev se·√(n − 1), its variance of the mean is se²
/// and its degrees of freedom n − 2, so Welch's test of two such
/// "estimates" is the t-test of the two coefficients with the
/// Welch–Satterthwaite degrees of freedom.
fn testable(f: &Figure) -> Option<(Estimate, Measured)> {
    let estimate = |n: usize, mean: f64, stdev: f64| Estimate {
        n,
        mean,
        median: mean,
        stdev: Some(stdev),
        ci95: None,
        median_ci95: None,
        min: mean,
        max: mean,
    };
    match *f {
        Figure::Spread {
            n,
            mean,
            stdev: Some(stdev),
            ci95,
        } if n >= 2 => Some((
            estimate(n, mean, stdev),
            Measured {
                n,
                value: mean,
                ci95,
            },
        )),
        Figure::Coefficient { value, ci95, n } if n >= 3 => {
            let se = ci95.half_width() / stats::t95((n - 2) as f64)?;
            se.is_finite().then(|| {
                (
                    estimate(n - 1, value, se * ((n - 1) as f64).sqrt()),
                    Measured {
                        n,
                        value,
                        ci95: Some(ci95),
                    },
                )
            })
        }
        _ => None,
    }
}

/// Whether B is faster, read from the figure's unit: times (`_us`, `_ns`,
/// `_s`) are faster when smaller, rates (`bps`, `_per_s`) when larger.
/// `None` for anything else (shares, counts, coefficients).
fn verdict(path: &str, ratio: f64) -> Option<&'static str> {
    let mut names = path.rsplit('.').map(|s| s.split('[').next().unwrap_or(s));
    let leaf = names.next()?;
    // A stop definition's estimate is named by its parent (`stops_us.acknowledged`).
    let parent = names.next().unwrap_or("");
    let sense = |name: &str| {
        if name.ends_with("bps") || name.ends_with("_per_s") {
            Some(true)
        } else if ["_us", "_ns", "_ms", "_s"]
            .iter()
            .any(|u| name.ends_with(u))
        {
            Some(false)
        } else {
            None
        }
    };
    let higher_is_faster = sense(leaf).or_else(|| sense(parent))?;
    if ratio == 1.0 {
        return None;
    }
    Some(if (ratio > 1.0) == higher_is_faster {
        "faster"
    } else {
        "slower"
    })
}

#[cfg(test)]
mod tests {
    use super::super::walk::Gauges;
    use super::*;
    use stats::Interval;

    fn spread(values: &[f64]) -> Figure {
        let e = Estimate::of(values).unwrap();
        Figure::Spread {
            n: e.n,
            mean: e.mean,
            stdev: e.stdev,
            ci95: e.ci95,
        }
    }

    fn rule(correction: Correction, threshold: f64) -> Rule {
        Rule {
            correction,
            alpha: 0.05,
            threshold,
        }
    }

    /// Both sides in one state, read around each repetition (as a sweep
    /// point is).
    fn pair(path: &str, a: Figure, b: Figure) -> Pair {
        let state = Gauges {
            core: one(58.0),
            ..Gauges::default()
        };
        Pair {
            path: path.to_string(),
            a,
            b,
            states: [state, state],
            intercept_below_zero: [false; 2],
        }
    }

    /// A gauge's readings from their range and median.
    fn reading(lo: f64, median: f64, hi: f64) -> Option<Reading> {
        Some(Reading {
            median,
            range: [lo, hi],
            count: None,
        })
    }

    /// The same, read `count` times.
    fn read(lo: f64, median: f64, hi: f64, count: u64) -> Option<Reading> {
        reading(lo, median, hi).map(|r| Reading {
            count: Some(count),
            ..r
        })
    }

    fn one(x: f64) -> Option<Reading> {
        reading(x, x, x)
    }

    #[test]
    fn a_difference_between_machine_states_gets_no_verdict() {
        let a = spread(&[100.0, 101.0, 99.0, 100.5]);
        let b = spread(&[50.0, 50.5, 49.5, 50.2]);
        let with = |in_a: Gauges, in_b: Gauges| Pair {
            states: [in_a, in_b],
            ..pair("x.mean_bps", a, b)
        };
        let core = |core| Gauges {
            core,
            ..Gauges::default()
        };
        let wake = |wake| Gauges {
            core: one(58.0),
            wake,
            ..Gauges::default()
        };
        let cpu = |cpu| Gauges {
            core: one(58.0),
            wake: one(30e3),
            cpu,
            others: None,
        };
        let others = |others| Gauges {
            core: one(58.0),
            others,
            ..Gauges::default()
        };
        let pairs = [
            with(core(one(58.0)), core(one(340.0))),
            // Both medians alike, but B's repetitions spanned two states.
            with(
                core(reading(58.0, 59.0, 60.0)),
                core(reading(61.0, 62.0, 330.0)),
            ),
            // The cores agree, the scheduler does not (two full labs'
            // stop-and-wait runs: 42 and 30 µs).
            with(
                wake(reading(41e3, 42e3, 43e3)),
                wake(reading(30e3, 30.3e3, 31e3)),
            ),
            // The CPUs ran slower throughout B.
            with(
                cpu(reading(19.4, 19.7, 20.1)),
                cpu(reading(29.0, 29.2, 47.0)),
            ),
            // A ran beside a build that took a CPU (a lab beside a helper).
            with(others(Some(0.99)), others(Some(0.0))),
            // A's one pass began fast and ended slow; B's medians agree
            // with A's (two full labs' traced XTP runs).
            with(
                cpu(read(19.9, 28.9, 28.9, 2)),
                cpu(read(28.9, 29.4, 29.4, 2)),
            ),
            // One state; the wake and CPU readings' ranges reach far, but
            // their medians agree: the state each side mostly ran in.
            with(core(one(58.0)), core(reading(62.0, 64.0, 70.0))),
            with(
                wake(reading(18e3, 18e3, 50e3)),
                wake(reading(20e3, 21e3, 22e3)),
            ),
            with(
                cpu(read(19.4, 20.8, 46.9, 20)),
                cpu(read(19.3, 19.7, 29.3, 20)),
            ),
            with(others(Some(0.3)), others(Some(0.0))),
        ];
        let (tested, _) = test_all(&pairs, &rule(Correction::Holm, 0.02));
        let differed = |gauge, ranges, medians| {
            Some(StateDiff {
                gauge,
                ranges,
                medians,
            })
        };
        assert_eq!(
            tested[0].machine_differed,
            differed(
                Gauge::CoreTrip,
                [[58.0, 58.0], [340.0, 340.0]],
                [58.0, 340.0]
            )
        );
        assert_eq!(
            tested[1].machine_differed,
            differed(Gauge::CoreTrip, [[58.0, 60.0], [61.0, 330.0]], [59.0, 62.0])
        );
        assert_eq!(
            tested[2].machine_differed,
            differed(
                Gauge::WakeTrip,
                [[41e3, 43e3], [30e3, 31e3]],
                [42e3, 30.3e3]
            )
        );
        assert_eq!(
            tested[3].machine_differed,
            differed(Gauge::CpuSpeed, [[19.4, 20.1], [29.0, 47.0]], [19.7, 29.2])
        );
        assert_eq!(
            tested[4].machine_differed,
            differed(Gauge::OthersCpu, [[0.99, 0.99], [0.0, 0.0]], [0.99, 0.0])
        );
        assert_eq!(
            tested[5].machine_differed.map(|d| (d.gauge, d.medians)),
            Some((Gauge::CpuSpeed, [28.9, 29.4]))
        );
        for t in &tested[..6] {
            assert!(!t.significant && t.verdict.is_none());
        }
        // One state: judged by the test.
        for t in &tested[6..] {
            assert!(t.significant && t.machine_differed.is_none(), "{t:?}");
        }
    }

    #[test]
    fn one_pass_or_an_unknown_state_gets_no_verdict() {
        // A kernel UDP receive in two quiet labs: 34.65 and 5.01 µs, each
        // from 40 messages of one pass.
        let a = spread(&[34.0, 35.0, 34.5, 35.2, 34.6]);
        let b = spread(&[5.0, 5.1, 4.9, 5.05, 5.0]);
        let with = |in_a: Gauges, in_b: Gauges| Pair {
            states: [in_a, in_b],
            ..pair("x.receive.stop_us", a, b)
        };
        let cpu = |count| Gauges {
            cpu: read(29.0, 29.2, 29.4, count),
            ..Gauges::default()
        };
        let pairs = [
            // Read before the one window and after, in one state.
            with(cpu(2), cpu(2)),
            with(cpu(18), cpu(2)),
            // No gauge read at all on a side: passes and state unknown.
            with(Gauges::default(), cpu(18)),
            // Passes in turn on both sides: tested.
            with(cpu(18), cpu(18)),
        ];
        let (tested, _) = test_all(&pairs, &rule(Correction::Holm, 0.02));
        for t in &tested[..3] {
            assert!(t.one_pass && t.machine_differed.is_none(), "{t:?}");
            assert!(!t.significant && t.verdict.is_none());
        }
        assert!(!tested[3].one_pass && tested[3].significant);
    }

    /// A seeded generator (xorshift64*) of normal values (Box–Muller):
    /// the same noise every run.
    struct Noise(u64);

    impl Noise {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn normal(&mut self, mean: f64, stdev: f64) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            mean + stdev * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }

        fn sample(&mut self, n: usize, mean: f64, stdev: f64) -> Figure {
            let values: Vec<f64> = (0..n).map(|_| self.normal(mean, stdev)).collect();
            spread(&values)
        }
    }

    #[test]
    fn a_large_change_with_tight_intervals_is_significant() {
        let a = spread(&[100.0, 101.0, 99.0, 100.5, 99.5]);
        let b = spread(&[150.0, 151.0, 149.0, 150.5, 149.5]);
        let (tested, _) = test_all(&[pair("x.stop_us", a, b)], &rule(Correction::Holm, 0.02));
        assert_eq!(tested.len(), 1);
        let t = &tested[0];
        assert!(t.significant && t.p_adjusted < 1e-6, "{t:?}");
        assert!((t.difference.ratio - 1.5).abs() < 1e-9);
        assert_eq!(t.verdict.as_deref(), Some("slower"));
    }

    #[test]
    fn the_smallest_marked_change_is_where_the_test_turns() {
        let a = spread(&[100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 100.2, 99.8]);
        let pairs = [pair("x", a, a)];
        let (tested, _) = test_all(&pairs, &rule(Correction::None, 0.0));
        let rise = tested[0].detectable.unwrap();
        // Equal spreads s = 0.607, n = 8: marked when the rise exceeds
        // t(14)₀.₉₇₅·s·√(2/8) = 2.1448·0.607·0.5 = 0.651 % of 100.
        assert!((rise - 0.00651).abs() < 0.0001, "{rise}");
        // Holm over 100 figures asks for p < 0.0005; a 2 % threshold on
        // top asks the interval to clear 1.02.
        let many: Vec<Pair> = (0..100).map(|i| pair(&format!("f{i}"), a, a)).collect();
        let (tested, _) = test_all(&many, &rule(Correction::Holm, 0.0));
        let holm = tested[0].detectable.unwrap();
        assert!(holm > 1.5 * rise, "{holm} {rise}");
        let (tested, _) = test_all(&many, &rule(Correction::Holm, 0.02));
        assert!(tested[0].detectable.unwrap() > 0.02);
        // And the rise found is marked: shifted B is significant.
        let b = spread(
            &[100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 100.2, 99.8].map(|x| x + 100.0 * holm * 1.01),
        );
        let mut shifted = many.clone();
        shifted[0] = pair("f0", a, b);
        let (tested, _) = test_all(&shifted, &rule(Correction::Holm, 0.0));
        assert!(tested[0].significant);
    }

    #[test]
    fn changes_inside_the_threshold_get_no_verdict() {
        // 1.5 % slower with 0.1 % spreads: beyond the noise, inside 2 %.
        let a = spread(&[100.0, 100.1, 99.9, 100.05, 99.95]);
        let b = spread(&[101.5, 101.6, 101.4, 101.55, 101.45]);
        let pairs = [pair("x.stop_us", a, b)];
        let (tested, _) = test_all(&pairs, &rule(Correction::Holm, 0.02));
        assert!(tested[0].p_adjusted < 1e-6 && !tested[0].significant);
        let (tested, _) = test_all(&pairs, &rule(Correction::Holm, 0.01));
        assert!(tested[0].significant);
    }

    #[test]
    fn identical_figures_are_not_significant() {
        let a = spread(&[3.0, 4.0, 5.0, 4.5]);
        let pairs: Vec<Pair> = (0..50).map(|i| pair(&format!("f{i}"), a, a)).collect();
        let (tested, _) = test_all(&pairs, &rule(Correction::None, 0.0));
        assert_eq!(tested.len(), 50);
        assert!(tested
            .iter()
            .all(|t| !t.significant && t.difference.p_value == 1.0));
    }

    #[test]
    fn single_numbers_get_a_ratio_but_no_test() {
        let pairs = [
            pair("one", Figure::Number(2.0), Figure::Number(3.0)),
            pair("zero", Figure::Number(0.0), Figure::Number(3.0)),
            // A spread on one side only cannot be tested either.
            pair("half", spread(&[1.0, 2.0]), Figure::Number(100.0)),
            pair("n1", spread(&[1.0]), spread(&[50.0])),
        ];
        let (tested, untested) = test_all(&pairs, &rule(Correction::Holm, 0.0));
        assert!(tested.is_empty());
        let ratios: Vec<Option<f64>> = untested.iter().map(|u| u.ratio).collect();
        assert_eq!(ratios, [Some(1.5), None, Some(100.0 / 1.5), Some(50.0)]);
    }

    #[test]
    fn fitted_slopes_are_tested_from_their_intervals() {
        // Slopes 1.0 ± 0.1 and 2.0 ± 0.1 from 20 points: far apart.
        let fit = |value: f64, half: f64| Figure::Coefficient {
            value,
            ci95: Interval {
                lo: value - half,
                hi: value + half,
            },
            n: 20,
        };
        let pairs = [
            pair("apart.slope", fit(1.0, 0.1), fit(2.0, 0.1)),
            pair("close.slope", fit(1.0, 0.1), fit(1.05, 0.1)),
        ];
        let (tested, _) = test_all(&pairs, &rule(Correction::None, 0.0));
        assert!(tested[0].significant && tested[0].kind == "coefficient");
        assert!(!tested[1].significant);
        // se = 0.1 / t(18) each; t = 0.05 / (√2·se) = 0.743 → p ≈ 0.46.
        let p = tested[1].difference.p_value;
        assert!((p - 0.46).abs() < 0.02, "{p}");
        assert!((tested[1].difference.df - 36.0).abs() < 1e-6);
    }

    /// Two summaries whose receive line's intercept fell from 5 ± 1 µs
    /// to −40 ± 2 µs (20 sizes each), the second so marked; the send
    /// line, marked on both, and a two-size line (`a`, `b`, no
    /// intervals, as `analysis::trend::Fit` writes it) marked on B only.
    fn marked_comparison() -> report::compare_html::Comparison {
        use serde_json::json;
        let line = |intercept: f64, half: f64, marked: bool| {
            json!({"slope": 80.0, "slope_ci95": {"lo": 79.0, "hi": 81.0},
                   "intercept": intercept,
                   "intercept_ci95": {"lo": intercept - half, "hi": intercept + half},
                   "r2": 0.99, "n": 20, "weak": false, "intercept_below_zero": marked})
        };
        let two = |b: f64| {
            json!({"kind": "linear", "a": 82.7, "b": b, "r2": 1.0, "n": 2,
                   "slope_ci95": null, "intercept_ci95": null, "weak": false,
                   "intercept_below_zero": b < 0.0})
        };
        let side = |receive: f64, marked: bool, quick: f64| {
            json!({"experiments": [{"name": "x", "core_trip_ns": 60.0, "runs": [{"id": "udp",
                "receive": {"stop": line(receive, if marked { 2.0 } else { 1.0 }, marked)},
                "send": {"stop": line(-30.0, 1.0, true)},
                "quick": {"stop": two(quick)}}]}]})
        };
        let paired =
            super::super::walk::pair(&side(5.0, false, 10.0), &side(-40.0, true, -75.0), &[], &[]);
        let (tested, untested) = test_all(&paired.pairs, &rule(Correction::None, 0.0));
        report::compare_html::Comparison {
            a: side_named("A"),
            b: side_named("B"),
            alpha: 0.05,
            threshold: 0.0,
            correction: "none".into(),
            warnings: vec![],
            tested,
            untested,
            only_a: paired.only_a,
            only_b: paired.only_b,
            intercept_marks: paired.intercept_marks,
        }
    }

    fn side_named(dir: &str) -> report::compare_html::Side {
        report::compare_html::Side {
            dir: dir.into(),
            title: "t".into(),
            command: "c".into(),
            date: None,
            quick: None,
            experiments: vec!["x".into()],
        }
    }

    #[test]
    fn an_intercept_below_zero_gets_no_verdict_and_its_line_is_listed() {
        let c = marked_comparison();
        let at = |path: &str| {
            c.tested
                .iter()
                .find(|f| f.path.ends_with(path))
                .unwrap_or_else(|| panic!("no {path}"))
        };
        // 5 ± 1 against −40 ± 2 from 20 points would be significant…
        let receive = at("receive.stop.intercept");
        assert!(receive.difference.p_value < 1e-10);
        // …but B's is no result: no verdict, listed apart.
        assert!(!receive.significant && receive.verdict.is_none());
        assert_eq!(receive.intercept_below_zero, [false, true]);
        assert_eq!(at("send.stop.intercept").intercept_below_zero, [true, true]);
        // The slopes of the same lines are figures as before.
        assert_eq!(at("receive.stop.slope").intercept_below_zero, [false; 2]);
        let below: Vec<&str> = c.below_zero().map(|f| f.path.as_str()).collect();
        assert_eq!(
            below,
            [
                "experiments[x].runs[udp].receive.stop.intercept",
                "experiments[x].runs[udp].send.stop.intercept"
            ]
        );
        assert!(c
            .not_significant()
            .chain(c.one_pass())
            .all(|f| f.intercept_below_zero == [false; 2]));
        // A two-size line's intercept is a single number: marked too.
        let quick = c
            .untested
            .iter()
            .find(|f| f.path.ends_with("quick.stop.b"))
            .unwrap();
        assert_eq!(quick.intercept_below_zero, [false, true]);
        let slope = c
            .untested
            .iter()
            .find(|f| f.path.ends_with("quick.stop.a"))
            .unwrap();
        assert_eq!(slope.intercept_below_zero, [false; 2]);
        // Every marked line, with where the mark is: the flag's change too.
        let marks: Vec<(&str, [bool; 2])> = c
            .intercept_marks
            .iter()
            .map(|m| (m.path.as_str(), m.marked))
            .collect();
        assert_eq!(
            marks,
            [
                ("experiments[x].runs[udp].quick.stop", [false, true]),
                ("experiments[x].runs[udp].receive.stop", [false, true]),
                ("experiments[x].runs[udp].send.stop", [true, true]),
            ]
        );
    }

    #[test]
    fn every_output_marks_an_intercept_below_zero() {
        let c = marked_comparison();
        let text = super::super::text::render(&c, false);
        assert!(
            text.contains("Trend lines with their intercept below zero: 3"),
            "{text}"
        );
        assert!(text.contains(
            "experiments[x].runs[udp].quick.stop  intercept below 0 on B only (A's is not)"
        ));
        assert!(
            text.contains("Intercepts below zero (no verdict): 2"),
            "{text}"
        );
        // Both values, but no ratio, p-value or markable change.
        assert!(text.contains(
            "experiments[x].runs[udp].receive.stop.intercept (fit)  intercept below 0 on B only (A's is not): no result\n      A 5.000 ± 1.000 (n 20)   B -40.00 ± 2.000 (n 20)   B/A not compared\n"
        ), "{text}");
        assert!(!text.contains("-8.000"), "{text}");
        assert!(text.contains("Significant differences: 0"), "{text}");
        let all = super::super::text::render(&c, true);
        assert!(all.contains(
            "experiments[x].runs[udp].quick.stop.b  intercept below 0 on B only (A's is not): no result\n      A 10.00   B -75.00   B/A -\n"
        ), "{all}");
        let html = report::compare_html::render(&c);
        assert!(html.contains("<h2>Trend lines with their intercept below zero (3)</h2>"));
        assert!(html.contains("<h2>Intercepts below zero (2)</h2>"));
        assert!(html.contains("<b>on A and on B</b>"));
        assert!(html.contains("<td>not compared</td>"));
        assert!(
            !html.contains("-8.000") && !html.contains("-7.500"),
            "{html}"
        );
        assert!(html.contains(
            "<code>experiments[x].runs[udp].quick.stop.b</code> <b>intercept below 0 on B only (A&#39;s is not): no result</b>"
        ), "{html}");
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(
            json["intercept_marks"][0]["marked"],
            serde_json::json!([false, true])
        );
        let receive = json["tested"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == "experiments[x].runs[udp].receive.stop.intercept")
            .unwrap();
        assert_eq!(
            receive["intercept_below_zero"],
            serde_json::json!([false, true])
        );
        assert_eq!(receive["significant"], false);
    }

    #[test]
    fn holm_and_bh_match_hand_computations() {
        let p = [0.01, 0.04, 0.03, 0.005];
        // Sorted 0.005, 0.01, 0.03, 0.04. Holm: ×4, ×3, ×2, ×1 with a
        // running maximum: 0.02, 0.03, 0.06, 0.06.
        let holm = Correction::Holm.adjust(&p);
        let expect = [0.03, 0.06, 0.06, 0.02];
        for (x, y) in holm.iter().zip(expect) {
            assert!((x - y).abs() < 1e-12, "{holm:?}");
        }
        // BH: ×4/1, ×4/2, ×4/3, ×4/4 with a running minimum from the top:
        // 0.02, 0.02, 0.04, 0.04.
        let bh = Correction::Bh.adjust(&p);
        let expect = [0.02, 0.04, 0.04, 0.02];
        for (x, y) in bh.iter().zip(expect) {
            assert!((x - y).abs() < 1e-12, "{bh:?}");
        }
        assert_eq!(Correction::None.adjust(&p), p);
        assert!(Correction::Holm.adjust(&[]).is_empty());
    }

    #[test]
    fn corrections_remove_false_positives_from_noise_and_keep_real_changes() {
        let mut noise = Noise(0x5eed_1234_abcd_0001);
        // 400 unchanged figures (same distribution on both sides) and 10
        // that grew by 30 % with a 5 % spread.
        let mut pairs = Vec::new();
        for i in 0..400 {
            let (a, b) = (noise.sample(10, 100.0, 5.0), noise.sample(10, 100.0, 5.0));
            pairs.push(pair(&format!("same{i}"), a, b));
        }
        for i in 0..10 {
            let (a, b) = (noise.sample(10, 100.0, 5.0), noise.sample(10, 130.0, 5.0));
            pairs.push(pair(&format!("moved{i}"), a, b));
        }
        let false_positives = |c: Correction| {
            let (tested, _) = test_all(&pairs, &rule(c, 0.0));
            let fp = tested
                .iter()
                .filter(|t| t.significant && t.path.starts_with("same"))
                .count();
            let found = tested
                .iter()
                .filter(|t| t.significant && t.path.starts_with("moved"))
                .count();
            (fp, found)
        };
        let (raw, found_raw) = false_positives(Correction::None);
        // About 5 % of 400 by chance.
        assert!((8..=35).contains(&raw), "{raw}");
        assert_eq!(found_raw, 10);
        for c in [Correction::Holm, Correction::Bh] {
            let (fp, found) = false_positives(c);
            assert!(fp <= 1, "{c:?}: {fp}");
            assert_eq!(found, 10, "{c:?}");
        }
    }

    #[test]
    fn verdicts_follow_the_unit() {
        assert_eq!(verdict("a.send.stop_us", 0.8), Some("faster"));
        assert_eq!(verdict("a.points[x=1].mean_bps", 0.8), Some("slower"));
        assert_eq!(verdict("a.stops_us.acknowledged", 1.2), Some("slower"));
        assert_eq!(verdict("a.category_shares.checksum", 1.2), None);
        assert_eq!(
            verdict("a.rates.arrival_packets_per_s", 1.2),
            Some("faster")
        );
    }
}
