//! CUBIC (RFC 9438): in congestion avoidance the window follows
//!
//! ```text
//! W_cubic(t) = C * (t - K)^3 + W_max,   K = cbrt((W_max - cwnd_epoch) / C)
//! ```
//!
//! (§4.2, windows in segments, t in seconds since the congestion-avoidance
//! stage began), concave below W_max and convex above it (§4.4, §4.5), but
//! never slower than a Reno flow would grow (the Reno-friendly region,
//! §4.3). Loss cuts the window to beta_cubic = 0.7 of FlightSize (§4.6),
//! with fast convergence lowering W_max when the plateau keeps falling
//! (§4.7). Slow start, fast recovery and timeouts are Reno's (§4.10, §4.8),
//! from the shared window rules in `mod.rs`.
//!
//! The window is kept in bytes; the curve is evaluated in f64 with W in
//! bytes (C scaled by SMSS), and whole bytes are added to cwnd as growth
//! accumulates.
//!
//! Not implemented: undoing spurious reductions (§4.9; the sender has no
//! DSACK or F-RTO detection to trigger it) and HyStart++ (§4.10 allows
//! plain slow start).

use std::time::Duration;

use super::{fraction, CongestionConfig, CongestionControl, CongestionStats, Window};
use crate::time::Instant;

/// C, in segments per second cubed (§5.1).
const C: f64 = 0.4;
/// beta_cubic = 0.7 (§4.6), as a fraction for integer byte arithmetic.
const BETA_NUM: u32 = 7;
const BETA_DEN: u32 = 10;
const BETA: f64 = 0.7;
/// alpha_cubic = 3 * (1 - beta) / (1 + beta) (§4.3): the additive increase
/// that gives the same average window as Reno's AIMD(1, 0.5).
const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

#[derive(Debug, Clone)]
pub struct Cubic {
    w: Window,
    fast_convergence: bool,
    /// W_max in bytes: the window before the last reduction, lowered by
    /// fast convergence. `None` while undefined: before the first loss and
    /// after a timeout (§4.8).
    w_max: Option<f64>,
    /// cwnd_prior (§4.6): cwnd just before the last reduction, where W_est
    /// switches to Reno's own slope (§4.3).
    cwnd_prior: f64,
    /// The congestion-avoidance stage in progress, if any.
    epoch: Option<Epoch>,
    /// The sender's SRTT, the RTT of §4.2's target (§4.1.2).
    srtt: Duration,
    last_ack: Option<Instant>,
}

/// One congestion-avoidance stage: the curve and the Reno estimate.
#[derive(Debug, Clone, Copy)]
struct Epoch {
    /// t_epoch; moved later over application-limited stretches.
    start: Instant,
    /// K in seconds.
    k: f64,
    /// The plateau of this curve, in bytes.
    w_max: f64,
    /// W_est in bytes.
    w_est: f64,
    alpha: f64,
    /// Growth below one byte, kept until it adds up.
    carry: f64,
}

impl Epoch {
    /// W_cubic(t) in bytes (§4.2, Figure 1).
    fn w_cubic(&self, t: f64, smss: f64) -> f64 {
        C * (t - self.k).powi(3) * smss + self.w_max
    }
}

impl Cubic {
    pub fn new(config: &CongestionConfig, mss: usize) -> Self {
        Self {
            w: Window::new(config, mss),
            fast_convergence: config.fast_convergence,
            w_max: None,
            cwnd_prior: 0.0,
            epoch: None,
            srtt: Duration::ZERO,
            last_ack: None,
        }
    }

    /// W_max in bytes, once defined.
    pub fn w_max(&self) -> Option<usize> {
        // f64 to usize saturates, so this cannot wrap.
        self.w_max.map(|w| w.round() as usize)
    }

    /// K of the stage in progress, in seconds (negative when the stage
    /// began above W_max and is already on the convex side).
    pub fn k_seconds(&self) -> Option<f64> {
        self.epoch.map(|e| e.k)
    }

    /// W_est of the stage in progress, in bytes.
    pub fn w_est(&self) -> Option<usize> {
        self.epoch.map(|e| e.w_est as usize)
    }

