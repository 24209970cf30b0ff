//! The runner's clock: nanoseconds, virtual in the simulator and monotonic
//! in the threaded runner. Everything in the stack takes `now` as an
//! argument instead of reading a clock, so the simulator can drive it.

use core::ops::{Add, AddAssign, Sub};
use core::time::Duration;

/// A point on the runner's clock, in nanoseconds since the run began.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);

    pub const fn from_nanos(nanos: u64) -> Self {
        Self(nanos)
    }

    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// Durations past 584 years saturate.
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;

    fn add(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_add(nanos(rhs)))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// Saturates at zero, like [`Instant::saturating_duration_since`].
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_nanos(1_000);
        assert_eq!((t + Duration::from_micros(1)).as_nanos(), 2_000);
        assert_eq!(t - Instant::from_nanos(400), Duration::from_nanos(600));
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!((t + Duration::MAX).as_nanos(), u64::MAX);
    }
}
