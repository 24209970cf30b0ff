//! Repeating a point until its answer is known (issue 16): repetitions
//! go on until the 95 % interval of the point's mean is within the target
//! (`stats::Target`), or a cap on repetitions or on the point's time says
//! it cannot be had here. The minimum number of repetitions is always run.

use std::time::Duration;

use crate::core_trip::CoreTrips;
use serde::Serialize;
pub use stats::{Target, Verdict};

use crate::error::TrafficError;

/// The most repetitions a point may be given (a typo must not run a
/// point for days).
pub const MAX_REPS: usize = 1000;
/// The longest a point may repeat for.
pub const MAX_TIME: Duration = Duration::from_secs(3600);

/// Refuses a target that cannot stop or cannot judge.
pub fn check(target: &Target) -> Result<(), TrafficError> {
    let invalid = |m: String| Err(TrafficError::Invalid(m));
    if !(target.relative.is_finite() && target.relative > 0.0 && target.relative <= 1.0) {
        return invalid(format!(
            "a CI target of ±{} % is impossible: give above 0 and at most 100 %",
            target.relative * 100.0
        ));
    }
    if target.min_reps == 0 {
        return invalid("--reps must be at least 1".into());
    }
    if target.max_reps < target.min_reps || target.max_reps > MAX_REPS {
        return invalid(format!(
            "--max-reps {} must be at least --reps ({}) and at most {MAX_REPS}",
            target.max_reps, target.min_reps
        ));
    }
    if target.max_time.is_zero() || target.max_time > MAX_TIME {
        return invalid(format!(
            "--max-time {:.3} s: give above 0 and at most {} s",
            target.max_time.as_secs_f64(),
            MAX_TIME.as_secs()
        ));
    }
    Ok(())
}

/// How a point's repetitions ended, and what else ran on the machine
/// meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PointRun {
    /// Met, or which cap stopped it.
    pub verdict: Verdict,
    /// The target half-width of the mean's 95 % interval, in percent.
    pub target_percent: f64,
    /// Wall time of all repetitions, in seconds.
    pub elapsed_s: f64,
    /// CPUs' worth of time other processes used during the point (0.5 =
    /// half a core on average); `None` when /proc could not be read.
    pub others_cpu: Option<f64>,
    /// The machine's state before each repetition and after the last
    /// ([`crate::core_trip`]); `None` where it could not be measured.
    pub core_trip: Option<CoreTrips>,
    /// The CPU the background load was pinned to (`--load-on server` or
    /// `client`); `None` when it ran unpinned.
    pub load_cpu: Option<usize>,
    /// Whether the side load's pins held: the spinners on `load_cpu`,
    /// the receiver and the sender on their CPUs in every repetition.
    /// `None` when the point pinned nothing (`both`); `false` when the
    /// kernel refused a pin or the machine has one CPU.
    pub pinned: Option<bool>,
}

impl Default for PointRun {
    /// A point judged by nothing yet (unit tests' made-up points).
    fn default() -> Self {
        Self {
            verdict: Verdict::Continue,
            target_percent: Target::default().relative * 100.0,
            elapsed_s: 0.0,
            others_cpu: None,
            core_trip: None,
            load_cpu: None,
            pinned: None,
        }
    }
}

/// What the verdict says in a table: `met`, `rep cap`, `time cap`.
pub fn verdict_text(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Met => "met",
        Verdict::RepCap => "rep cap",
        Verdict::TimeCap => "time cap",
        Verdict::Continue => "not judged",
    }
}