    /// Starts a congestion-avoidance stage at `now` with cwnd_epoch = cwnd.
    fn start_epoch(&mut self, now: Instant) -> Epoch {
        let cwnd = self.w.cwnd as f64;
        let smss = self.w.smss as f64;
        let (w_max, k) = match self.w_max {
            // §4.2, Figure 2.
            Some(w_max) => (w_max, ((w_max - cwnd) / smss / C).cbrt()),
            // §4.8 after a timeout, §4.10 without a prior loss: K = 0 and
            // W_max is the window at the start of the stage.
            None => {
                self.w_max = Some(cwnd);
                (cwnd, 0.0)
            }
        };
        Epoch {
            start: now,
            k,
            w_max,
            // §4.3: W_est starts at cwnd_epoch.
            w_est: cwnd,
            alpha: if cwnd >= self.cwnd_prior { 1.0 } else { ALPHA },
            carry: 0.0,
        }
    }

    fn congestion_avoidance(&mut self, now: Instant, acked: usize) {
        let mut epoch = match self.epoch {
            Some(epoch) => epoch,
            None => self.start_epoch(now),
        };
        let smss = self.w.smss as f64;
        let cwnd = self.w.cwnd as f64;
        let acked = acked as f64;
        let t = now.saturating_duration_since(epoch.start).as_secs_f64();

        // §4.3, Figure 4, in bytes: W_est += alpha * segments_acked / cwnd.
        // Once it reaches cwnd_prior Reno would be probing afresh, so it
        // grows at Reno's full rate from there.
        epoch.w_est =
            (epoch.w_est + epoch.alpha * acked * smss / cwnd).min(self.w.ceiling() as f64);
        if epoch.w_est >= self.cwnd_prior {
            epoch.alpha = 1.0;
        }

        let next = if epoch.w_cubic(t, smss) < epoch.w_est {
            // Reno-friendly region: cwnd follows W_est (never shrinking on
            // an ACK, should it be ahead of it already).
            epoch.carry = 0.0;
            epoch.w_est.max(cwnd)
        } else {
            // Concave and convex regions (§4.4, §4.5): aim at the curve one
            // RTT ahead, bounded to [cwnd, 1.5 * cwnd] so growth never
            // outpaces slow start (§4.2). min/max discard a NaN.
            let target = epoch
                .w_cubic(t + self.srtt.as_secs_f64(), smss)
                .min(1.5 * cwnd)
                .max(cwnd);
            // (target - cwnd) / cwnd per segment acknowledged, in bytes; a
            // stretch ACK takes the window to the target, not past it.
            let growth = ((target - cwnd) / cwnd * acked + epoch.carry).min(target - cwnd);
            let whole = growth.floor().max(0.0);
            epoch.carry = (growth - whole).max(0.0);
            cwnd + whole
        };
        self.epoch = Some(epoch);
        // f64 to usize saturates (NaN gives 0); set_cwnd bounds the rest.
        self.w.set_cwnd(next as usize);
    }

    /// RFC 9438 §4.2 / §5.8: the curve's clock must not run while the
    /// application (or the peer's window) rather than cwnd limits the
    /// sender, or the window would leap after the pause. The stage start
    /// moves later by the time since the previous ACK.
    fn pause_epoch(&mut self, now: Instant, previous_ack: Option<Instant>) {
        if let (Some(epoch), Some(previous)) = (self.epoch.as_mut(), previous_ack) {
            epoch.start = (epoch.start + now.saturating_duration_since(previous)).min(now);
        }
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, now: Instant, acked: usize, flight: usize, srtt: Option<Duration>) {
        if let Some(srtt) = srtt {
            self.srtt = srtt;
        }
        let previous_ack = self.last_ack.replace(now);
        if !self.w.ack(acked, flight) {
            if acked > 0 && !self.w.in_recovery {
                self.pause_epoch(now, previous_ack);
            }
            return;
        }
        if self.w.in_slow_start() {
            self.w.slow_start(acked);
        } else {
            self.congestion_avoidance(now, acked);
        }
    }

