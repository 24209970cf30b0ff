//! Offered load (`--rate`): the sender releases datagram `k` no earlier
//! than the time `k` datagrams' bits take at the rate, so bursts never
//! exceed one datagram and the long-run rate is exact.

use std::time::Duration;

use stack::time::Instant;

/// Paces sends to a bit rate, on the stack's clock.
#[derive(Debug)]
pub struct Pacer {
    start: Instant,
    bits_per_second: f64,
    bits: f64,
}

impl Pacer {
    /// Starts pacing at `now`.
    pub fn new(bits_per_second: u64, now: Instant) -> Self {
        Self {
            start: now,
            bits_per_second: bits_per_second as f64,
            bits: 0.0,
        }
    }

    /// When the next `bytes` may leave.
    pub fn due(&self) -> Instant {
        self.start + Duration::from_secs_f64(self.bits / self.bits_per_second)
    }

    /// Records `bytes` as sent.
    pub fn sent(&mut self, bytes: usize) {
        self.bits += bytes as f64 * 8.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_become_due_at_the_rate() {
        let mut pacer = Pacer::new(8_000_000, Instant::from_nanos(5)); // 1 MB/s
        let t0 = pacer.due();
        assert_eq!(t0, Instant::from_nanos(5));
        pacer.sent(1000);
        let t1 = pacer.due();
        assert_eq!(t1 - t0, Duration::from_millis(1));
        pacer.sent(500_000);
        assert_eq!(pacer.due() - t0, Duration::from_millis(501));
    }
}
