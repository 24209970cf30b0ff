//! Rate control (study §2.4.2): at most `burst` bytes per RTIMER period,
//! the period being `burst / rate` seconds, so the sender averages `rate`
//! bytes per second and never sends more than a burst at once.

use std::time::Duration;

use super::config::RateLimit;
use crate::time::Instant;

#[derive(Debug, Clone)]
pub struct RateControl {
    limit: Option<RateLimit>,
    /// Bytes this period may still carry; a packet may take it below zero
    /// (a packet is never split for the rate), the debt carried over.
    credit: i64,
    /// RTIMER: when the credit is next refreshed.
    rtimer: Option<Instant>,
    /// RTIMER periods whose credit ran out with data still to send (a
    /// sender held back by the rate, counted once per period).
    pub stalls: u64,
    held: bool,
}

impl RateControl {
    /// `None` or a zero rate or burst: unconstrained.
    pub fn new(limit: Option<RateLimit>) -> Self {
        let limit = limit.filter(|l| l.rate > 0 && l.burst > 0);
        Self {
            limit,
            credit: limit.map_or(0, |l| i64::from(l.burst)),
            rtimer: None,
            stalls: 0,
            held: false,
        }
    }

    /// Adopts a lower rate or burst the peer asked for (its traffic
    /// specifier's `inrate`/`inburst`; 0 leaves it unconstrained).
    pub fn limit_to(&mut self, rate: u32, burst: u32) {
        if rate == 0 || burst == 0 {
            return;
        }
        let limit = match self.limit {
            Some(l) => RateLimit {
                rate: l.rate.min(rate),
                burst: l.burst.min(burst),
            },
            None => RateLimit { rate, burst },
        };
        self.credit = self.credit.min(i64::from(limit.burst));
        if self.limit.is_none() {
            self.credit = i64::from(limit.burst);
        }
        self.limit = Some(limit);
    }

    pub fn limit(&self) -> Option<RateLimit> {
        self.limit
    }

    fn period(limit: RateLimit) -> Duration {
        let nanos = u128::from(limit.burst) * 1_000_000_000 / u128::from(limit.rate);
        Duration::from_nanos(u64::try_from(nanos.max(1)).unwrap_or(u64::MAX))
    }

    /// Refreshes the credit for every RTIMER period that passed.
    fn refresh(&mut self, now: Instant) {
        let Some(limit) = self.limit else { return };
        let period = Self::period(limit);
        while let Some(at) = self.rtimer.filter(|&t| t <= now) {
            self.credit = (self.credit + i64::from(limit.burst)).min(i64::from(limit.burst));
            self.held = false;
            self.rtimer = (self.credit < i64::from(limit.burst)).then_some(at + period);
        }
    }

    /// Whether a packet may leave now.
    pub fn allows(&mut self, now: Instant) -> bool {
        if self.limit.is_none() {
            return true;
        }
        self.refresh(now);
        let ok = self.credit > 0;
        if !ok && !self.held {
            self.held = true;
            self.stalls += 1;
        }
        ok
    }

    /// A packet of `bytes` data bytes left at `now`.
    pub fn consume(&mut self, now: Instant, bytes: usize) {
        let Some(limit) = self.limit else { return };
        self.credit -= i64::try_from(bytes).unwrap_or(i64::MAX);
        if self.rtimer.is_none() {
            self.rtimer = Some(now + Self::period(limit));
        }
    }

    /// When a sender held back by the rate may go on.
    pub fn deadline(&self) -> Option<Instant> {
        if self.credit > 0 {
            return None;
        }
        self.rtimer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_per_period() {
        // 1000 B/s in bursts of 100 B: one burst every 100 ms.
        let mut r = RateControl::new(Some(RateLimit {
            rate: 1000,
            burst: 100,
        }));
        let t0 = Instant::ZERO;
        assert!(r.allows(t0));
        r.consume(t0, 60);
        assert!(r.allows(t0));
        r.consume(t0, 60);
        assert!(!r.allows(t0));
        let at = r.deadline().unwrap();
        assert_eq!(at, t0 + Duration::from_millis(100));
        assert!(r.allows(at), "refreshed, less the 20-byte debt");
        r.consume(at, 80);
        assert!(!r.allows(at));
        assert!(!r.allows(at));
        assert_eq!(r.stalls, 2, "once per period held");
    }

    #[test]
    fn unconstrained_without_a_limit() {
        let mut r = RateControl::new(None);
        r.consume(Instant::ZERO, 1 << 30);
        assert!(r.allows(Instant::ZERO));
        assert!(r.deadline().is_none());
    }
}
