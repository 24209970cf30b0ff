//! The scheduler's state, measured: how long a thread blocked in the
//! kernel takes to run again once a thread on the other CPU wakes it,
//! there and back.
//!
//! Figures that hand work from one blocked thread or process to another
//! (the pipeline's hand-overs, `kernel::pipeline`) move with it, and the
//! core round trip (`core_trip`, a cache line spun on by two running
//! threads) does not see it: two full labs whose core trips agreed
//! differed significantly in the pipeline's compute-to-transmit time. It
//! is recorded beside the core trip, so that `stackscope compare` can say
//! the scheduler's state differed instead of reading a change in the
//! stack.
//!
//! Two threads pinned to the first two CPUs the process may use take
//! turns: each wakes the other (`Thread::unpark`, a futex) and sleeps
//! (`park`) until woken. The figure is the median over a few batches of
//! the mean round trip. It takes a few milliseconds and is run between
//! repetitions, never inside a measured window.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::affinity::{first_two_cpus, pin_current as pin};

/// Round trips per batch, and batches.
const TRIPS: u64 = 200;
const BATCHES: usize = 5;
/// A measurement that takes longer than this gives up (and wakes the
/// partner so it ends): the machine is too busy for a figure to mean
/// anything but that.
const BUDGET: Duration = Duration::from_millis(300);

/// Two runs' median wake round trips this far apart (as a ratio) come
/// from different scheduler states: within one state a run's readings
/// mostly stay within 1.05× (29.4–30.6 µs; a few outliers reach 50), and
/// two full labs' stop-and-wait runs, at medians of 42 and 30 µs (1.38×),
/// differed significantly in four figures with the stack unchanged.
pub const STATE_RATIO: f64 = 1.25;

/// Whether two wake round trips (ns) come from different scheduler
/// states.
pub fn states_differ(a: f64, b: f64) -> bool {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    lo > 0.0 && hi / lo > STATE_RATIO
}

/// Written by the asking side to end the exchange.
const STOP: u64 = u64::MAX;

/// The median batch's mean wake round trip between the first two CPUs,
/// ns. `None` on a machine with one CPU, where pinning is refused, or
/// when the budget ran out.
pub fn measure() -> Option<f64> {
    let cpus = first_two_cpus()?;
    let turn = AtomicU64::new(0);
    let start = Instant::now();
    // Both sides on threads of their own: the caller's affinity stays.
    let asker_thread: OnceLock<Thread> = OnceLock::new();
    let (turn, asker_thread) = (&turn, &asker_thread);
    std::thread::scope(|scope| {
        let partner = scope.spawn(move || {
            let pinned = pin(cpus[1]);
            answer(turn, asker_thread, start);
            pinned
        });
        let partner_thread = partner.thread().clone();
        let asker = scope.spawn(move || {
            asker_thread.get_or_init(std::thread::current);
            let figure = if pin(cpus[0]) {
                ask(turn, &partner_thread, start)
            } else {
                None
            };
            turn.store(STOP, Ordering::Release);
            partner_thread.unpark();
            figure
        });
        let figure = asker.join().ok().flatten();
        let partner_pinned = partner.join().unwrap_or(false);
        figure.filter(|_| partner_pinned)
    })
}

/// The asking side: odd turns out, sleeps until the next even one.
fn ask(turn: &AtomicU64, partner: &Thread, start: Instant) -> Option<f64> {
    let mut value = 0u64;
    let trip = |value: &mut u64| -> Option<()> {
        *value += 1;
        turn.store(*value, Ordering::Release);
        partner.unpark();
        *value += 1;
        sleep_until(turn, |v| v == *value, start).map(|_| ())
    };
    // Both threads have slept and been woken before the batches.
    crate::core_trip::median_batch_mean(TRIPS, BATCHES, || trip(&mut value))
}

/// The answering side: each odd turn back as the next even one, until
/// told to stop or the budget runs out.
fn answer(turn: &AtomicU64, asker: &OnceLock<Thread>, start: Instant) {
    let mut last = 0u64;
    loop {
        let Some(value) = sleep_until(
            turn,
            |v| v != last && (v == STOP || !v.is_multiple_of(2)),
            start,
        ) else {
            return;
        };
        if value == STOP {
            return;
        }
        last = value + 1;
        turn.store(last, Ordering::Release);
        // Set before the asker's first turn: present by now.
        if let Some(asker) = asker.get() {
            asker.unpark();
        }
    }
}

/// Sleeps until `done` holds for the turn's value (a park may end early:
/// it is checked again); `None` once the budget is spent or told to stop.
fn sleep_until(turn: &AtomicU64, done: impl Fn(u64) -> bool, start: Instant) -> Option<u64> {
    loop {
        let value = turn.load(Ordering::Acquire);
        if done(value) {
            return Some(value);
        }
        if value == STOP {
            return None;
        }
        let left = BUDGET.checked_sub(start.elapsed())?;
        std::thread::park_timeout(left);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_round_trip_is_measured_between_two_cpus() {
        if first_two_cpus().is_none() {
            return;
        }
        // A busy machine may spend the budget: then there is no figure,
        // never a wrong one.
        if let Some(ns) = measure() {
            // Two wake-ups through the kernel: above a core round trip's
            // tens of nanoseconds, under the budget.
            assert!(ns > 100.0 && ns < BUDGET.as_nanos() as f64, "{ns} ns");
        }
    }
}
