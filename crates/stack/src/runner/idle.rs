//! How a host's thread waits between polls on the threaded runner: poll
//! again, yield, or block until a frame is pushed towards it, a deadline
//! or the run's end — and how early it wakes for a timed deadline, learnt
//! from how late its own timed wakes have been.
//!
//! Why learnt: a frame's arrival on a rate-limited wire, a transmit
//! completion or a timer is a deadline the host must see on time, or the
//! thread's lateness lands in a measured window (a receive path starts at
//! the frame's arrival, however late the host looked). A timed block on
//! this 2-vCPU VM ends 15–20 µs late in one machine state and 25–40 µs
//! (up to 74 µs) in another, even with 1 ns timer slack; a fixed 30 µs
//! head start left a stop-and-wait receive path 1 µs long in one lab and
//! 6–19 µs in the next.

use std::sync::Arc;
use std::time::Duration;

use super::exchange::Exchanges;
use super::threaded::{earliest, Poll};
use super::wake;
use crate::iface::host::Host;
use crate::time::Instant;

/// In [`Poll::Spin`], how long a thread keeps polling after the last
/// packet moved before it blocks: a reply within it costs no wake-up,
/// which on two CPUs keeps a request/response exchange at tens of µs.
pub const SPIN_BEFORE_BLOCK: Duration = Duration::from_micros(50);

/// The least a block for a timed deadline (a timer, a frame still on the
/// wire, a transmit completion) ends before it, to poll the rest of the
/// way: the head start a thread begins with.
pub const WAKE_AHEAD_MIN: Duration = Duration::from_micros(30);

/// The most: a wake later than this is the scheduler's (another thread
/// had the CPU), not the timer's, and yielding that long before every
/// deadline would cost more CPU than it saves. In [`Poll::Block`] the
/// head start is CPU time spent yielding, at most this much per timed
/// wake.
pub const WAKE_AHEAD_MAX: Duration = Duration::from_micros(200);

/// Added to the latest lateness seen: a wake as late as the latest one
/// still leaves time for a poll.
const WAKE_MARGIN: Duration = Duration::from_micros(10);

/// After each on-time wake the head start gives back this fraction of
/// what it has above [`WAKE_AHEAD_MIN`]: it follows a machine that has
/// become quicker over a few hundred wakes, and a slower one at once.
const WAKE_AHEAD_DECAY: u32 = 64;

/// Deciding, after each poll, whether to poll again at once, spin or
/// block; counting the blocks and the timed wakes that came too late.
pub(super) struct Idle {
    mode: Poll,
    /// The run's exchanges: while a host awaits an answer, no block.
    run: Arc<Exchanges>,
    /// Whether the last look found a host awaiting: the spin window
    /// runs from when none does any more.
    awaited: bool,
    seen: u64,
    /// The earliest deadline seen after the last poll.
    due: Option<Instant>,
    last_active: std::time::Instant,
    pub blocks: u64,
    pub blocked: Duration,
    /// How long before a timed deadline a block ends.
    pub wake_ahead: Duration,
    /// Timed blocks that ended after their deadline (later than the head
    /// start then was), and the latest by how much.
    pub late_wakes: u64,
    pub latest_late: Duration,
    /// Blocks that began or ended while a measured exchange was in
    /// flight ([`exchange`](super::exchange)).
    pub naps_in_exchanges: u64,
}

impl Idle {
    pub fn new(mode: Poll, host: &Host, run: Arc<Exchanges>) -> Self {
        Self::starting(mode, host.counters().packets_moved(), run)
    }

    /// Before any poll, the host having moved `seen` packets.
    fn starting(mode: Poll, seen: u64, run: Arc<Exchanges>) -> Self {
        Self {
            mode,
            run,
            awaited: false,
            seen,
            due: None,
            last_active: std::time::Instant::now(),
            blocks: 0,
            blocked: Duration::ZERO,
            wake_ahead: WAKE_AHEAD_MIN,
            late_wakes: 0,
            latest_late: Duration::ZERO,
            naps_in_exchanges: 0,
        }
    }

