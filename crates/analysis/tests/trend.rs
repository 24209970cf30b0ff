//! Trend lines and MTU steps: exact recovery, R², degenerate input, steps.

use analysis::trend::{
    linear, power, steps_at_multiples, Fit, FitKind, StepReport, MAX_BOUNDARIES,
};
use proptest::prelude::*;

fn close(actual: f64, expected: f64, relative: f64) -> bool {
    (actual - expected).abs() <= relative * expected.abs().max(1.0)
}

/// Payload sizes of the study's fine sweep: 100..=20000 bytes step 100.
fn payload_sizes() -> impl Iterator<Item = f64> {
    (1..=200).map(|i| f64::from(i) * 100.0)
}

/// Deterministic noise in [-1, 1): a xorshift generator, so the tests are
/// reproducible without a random-number dependency.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

#[test]
fn linear_recovers_the_studys_tcp_stop_latency_line() {
    // x in thousands of bytes, y in microseconds, as in Table 5a.
    let points: Vec<(f64, f64)> = payload_sizes()
        .map(|bytes| bytes / 1000.0)
        .map(|x| (x, 192.57 * x + 246.98))
        .collect();
    let fit = linear(&points).expect("a line");
    assert_eq!(fit.kind, FitKind::Linear);
    assert!(close(fit.a, 192.57, 1e-12), "slope {}", fit.a);
    assert!(close(fit.b, 246.98, 1e-12), "intercept {}", fit.b);
    assert!(fit.r2 > 1.0 - 1e-12 && fit.r2 <= 1.0, "r2 {}", fit.r2);
    assert_eq!(fit.n, 200);
    assert_eq!(
        fit.formula("thousands of bytes", "µs"),
        "y = 192.57x + 246.98 (x in thousands of bytes, y in µs)"
    );
    assert!(close(fit.eval(20.0), 192.57 * 20.0 + 246.98, 1e-12));
}

#[test]
fn linear_formula_writes_negative_intercepts_with_a_minus() {
    // The study's payload checksum line, y1 = 14.494x1 - 10.622.
    let points: Vec<(f64, f64)> = (1..=20)
        .map(f64::from)
        .map(|x| (x, 14.494 * x - 10.622))
        .collect();
    let fit = linear(&points).expect("a line");
    assert_eq!(fit.formula("", ""), "y = 14.494x - 10.622");
    assert_eq!(fit.formula("kB", ""), "y = 14.494x - 10.622 (x in kB)");
}

#[test]
fn formula_uses_five_significant_digits_and_scientific_for_large_values() {
    let fit = Fit {
        kind: FitKind::Linear,
        a: 123_456.0,
        b: 0.000_012_345_6,
        r2: 1.0,
        n: 2,
        slope_ci95: None,
        intercept_ci95: None,
        weak: false,
        intercept_below_zero: false,
    };
    assert_eq!(fit.formula("", ""), "y = 1.2346e5x + 1.2346e-5");
    let fit = Fit {
        kind: FitKind::Linear,
        a: 9.999_996,
        b: 0.0,
        r2: 1.0,
        n: 2,
        slope_ci95: None,
        intercept_ci95: None,
        weak: false,
        intercept_below_zero: false,
    };
    assert_eq!(fit.formula("", ""), "y = 10x + 0");
}

#[test]
fn power_recovers_the_studys_tcp_throughput_law() {
    // y = 2258.1 x^0.1475, x in hundreds of bytes, y in KB/s.
    let points: Vec<(f64, f64)> = payload_sizes()
        .map(|bytes| bytes / 100.0)
        .map(|x| (x, 2258.1 * x.powf(0.1475)))
        .collect();
    let fit = power(&points).expect("a power law");
    assert_eq!(fit.kind, FitKind::Power);
    assert!(close(fit.a, 2258.1, 1e-10), "coefficient {}", fit.a);
    assert!(close(fit.b, 0.1475, 1e-10), "exponent {}", fit.b);
    assert!(fit.r2 > 1.0 - 1e-12, "r2 {}", fit.r2);
    assert_eq!(fit.n, 200);
    assert_eq!(fit.formula("", ""), "y = 2258.1x^0.1475");
    assert!(close(fit.eval(4.0), 2258.1 * 4.0_f64.powf(0.1475), 1e-10));
}

