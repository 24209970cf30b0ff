//! The round-trip estimator and retransmission timeout (RFC 6298), with the
//! two ways of taking a sample: Karn's rule for plain segments (RFC 6298 §3)
//! and echoed timestamps (RFC 7323 §4, RTTM).
//!
//! This module computes the RTO; running the timer is the sender's job,
//! following RFC 6298 §5:
//!
//! * (5.1) Whenever a segment carrying data is sent (retransmissions
//!   included) and the timer is not running, start it to expire after
//!   [`RttEstimator::rto`].
//! * (5.2) When all outstanding data has been acknowledged, stop it.
//! * (5.3) When an ACK acknowledges new data, restart it with the current
//!   RTO.
//! * On expiry: (5.4) retransmit the earliest unacknowledged segment,
//!   (5.5) call [`RttEstimator::on_timeout`] to back the RTO off, (5.6)
//!   restart the timer with the backed-off RTO.
//! * (5.7) If the timer expired while the SYN was outstanding, call
//!   [`RttEstimator::on_established_after_syn_timeout`] once the handshake
//!   completes.
//!
//! The backed-off RTO stays in force until a fresh sample arrives (Karn's
//! algorithm, RFC 6298 §5 note and §3), which [`RttEstimator::sample`]
//! takes care of.

use std::time::Duration;

use super::seq::Seq;
use crate::time::Instant;

/// The floor RFC 6298 (2.4) asks for, and the initial RTO of (2.1).
const ONE_SECOND: Duration = Duration::from_secs(1);
/// RFC 6298 (5.7): the RTO after a SYN timed out.
const SYN_TIMEOUT_RTO: Duration = Duration::from_secs(3);

/// Settings of the estimator. The defaults are RFC 6298's: an initial RTO
/// of 1 s (2.1), a floor of 1 s (2.4) and a ceiling of 60 s (2.5, the least
/// the RFC allows for a ceiling). Smaller floors (Linux uses 200 ms) are a
/// deliberate departure a configuration may choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttConfig {
    /// RTO before the first sample (2.1).
    pub initial_rto: Duration,
    /// Lower bound on every computed RTO (2.4).
    pub min_rto: Duration,
    /// Upper bound on every RTO, backed off or not (2.5, 5.5).
    pub max_rto: Duration,
    /// Clock granularity G in RTO = SRTT + max(G, K*RTTVAR) (2.2, 2.3):
    /// the finest interval the runner's timers resolve.
    pub granularity: Duration,
}

impl Default for RttConfig {
    fn default() -> Self {
        Self {
            initial_rto: ONE_SECOND,
            min_rto: ONE_SECOND,
            max_rto: Duration::from_secs(60),
            granularity: Duration::from_millis(1),
        }
    }
}

impl RttConfig {
    /// The same settings made consistent: `max_rto` at least `min_rto`,
    /// `initial_rto` between them.
    fn normalized(self) -> Self {
        let max_rto = self.max_rto.max(self.min_rto);
        Self {
            initial_rto: self.initial_rto.clamp(self.min_rto, max_rto),
            min_rto: self.min_rto,
            max_rto,
            granularity: self.granularity,
        }
    }
}

/// SRTT, RTTVAR and the RTO derived from them (RFC 6298 §2), with the
/// exponential backoff of §5.5.
#[derive(Debug, Clone)]
pub struct RttEstimator {
    config: RttConfig,
    srtt: Option<Duration>,
    /// SRTT and RTTVAR in nanoseconds: a sample per ACK is worked out in
    /// integers, without converting `Duration`s (each a division) back and
    /// forth.
    srtt_nanos: Option<u64>,
    rttvar: u64,
    /// The RTO in force, backoff included.
    rto: Duration,
    /// `rto` in nanoseconds, for the timer's deadline at each segment.
    rto_nanos: u64,
    /// Granularity, floor and ceiling in nanoseconds, when all three are
    /// below 2^64 ns (584 years): the RTO is then worked out in `u64`.
    bounds_nanos: Option<(u64, u64, u64)>,
    /// Timeouts since the last sample.
    backoffs: u32,
    samples: u64,
}

