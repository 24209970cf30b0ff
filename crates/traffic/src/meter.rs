//! Interval reports (`-i`): both sides count bytes into shared atomics and
//! a sampler thread turns them into per-interval figures, printed as they
//! come unless the output is JSON.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Bytes moved so far, updated by the sides as they go.
#[derive(Debug, Default)]
pub struct Meter {
    sent: AtomicU64,
    received: AtomicU64,
}

impl Meter {
    pub fn add_sent(&self, bytes: u64) {
        self.sent.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn add_received(&self, bytes: u64) {
        self.received.fetch_add(bytes, Ordering::Relaxed);
    }

    fn read(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.received.load(Ordering::Relaxed),
        )
    }
}

/// One interval's figures for one direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IntervalSum {
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
}

/// One interval: what was received (`sum`, as iperf3's receiver reports)
/// and what was sent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub sum: IntervalSum,
    pub sum_sent: IntervalSum,
}

/// Samples a [`Meter`] every `every` until finished.
pub struct IntervalRecorder {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Interval>>,
}

impl IntervalRecorder {
    /// Starts sampling; with `print`, each interval goes to stderr as a
    /// line as soon as it ends.
    pub fn start(meter: Arc<Meter>, every: Duration, print: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let began = Instant::now();
            let mut intervals = Vec::new();
            let mut last = (0u64, 0u64);
            let mut last_at = 0.0f64;
            let mut next = every;
            loop {
                // Sleep in short steps so finishing is prompt.
                while began.elapsed() < next && !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5).min(every));
                }
                let done = flag.load(Ordering::Relaxed);
                let now = began.elapsed().as_secs_f64();
                let (sent, received) = meter.read();
                let seconds = now - last_at;
                // A final stub shorter than a tenth of an interval is
                // folded away, as iperf3 omits it.
                if seconds > every.as_secs_f64() / 10.0 || !done {
                    let sum = |bytes: u64| IntervalSum {
                        start: last_at,
                        end: now,
                        seconds,
                        bytes,
                        bits_per_second: if seconds > 0.0 {
                            bytes as f64 * 8.0 / seconds
                        } else {
                            0.0
                        },
                    };
                    let interval = Interval {
                        sum: sum(received - last.1),
                        sum_sent: sum(sent - last.0),
                    };
                    if print {
                        eprintln!("{}", format_interval(&interval));
                    }
                    intervals.push(interval);
                }
                last = (sent, received);
                last_at = now;
                next += every;
                if done {
                    return intervals;
                }
            }
        });
        Self { stop, thread }
    }

    /// Stops sampling and returns the intervals, the last one partial.
    pub fn finish(self) -> Vec<Interval> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// `[  1.00-  2.00 s]  sent 118.2 MB  received 118.2 MB  945.6 Mbit/s`
pub fn format_interval(interval: &Interval) -> String {
    format!(
        "[{:7.2}-{:7.2} s]  sent {:>10}  received {:>10}  {:>14}",
        interval.sum.start,
        interval.sum.end,
        crate::units::bytes(interval.sum_sent.bytes),
        crate::units::bytes(interval.sum.bytes),
        crate::units::bits_per_second(interval.sum.bits_per_second),
    )
}
