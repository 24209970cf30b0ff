//! ICMP error rate limiting (RFC 4443 §2.4(f); RFC 1812 §4.3.2.8 for
//! ICMPv4 on routers).
//!
//! RFC 4443 §2.4(f): "an IPv6 node MUST limit the rate of ICMPv6 error
//! messages it originates ... A recommended method for implementing the
//! rate-limiting function is a token bucket, limiting the average rate of
//! transmission to N ... but allowing up to B error messages to be
//! transmitted in a burst ... The rate-limiting parameters SHOULD be
//! configurable ... in a small/mid-size device, the possible defaults could
//! be B=10, N=10/s." [`RateLimitConfig::default`] is that example: a bucket
//! of 10 tokens refilled with one token every 100 ms. (Linux's global ICMP
//! limit is B=50, N=1000/s, `net.ipv4.icmp_msgs_burst` /
//! `icmp_msgs_per_sec`; [`RateLimitConfig::linux_global`].)
//!
//! The bucket is integer arithmetic on the runner's clock: tokens are whole
//! messages, refilled one per `interval`, the fraction of an interval not
//! yet earned carried over, and nothing earned while the bucket is full.

use core::time::Duration;

use crate::time::Instant;

/// Parameters of an [`IcmpRateLimiter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitConfig {
    /// B: the most errors sent in a burst (bucket size). 0 counts as 1.
    pub burst: u32,
    /// 1/N: one token is earned per `interval`. Zero means unlimited.
    pub interval: Duration,
}

impl Default for RateLimitConfig {
    /// RFC 4443 §2.4(f)'s example for a small/mid-size device: B=10,
    /// N=10/s.
    fn default() -> Self {
        Self {
            burst: 10,
            interval: Duration::from_millis(100),
        }
    }
}

impl RateLimitConfig {
    /// Linux's global ICMP limit: 50 in a burst, 1000 per second.
    pub const fn linux_global() -> Self {
        Self {
            burst: 50,
            interval: Duration::from_millis(1),
        }
    }
}

/// What the limiter has decided, for the state dump.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimitCounters {
    /// Errors allowed.
    pub allowed: u64,
    /// Errors suppressed by the limit.
    pub suppressed: u64,
}

/// A token bucket for originated ICMP errors (RFC 4443 §2.4(f)). Starts
/// full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcmpRateLimiter {
    config: RateLimitConfig,
    tokens: u32,
    /// The point up to which time has been converted into tokens; `None`
    /// until the first call.
    refilled_at: Option<Instant>,
    counters: RateLimitCounters,
}

impl Default for IcmpRateLimiter {
    fn default() -> Self {
        Self::new(RateLimitConfig::default())
    }
}

impl IcmpRateLimiter {
    pub fn new(mut config: RateLimitConfig) -> Self {
        config.burst = config.burst.max(1);
        Self {
            config,
            tokens: config.burst,
            refilled_at: None,
            counters: RateLimitCounters::default(),
        }
    }

    pub fn config(&self) -> RateLimitConfig {
        self.config
    }

    pub fn counters(&self) -> RateLimitCounters {
        self.counters
    }

    /// Tokens available at `now` (errors that could be sent at once).
    pub fn available(&self, now: Instant) -> u32 {
        let mut probe = self.clone();
        probe.refill(now);
        probe.tokens
    }

    /// Whether an ICMP error may be originated at `now`; if so, spends a
    /// token. A `false` is counted as suppressed: the caller drops the
    /// error.
    pub fn allow(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.config.interval.is_zero() || self.tokens > 0 {
            if !self.config.interval.is_zero() {
                self.tokens -= 1;
            }
            self.counters.allowed += 1;
            true
        } else {
            self.counters.suppressed += 1;
            false
        }
    }

    /// When the next token will be earned if the bucket is not full.
    pub fn next_token_at(&self) -> Option<Instant> {
        if self.tokens >= self.config.burst || self.config.interval.is_zero() {
            return None;
        }
        self.refilled_at.map(|at| at + self.config.interval)
    }

    fn refill(&mut self, now: Instant) {
        let Some(since) = self.refilled_at else {
            self.refilled_at = Some(now);
            return;
        };
        let interval = self.config.interval.as_nanos();
        if interval == 0 || now <= since {
            return;
        }
        if self.tokens >= self.config.burst {
            // Nothing accrues while full.
            self.refilled_at = Some(now);
            return;
        }
        let elapsed = (now - since).as_nanos();
        let earned = elapsed / interval;
        if earned == 0 {
            return;
        }
        let room = u128::from(self.config.burst - self.tokens);
        if earned >= room {
            self.tokens = self.config.burst;
            self.refilled_at = Some(now);
        } else {
            // earned < room ≤ u32::MAX.
            self.tokens += earned as u32;
            let spent = Duration::from_nanos(u64::try_from(earned * interval).unwrap_or(u64::MAX));
            self.refilled_at = Some(since + spent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(m: u64) -> Instant {
        Instant::from_nanos(m * 1_000_000)
    }

    #[test]
    fn fractions_of_an_interval_carry_over() {
        let mut rl = IcmpRateLimiter::new(RateLimitConfig {
            burst: 2,
            interval: Duration::from_millis(100),
        });
        assert!(rl.allow(ms(0)));
        assert!(rl.allow(ms(0)));
        assert!(!rl.allow(ms(60)));
        // 60 + 40 ms: one token earned at exactly 100 ms.
        assert!(rl.allow(ms(100)));
        assert_eq!(rl.next_token_at(), Some(ms(200)));
        assert!(!rl.allow(ms(199)));
        assert!(rl.allow(ms(200)));
        assert_eq!(rl.counters().suppressed, 2);
    }

    #[test]
    fn zero_interval_is_unlimited() {
        let mut rl = IcmpRateLimiter::new(RateLimitConfig {
            burst: 1,
            interval: Duration::ZERO,
        });
        assert!((0..100).all(|_| rl.allow(ms(0))));
    }
}