impl Default for RttEstimator {
    fn default() -> Self {
        Self::new(RttConfig::default())
    }
}

impl RttEstimator {
    /// An estimator with no sample yet: RTO = `initial_rto` (2.1).
    pub fn new(config: RttConfig) -> Self {
        let config = config.normalized();
        let fits = |d: Duration| u64::try_from(d.as_nanos()).ok().filter(|&n| n < u64::MAX);
        let bounds_nanos = fits(config.granularity)
            .zip(fits(config.min_rto))
            .zip(fits(config.max_rto))
            .map(|((g, lo), hi)| (g, lo, hi));
        let mut estimator = Self {
            config,
            srtt: None,
            srtt_nanos: None,
            rttvar: 0,
            rto: config.initial_rto,
            rto_nanos: 0,
            bounds_nanos,
            backoffs: 0,
            samples: 0,
        };
        estimator.set_rto(config.initial_rto);
        estimator
    }

    fn set_rto(&mut self, rto: Duration) {
        self.rto = rto;
        self.rto_nanos = nanos(rto);
    }

    /// Feeds one RTT measurement R (2.2 for the first, 2.3 afterwards) and
    /// recomputes the RTO, which also ends any backoff. The caller must
    /// not pass measurements from retransmitted segments unless they came
    /// from timestamps (Karn's rule, §3): see [`KarnSampler`] and
    /// [`TimestampClock`].
    pub fn sample(&mut self, rtt: Duration) {
        self.sample_weighted(rtt, 1);
    }

    /// [`sample`](Self::sample) of R in nanoseconds, as the connection
    /// measures it (no `Duration` made and taken apart per ACK).
    pub fn sample_nanos(&mut self, rtt_nanos: u64) {
        self.sample_weighted_nanos(rtt_nanos, 1);
    }

    /// Like [`RttEstimator::sample`], for a sender taking one sample per ACK
    /// from timestamps: RFC 7323 Appendix G divides alpha and beta by
    /// `expected_samples` = ceil(FlightSize / (2 * SMSS)) so that many
    /// samples per round trip keep the history length RFC 6298 intends.
    /// `expected_samples` of 0 or 1 is plain RFC 6298.
    pub fn sample_weighted(&mut self, rtt: Duration, expected_samples: u32) {
        self.sample_weighted_nanos(nanos(rtt), expected_samples);
    }

    /// [`sample_weighted`](Self::sample_weighted) of R in nanoseconds.
    fn sample_weighted_nanos(&mut self, r: u64, expected_samples: u32) {
        let n = u64::from(expected_samples.max(1));
        let (srtt, rttvar) = match self.srtt_nanos {
            // (2.2) SRTT <- R, RTTVAR <- R/2.
            None => (r, r / 2),
            // (2.3) RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|, then
            // SRTT <- (1 - alpha) * SRTT + alpha * R', beta = 1/4 and
            // alpha = 1/8 (each divided by n per RFC 7323 Appendix G).
            // RTTVAR uses the SRTT from before this sample.
            Some(old) => {
                let rttvar = blend(self.rttvar, 4 * n, old.abs_diff(r));
                let srtt = blend(old, 8 * n, r);
                (srtt, rttvar)
            }
        };
        self.srtt_nanos = Some(srtt);
        self.srtt = Some(Duration::from_nanos(srtt));
        self.rttvar = rttvar;
        self.samples = self.samples.saturating_add(1);
        self.backoffs = 0;
        self.update_rto();
    }