#[test]
fn power_recovers_negative_exponents_and_skips_non_positive_points() {
    let mut points: Vec<(f64, f64)> = (1..=50)
        .map(f64::from)
        .map(|x| (x, 3.0 * x.powf(-0.5)))
        .collect();
    points.extend([
        (0.0, 1.0),
        (-2.0, 5.0),
        (3.0, 0.0),
        (4.0, -1.0),
        (f64::NAN, 1.0),
    ]);
    let fit = power(&points).expect("a power law");
    assert!(close(fit.a, 3.0, 1e-12));
    assert!(close(fit.b, -0.5, 1e-12));
    assert_eq!(fit.n, 50);
    assert_eq!(fit.formula("", ""), "y = 3x^-0.5");
}

#[test]
fn r2_matches_a_hand_computed_linear_example() {
    // Mean (2, 2); Sxy = 1, Sxx = 2, so y = 0.5x + 1; residuals -0.5, 1,
    // -0.5; SSres = 1.5, SStot = 2, R² = 0.25.
    let fit = linear(&[(1.0, 1.0), (2.0, 3.0), (3.0, 2.0)]).expect("a line");
    assert!(close(fit.a, 0.5, 1e-15));
    assert!(close(fit.b, 1.0, 1e-15));
    assert!((fit.r2 - 0.25).abs() < 1e-15, "r2 {}", fit.r2);
}

#[test]
fn power_r2_is_computed_in_log_space() {
    // In log2: (0,0), (1,3), (2,2): slope 1, intercept 2/3, SSres = 24/9,
    // SStot = 42/9, so R² = 3/7. R² on y itself would be something else.
    let fit = power(&[(1.0, 1.0), (2.0, 8.0), (4.0, 4.0)]).expect("a power law");
    assert!(close(fit.b, 1.0, 1e-14), "exponent {}", fit.b);
    assert!(
        close(fit.a, 2.0_f64.powf(2.0 / 3.0), 1e-14),
        "coefficient {}",
        fit.a
    );
    assert!((fit.r2 - 3.0 / 7.0).abs() < 1e-14, "r2 {}", fit.r2);
}

#[test]
fn noisy_data_has_r2_below_one() {
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let points: Vec<(f64, f64)> = payload_sizes()
        .map(|bytes| bytes / 1000.0)
        .map(|x| (x, 192.57 * x + 246.98 + 100.0 * noise.next()))
        .collect();
    let fit = linear(&points).expect("a line");
    assert!(fit.r2 < 0.9999 && fit.r2 > 0.98, "r2 {}", fit.r2);
    assert!(close(fit.a, 192.57, 0.02), "slope {}", fit.a);

    let throughput: Vec<(f64, f64)> = (1..=200)
        .map(f64::from)
        .map(|x| (x, 2258.1 * x.powf(0.1475) * (1.0 + 0.1 * noise.next())))
        .collect();
    let fit = power(&throughput).expect("a power law");
    assert!(fit.r2 < 0.9999 && fit.r2 > 0.5, "r2 {}", fit.r2);
}

#[test]
fn degenerate_inputs_give_no_fit() {
    let cases: [&[(f64, f64)]; 7] = [
        &[],
        &[(1.0, 2.0)],
        &[(1.0, 2.0), (1.0, 3.0)],
        &[(5.0, 1.0), (5.0, 2.0), (5.0, 3.0)],
        &[(f64::NAN, 1.0), (2.0, f64::NAN)],
        &[(f64::INFINITY, 1.0), (1.0, 2.0)],
        &[(1.0, 2.0), (f64::NEG_INFINITY, 1.0), (3.0, f64::INFINITY)],
    ];
    for points in cases {
        assert_eq!(linear(points), None, "{points:?}");
        assert_eq!(power(points), None, "{points:?}");
    }
    // Valid for a line, but nothing positive for a power law.
    let non_positive = [(-1.0, 1.0), (-2.0, 2.0), (1.0, 0.0), (2.0, -3.0)];
    assert!(linear(&non_positive).is_some());
    assert_eq!(power(&non_positive), None);
}

