//! NewReno: RFC 5681 congestion avoidance (about one SMSS per round trip)
//! and halving on loss, with the RFC 6582 fast-recovery rules that the
//! shared window rules (in `mod.rs`) apply.

use std::time::Duration;

use super::{fraction, CongestionConfig, CongestionControl, CongestionStats, Window};
use crate::time::Instant;

#[derive(Debug, Clone)]
pub struct NewReno {
    w: Window,
    /// Bytes acknowledged in congestion avoidance since cwnd last grew.
    bytes_acked: usize,
}

impl NewReno {
    pub fn new(config: &CongestionConfig, mss: usize) -> Self {
        Self {
            w: Window::new(config, mss),
            bytes_acked: 0,
        }
    }

    /// RFC 5681 §3.1 equation (4), FlightSize / 2; the window applies the
    /// 2*SMSS floor.
    fn reduced(flight: usize) -> usize {
        fraction(flight, 1, 2)
    }

    /// RFC 5681 §3.1 recommends counting acknowledged bytes (RFC 3465
    /// §2.1): once a window's worth has been acknowledged, cwnd grows by
    /// one SMSS. Unlike SMSS*SMSS/cwnd per ACK, this stays one SMSS per
    /// round trip with delayed or stretch ACKs.
    fn congestion_avoidance(&mut self, acked: usize) {
        self.bytes_acked = self.bytes_acked.saturating_add(acked);
        if self.bytes_acked >= self.w.cwnd {
            self.bytes_acked -= self.w.cwnd;
            self.w.set_cwnd(self.w.cwnd.saturating_add(self.w.smss));
            // At most one increase per ACK, so a huge cumulative ACK does
            // not bank credit for the rounds after it.
            self.bytes_acked = self.bytes_acked.min(self.w.cwnd.saturating_sub(1));
        }
    }
}

impl CongestionControl for NewReno {
    fn on_ack(&mut self, _now: Instant, acked: usize, flight: usize, _srtt: Option<Duration>) {
        if !self.w.ack(acked, flight) {
            return;
        }
        if self.w.in_slow_start() {
            self.w.slow_start(acked);
        } else {
            self.congestion_avoidance(acked);
        }
    }

    fn on_congestion_event(&mut self, _now: Instant, flight_size: usize) {
        if self.w.enter_recovery(Self::reduced(flight_size)) {
            self.bytes_acked = 0;
        }
    }

    fn on_duplicate_acks(&mut self, count: usize) {
        self.w.duplicate_acks(count);
    }

    fn on_partial_ack(&mut self, acked_bytes: usize) {
        self.w.partial_ack(acked_bytes);
    }

    fn on_recovery_exit(&mut self, _now: Instant, flight_size: usize) {
        self.w.exit_recovery(flight_size);
    }

    fn on_retransmission_timeout(&mut self, _now: Instant, flight_size: usize) {
        self.w.timeout(Self::reduced(flight_size));
        self.bytes_acked = 0;
    }

    fn on_idle_restart(&mut self, _now: Instant) {
        self.w.idle_restart();
    }

    fn set_mss(&mut self, mss: usize) {
        self.w.set_mss(mss);
    }

    window_accessors!();
}

#[cfg(test)]
mod tests {
    use super::super::sim::Bulk;
    use super::*;

    const MSS: usize = 1000;
    const RTT: Duration = Duration::from_millis(40);

    fn reno() -> NewReno {
        NewReno::new(&CongestionConfig::default(), MSS)
    }

    /// A NewReno sender just out of recovery with cwnd = ssthresh = `segments`.
    fn in_avoidance(segments: usize) -> NewReno {
        let mut cc = reno();
        cc.on_congestion_event(Instant::ZERO, 2 * segments * MSS);
        cc.on_recovery_exit(Instant::ZERO, 2 * segments * MSS);
        assert_eq!(cc.cwnd(), segments * MSS);
        assert!(!cc.in_slow_start());
        cc
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_round_trip() {
        let mut cc = in_avoidance(20);
        let mut bulk = Bulk::new(&cc);
        let mut now = Instant::ZERO;
        for expected in 21..=30 {
            now = bulk.round(&mut cc, now, RTT);
            assert_eq!(cc.cwnd(), expected * MSS);
        }
    }

    #[test]
    fn byte_counting_is_indifferent_to_delayed_acks() {
        let mut cc = in_avoidance(20);
        let mut flight = 20 * MSS;
        // Ten ACKs of two segments each acknowledge one window.
        for i in 0..10 {
            flight -= 2 * MSS;
            cc.on_ack(Instant::ZERO, 2 * MSS, flight, None);
            let expected = if i == 9 { 21 } else { 20 };
            assert_eq!(cc.cwnd(), expected * MSS);
            flight = cc.cwnd();
        }
    }

    #[test]
    fn one_huge_ack_grows_the_window_once() {
        let mut cc = in_avoidance(10);
        cc.on_ack(Instant::ZERO, 35 * MSS, 0, None);
        assert_eq!(cc.cwnd(), 11 * MSS);
        // The excess credit was capped below one window.
        cc.on_ack(Instant::ZERO, MSS, 10 * MSS, None);
        assert_eq!(cc.cwnd(), 12 * MSS);
        cc.on_ack(Instant::ZERO, MSS, 11 * MSS, None);
        assert_eq!(cc.cwnd(), 12 * MSS);
    }

    #[test]
    fn slow_start_hands_over_at_ssthresh() {
        let mut cc = reno();
        cc.on_retransmission_timeout(Instant::ZERO, 8 * MSS);
        assert_eq!(cc.ssthresh(), 4 * MSS);
        let mut bulk = Bulk { flight: MSS };
        let mut now = Instant::ZERO;
        // Slow start: 1 -> 2 -> 4 segments.
        now = bulk.round(&mut cc, now, RTT);
        assert_eq!(cc.cwnd(), 2 * MSS);
        now = bulk.round(&mut cc, now, RTT);
        assert_eq!(cc.cwnd(), 4 * MSS);
        assert!(!cc.in_slow_start());
        // Then linear.
        bulk.round(&mut cc, now, RTT);
        assert_eq!(cc.cwnd(), 5 * MSS);
    }

    #[test]
    fn a_newreno_recovery_episode() {
        let mut cc = in_avoidance(20);
        let mut bulk = Bulk::new(&cc);
        bulk.round(&mut cc, Instant::ZERO, RTT);
        assert_eq!(cc.cwnd(), 21 * MSS);
        // Three duplicate ACKs with 21 segments outstanding.
        cc.on_congestion_event(Instant::ZERO, 21 * MSS);
        assert_eq!(cc.ssthresh(), 10_500);
        cc.on_duplicate_acks(3);
        assert_eq!(cc.cwnd(), 13_500);
        for _ in 0..5 {
            cc.on_duplicate_acks(1);
        }
        assert_eq!(cc.cwnd(), 18_500);
        // The retransmission repairs one hole; a second hole remains: the
        // partial ACK covers 9 segments.
        cc.on_partial_ack(9 * MSS);
        assert_eq!(cc.cwnd(), 10_500);
        cc.on_recovery_exit(Instant::ZERO, 12 * MSS);
        assert_eq!(cc.cwnd(), 10_500);
        // The set-up's loss and this one.
        assert_eq!(cc.stats().congestion_events, 2);
        // Congestion avoidance resumes from ssthresh with a clean count.
        cc.on_ack(Instant::ZERO, MSS, 11 * MSS, None);
        assert_eq!(cc.cwnd(), 10_500);
    }
}