    fn on_congestion_event(&mut self, _now: Instant, flight_size: usize) {
        if self.w.in_recovery {
            return;
        }
        let cwnd = self.w.cwnd as f64;
        // §4.7: a loss below the previous plateau means the flow's share is
        // shrinking; plan the next plateau lower, at (1 + beta) / 2 of cwnd.
        self.w_max = Some(match self.w_max {
            Some(w_max) if self.fast_convergence && cwnd < w_max => cwnd * (1.0 + BETA) / 2.0,
            _ => cwnd,
        });
        self.cwnd_prior = cwnd;
        // §4.6, Figure 5: ssthresh = FlightSize * beta_cubic, cwnd =
        // ssthresh, both at least 2*SMSS.
        self.w
            .enter_recovery(fraction(flight_size, BETA_NUM, BETA_DEN));
        self.epoch = None;
    }

    fn on_duplicate_acks(&mut self, count: usize) {
        self.w.duplicate_acks(count);
    }

    fn on_partial_ack(&mut self, acked_bytes: usize) {
        self.w.partial_ack(acked_bytes);
    }

    fn on_recovery_exit(&mut self, _now: Instant, flight_size: usize) {
        // The next stage starts with the next ACK in congestion avoidance.
        self.w.exit_recovery(flight_size);
    }

    fn on_retransmission_timeout(&mut self, _now: Instant, flight_size: usize) {
        let cwnd = self.w.cwnd as f64;
        let recovering = self.w.in_recovery;
        // §4.8: Reno's loss window, with ssthresh from beta_cubic (§4.6).
        let first = self.w.timeout(fraction(flight_size, BETA_NUM, BETA_DEN));
        // A timeout during recovery belongs to the episode that already
        // recorded cwnd_prior.
        if first && !recovering {
            self.cwnd_prior = cwnd;
        }
        // §4.8: the next stage starts with K = 0 and W_max = cwnd_epoch.
        self.w_max = None;
        self.epoch = None;
    }

    fn on_idle_restart(&mut self, _now: Instant) {
        self.w.idle_restart();
        // The idle time must not count as curve time (§4.2); the next ACK
        // in congestion avoidance starts a fresh stage.
        self.epoch = None;
    }

    fn set_mss(&mut self, mss: usize) {
        self.w.set_mss(mss);
        // K is in segments: recompute it at the next ACK.
        self.epoch = None;
    }

    window_accessors!();
}

#[cfg(test)]
mod tests {
    use super::super::sim::Bulk;
    use super::*;
    use proptest::prelude::*;

    const MSS: usize = 1000;

    fn cubic(fast_convergence: bool) -> Cubic {
        Cubic::new(
            &CongestionConfig {
                fast_convergence,
                ..CongestionConfig::default()
            },
            MSS,
        )
    }

    /// A CUBIC sender that lost a segment at cwnd = FlightSize = 100
    /// segments and has left recovery with cwnd = 70 segments.
    fn after_loss_at_100() -> Cubic {
        let mut cc = cubic(true);
        cc.w.set_cwnd(100 * MSS);
        cc.on_congestion_event(Instant::ZERO, 100 * MSS);
        cc.on_recovery_exit(Instant::ZERO, 100 * MSS);
        cc
    }