    /// RTO = SRTT + max(G, K*RTTVAR) with K = 4 (2.2, 2.3), bounded by the
    /// floor (2.4) and the ceiling (2.5).
    fn update_rto(&mut self) {
        let Some(srtt) = self.srtt_nanos else {
            self.set_rto(self.config.initial_rto);
            return;
        };
        // In nanoseconds unless a bound or the sum passes 2^64 ns.
        let sum = self.bounds_nanos.and_then(|(granularity, min, max)| {
            let variance = self.rttvar.checked_mul(4)?.max(granularity);
            Some(srtt.checked_add(variance)?.max(min).min(max))
        });
        match sum {
            Some(rto) => {
                self.rto = Duration::from_nanos(rto);
                self.rto_nanos = rto;
            }
            None => self.set_rto(self.computed_rto_wide(srtt)),
        }
    }

    /// [`update_rto`](Self::update_rto)'s RTO in `Duration`s, for bounds or
    /// values beyond 2^64 ns.
    #[cold]
    #[inline(never)]
    fn computed_rto_wide(&self, srtt: u64) -> Duration {
        let variance = self
            .config
            .granularity
            .max(Duration::from_nanos(self.rttvar).saturating_mul(4));
        Duration::from_nanos(srtt)
            .saturating_add(variance)
            .clamp(self.config.min_rto, self.config.max_rto)
    }

    /// When a retransmission timer started at `now` expires: `now` plus
    /// the RTO (as `now + rto()`, without converting the `Duration`).
    #[inline]
    pub fn deadline(&self, now: Instant) -> Instant {
        Instant::from_nanos(now.as_nanos().saturating_add(self.rto_nanos))
    }

    /// The retransmission timer expired: RTO <- RTO * 2, at most `max_rto`
    /// (5.5).
    pub fn on_timeout(&mut self) {
        self.backoffs = self.backoffs.saturating_add(1);
        self.set_rto(self.rto.saturating_mul(2).min(self.config.max_rto));
    }

    /// RFC 6298 (5.7): the handshake completed after the SYN (or SYN-ACK)
    /// timed out, and no sample has replaced the initial RTO since, so data
    /// transfer starts with an RTO of at least 3 s (never above `max_rto`).
    /// A later sample supersedes it as usual.
    pub fn on_established_after_syn_timeout(&mut self) {
        if self.srtt.is_none() {
            self.backoffs = 0;
            self.set_rto(
                self.config
                    .initial_rto
                    .max(SYN_TIMEOUT_RTO)
                    .min(self.config.max_rto),
            );
        }
    }

    /// The RTO to arm the retransmission timer with, backoff included.
    pub fn rto(&self) -> Duration {
        self.rto
    }

    /// SRTT, once a sample has been taken.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// RTTVAR (zero before the first sample).
    pub fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar)
    }

    /// Samples taken so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Timeouts since the last sample: how far the RTO is backed off.
    pub fn backoffs(&self) -> u32 {
        self.backoffs
    }

    /// The settings in force (after making them consistent).
    pub fn config(&self) -> RttConfig {
        self.config
    }
}

/// Nanoseconds, saturating at 2^64 - 1 (584 years): no real RTT comes
/// close, and the bound keeps the weighted products of [`blend`] within
/// u128.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `(average * (weight - 1) + sample) / weight`, rounded down, exactly: one
/// step of RFC 6298's moving averages with gain 1/`weight` (`weight` >= 1).
/// Done in u64, where a weight that is a power of two (4 and 8, one sample
/// per round trip: every sample the stack takes) divides by a shift;
/// u128 (a call to a software division) only for products past 2^64, of
/// averages centuries long. The result lies between `average` and
/// `sample`, so it fits u64.
fn blend(average: u64, weight: u64, sample: u64) -> u64 {
    let sum = average
        .checked_mul(weight - 1)
        .and_then(|product| product.checked_add(sample));
    match sum {
        Some(sum) if weight.is_power_of_two() => sum >> weight.trailing_zeros(),
        Some(sum) => sum / weight,
        None => {
            let sum = u128::from(average) * u128::from(weight - 1) + u128::from(sample);
            (sum / u128::from(weight)) as u64
        }
    }
}