#[test]
fn constant_y_is_a_flat_exact_fit() {
    let points = [(1.0, 0.1), (2.0, 0.1), (3.0, 0.1)];
    let fit = linear(&points).expect("a line");
    assert_eq!((fit.a, fit.b, fit.r2), (0.0, 0.1, 1.0));
    let fit = power(&points).expect("a power law");
    assert_eq!((fit.a, fit.b, fit.r2), (0.1, 0.0, 1.0));
}

#[test]
fn non_finite_points_are_ignored() {
    let mut points: Vec<(f64, f64)> = (0..10).map(f64::from).map(|x| (x, 2.0 * x + 1.0)).collect();
    points.extend([
        (f64::NAN, 0.0),
        (0.5, f64::INFINITY),
        (f64::NEG_INFINITY, 3.0),
    ]);
    let fit = linear(&points).expect("a line");
    assert_eq!(fit.n, 10);
    assert!(close(fit.a, 2.0, 1e-14) && close(fit.b, 1.0, 1e-14));
}

#[test]
fn extreme_magnitudes_do_not_overflow() {
    let huge: Vec<(f64, f64)> = (1..=5)
        .map(f64::from)
        .map(|i| (i * 1e300, i * 3e300))
        .collect();
    let fit = linear(&huge).expect("a line");
    assert!(close(fit.a, 3.0, 1e-12), "slope {}", fit.a);
    assert!(fit.b.abs() < 1e288, "intercept {}", fit.b);
    let tiny: Vec<(f64, f64)> = (1..=5)
        .map(f64::from)
        .map(|i| (i * 1e-300, i * 2e-300 + 5e-300))
        .collect();
    let fit = linear(&tiny).expect("a line");
    assert!(close(fit.a, 2.0, 1e-12), "slope {}", fit.a);
    assert!((fit.b - 5e-300).abs() < 1e-310, "intercept {}", fit.b);
}

#[test]
fn fits_serialise_with_snake_case_kinds() {
    let fit = linear(&[(0.0, 1.0), (1.0, 3.0)]).expect("a line");
    let json = serde_json::to_value(fit).expect("serialises");
    assert_eq!(json["kind"], "linear");
    assert_eq!(json["n"], 2);
    assert_eq!(serde_json::to_string(&FitKind::Power).unwrap(), "\"power\"");
    let kind: FitKind = serde_json::from_str("\"power\"").expect("deserialises");
    assert_eq!(kind, FitKind::Power);
}

#[test]
fn the_slope_interval_of_noisy_points_holds_the_true_slope() {
    // 200 noisy lines: the 95 % interval holds the true slope about 95
    // times in 100, and the power law's exponent interval likewise.
    let (mut held, mut exponent_held, runs) = (0, 0, 200);
    for seed in 1..=runs {
        let mut noise = Noise(seed * 7919 + 1);
        let points: Vec<(f64, f64)> = payload_sizes()
            .map(|bytes| bytes / 1000.0)
            .map(|x| (x, 192.57 * x + 246.98 + 300.0 * noise.next()))
            .collect();
        let fit = linear(&points).expect("a line");
        let ci = fit.slope_ci95.expect("200 points");
        assert!(ci.contains(fit.a), "{fit:?}");
        held += u32::from(ci.contains(192.57));
        let intercept = fit.intercept_ci95.expect("200 points");
        assert!(intercept.contains(fit.b), "{fit:?}");

        let throughput: Vec<(f64, f64)> = (1..=200)
            .map(f64::from)
            .map(|x| (x, 2258.1 * x.powf(0.1475) * (0.2 * noise.next()).exp()))
            .collect();
        let fit = power(&throughput).expect("a power law");
        exponent_held += u32::from(fit.slope_ci95.unwrap().contains(0.1475));
        // The coefficient's interval is the log-space one through exp:
        // around `a`, positive, wider above than below.
        let a = fit.intercept_ci95.unwrap();
        assert!(a.lo > 0.0 && a.contains(fit.a), "{fit:?}");
        assert!(a.hi - fit.a > fit.a - a.lo, "{fit:?}");
    }
    assert!((180..=198).contains(&held), "held {held} of {runs}");
    assert!((180..=198).contains(&exponent_held), "held {exponent_held}");
}

