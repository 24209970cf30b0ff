//! Repeating a measurement until its answer is known: until the 95 %
//! interval of the mean is within a target, or a cap on repetitions or
//! time says it cannot be had here.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Estimate;

/// When to stop repeating.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The mean's 95 % half-width as a share of the mean (0.02 = ±2 %).
    pub relative: f64,
    /// Repetitions before the interval is trusted at all.
    pub min_reps: usize,
    pub max_reps: usize,
    /// Wall time after which the measurement stops where it is.
    pub max_time: Duration,
}

impl Default for Target {
    /// ±2 %, at least 3 and at most 30 repetitions, 60 s.
    fn default() -> Self {
        Self {
            relative: 0.02,
            min_reps: 3,
            max_reps: 30,
            max_time: Duration::from_secs(60),
        }
    }
}

/// What a measurement's repetitions came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Not yet: repeat.
    Continue,
    /// The interval is within the target.
    Met,
    /// Stopped at the repetition cap with the interval wider.
    RepCap,
    /// Stopped at the time cap with the interval wider.
    TimeCap,
}

impl Verdict {
    pub fn done(self) -> bool {
        self != Verdict::Continue
    }

    pub fn met(self) -> bool {
        self == Verdict::Met
    }
}

impl Target {
    /// Judges the repetitions so far, `elapsed` since the first began.
    /// An all-zero measurement (nothing got through) has met any target:
    /// repeating it cannot change it.
    pub fn judge(&self, values: &[f64], elapsed: Duration) -> Verdict {
        let estimate = Estimate::of(values);
        let n = estimate.map_or(0, |e| e.n);
        if n >= self.min_reps.max(2) {
            if let Some(e) = estimate {
                let exact_zero = e.mean == 0.0 && e.stdev == Some(0.0);
                if exact_zero || e.relative_half_width().is_some_and(|r| r <= self.relative) {
                    return Verdict::Met;
                }
            }
        }
        if n >= self.max_reps.max(1) {
            Verdict::RepCap
        } else if elapsed >= self.max_time {
            Verdict::TimeCap
        } else {
            Verdict::Continue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: Duration = Duration::from_millis(1);

    #[test]
    fn stops_when_the_interval_is_narrow_enough() {
        let t = Target::default();
        assert_eq!(
            t.judge(&[100.0, 100.1], SHORT),
            Verdict::Continue,
            "below min_reps"
        );
        assert_eq!(t.judge(&[100.0, 100.1, 99.9], SHORT), Verdict::Met);
        // ±2 % needs more than three values 10 % apart.
        assert_eq!(t.judge(&[100.0, 110.0, 90.0], SHORT), Verdict::Continue);
    }

    #[test]
    fn caps_stop_a_noisy_measurement() {
        let t = Target {
            max_reps: 4,
            ..Target::default()
        };
        let noisy = [1.0, 3.0, 1.0, 3.0];
        assert_eq!(t.judge(&noisy[..3], SHORT), Verdict::Continue);
        assert_eq!(t.judge(&noisy, SHORT), Verdict::RepCap);
        assert_eq!(
            t.judge(&noisy[..3], Duration::from_secs(61)),
            Verdict::TimeCap
        );
        assert!(!Verdict::RepCap.met() && Verdict::RepCap.done());
    }

    #[test]
    fn nothing_through_is_known_at_once() {
        assert_eq!(Target::default().judge(&[0.0; 3], SHORT), Verdict::Met);
    }
}
