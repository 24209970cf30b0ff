//! A connection's timers: one deadline per kind, so every timer is bounded
//! by construction and the connection's next deadline is a minimum over
//! five values.

use crate::time::Instant;

/// The timers of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// Retransmission (RFC 6298 §5).
    Retransmit,
    /// A delayed ACK is owed (RFC 9293 §3.8.6.3, RFC 1122 §4.2.3.2).
    DelayedAck,
    /// Probe a zero window (RFC 9293 §3.8.6.1).
    Persist,
    /// Keep-alive probe (RFC 9293 §3.8.4, RFC 1122 §4.2.3.6).
    Keepalive,
    /// The end of TIME-WAIT (2·MSL, RFC 9293 §3.6.1) or of a handshake or
    /// close that has waited too long.
    Linger,
}

const KINDS: [Timer; 5] = [
    Timer::Retransmit,
    Timer::DelayedAck,
    Timer::Persist,
    Timer::Keepalive,
    Timer::Linger,
];

/// The armed deadlines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timers {
    deadlines: [Option<Instant>; 5],
}

impl Timers {
    fn index(timer: Timer) -> usize {
        match timer {
            Timer::Retransmit => 0,
            Timer::DelayedAck => 1,
            Timer::Persist => 2,
            Timer::Keepalive => 3,
            Timer::Linger => 4,
        }
    }

    /// Arms `timer` for `at`, replacing any earlier setting.
    pub fn set(&mut self, timer: Timer, at: Instant) {
        self.deadlines[Self::index(timer)] = Some(at);
    }

    /// Arms `timer` for `at` unless it is already armed (RFC 6298 §5.1:
    /// sending data starts the retransmission timer only if it is off).
    pub fn set_if_idle(&mut self, timer: Timer, at: Instant) {
        self.deadlines[Self::index(timer)].get_or_insert(at);
    }

    pub fn cancel(&mut self, timer: Timer) {
        self.deadlines[Self::index(timer)] = None;
    }

    pub fn is_armed(&self, timer: Timer) -> bool {
        self.deadlines[Self::index(timer)].is_some()
    }

    pub fn deadline(&self, timer: Timer) -> Option<Instant> {
        self.deadlines[Self::index(timer)]
    }

    /// The earliest armed deadline.
    pub fn next(&self) -> Option<Instant> {
        self.deadlines.iter().flatten().min().copied()
    }

    /// Disarms and returns the earliest timer due at `now`, if any; call
    /// until `None` to handle every expiry in deadline order.
    pub fn pop_expired(&mut self, now: Instant) -> Option<Timer> {
        let (timer, _) = KINDS
            .iter()
            .filter_map(|&t| self.deadline(t).map(|at| (t, at)))
            .filter(|&(_, at)| at <= now)
            .min_by_key(|&(_, at)| at)?;
        self.cancel(timer);
        Some(timer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn expiries_come_out_in_deadline_order_once() {
        let mut timers = Timers::default();
        timers.set(Timer::Retransmit, at(30));
        timers.set(Timer::DelayedAck, at(10));
        timers.set(Timer::Linger, at(100));
        timers.set_if_idle(Timer::Retransmit, at(5));
        assert_eq!(timers.deadline(Timer::Retransmit), Some(at(30)));
        assert_eq!(timers.next(), Some(at(10)));
        assert_eq!(timers.pop_expired(at(50)), Some(Timer::DelayedAck));
        assert_eq!(timers.pop_expired(at(50)), Some(Timer::Retransmit));
        assert_eq!(timers.pop_expired(at(50)), None);
        assert!(timers.is_armed(Timer::Linger));
        timers.cancel(Timer::Linger);
        assert_eq!(timers.next(), None);
    }
}