/// Times one segment at a time and yields a sample only if that segment
/// was never retransmitted — Karn's rule (RFC 6298 §3): an ACK for a
/// retransmitted segment cannot say which transmission it answers.
///
/// Any retransmission cancels the measurement, not only one of the timed
/// segment: if an earlier segment is repaired, the cumulative ACK that
/// covers the timed segment waits for that repair and would overstate the
/// RTT.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KarnSampler {
    timed: Option<Timed>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Timed {
    /// The sequence number just past the timed segment.
    end: Seq,
    sent_at: Instant,
}

impl KarnSampler {
    pub fn new() -> Self {
        Self::default()
    }

    /// A segment carrying new data (never sent before) went out; `end` is
    /// the sequence number just past it. It is timed unless another
    /// segment already is. Returns whether this one is now being timed.
    pub fn on_send(&mut self, end: Seq, now: Instant) -> bool {
        if self.timed.is_some() {
            return false;
        }
        self.timed = Some(Timed { end, sent_at: now });
        true
    }

    /// Some segment was retransmitted (by timeout or fast retransmit): the
    /// measurement in progress is void.
    pub fn on_retransmit(&mut self) {
        self.timed = None;
    }

    /// An ACK arrived with cumulative acknowledgment `ack`. If it covers
    /// the whole timed segment, the elapsed time is the sample and the
    /// sampler is free for the next segment.
    pub fn on_ack(&mut self, ack: Seq, now: Instant) -> Option<Duration> {
        self.on_ack_nanos(ack, now).map(Duration::from_nanos)
    }

    /// [`on_ack`](Self::on_ack)'s sample in nanoseconds.
    pub fn on_ack_nanos(&mut self, ack: Seq, now: Instant) -> Option<u64> {
        let timed = self.timed?;
        if ack < timed.end {
            return None;
        }
        self.timed = None;
        Some(now.as_nanos().saturating_sub(timed.sent_at.as_nanos()))
    }

    /// Whether a segment is being timed.
    pub fn is_timing(&self) -> bool {
        self.timed.is_some()
    }
}

/// The timestamp clock behind TSval (RFC 7323 §5.4) and the RTT sample an
/// echoed TSecr gives (RTTM, RFC 7323 §4). Unlike [`KarnSampler`], samples
/// from ACKs of retransmitted data are sound: the echoed TSval names the
/// transmission that was answered (RFC 6298 §3).
///
/// Take samples only from ACKs that advance SND.UNA: the receiver echoes
/// the TSval of the segment that last advanced its window (RFC 7323 §4.2),
/// so a duplicate ACK during reordering or loss echoes an old timestamp and
/// would overstate the RTT.
/// Nanoseconds of the default TSval tick, [`TimestampClock::MIN_TICK`].
const NANOS_PER_MILLI: u64 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampClock {
    tick_nanos: u64,
    offset: u32,
}

impl TimestampClock {
    /// The tick RFC 7323 §5.4 allows at its finest, and the default here.
    pub const MIN_TICK: Duration = Duration::from_millis(1);
    /// The coarsest tick RFC 7323 §5.4 allows.
    pub const MAX_TICK: Duration = Duration::from_secs(1);

    /// A clock ticking every `tick` (held to 1 ms ..= 1 s, RFC 7323 §5.4)
    /// and starting at `offset`, which should be random per connection so
    /// TSval does not reveal the host's clock (RFC 7323 §7).
    pub fn new(tick: Duration, offset: u32) -> Self {
        let tick = tick.clamp(Self::MIN_TICK, Self::MAX_TICK);
        // The clamp keeps the tick within 1 ms ..= 1 s, so it fits in u64
        // nanoseconds and is never zero.
        let tick_nanos = u64::try_from(tick.as_nanos()).unwrap_or(1_000_000);
        Self { tick_nanos, offset }
    }

