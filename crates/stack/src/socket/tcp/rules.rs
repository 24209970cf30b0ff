//! The checks every arriving segment goes through, as pure functions:
//! sequence acceptability (RFC 9293 §3.10.7.4), the RST, SYN and ACK rules
//! of RFC 5961, and the challenge-ACK rate limit (RFC 5961 §7).

use std::time::Duration;

use super::seq::Seq;
use crate::time::Instant;

/// RFC 9293 §3.10.7.4, first check: is any part of the segment inside the
/// receive window? (`len` counts SYN and FIN.)
///
/// | len | window | acceptable when                                  |
/// |-----|--------|--------------------------------------------------|
/// | 0   | 0      | SEG.SEQ = RCV.NXT                                |
/// | 0   | > 0    | RCV.NXT <= SEG.SEQ < RCV.NXT+RCV.WND             |
/// | > 0 | 0      | never                                            |
/// | > 0 | > 0    | either end of the segment falls inside the window|
pub fn acceptable(seg_seq: Seq, len: usize, rcv_nxt: Seq, rcv_wnd: usize) -> bool {
    let window_end = rcv_nxt + rcv_wnd;
    match (len, rcv_wnd) {
        (0, 0) => seg_seq == rcv_nxt,
        (0, _) => seg_seq.in_range(rcv_nxt, window_end),
        (_, 0) => false,
        _ => {
            let last = seg_seq + (len - 1);
            seg_seq.in_range(rcv_nxt, window_end) || last.in_range(rcv_nxt, window_end)
        }
    }
}

/// What to do with an arriving RST in a synchronized state (RFC 5961 §3.2,
/// replacing RFC 9293's in-window test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RstVerdict {
    /// SEG.SEQ = RCV.NXT: reset the connection.
    Reset,
    /// Inside the window but not exact: send a challenge ACK, change
    /// nothing (a blind attacker must guess RCV.NXT exactly).
    Challenge,
    /// Outside the window: drop silently.
    Drop,
}

pub fn rst_verdict(seg_seq: Seq, rcv_nxt: Seq, rcv_wnd: usize) -> RstVerdict {
    if seg_seq == rcv_nxt {
        RstVerdict::Reset
    } else if seg_seq.in_range(rcv_nxt, rcv_nxt + rcv_wnd.max(1)) {
        RstVerdict::Challenge
    } else {
        RstVerdict::Drop
    }
}

/// RFC 5961 §5.2: an ACK is acceptable only if it lies within
/// [SND.UNA - MAX.SND.WND, SND.NXT]; otherwise the segment is dropped
/// (after an ACK). A blind attacker then needs a window-sized guess.
pub fn ack_acceptable(seg_ack: Seq, snd_una: Seq, snd_nxt: Seq, max_snd_wnd: usize) -> bool {
    let lowest = Seq(snd_una.0.wrapping_sub(max_snd_wnd.min(1 << 30) as u32));
    lowest <= seg_ack && seg_ack <= snd_nxt
}

/// Limits challenge ACKs to `limit` per `period` across a host (RFC 5961
/// §7), so challenges cannot be used to amplify or to probe.
#[derive(Debug, Clone)]
pub struct ChallengeLimiter {
    limit: u32,
    period: Duration,
    window_start: Option<Instant>,
    sent: u32,
    suppressed: u64,
}

impl ChallengeLimiter {
    /// Linux's default: 1000 per second (`tcp_challenge_ack_limit`).
    pub fn new(limit: u32, period: Duration) -> Self {
        Self {
            limit,
            period,
            window_start: None,
            sent: 0,
            suppressed: 0,
        }
    }

    /// True if a challenge ACK may go out at `now` (and counts it).
    pub fn allow(&mut self, now: Instant) -> bool {
        let fresh = self
            .window_start
            .is_none_or(|start| now.saturating_duration_since(start) >= self.period);
        if fresh {
            self.window_start = Some(now);
            self.sent = 0;
        }
        if self.sent < self.limit {
            self.sent += 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }

    /// Challenge ACKs withheld so far.
    pub fn suppressed(&self) -> u64 {
        self.suppressed
    }
}

impl Default for ChallengeLimiter {
    fn default() -> Self {
        Self::new(1000, Duration::from_secs(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_cases_of_the_acceptability_table() {
        let nxt = Seq(1000);
        assert!(acceptable(Seq(1000), 0, nxt, 0));
        assert!(!acceptable(Seq(1001), 0, nxt, 0));
        assert!(acceptable(Seq(1500), 0, nxt, 1000));
        assert!(!acceptable(Seq(2000), 0, nxt, 1000));
        assert!(!acceptable(Seq(999), 0, nxt, 1000));
        assert!(!acceptable(Seq(1000), 10, nxt, 0));
        // Overlapping the left edge (a partial retransmission) or the right.
        assert!(acceptable(Seq(990), 20, nxt, 1000));
        assert!(acceptable(Seq(1990), 20, nxt, 1000));
        assert!(!acceptable(Seq(900), 100, nxt, 1000));
        assert!(!acceptable(Seq(2000), 100, nxt, 1000));
        // Across the wrap of the sequence space.
        assert!(acceptable(Seq(u32::MAX - 5), 20, Seq(u32::MAX - 10), 1000));
        assert!(acceptable(Seq(5), 1, Seq(u32::MAX - 10), 1000));
    }

    #[test]
    fn rst_needs_the_exact_sequence_number_to_reset() {
        let nxt = Seq(5000);
        assert_eq!(rst_verdict(Seq(5000), nxt, 1000), RstVerdict::Reset);
        assert_eq!(rst_verdict(Seq(5001), nxt, 1000), RstVerdict::Challenge);
        assert_eq!(rst_verdict(Seq(5999), nxt, 1000), RstVerdict::Challenge);
        assert_eq!(rst_verdict(Seq(6000), nxt, 1000), RstVerdict::Drop);
        assert_eq!(rst_verdict(Seq(4999), nxt, 1000), RstVerdict::Drop);
    }

    #[test]
    fn acks_outside_the_recent_window_are_refused() {
        let (una, nxt) = (Seq(10_000), Seq(12_000));
        assert!(ack_acceptable(Seq(12_000), una, nxt, 4000));
        assert!(ack_acceptable(Seq(6_000), una, nxt, 4000));
        assert!(!ack_acceptable(Seq(5_999), una, nxt, 4000));
        assert!(!ack_acceptable(Seq(12_001), una, nxt, 4000));
    }

    #[test]
    fn challenges_are_limited_per_period() {
        let mut limiter = ChallengeLimiter::new(2, Duration::from_secs(1));
        let t = |ms: u64| Instant::from_nanos(ms * 1_000_000);
        assert!(limiter.allow(t(0)));
        assert!(limiter.allow(t(10)));
        assert!(!limiter.allow(t(20)));
        assert_eq!(limiter.suppressed(), 1);
        assert!(limiter.allow(t(1000)));
    }
}