    /// cbrt((100 - 70) / 0.4) = cbrt(75), computed independently.
    const K_FOR_100: f64 = 4.217_163_326_508_746;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn loss_reduces_the_window_to_0_7() {
        let cc = after_loss_at_100();
        assert_eq!(cc.cwnd(), 70 * MSS);
        assert_eq!(cc.ssthresh(), 70 * MSS);
        assert_eq!(cc.w_max(), Some(100 * MSS));
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn k_follows_section_4_2() {
        let mut cc = after_loss_at_100();
        assert_eq!(cc.k_seconds(), None);
        cc.on_ack(Instant::ZERO, MSS, 69 * MSS, Some(secs(0.1)));
        let k = cc.k_seconds().unwrap_or(f64::NAN);
        assert!((k - K_FOR_100).abs() < 1e-9, "K = {k}");
        // The curve passes through cwnd_epoch at t = 0, W_max at t = K and
        // W_max + (W_max - cwnd_epoch) at t = 2K.
        let epoch = cc.epoch.unwrap_or_else(|| unreachable!());
        let smss = MSS as f64;
        assert!((epoch.w_cubic(0.0, smss) - 70_000.0).abs() < 1e-6);
        assert!((epoch.w_cubic(K_FOR_100, smss) - 100_000.0).abs() < 1e-6);
        assert!((epoch.w_cubic(2.0 * K_FOR_100, smss) - 130_000.0).abs() < 1e-6);
    }

    /// Runs round trips of `rtt` from `*now` until `until`; returns cwnd
    /// in segments at the end.
    fn run(
        cc: &mut Cubic,
        bulk: &mut Bulk,
        now: &mut Instant,
        rtt: Duration,
        until: Instant,
    ) -> f64 {
        while *now < until {
            *now = bulk.round(cc, *now, rtt);
        }
        cc.cwnd() as f64 / MSS as f64
    }

    #[test]
    fn window_follows_the_cubic_curve() {
        // With a 100 ms RTT the curve outruns the Reno estimate throughout.
        let rtt = secs(0.1);
        let mut cc = after_loss_at_100();
        let mut bulk = Bulk::new(&cc);
        let start = Instant::ZERO;
        let mut now = start;
        // Halfway to K: concave, W(K/2) = 100 - 0.4 * (K/2)^3 = 96.25.
        let half = run(
            &mut cc,
            &mut bulk,
            &mut now,
            rtt,
            start + secs(K_FOR_100 / 2.0),
        );
        assert!((94.5..=98.0).contains(&half), "cwnd at K/2: {half}");
        // At K the plateau: W_max = 100.
        let at_k = run(&mut cc, &mut bulk, &mut now, rtt, start + secs(K_FOR_100));
        assert!((98.5..=101.0).contains(&at_k), "cwnd at K: {at_k}");
        // At 2K, convex: W = 130.
        let at_2k = run(
            &mut cc,
            &mut bulk,
            &mut now,
            rtt,
            start + secs(2.0 * K_FOR_100),
        );
        assert!((127.0..=133.0).contains(&at_2k), "cwnd at 2K: {at_2k}");
        let w_est = cc.w_est().unwrap_or(0) as f64 / MSS as f64;
        assert!(w_est < at_2k, "the Reno estimate ({w_est}) stayed below");
    }

    #[test]
    fn growth_per_round_trip_is_at_most_half_the_window() {
        let mut cc = after_loss_at_100();
        cc.on_ack(Instant::ZERO, MSS, 69 * MSS, Some(secs(0.1)));
        let before = cc.cwnd();
        // A minute later the curve is far above: the target is clamped.
        let mut bulk = Bulk::new(&cc);
        bulk.round(&mut cc, Instant::ZERO + secs(60.0), secs(0.1));
        assert!(cc.cwnd() > before + before / 3);
        assert!(
            cc.cwnd() <= before + before / 2,
            "{} -> {}",
            before,
            cc.cwnd()
        );
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut cc = after_loss_at_100();
        cc.w.set_cwnd(80 * MSS);
        cc.on_congestion_event(Instant::ZERO, 80 * MSS);
        // 80 < 100: W_max = 80 * (1 + 0.7) / 2 = 68 segments.
        assert_eq!(cc.w_max(), Some(68 * MSS));
        assert_eq!(cc.cwnd(), 56 * MSS);

        let mut plain = cubic(false);
        plain.w.set_cwnd(100 * MSS);
        plain.on_congestion_event(Instant::ZERO, 100 * MSS);
        plain.on_recovery_exit(Instant::ZERO, 100 * MSS);
        plain.w.set_cwnd(80 * MSS);
        plain.on_congestion_event(Instant::ZERO, 80 * MSS);
        assert_eq!(plain.w_max(), Some(80 * MSS));

        // Above the old plateau, W_max is simply cwnd.
        let mut above = after_loss_at_100();
        above.w.set_cwnd(120 * MSS);
        above.on_congestion_event(Instant::ZERO, 120 * MSS);
        assert_eq!(above.w_max(), Some(120 * MSS));
    }

    #[test]
    fn reno_friendly_region_dominates_at_short_rtt() {
        let rtt = secs(0.001);
        let mut cc = after_loss_at_100();
        let mut bulk = Bulk::new(&cc);
        let start = Instant::ZERO;
        let mut now = start;
        for _ in 0..180 {
            now = bulk.round(&mut cc, now, rtt);
        }
        let before = cc.cwnd();
        for _ in 0..20 {
            now = bulk.round(&mut cc, now, rtt);
        }
        let t = now.saturating_duration_since(start).as_secs_f64();
        // The curve has barely left cwnd_epoch: W(0.2 s) = 100 - 0.4 *
        // (K - 0.2)^3, about 74 segments.
        let curve = 100.0 - C * (K_FOR_100 - t).powi(3);
        let cwnd = cc.cwnd() as f64 / MSS as f64;
        assert!(curve < 75.0);
        // Reno-like: 0.53 segments per RTT up to cwnd_prior (about 57
        // round trips), then one per RTT: over 200 segments by now.
        assert!(cwnd > 200.0, "cwnd {cwnd} vs curve {curve}");
        // And the last 20 round trips added about one segment each.
        let recent = (cc.cwnd() - before) as f64 / MSS as f64;
        assert!((18.0..=20.5).contains(&recent), "{recent}");
        // cwnd is W_est itself.
        assert_eq!(cc.w_est(), Some(cc.cwnd()));
    }

    #[test]
    fn timeout_restarts_the_curve_with_k_zero() {
        let mut cc = cubic(true);
        cc.w.set_cwnd(100 * MSS);
        cc.on_retransmission_timeout(Instant::ZERO, 100 * MSS);
        assert_eq!(cc.cwnd(), MSS);
        assert_eq!(cc.ssthresh(), 70 * MSS);
        assert_eq!(cc.w_max(), None);
        let mut bulk = Bulk { flight: MSS };
        let mut now = Instant::ZERO;
        while cc.in_slow_start() {
            now = bulk.round(&mut cc, now, secs(0.1));
        }
        // Slow start stopped at ssthresh; the stage began there with K = 0
        // and W_max = cwnd_epoch (§4.8).
        assert_eq!(cc.k_seconds(), Some(0.0));
        assert_eq!(cc.w_max(), Some(70 * MSS));
        assert_eq!(cc.stats().rto_events, 1);
    }

    #[test]
    fn application_limited_time_is_excluded_from_the_curve() {
        let rtt = Some(secs(0.05));
        let mut steady = after_loss_at_100();
        let mut paused = after_loss_at_100();
        let gap = secs(5.0);
        for i in 0..400u64 {
            let t = Instant::from_nanos(i * 10_000_000);
            if i == 200 {
                // After the ACK at (i - 1) the paused sender runs out of
                // data: ACKs for a trickle of single segments arrive over
                // the next five seconds.
                for s in 1..=5u64 {
                    let at = Instant::from_nanos((i - 1) * 10_000_000 + s * 1_000_000_000);
                    paused.on_ack(at, MSS, 0, rtt);
                }
                assert_eq!(paused.cwnd(), steady.cwnd());
            }
            let shift = if i >= 200 { gap } else { Duration::ZERO };
            steady.on_ack(t, MSS, steady.cwnd() - MSS, rtt);
            paused.on_ack(t + shift, MSS, paused.cwnd() - MSS, rtt);
        }
        // Growth resumed where it stopped, as if the pause never happened.
        assert!(steady.cwnd() > 72 * MSS);
        assert_eq!(paused.cwnd(), steady.cwnd());
    }

    #[test]
    fn recovery_is_entered_once() {
        let mut cc = after_loss_at_100();
        cc.on_congestion_event(Instant::ZERO, 70 * MSS);
        assert_eq!(cc.w_max(), Some(70 * MSS * 17 / 20));
        let w_max = cc.w_max();
        cc.on_congestion_event(Instant::ZERO, 10 * MSS);
        assert_eq!(cc.w_max(), w_max);
        assert_eq!(cc.stats().congestion_events, 2);
    }

    proptest! {
        #[test]
        fn acks_never_shrink_the_window(
            steps in proptest::collection::vec(
                (1usize..5 * MSS, 0u64..2_000_000_000, proptest::option::of(0u64..2_000_000_000), any::<bool>()),
                1..300,
            ),
        ) {
            let mut cc = after_loss_at_100();
            let mut now = Instant::ZERO;
            for (acked, step, srtt, limited) in steps {
                now += Duration::from_nanos(step);
                let before = cc.cwnd();
                let flight = if limited { before } else { 0 };
                cc.on_ack(now, acked, flight, srtt.map(Duration::from_nanos));
                prop_assert!(cc.cwnd() >= before);
            }
        }
    }
}
