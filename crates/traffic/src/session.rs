//! A datagram receiver's bookkeeping, shared by every target: the checks,
//! the clock (first to last data datagram, so sentinel gaps do not
//! count), the CPU meter and the deadlines.

use std::time::Duration;

use stack::time::Instant;

use crate::cpu::{CpuMeter, CpuUsage};
use crate::error::TrafficError;
use crate::meter::Meter;
use crate::pattern::Pattern;
use crate::report::{Received, ReceiverSide};
use crate::verify::{Arrival, DatagramVerifier};

/// One receiver's run, from binding to the end sentinel.
#[derive(Debug)]
pub struct ReceiveSession {
    verifier: DatagramVerifier,
    waiting_since: Instant,
    first: Option<Instant>,
    /// The first data datagram's length: it opens the window.
    opening_bytes: u64,
    last: Instant,
    cpu: Option<CpuMeter>,
}

impl ReceiveSession {
    /// Starts waiting for `circuit`'s datagrams at `now` (the stack's
    /// clock, as every time this session is given).
    pub fn new(circuit: u8, now: Instant) -> Self {
        Self {
            verifier: DatagramVerifier::new(circuit),
            waiting_since: now,
            first: None,
            opening_bytes: 0,
            last: now,
            cpu: None,
        }
    }

    /// Checks one arrival at `now`, counting data into `meter`.
    pub fn arrival(
        &mut self,
        pattern: &Pattern,
        data: &[u8],
        meter: &Meter,
        now: Instant,
    ) -> Arrival {
        let arrival = self.verifier.check(pattern, data);
        if let Arrival::Data { .. } = arrival {
            if self.first.is_none() {
                self.first = Some(now);
                self.opening_bytes = data.len() as u64;
                // CPU from the first data on: waiting is not work.
                self.cpu = Some(CpuMeter::start());
            }
            self.last = now;
            meter.add_received(data.len() as u64);
        }
        arrival
    }

    /// Called when nothing arrived for a while: true when the run is over
    /// (traffic started and then `timeout` passed in silence: every end
    /// sentinel lost); an error when nothing ever came within `timeout`.
    pub fn quiet(
        &self,
        timeout: Duration,
        waiting_for: &str,
        now: Instant,
    ) -> Result<bool, TrafficError> {
        if self.verifier.started() {
            let quiet_since = self.first.map_or(self.waiting_since, |_| self.last);
            Ok(now - quiet_since >= timeout)
        } else if now - self.waiting_since >= timeout {
            Err(TrafficError::timeout(timeout, waiting_for))
        } else {
            Ok(false)
        }
    }

    /// The receiving side's figures.
    pub fn finish(mut self) -> ReceiverSide {
        let cpu = self.cpu.map_or(CpuUsage::default(), |c| c.stop());
        let counts = self.verifier.finish();
        ReceiverSide {
            bytes: counts.bytes,
            elapsed: self.first.map_or(Duration::ZERO, |f| self.last - f),
            opening_bytes: self.opening_bytes,
            cpu,
            checks: Received::Datagrams(counts),
            drops: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram::{self, Kind};
    use crate::report::ReceivedSum;

    #[test]
    fn evenly_spaced_arrivals_read_exactly_their_rate() {
        // 100 datagrams of 1000 bytes, one every 160 µs: 50 Mbit/s. The
        // window spans 99 gaps, so counting the first datagram's bytes
        // too would read 50.505 Mbit/s.
        let pattern = Pattern::new(2048);
        let meter = Meter::default();
        let gap = Duration::from_micros(160);
        let t0 = Instant::from_nanos(1_000_000);
        let mut session = ReceiveSession::new(3, t0);
        let mut buf = vec![0; 1000];
        datagram::write(&mut buf, Kind::Start, 100, 3, &pattern);
        session.arrival(&pattern, &buf, &meter, t0);
        for seq in 0..100u32 {
            datagram::write(&mut buf, Kind::Data, seq.into(), 3, &pattern);
            let now = t0 + gap * (seq + 1);
            assert!(matches!(
                session.arrival(&pattern, &buf, &meter, now),
                Arrival::Data { .. }
            ));
        }
        let side = session.finish();
        assert_eq!(side.bytes, 100_000);
        assert_eq!(side.elapsed, gap * 99);
        let sum = ReceivedSum::from_side(&side);
        assert!(
            (sum.bits_per_second - 50e6).abs() < 1.0,
            "{} bit/s",
            sum.bits_per_second
        );
    }
}
