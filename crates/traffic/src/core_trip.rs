//! The machine's state, measured: how long a cache line takes to go from
//! one CPU to another and back.
//!
//! On the development machine (a 2-vCPU virtual machine) this one figure
//! moved between about 55 and about 340 ns every few minutes, as the
//! hypervisor placed the two vCPUs near each other or apart, and every
//! measurement whose threads talk across CPUs moved with it: kernel UDP
//! of 16 KiB datagrams over loopback ran at 21.7 Gbit/s in the first state
//! and 9.5 Gbit/s in the second, back to back, same binary. A measurement
//! cannot choose the state, but it can say which one it ran in, so that
//! two runs in different states are not read as a change in the stack
//! (`stackscope compare`), and a point whose repetitions straddle a change
//! is seen to.
//!
//! Two threads pinned to the first two CPUs the process may use bounce an
//! atomic counter on a line of its own; the figure is the median over a
//! few batches of the mean round trip. It takes a few milliseconds and is
//! run between repetitions, never inside a measured window.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::affinity::{first_two_cpus, pin_current as pin};

/// Round trips per batch, and batches.
const TRIPS: u64 = 1000;
const BATCHES: usize = 5;
/// A measurement that takes longer than this gives up: the other CPU is
/// not free (a busy machine), and a figure from it would measure that.
const BUDGET: Duration = Duration::from_millis(200);
/// Two round trips this far apart (as a ratio) come from different
/// machine states. The two states seen differed by 6×; a batch-to-batch
/// wobble within one state stays under 1.4×.
pub const STATE_RATIO: f64 = 1.5;

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoreTrip {
    /// The two CPUs the line went between.
    pub cpus: [usize; 2],
    /// Median of the batches' mean round trips, ns.
    pub ns: f64,
}

/// Whether two round trips (ns) come from different machine states.
pub fn states_differ(a: f64, b: f64) -> bool {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    lo > 0.0 && hi / lo > STATE_RATIO
}

/// Two measurements' round trips (ns), when both are known and come from
/// different machine states: what a comparison of the two must say
/// instead of a verdict.
pub fn differing(a: Option<f64>, b: Option<f64>) -> Option<[f64; 2]> {
    match (a, b) {
        (Some(a), Some(b)) if states_differ(a, b) => Some([a, b]),
        _ => None,
    }
}

/// The round trips of a measurement's repetitions, as a measurement
/// reports them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoreTrips {
    /// Measurements taken (one before each repetition or pass).
    pub n: usize,
    pub min_ns: f64,
    pub median_ns: f64,
    pub max_ns: f64,
}

impl CoreTrips {
    /// Summarises the measurements that succeeded; `None` if none did.
    pub fn of(trips: &[CoreTrip]) -> Option<Self> {
        Self::of_ns(trips.iter().map(|t| t.ns))
    }

    /// Summarises round trips given in ns (also the wake round trips of
    /// `wake_trip`); `None` if there are none.
    pub fn of_ns(ns: impl IntoIterator<Item = f64>) -> Option<Self> {
        let mut ns: Vec<f64> = ns.into_iter().collect();
        ns.sort_by(f64::total_cmp);
        let (&min_ns, &max_ns) = (ns.first()?, ns.last()?);
        Some(Self {
            n: ns.len(),
            min_ns,
            median_ns: ns[ns.len() / 2],
            max_ns,
        })
    }

    /// The repetitions ran in more than one machine state.
    pub fn mixed(&self) -> bool {
        states_differ(self.min_ns, self.max_ns)
    }
}

/// Measures the round trip between the first two CPUs this process may
/// run on. `None` on a machine with one CPU, where pinning is refused, or
/// when the other CPU was too busy to answer within the budget.
pub fn measure() -> Option<CoreTrip> {
    let cpus = first_two_cpus()?;
    let line = Line(AtomicU64::new(0));
    let start = Instant::now();
    let ns = std::thread::scope(|scope| {
        let partner = scope.spawn(|| {
            pin(cpus[1]).then(|| answer(&line.0, start))?;
            Some(())
        });
        let trips = scope.spawn(|| {
            if !pin(cpus[0]) {
                line.0.store(STOP, Ordering::Release);
                return None;
            }
            let trips = ask(&line.0, start);
            line.0.store(STOP, Ordering::Release);
            trips
        });
        let trips = trips.join().ok().flatten();
        partner.join().ok().flatten()?;
        trips
    })?;
    Some(CoreTrip { cpus, ns })
}

