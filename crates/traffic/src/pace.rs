//! Offered load (`--rate`): the sender releases datagram `k` no earlier
//! than the time `k` datagrams' bits take at the rate, so bursts never
//! exceed one datagram and the long-run rate is exact.

use std::time::{Duration, Instant};

/// Paces sends to a bit rate.
#[derive(Debug)]
pub struct Pacer {
    start: Instant,
    bits_per_second: f64,
    bits: f64,
}

/// Gaps longer than this are slept; shorter ones are spun, because a
/// sleep overshoots by tens of microseconds.
const SLEEP_ABOVE: Duration = Duration::from_micros(200);

impl Pacer {
    pub fn new(bits_per_second: u64) -> Self {
        Self {
            start: Instant::now(),
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

    /// Blocks until the next datagram is due.
    pub fn wait(&self) {
        let due = self.due();
        loop {
            let now = Instant::now();
            if now >= due {
                return;
            }
            let left = due - now;
            if left > SLEEP_ABOVE {
                std::thread::sleep(left - SLEEP_ABOVE / 2);
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_become_due_at_the_rate() {
        let mut pacer = Pacer::new(8_000_000); // 1 MB/s
        let t0 = pacer.due();
        pacer.sent(1000);
        let t1 = pacer.due();
        assert_eq!(t1 - t0, Duration::from_millis(1));
        pacer.sent(500_000);
        assert_eq!(pacer.due() - t0, Duration::from_millis(501));
    }
}