#[test]
fn the_slope_interval_matches_stats_and_shrinks_with_less_noise() {
    let line = |amplitude: f64| {
        let mut noise = Noise(5);
        let points: Vec<(f64, f64)> = payload_sizes()
            .map(|b| {
                (
                    b / 1000.0,
                    86.0 * b / 1000.0 + 20.0 + amplitude * noise.next(),
                )
            })
            .collect();
        (
            linear(&points).unwrap(),
            stats::LinearFit::of(&points).unwrap(),
        )
    };
    let (noisy, reference) = line(400.0);
    let ci = noisy.slope_ci95.unwrap();
    let expected = reference.slope_ci95.unwrap();
    assert!((ci.lo - expected.lo).abs() < 1e-9 && (ci.hi - expected.hi).abs() < 1e-9);
    let (quiet, _) = line(40.0);
    // Residuals scale with the noise, and so does the interval.
    let ratio = ci.half_width() / quiet.slope_ci95.unwrap().half_width();
    assert!((ratio - 10.0).abs() < 1e-6, "{ratio}");
    assert!(
        quiet.slope_relative_half_width().unwrap() < 0.01,
        "{quiet:?}"
    );
}

#[test]
fn fits_below_r2_0_8_are_weak() {
    let mut noise = Noise(11);
    let scatter = |amplitude: f64, noise: &mut Noise| -> Vec<(f64, f64)> {
        (1..=50)
            .map(f64::from)
            .map(|x| (x, 2.0 * x + amplitude * noise.next()))
            .collect()
    };
    let strong = linear(&scatter(5.0, &mut noise)).unwrap();
    assert!(strong.r2 >= 0.8 && !strong.weak, "{strong:?}");
    let weak = linear(&scatter(150.0, &mut noise)).unwrap();
    assert!(weak.r2 < 0.8 && weak.weak, "{weak:?}");
    let json = serde_json::to_value(weak).unwrap();
    assert_eq!(json["weak"], true);
    assert!(json["slope_ci95"]["lo"].is_number());
    // A power law is weak by its log-space R².
    let flat: Vec<(f64, f64)> = (1..=50)
        .map(f64::from)
        .map(|x| (x, 1000.0 * (0.5 * noise.next()).exp()))
        .collect();
    let fit = power(&flat).unwrap();
    assert!(fit.r2 < 0.8 && fit.weak, "{fit:?}");
}

#[test]
fn a_drawn_trend_never_goes_below_zero() {
    // A receive trend like the report's: a negative intercept puts the
    // line below zero for small payloads.
    let fit = linear(&[(0.5, 10.0), (5.0, 470.0), (10.0, 900.0), (20.0, 1900.0)]).unwrap();
    assert!(fit.b < 0.0 && fit.eval(0.1) < 0.0, "{fit:?}");
    let curve = fit.curve(0.1, 20.0, 50);
    assert!(curve.clipped);
    assert!(curve.points.iter().all(|&(_, y)| y >= 0.0), "{curve:?}");
    // It starts where the line crosses zero, and ends at the range's end.
    let (x0, y0) = curve.points[0];
    assert!((x0 + fit.b / fit.a).abs() < 1e-9 && y0 == 0.0, "{curve:?}");
    assert_eq!(curve.points.last().unwrap().0, 20.0);
    // Wholly above zero: every sample, nothing clipped.
    let curve = fit.curve(1.0, 20.0, 50);
    assert!(!curve.clipped && curve.points.len() == 51);
    // Wholly below: nothing to draw.
    let falling = linear(&[(0.0, -1.0), (1.0, -2.0), (2.0, -3.0)]).unwrap();
    let curve = falling.curve(0.0, 2.0, 10);
    assert!(curve.points.is_empty() && curve.clipped);
    // A power law is undefined at x <= 0: left out, not drawn as NaN.
    let law = power(&[(1.0, 1.0), (2.0, 2.0), (4.0, 4.0)]).unwrap();
    let curve = law.curve(-1.0, 4.0, 5);
    assert!(curve.clipped && curve.points.iter().all(|p| p.0 >= 0.0 && p.1 >= 0.0));
}