    /// After a poll at `t`: returns at once if the host moved packets or
    /// something is due, else spins or blocks until a frame is pushed
    /// towards the host, its next deadline, `next_work` or `end`.
    pub fn after_poll(
        &mut self,
        host: &Host,
        t: Instant,
        next_work: Option<Instant>,
        end: Instant,
        now: impl Fn() -> Instant,
    ) {
        let moved = host.counters().packets_moved();
        // A deadline that had come by this poll fired in it (a timer, a
        // frame's arrival): the workload has yet to see what it changed
        // (an address after DAD), so it runs once more before any block.
        let fired = self.due.is_some_and(|d| d <= t);
        // Looks at the wires' queues (`next_arrival`): a frame pushed after
        // this look wakes the park below.
        let due = earliest(host.next_deadline(t), next_work);
        self.due = due;
        if moved != self.seen || fired || due.is_some_and(|d| d <= t) {
            self.seen = moved;
            self.last_active = std::time::Instant::now();
            return;
        }
        if self.mode == Poll::Spin && self.run.awaiting() {
            // A host of the run awaits an answer: whatever this thread
            // waits for (a frame of it, or nothing: another host's
            // exchange), a block here would put a wake-up into it. Yield,
            // not a bare spin, for the reason below: a bare spin here
            // (tried) gave 1-byte TCP exchanges a p99 of 16-20 ms at load
            // 8 on 2 CPUs, where yielding kept it at 20-30 µs in most
            // runs.
            self.awaited = true;
            std::thread::yield_now();
            return;
        }
        if std::mem::take(&mut self.awaited) {
            self.last_active = std::time::Instant::now();
        }
        if self.mode == Poll::Spin && self.last_active.elapsed() < SPIN_BEFORE_BLOCK {
            // Yield, not a bare spin: when the peer host's thread waits for
            // this CPU (more runnable threads than CPUs, or both woken onto
            // one CPU), a bare spin holds it off for the whole window and
            // every exchange paid two windows (113 µs instead of 8 µs
            // for a 16 B TCP exchange at load 8 on 2 CPUs).
            std::thread::yield_now();
            return;
        }
        let wake_at = due.map_or(end, |d| d.min(end));
        let left = wake_at.saturating_duration_since(now());
        if left.is_zero() {
            return;
        }
        // A timed deadline is woken for early and polled up to, so it is
        // seen on time; the run's end needs no precision.
        let timed = due.is_some_and(|d| d <= end);
        if timed && left <= self.wake_ahead {
            std::thread::yield_now();
            return;
        }
        let sleep = if timed { left - self.wake_ahead } else { left };
        let parked = std::time::Instant::now();
        let overlapped = self.run.in_flight();
        wake::park(Some(sleep));
        if overlapped || self.run.in_flight() {
            self.naps_in_exchanges += 1;
            self.run.count_nap();
        }
        let slept = parked.elapsed();
        self.blocked += slept;
        self.blocks += 1;
        if timed {
            self.learn(slept.checked_sub(sleep));
        }
    }

    /// Learns from a timed block that ended `late` after its end (`None`:
    /// woken before it, by a frame or a spurious wake, which says nothing
    /// about the timer).
    fn learn(&mut self, late: Option<Duration>) {
        let Some(late) = late else { return };
        if late > self.wake_ahead {
            self.late_wakes += 1;
            self.latest_late = self.latest_late.max(late);
        }
        let wanted = (late + WAKE_MARGIN).min(WAKE_AHEAD_MAX);
        if wanted > self.wake_ahead {
            self.wake_ahead = wanted;
        } else {
            let above = self.wake_ahead - WAKE_AHEAD_MIN;
            self.wake_ahead -= above / WAKE_AHEAD_DECAY;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle() -> Idle {
        Idle::starting(Poll::Block, 0, Exchanges::new())
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn a_late_wake_moves_the_head_start_at_once_and_is_counted() {
        let mut idle = idle();
        idle.learn(Some(us(12)));
        assert_eq!(idle.wake_ahead, WAKE_AHEAD_MIN, "on time: no change");
        assert_eq!(idle.late_wakes, 0);
        idle.learn(Some(us(45)));
        assert_eq!(idle.wake_ahead, us(55));
        assert_eq!((idle.late_wakes, idle.latest_late), (1, us(45)));
        // Now covered: not late any more.
        idle.learn(Some(us(45)));
        assert_eq!(idle.late_wakes, 1);
    }

    #[test]
    fn the_head_start_is_bounded_and_comes_back_slowly() {
        let mut idle = idle();
        idle.learn(Some(Duration::from_millis(5)));
        assert_eq!(idle.wake_ahead, WAKE_AHEAD_MAX, "a scheduler's delay");
        idle.learn(None);
        assert_eq!(
            idle.wake_ahead, WAKE_AHEAD_MAX,
            "an early wake says nothing"
        );
        for _ in 0..WAKE_AHEAD_DECAY {
            idle.learn(Some(us(1)));
        }
        let back = idle.wake_ahead;
        // (63/64)^64 ≈ 0.37 of the 170 µs excess is left.
        assert!(back > us(80) && back < us(100), "{back:?}");
        for _ in 0..20 * WAKE_AHEAD_DECAY {
            idle.learn(Some(us(1)));
        }
        assert!(
            idle.wake_ahead < WAKE_AHEAD_MIN + us(1),
            "{:?}",
            idle.wake_ahead
        );
        assert!(idle.wake_ahead >= WAKE_AHEAD_MIN);
    }
}