/// Runs `one` (given the 1-based repetition) until `target` judges the
/// figures `figure` takes from its results: at least `min_reps` times,
/// then until the interval is narrow enough or a cap is reached.
/// `elapsed` is the time since the first repetition began (a parameter so
/// the controller can be tested without a clock). A failing repetition
/// ends the point with its error.
pub fn until_known<T, E>(
    target: &Target,
    mut elapsed: impl FnMut() -> Duration,
    mut one: impl FnMut(u32) -> Result<T, E>,
    figure: impl Fn(&T) -> f64,
) -> Result<(Vec<T>, Verdict), E> {
    let mut results = Vec::new();
    let mut values = Vec::new();
    loop {
        let rep = results.len() as u32 + 1;
        let result = one(rep)?;
        values.push(figure(&result));
        results.push(result);
        let verdict = target.judge(&values, elapsed());
        // The minimum is a minimum: neither an early narrow interval nor
        // the time cap ends a point before it (the repetition cap is
        // never below it: `check`).
        if verdict.done() && (results.len() >= target.min_reps || verdict == Verdict::RepCap) {
            return Ok((results, verdict));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake measurement: a deterministic noisy sequence around `mean`
    /// (alternating ±`spread`, a crude but known noise), with a clock that
    /// advances `per_rep` for every repetition.
    struct Source {
        mean: f64,
        spread: f64,
        per_rep: Duration,
    }

    impl Source {
        fn new(mean: f64, spread: f64, per_rep: Duration) -> Self {
            Self {
                mean,
                spread,
                per_rep,
            }
        }

        fn run(&self, target: &Target) -> (Vec<f64>, Verdict) {
            let per_rep = self.per_rep;
            let ran = std::cell::Cell::new(0u32);
            let (mean, spread) = (self.mean, self.spread);
            until_known(
                target,
                || per_rep * ran.get(),
                |rep| {
                    ran.set(rep);
                    let sign = if rep % 2 == 0 { 1.0 } else { -1.0 };
                    Ok::<f64, ()>(mean + sign * spread)
                },
                |v| *v,
            )
            .unwrap()
        }
    }

    fn target(relative: f64, min: usize, max: usize, secs: u64) -> Target {
        Target {
            relative,
            min_reps: min,
            max_reps: max,
            max_time: Duration::from_secs(secs),
        }
    }

    #[test]
    fn a_quiet_source_stops_at_the_minimum_with_the_target_met() {
        let s = Source::new(100.0, 0.1, Duration::from_secs(1));
        let (values, verdict) = s.run(&target(0.02, 3, 30, 60));
        assert_eq!((values.len(), verdict), (3, Verdict::Met));
    }

    #[test]
    fn a_noisier_source_repeats_until_the_interval_is_narrow_enough() {
        // ±5 around 100: s ≈ 5, half-width t·5/√n ≤ 2 needs n ≥ 27 or so
        // (t(26) = 2.056: 2.056·5.1/√27 = 2.02; n = 28 gives 1.98).
        let s = Source::new(100.0, 5.0, Duration::from_millis(10));
        let (values, verdict) = s.run(&target(0.02, 3, 100, 60));
        assert_eq!(verdict, Verdict::Met);
        let e = stats::Estimate::of(&values).unwrap();
        assert!(e.relative_half_width().unwrap() <= 0.02);
        // One repetition fewer would not have met it.
        let fewer = stats::Estimate::of(&values[..values.len() - 1]).unwrap();
        assert!(
            fewer.relative_half_width().unwrap() > 0.02,
            "{}",
            values.len()
        );
        assert!((20..40).contains(&values.len()), "{}", values.len());
    }

    #[test]
    fn caps_stop_a_source_that_cannot_meet_the_target() {
        let noisy = |per_rep| Source::new(100.0, 50.0, per_rep);
        let (values, verdict) = noisy(Duration::from_millis(1)).run(&target(0.02, 3, 8, 60));
        assert_eq!((values.len(), verdict), (8, Verdict::RepCap));
        // 2 s a repetition against a 7 s cap: stops after the fourth
        // (8 s elapsed), not at the rep cap.
        let (values, verdict) = noisy(Duration::from_secs(2)).run(&target(0.02, 3, 30, 7));
        assert_eq!((values.len(), verdict), (4, Verdict::TimeCap));
    }

    #[test]
    fn the_minimum_is_run_even_past_the_time_cap() {
        let s = Source::new(100.0, 50.0, Duration::from_secs(100));
        let (values, verdict) = s.run(&target(0.02, 5, 30, 1));
        assert_eq!((values.len(), verdict), (5, Verdict::TimeCap));
    }

    #[test]
    fn a_failing_repetition_ends_the_point() {
        let t = target(0.02, 3, 30, 60);
        let out = until_known(
            &t,
            || Duration::ZERO,
            |rep| if rep == 2 { Err("boom") } else { Ok(1.0) },
            |v: &f64| *v,
        );
        assert_eq!(out, Err("boom"));
    }

    #[test]
    fn impossible_targets_are_refused() {
        assert!(check(&Target::default()).is_ok());
        let err = |t: Target| check(&t).unwrap_err().to_string();
        assert!(err(target(0.0, 3, 30, 60)).contains("CI target"));
        assert!(err(target(f64::NAN, 3, 30, 60)).contains("CI target"));
        assert!(err(target(0.02, 0, 30, 60)).contains("--reps"));
        assert!(err(target(0.02, 5, 4, 60)).contains("--max-reps 4"));
        assert!(err(target(0.02, 3, 30, 0)).contains("--max-time"));
    }
}