    /// The TSval to put in a segment sent at `now`.
    pub fn tsval(&self, now: Instant) -> u32 {
        // The tick counter wraps modulo 2^32 like every TSval (RFC 7323 §5.2).
        // The default tick divides by a constant: a multiplication, not a
        // division instruction (tens of cycles) for every segment sent and
        // every RTT sample taken. Same quotient either way.
        let nanos = now.as_nanos();
        let ticks = if self.tick_nanos == NANOS_PER_MILLI {
            nanos / NANOS_PER_MILLI
        } else {
            nanos / self.tick_nanos.max(1)
        };
        (ticks as u32).wrapping_add(self.offset)
    }

    /// The RTT measured by an ACK whose TSecr is `tsecr`, received at `now`.
    /// `None` if the echo lies in the clock's future or more than 2^31
    /// ticks back (modular comparison, RFC 7323 §5.2): it cannot be one of
    /// ours.
    pub fn rtt_sample(&self, now: Instant, tsecr: u32) -> Option<Duration> {
        self.rtt_sample_nanos(now, tsecr).map(Duration::from_nanos)
    }

    /// [`rtt_sample`](Self::rtt_sample) in nanoseconds.
    pub fn rtt_sample_nanos(&self, now: Instant, tsecr: u32) -> Option<u64> {
        let elapsed = self.tsval(now).wrapping_sub(tsecr);
        if elapsed >= 1 << 31 {
            return None;
        }
        Some(self.tick_nanos.saturating_mul(u64::from(elapsed)))
    }

    /// The clock's resolution: a sample is accurate to one tick, which makes
    /// it the natural granularity G for [`RttConfig`] when RTTM supplies
    /// the samples.
    pub fn tick(&self) -> Duration {
        Duration::from_nanos(self.tick_nanos)
    }
}