/// Stop latency of the study's TCP line (µs against bytes) plus `jump` for
/// every extra packet of `period` payload bytes.
fn staircase(period: f64, jump: f64, noise: Option<&mut Noise>) -> Vec<(f64, f64)> {
    let mut noise = noise;
    payload_sizes()
        .map(|bytes| {
            let packets = (bytes / period).ceil();
            let wiggle = noise.as_mut().map_or(0.0, |n| 5.0 * n.next());
            let y = 0.19257 * bytes + 246.98 + jump * (packets - 1.0) + wiggle;
            (bytes, y)
        })
        .collect()
}

fn assert_every_multiple_is_a_step(report: &StepReport, rise_tolerance: f64) {
    // 1440 * 13 = 18720 <= 20000 < 1440 * 14 - 720.
    assert_eq!(report.tested, 13, "{report:?}");
    assert_eq!(report.significant, 13, "{report:?}");
    assert_eq!(report.steps.len(), 13);
    for (k, step) in (1..=13).zip(&report.steps) {
        assert_eq!(step.multiple, k);
        assert_eq!(step.boundary, f64::from(k) * 1440.0);
        assert!(step.significant, "{step:?}");
        assert!(step.score >= 3.0, "{step:?}");
        let detectable = step.detectable.expect("noise and two points a side");
        assert!(detectable < step.rise, "{step:?}");
        assert!((step.rise - 50.0).abs() < rise_tolerance, "{step:?}");
    }
}

#[test]
fn staircase_has_a_step_at_every_mtu_multiple() {
    let report = steps_at_multiples(&staircase(1440.0, 50.0, None), 1440.0);
    assert_eq!(report.period, 1440.0);
    assert_every_multiple_is_a_step(&report, 1e-6);
}

#[test]
fn noisy_staircase_still_has_a_step_at_every_mtu_multiple() {
    let mut noise = Noise(12345);
    let report = steps_at_multiples(&staircase(1440.0, 50.0, Some(&mut noise)), 1440.0);
    assert_every_multiple_is_a_step(&report, 10.0);
}

#[test]
fn step_detection_does_not_depend_on_point_order() {
    let mut noise = Noise(777);
    let points = staircase(1440.0, 50.0, Some(&mut noise));
    let mut shuffled = points.clone();
    let mut order = Noise(4242);
    for i in (1..shuffled.len()).rev() {
        let j = ((order.next() + 1.0) / 2.0 * (i + 1) as f64) as usize;
        shuffled.swap(i, j.min(i));
    }
    assert_ne!(points, shuffled);
    let sorted = steps_at_multiples(&points, 1440.0);
    let unsorted = steps_at_multiples(&shuffled, 1440.0);
    assert_eq!(sorted.tested, unsorted.tested);
    assert_eq!(sorted.significant, unsorted.significant);
    for (a, b) in sorted.steps.iter().zip(&unsorted.steps) {
        assert_eq!(a.multiple, b.multiple);
        assert!((a.rise - b.rise).abs() < 1e-9 && (a.score - b.score).abs() < 1e-6);
    }
}