/// A value alone on its cache line (adjacent-line prefetch pairs 64-byte
/// lines, hence 128).
#[repr(align(128))]
struct Line(AtomicU64);

/// Written by the asking side to end the exchange.
const STOP: u64 = u64::MAX;

/// The asking side: odd values out, waits for the next even one back.
/// Returns the median batch's mean round trip, ns.
fn ask(line: &AtomicU64, start: Instant) -> Option<f64> {
    let mut value = 0u64;
    let trip = |value: &mut u64| -> Option<()> {
        *value += 1;
        line.store(*value, Ordering::Release);
        *value += 1;
        wait_for(line, |v| v == *value, start)
    };
    // Both threads running and the line in play before the batches.
    median_batch_mean(TRIPS, BATCHES, || trip(&mut value))
}

/// `trips / 10` warm-up round trips, then `batches` batches of `trips`:
/// the median batch's mean round trip, ns; `None` as soon as a round
/// trip gives up. Shared with `wake_trip`.
pub(crate) fn median_batch_mean(
    trips: u64,
    batches: usize,
    mut trip: impl FnMut() -> Option<()>,
) -> Option<f64> {
    for _ in 0..trips / 10 {
        trip()?;
    }
    let mut means = Vec::with_capacity(batches);
    for _ in 0..batches {
        let began = Instant::now();
        for _ in 0..trips {
            trip()?;
        }
        means.push(began.elapsed().as_nanos() as f64 / trips as f64);
    }
    means.sort_by(f64::total_cmp);
    means.get(batches / 2).copied()
}

/// The answering side: each odd value back as the next even one, until
/// told to stop.
fn answer(line: &AtomicU64, start: Instant) -> Option<()> {
    let mut last = 0u64;
    loop {
        let value = wait_for_value(
            line,
            |v| v != last && (v == STOP || !v.is_multiple_of(2)),
            start,
        )?;
        if value == STOP {
            return Some(());
        }
        last = value + 1;
        line.store(last, Ordering::Release);
    }
}

fn wait_for(line: &AtomicU64, done: impl Fn(u64) -> bool, start: Instant) -> Option<()> {
    wait_for_value(line, |v| v == STOP || done(v), start)
        .filter(|&v| v != STOP)
        .map(|_| ())
}

/// Spins until `done` holds for the line's value, looking at the clock
/// every few thousand spins; `None` once the budget is spent.
fn wait_for_value(line: &AtomicU64, done: impl Fn(u64) -> bool, start: Instant) -> Option<u64> {
    let mut spins = 0u32;
    loop {
        let value = line.load(Ordering::Acquire);
        if done(value) {
            return Some(value);
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(4096) && start.elapsed() > BUDGET {
            return None;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_is_measured_between_two_cpus() {
        let Some(cpus) = first_two_cpus() else {
            return; // one CPU: nothing to measure, and `measure` says so
        };
        // The other CPU may be busy with another test: a few tries.
        let trip = (0..5).find_map(|_| measure());
        let trip = trip.expect("a round trip within the budget on an idle CPU");
        assert_eq!(trip.cpus, cpus);
        // Faster than a cache line can move (tens of ns) is impossible;
        // slower than the budget would have given up.
        assert!(trip.ns > 5.0 && trip.ns < 200_000.0, "{trip:?}");
    }

    #[test]
    fn states_differ_by_more_than_the_ratio_either_way() {
        assert!(!states_differ(55.0, 75.0));
        assert!(states_differ(55.0, 340.0));
        assert!(states_differ(340.0, 55.0));
        assert!(!states_differ(0.0, 340.0), "no figure, no verdict");
        assert_eq!(differing(Some(55.0), Some(340.0)), Some([55.0, 340.0]));
        assert_eq!(differing(Some(55.0), Some(70.0)), None);
        assert_eq!(differing(None, Some(340.0)), None);
    }

    #[test]
    fn trips_summarise_and_see_a_change_of_state() {
        let at = |ns| CoreTrip { cpus: [0, 1], ns };
        assert_eq!(CoreTrips::of(&[]), None);
        let one = CoreTrips::of(&[at(60.0), at(58.0), at(70.0)]).unwrap();
        assert_eq!(
            (one.n, one.min_ns, one.median_ns, one.max_ns),
            (3, 58.0, 60.0, 70.0)
        );
        assert!(!one.mixed());
        assert!(CoreTrips::of(&[at(60.0), at(340.0)]).unwrap().mixed());
    }
}