impl Default for TimestampClock {
    fn default() -> Self {
        Self::new(Self::MIN_TICK, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A configuration without the 1 s floor, so the formulas show.
    fn open() -> RttConfig {
        RttConfig {
            initial_rto: ONE_SECOND,
            min_rto: Duration::ZERO,
            max_rto: Duration::from_secs(60),
            granularity: ms(1),
        }
    }

    #[test]
    fn starts_at_the_initial_rto() {
        let est = RttEstimator::default();
        assert_eq!(est.rto(), ONE_SECOND);
        assert_eq!(est.srtt(), None);
        assert_eq!(est.samples(), 0);
    }

    #[test]
    fn first_sample_sets_srtt_and_half_as_rttvar() {
        let mut est = RttEstimator::new(open());
        est.sample(ms(100));
        // (2.2): SRTT = 100, RTTVAR = 50, RTO = 100 + 4*50 = 300.
        assert_eq!(est.srtt(), Some(ms(100)));
        assert_eq!(est.rttvar(), ms(50));
        assert_eq!(est.rto(), ms(300));
        assert_eq!(est.samples(), 1);
    }

    #[test]
    fn later_samples_follow_the_smoothing_formulas() {
        let mut est = RttEstimator::new(open());
        est.sample(ms(100));
        est.sample(ms(200));
        // (2.3): RTTVAR = 3/4*50 + 1/4*|100-200| = 62.5,
        // SRTT = 7/8*100 + 1/8*200 = 112.5, RTO = 112.5 + 250 = 362.5.
        assert_eq!(est.rttvar(), Duration::from_micros(62_500));
        assert_eq!(est.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(est.rto(), Duration::from_micros(362_500));
        est.sample(ms(80));
        // RTTVAR = 3/4*62.5 + 1/4*|112.5-80| = 46.875 + 8.125 = 55,
        // SRTT = 7/8*112.5 + 1/8*80 = 98.4375 + 10 = 108.4375,
        // RTO = 108.4375 + 220 = 328.4375.
        assert_eq!(est.rttvar(), ms(55));
        assert_eq!(est.srtt(), Some(Duration::from_nanos(108_437_500)));
        assert_eq!(est.rto(), Duration::from_nanos(328_437_500));
    }

    #[test]
    fn granularity_bounds_the_variance_term() {
        let mut est = RttEstimator::new(RttConfig {
            granularity: ms(10),
            ..open()
        });
        for _ in 0..200 {
            est.sample(ms(20));
        }
        // RTTVAR has decayed to nothing; RTO = SRTT + G.
        assert!(est.rttvar() < Duration::from_micros(1));
        assert_eq!(est.rto(), ms(30));
    }

    #[test]
    fn rto_is_floored_at_one_second_by_default() {
        let mut est = RttEstimator::default();
        est.sample(ms(10));
        assert_eq!(est.rto(), ONE_SECOND);
        let mut custom = RttEstimator::new(RttConfig {
            min_rto: ms(200),
            ..RttConfig::default()
        });
        custom.sample(ms(10));
        assert_eq!(custom.rto(), ms(200));
    }

    #[test]
    fn rto_is_capped_at_the_maximum() {
        let mut est = RttEstimator::default();
        est.sample(Duration::from_secs(100));
        assert_eq!(est.rto(), Duration::from_secs(60));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_a_sample_resets_it() {
        let mut est = RttEstimator::new(RttConfig {
            max_rto: Duration::from_secs(10),
            ..RttConfig::default()
        });
        est.sample(ms(500));
        // RTO = 500 + 4*250 = 1500 ms.
        assert_eq!(est.rto(), ms(1500));
        est.on_timeout();
        assert_eq!(est.rto(), ms(3000));
        est.on_timeout();
        assert_eq!(est.rto(), ms(6000));
        est.on_timeout();
        assert_eq!(est.rto(), Duration::from_secs(10));
        est.on_timeout();
        assert_eq!(est.rto(), Duration::from_secs(10));
        assert_eq!(est.backoffs(), 4);
        // A fresh sample recomputes from SRTT/RTTVAR: RTTVAR = 3/4*250 +
        // 1/4*0 = 187.5, SRTT = 500, RTO = 500 + 750 = 1250.
        est.sample(ms(500));
        assert_eq!(est.backoffs(), 0);
        assert_eq!(est.rto(), ms(1250));
    }

    #[test]
    fn backoff_before_any_sample_starts_from_the_initial_rto() {
        let mut est = RttEstimator::default();
        est.on_timeout();
        est.on_timeout();
        assert_eq!(est.rto(), Duration::from_secs(4));
    }

    #[test]
    fn syn_timeout_raises_the_rto_to_three_seconds() {
        let mut est = RttEstimator::default();
        est.on_timeout();
        est.on_established_after_syn_timeout();
        assert_eq!(est.rto(), Duration::from_secs(3));
        assert_eq!(est.backoffs(), 0);
        // With a sample in hand (e.g. from timestamps) the rule does not apply.
        let mut sampled = RttEstimator::new(open());
        sampled.sample(ms(100));
        sampled.on_established_after_syn_timeout();
        assert_eq!(sampled.rto(), ms(300));
    }

    #[test]
    fn inconsistent_config_is_made_consistent() {
        let est = RttEstimator::new(RttConfig {
            initial_rto: Duration::from_secs(100),
            min_rto: Duration::from_secs(5),
            max_rto: Duration::from_secs(2),
            granularity: ms(1),
        });
        assert_eq!(est.config().max_rto, Duration::from_secs(5));
        assert_eq!(est.rto(), Duration::from_secs(5));
    }

    #[test]
    fn weighted_samples_smooth_more_slowly() {
        let mut plain = RttEstimator::new(open());
        let mut weighted = RttEstimator::new(open());
        plain.sample(ms(100));
        weighted.sample_weighted(ms(100), 4);
        plain.sample(ms(180));
        weighted.sample_weighted(ms(180), 4);
        // alpha' = 1/32: SRTT = 31/32*100 + 1/32*180 = 102.5;
        // beta' = 1/16: RTTVAR = 15/16*50 + 1/16*80 = 51.875.
        assert_eq!(weighted.srtt(), Some(Duration::from_micros(102_500)));
        assert_eq!(weighted.rttvar(), Duration::from_micros(51_875));
        assert_eq!(plain.srtt(), Some(ms(110)));
        // A weight of 0 is taken as 1.
        let mut zero = RttEstimator::new(open());
        zero.sample_weighted(ms(100), 0);
        zero.sample_weighted(ms(180), 0);
        assert_eq!(zero.srtt(), plain.srtt());
    }

    #[test]
    fn karn_samples_an_untouched_segment() {
        let mut karn = KarnSampler::new();
        let t0 = Instant::from_nanos(1_000_000);
        assert!(karn.on_send(Seq(1100), t0));
        // A second segment is not timed while the first is.
        assert!(!karn.on_send(Seq(2200), t0 + ms(1)));
        // A partial ACK does not cover the timed segment.
        assert_eq!(karn.on_ack(Seq(1000), t0 + ms(30)), None);
        assert_eq!(karn.on_ack(Seq(1100), t0 + ms(40)), Some(ms(40)));
        assert!(!karn.is_timing());
        // Nothing is timed now.
        assert_eq!(karn.on_ack(Seq(2200), t0 + ms(50)), None);
    }

    #[test]
    fn karn_ignores_retransmitted_segments() {
        let mut karn = KarnSampler::new();
        let t0 = Instant::from_nanos(5);
        karn.on_send(Seq(500), t0);
        karn.on_retransmit();
        assert_eq!(karn.on_ack(Seq(500), t0 + ms(900)), None);
        // The next new segment is timed afresh.
        assert!(karn.on_send(Seq(1000), t0 + ms(901)));
        assert_eq!(karn.on_ack(Seq(1000), t0 + ms(950)), Some(ms(49)));
    }

    #[test]
    fn karn_handles_sequence_wrap() {
        let mut karn = KarnSampler::new();
        let t0 = Instant::ZERO;
        karn.on_send(Seq(10), t0);
        assert_eq!(karn.on_ack(Seq(u32::MAX - 5), t0 + ms(1)), None);
        assert_eq!(karn.on_ack(Seq(20), t0 + ms(7)), Some(ms(7)));
    }

    #[test]
    fn timestamps_measure_the_echoed_transmission() {
        let clock = TimestampClock::new(ms(1), 0xFFFF_FF00);
        let sent = Instant::from_nanos(3_000_000_000);
        let tsval = clock.tsval(sent);
        // The retransmission carries a later TSval; the echo names it.
        let resent = sent + ms(1000);
        let tsval_resent = clock.tsval(resent);
        let now = resent + ms(120);
        assert_eq!(clock.rtt_sample(now, tsval_resent), Some(ms(120)));
        assert_eq!(clock.rtt_sample(now, tsval), Some(ms(1120)));
    }

    #[test]
    fn timestamps_wrap_and_reject_future_echoes() {
        // Offset chosen so the counter wraps between send and receive.
        let clock = TimestampClock::new(ms(1), u32::MAX - 4);
        let sent = Instant::ZERO;
        let tsval = clock.tsval(sent);
        let now = sent + ms(10);
        assert!(clock.tsval(now) < tsval);
        assert_eq!(clock.rtt_sample(now, tsval), Some(ms(10)));
        assert_eq!(
            clock.rtt_sample(now, clock.tsval(now).wrapping_add(1)),
            None
        );
    }

    #[test]
    fn timestamp_tick_is_held_to_the_rfc_range() {
        assert_eq!(TimestampClock::new(Duration::ZERO, 0).tick(), ms(1));
        assert_eq!(
            TimestampClock::new(Duration::from_secs(9), 0).tick(),
            Duration::from_secs(1)
        );
        // Sub-tick RTTs read as zero; the estimator's G covers them.
        let clock = TimestampClock::new(ms(10), 7);
        let t = Instant::from_nanos(25_000_000);
        assert_eq!(clock.rtt_sample(t + ms(4), clock.tsval(t)), Some(ms(0)));
    }

    proptest! {
        /// TSval is the tick count since zero plus the offset, modulo
        /// 2^32, whatever the tick (the default one takes its own path).
        #[test]
        fn tsval_counts_ticks(
            nanos in any::<u64>(),
            tick_ms in prop_oneof![Just(1u64), 1u64..=1000],
            offset in any::<u32>(),
        ) {
            let clock = TimestampClock::new(ms(tick_ms), offset);
            let expected = ((nanos / (tick_ms * 1_000_000)) as u32).wrapping_add(offset);
            prop_assert_eq!(clock.tsval(Instant::from_nanos(nanos)), expected);
        }

        /// The u64 paths of `blend` (shift, division) give what the u128
        /// formula gives, and so does its u128 fallback.
        #[test]
        fn blend_is_the_exact_weighted_average(
            average in any::<u64>(),
            sample in any::<u64>(),
            n in any::<u32>(),
            small in 0u64..1 << 40,
        ) {
            let exact = |a: u64, w: u64, s: u64| {
                let sum = u128::from(a) * u128::from(w - 1) + u128::from(s);
                u64::try_from(sum / u128::from(w)).ok()
            };
            let n = u64::from(n.max(1));
            for weight in [4, 8, 4 * n, 8 * n] {
                for (a, s) in [(average, sample), (small, sample), (small, small / 3)] {
                    prop_assert_eq!(Some(blend(a, weight, s)), exact(a, weight, s));
                }
            }
        }

        #[test]
        fn rto_stays_within_bounds(
            min_ms in 0u64..5_000,
            span_ms in 0u64..120_000,
            g_ms in 0u64..1_000,
            events in proptest::collection::vec((any::<bool>(), any::<u64>(), any::<u32>()), 0..64),
        ) {
            let cfg = RttConfig {
                initial_rto: ONE_SECOND,
                min_rto: ms(min_ms),
                max_rto: ms(min_ms + span_ms),
                granularity: ms(g_ms),
            };
            let mut est = RttEstimator::new(cfg);
            for (timeout, r, weight) in events {
                if timeout {
                    est.on_timeout();
                } else {
                    est.sample_weighted(Duration::from_nanos(r), weight);
                }
                prop_assert!(est.rto() >= cfg.min_rto);
                prop_assert!(est.rto() <= cfg.max_rto);
            }
        }

        #[test]
        fn srtt_stays_between_the_extreme_samples(
            samples in proptest::collection::vec(1u64..10_000_000_000, 1..64),
        ) {
            let mut est = RttEstimator::new(open());
            for &s in &samples {
                est.sample(Duration::from_nanos(s));
            }
            let lo = *samples.iter().min().unwrap_or(&0);
            let hi = *samples.iter().max().unwrap_or(&0);
            let srtt = est.srtt().map(|d| d.as_nanos()).unwrap_or(0);
            // Integer division may round down by at most a nanosecond per step.
            prop_assert!(srtt + samples.len() as u128 >= u128::from(lo));
            prop_assert!(srtt <= u128::from(hi));
        }

        #[test]
        fn extreme_samples_never_panic(r in any::<u64>(), secs in any::<u64>(), weight in any::<u32>()) {
            let mut est = RttEstimator::new(RttConfig {
                max_rto: Duration::MAX,
                granularity: Duration::MAX,
                ..RttConfig::default()
            });
            est.sample(Duration::new(secs, 999_999_999));
            est.sample_weighted(Duration::MAX, weight);
            est.sample_weighted(Duration::from_nanos(r), weight);
            for _ in 0..70 {
                est.on_timeout();
            }
            prop_assert_eq!(est.rto(), Duration::MAX);
            let clock = TimestampClock::new(Duration::from_nanos(r), r as u32);
            let _ = clock.rtt_sample(Instant::from_nanos(r), secs as u32);
        }
    }
}