#[test]
fn noisy_lines_without_steps_read_as_steps_at_the_tests_rate() {
    // Each boundary is a one-sided test at 2.5 %: over many noisy lines
    // with no step, about one boundary in forty reads as a step.
    let (mut tested, mut false_steps) = (0, 0);
    for seed in 1..=200u64 {
        let mut noise = Noise(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let report = steps_at_multiples(&staircase(1440.0, 0.0, Some(&mut noise)), 1440.0);
        assert_eq!(report.tested, 13);
        tested += report.tested;
        false_steps += report.significant;
        assert!(
            report.steps.iter().all(|s| s.score.abs() < 3.0),
            "{report:?}"
        );
    }
    let rate = f64::from(false_steps) / f64::from(tested);
    assert!((0.01..=0.045).contains(&rate), "false-step rate {rate}");
    // An exact line: rounding must not be read as steps either.
    let exact = staircase(1440.0, 0.0, None);
    let report = steps_at_multiples(&exact, 1440.0);
    assert_eq!(report.significant, 0, "{report:?}");
    assert!(report.steps.iter().all(|s| s.rise.abs() < 1e-6));
}

#[test]
fn a_step_above_the_detectable_size_is_found_and_one_far_below_is_not() {
    // Noise of 5·U(-1, 1) (sd 2.89) per point: the detectable step is a
    // few µs; a 20 µs step is found at every boundary of every line, a
    // 0.2 µs one hardly more often than chance steps are (2.5 %).
    let (mut small_found, mut tested) = (0, 0);
    for seed in 1..=100u64 {
        let mut noise = Noise(seed * 104_729 + 3);
        let big = steps_at_multiples(&staircase(1440.0, 20.0, Some(&mut noise)), 1440.0);
        let detectable = big.detectable_max.expect("noise estimated");
        assert!(detectable > 1.0 && detectable < 20.0, "{big:?}");
        assert_eq!(big.significant, 13, "{big:?}");
        let small = steps_at_multiples(&staircase(1440.0, 0.2, Some(&mut noise)), 1440.0);
        assert!(small.detectable_min.unwrap() > 0.2, "{small:?}");
        let estimate = small.noise.expect("noise estimated");
        assert!((estimate - 5.0 / 3f64.sqrt()).abs() < 0.5, "{small:?}");
        small_found += small.significant;
        tested += small.tested;
    }
    let rate = f64::from(small_found) / f64::from(tested);
    assert!(
        rate < 0.06,
        "a 0.2 µs step found at {rate} of the boundaries"
    );
}

#[test]
fn the_detectable_step_shrinks_with_more_repetitions() {
    // Each point the mean of `reps` noisy repetitions: the points' noise,
    // and so the smallest step the test can see, falls as 1/sqrt(reps).
    let detectable = |reps: u32| {
        let mut noise = Noise(31337);
        let points: Vec<(f64, f64)> = payload_sizes()
            .map(|bytes| {
                let packets = (bytes / 1440.0).ceil();
                let mean_noise =
                    (0..reps).map(|_| 20.0 * noise.next()).sum::<f64>() / f64::from(reps);
                (
                    bytes,
                    0.08 * bytes + 30.0 + 6.0 * (packets - 1.0) + mean_noise,
                )
            })
            .collect();
        steps_at_multiples(&points, 1440.0)
    };
    let (few, many) = (detectable(3), detectable(48));
    let (d_few, d_many) = (few.detectable_max.unwrap(), many.detectable_max.unwrap());
    assert!(
        d_many < d_few / 2.5,
        "{d_few} with 3 reps, {d_many} with 48"
    );
    // The 6 µs steps are below what three repetitions can resolve and
    // above what 48 can.
    assert!(d_few > 6.0 && d_many < 6.0, "{d_few} {d_many}");
    assert!(many.significant > few.significant, "{few:?} {many:?}");
}

#[test]
fn a_payload_of_exactly_k_periods_belongs_below_the_boundary() {
    // Flat at 0 up to and including 1440 bytes (one packet), 10 after.
    let points: Vec<(f64, f64)> = (0..9)
        .map(|i| 1040.0 + 100.0 * f64::from(i))
        .map(|x| (x, if x <= 1440.0 { 0.0 } else { 10.0 }))
        .collect();
    assert!(points.contains(&(1440.0, 0.0)));
    let report = steps_at_multiples(&points, 1440.0);
    assert_eq!(report.tested, 1);
    let step = &report.steps[0];
    // Were 1440 counted above, the mean above would drop below 10.
    assert_eq!(step.rise, 10.0);
    assert!(step.significant);
}

#[test]
fn downward_jumps_are_not_significant_steps() {
    let mut noise = Noise(99);
    let points: Vec<(f64, f64)> = staircase(1440.0, -50.0, Some(&mut noise));
    let report = steps_at_multiples(&points, 1440.0);
    assert_eq!(report.tested, 13);
    assert_eq!(report.significant, 0);
    assert!(report
        .steps
        .iter()
        .all(|s| s.rise < -40.0 && s.score <= -3.0));
}

#[test]
fn bad_periods_and_tiny_inputs_give_empty_reports() {
    let points = staircase(1440.0, 50.0, None);
    for period in [0.0, -1440.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let report = steps_at_multiples(&points, period);
        assert!(report.steps.is_empty() && report.tested == 0 && report.significant == 0);
    }
    for few in [
        &[][..],
        &[(1500.0, 1.0)][..],
        &[(1000.0, 1.0), (1000.0, 2.0)][..],
    ] {
        let report = steps_at_multiples(few, 1440.0);
        assert!(report.steps.is_empty() && report.tested == 0, "{report:?}");
    }
}

#[test]
fn two_points_astride_a_boundary_are_tested_without_a_score() {
    let report = steps_at_multiples(&[(1400.0, 1.0), (1500.0, 9.0)], 1440.0);
    assert_eq!(report.tested, 1);
    assert_eq!(report.steps[0].score, 0.0);
    assert!(!report.steps[0].significant);
}

#[test]
fn boundaries_are_capped() {
    // Period 2, a point every 1: every boundary k has 2k below and 2k+1
    // above, so 15 000 boundaries would qualify.
    let points: Vec<(f64, f64)> = (1..=30_001)
        .map(f64::from)
        .map(|x| (x, x + (x / 2.0).ceil()))
        .collect();
    let report = steps_at_multiples(&points, 2.0);
    assert_eq!(report.steps.len(), MAX_BOUNDARIES);
    assert_eq!(report.tested as usize, MAX_BOUNDARIES);
    assert_eq!(report.steps.first().map(|s| s.multiple), Some(1));
    assert_eq!(
        report.steps.last().map(|s| s.multiple),
        Some(MAX_BOUNDARIES as u32)
    );
}

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::num::f64::ANY,
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(0.0),
        Just(-0.0),
        Just(f64::MAX),
        Just(f64::MIN),
        Just(f64::MIN_POSITIVE),
        -1e4..1e4_f64,
    ]
}

fn check_fit(fit: Option<Fit>) -> Result<(), TestCaseError> {
    if let Some(fit) = fit {
        prop_assert!(
            fit.r2.is_finite() && (0.0..=1.0).contains(&fit.r2),
            "{fit:?}"
        );
        prop_assert!(fit.a.is_finite() && fit.b.is_finite(), "{fit:?}");
        prop_assert!(fit.n >= 2);
        let _ = fit.formula("x", "y");
        let _ = fit.eval(1.0);
        prop_assert_eq!(fit.weak, fit.r2 < 0.8);
        if let Some(ci) = fit.slope_ci95 {
            prop_assert!(ci.lo <= ci.hi, "{fit:?}");
        }
        let curve = fit.curve(-10.0, 10.0, 20);
        prop_assert!(
            curve
                .points
                .iter()
                .all(|p| p.1 >= 0.0 && p.0.is_finite() && p.1.is_finite()),
            "{curve:?}"
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn arbitrary_input_never_panics(
        points in prop::collection::vec((any_f64(), any_f64()), 0..40),
        period in any_f64(),
    ) {
        check_fit(linear(&points))?;
        check_fit(power(&points))?;
        let report = steps_at_multiples(&points, period);
        prop_assert_eq!(report.tested as usize, report.steps.len());
        prop_assert_eq!(
            report.significant as usize,
            report.steps.iter().filter(|s| s.significant).count()
        );
        for step in &report.steps {
            prop_assert!(step.rise.is_finite() && step.score.is_finite(), "{step:?}");
        }
        prop_assert!(serde_json::to_string(&report.steps).is_ok());
    }

    #[test]
    fn exact_lines_are_recovered(
        slope in -1e3..1e3_f64,
        intercept in -1e3..1e3_f64,
        xs in prop::collection::btree_set(-1000i32..1000, 2..30),
    ) {
        let points: Vec<(f64, f64)> = xs
            .iter()
            .map(|&x| (f64::from(x), slope * f64::from(x) + intercept))
            .collect();
        let fit = linear(&points).expect("distinct x");
        prop_assert!((fit.a - slope).abs() <= 1e-9 * slope.abs().max(1.0), "{fit:?}");
        prop_assert!((fit.b - intercept).abs() <= 1e-6 * intercept.abs().max(1.0), "{fit:?}");
        prop_assert!(fit.r2 > 1.0 - 1e-9 || slope.abs() < 1e-6, "{fit:?}");
    }
}
#[test]
fn explore_floor() {
    let mut found = 0;
    for (slope, icpt) in [
        (0.19257, 246.98),
        (0.1, 0.3),
        (1.0 / 3.0, 0.7),
        (0.12854, 49.117),
        (28.775e-3, -36.468),
        (0.7, 0.1),
    ] {
        for period in [1440.0, 1420.0, 1000.0, 333.3] {
            let pts: Vec<(f64, f64)> = payload_sizes().map(|x| (x, slope * x + icpt)).collect();
            let r = steps_at_multiples(&pts, period);
            if r.significant > 0 || r.steps.iter().any(|s| s.score.abs() > 1.0) {
                found += 1;
                eprintln!(
                    "{slope} {icpt} {period}: {} {:?}",
                    r.significant,
                    r.steps.iter().map(|s| s.score).collect::<Vec<_>>()
                );
            }
        }
    }
    assert_eq!(found, 0);
}

#[test]
fn a_negative_intercept_is_marked_on_lines_only() {
    // Two points, the quick run's receive line: 82.7·x − 74.9.
    let two = linear(&[(1.0, 7.8), (2.0, 90.5)]).unwrap();
    assert!(two.intercept_below_zero && !two.drawn());
    let mark = two.intercept_mark("µs").unwrap();
    assert!(mark.contains("intercept below 0 (−74.9 µs"), "{mark}");
    // Several points on a line through −50: wholly below 0, R² high.
    let many = linear(&[(10.0, 51.0), (20.0, 149.0), (30.0, 251.0), (40.0, 349.0)]).unwrap();
    assert!(many.intercept_below_zero && !many.weak && !many.drawn());
    assert!(many.intercept_mark("").unwrap().contains("95 % CI −"));
    // An interval reaching above 0 is not marked.
    let noisy = linear(&[(1.0, 0.0), (2.0, 4.0), (3.0, 2.0), (4.0, 6.0)]).unwrap();
    assert!(noisy.b < 0.0 && !noisy.intercept_below_zero);
    assert_eq!(noisy.intercept_mark("µs"), None);
    let positive = linear(&[(1.0, 30.0), (2.0, 40.0)]).unwrap();
    assert!(!positive.intercept_below_zero && positive.drawn());
    // A power law's coefficient is no intercept: never marked, even when
    // its log-space intercept (ln a) is negative.
    let power = power(&[(1.0, 0.01), (2.0, 0.04), (3.0, 0.09)]).unwrap();
    assert!(power.a < 1.0 && !power.intercept_below_zero, "{power:?}");
}
