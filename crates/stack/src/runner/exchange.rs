//! Request/response exchanges on the threaded runner: what a workload
//! tells the runner so that no host thread naps while an answer is
//! awaited, and the count of the naps that overlapped a measured exchange
//! anyway (docs/stack.md, "Runners").
//!
//! Why the workload says so: a host thread that blocks puts a wake-up
//! (a futex wake and a trip through the scheduler, 15–100 µs on this
//! 2-vCPU VM, more when another process has the CPU) into the round trip
//! of every exchange that needs it, and which thread that is (the
//! server's, a router's) no single host can tell from its own state: a
//! router has no connection, a server has nothing outstanding between a
//! reply and the next request. The client knows, and tells the run.
//!
//! Two marks, both per host thread and cleared when its workload is done:
//! * *awaiting* (`threaded::awaiting`): the workload is in a series of
//!   exchanges (from before its first request to after its last answer).
//!   While any host of the run awaits, no host thread of it blocks in
//!   [`Poll::Spin`](super::threaded::Poll::Spin): it polls, yielding the
//!   CPU between polls. When the last one stops, the threads spin for
//!   [`SPIN_BEFORE_BLOCK`](super::idle::SPIN_BEFORE_BLOCK) more and then
//!   block as before, so an idle run costs no CPU.
//! * *in flight* (`threaded::exchange_begins` / `exchange_ends`): one
//!   measured exchange, from its request to its answer. A block that
//!   began or ended while one was in flight is a nap in an exchange:
//!   counted per host and run-wide, so a tool can report it and a test
//!   can assert there was none.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// What a run's threads share about exchanges.
#[derive(Debug, Default)]
pub(super) struct Exchanges {
    /// Host threads whose workload awaits answers.
    awaiting: AtomicUsize,
    /// Measured exchanges in flight (one per host thread at most).
    in_flight: AtomicUsize,
    /// Naps that overlapped a measured exchange, over the run.
    naps: AtomicU64,
}

impl Exchanges {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Whether some host of the run awaits an answer.
    pub fn awaiting(&self) -> bool {
        self.awaiting.load(Ordering::Acquire) > 0
    }

    /// Whether a measured exchange is in flight.
    pub fn in_flight(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    /// Counts a nap that overlapped an exchange.
    pub fn count_nap(&self) {
        self.naps.fetch_add(1, Ordering::Relaxed);
    }

    /// Naps that overlapped an exchange so far.
    pub fn naps(&self) -> u64 {
        self.naps.load(Ordering::Relaxed)
    }
}

/// One host thread's marks, and the run's counts they feed.
#[derive(Debug)]
pub(super) struct Marks {
    run: Arc<Exchanges>,
    awaiting: Cell<bool>,
    in_flight: Cell<bool>,
}

impl Marks {
    pub fn new(run: Arc<Exchanges>) -> Self {
        Self {
            run,
            awaiting: Cell::new(false),
            in_flight: Cell::new(false),
        }
    }

    pub fn run(&self) -> &Arc<Exchanges> {
        &self.run
    }

    /// Sets this thread's awaiting mark; true if it was off and is now on.
    pub fn set_awaiting(&self, on: bool) -> bool {
        if self.awaiting.replace(on) == on {
            return false;
        }
        if on {
            self.run.awaiting.fetch_add(1, Ordering::AcqRel);
        } else {
            self.run.awaiting.fetch_sub(1, Ordering::AcqRel);
        }
        on
    }

    /// Sets this thread's in-flight mark.
    pub fn set_in_flight(&self, on: bool) {
        if self.in_flight.replace(on) == on {
            return;
        }
        if on {
            self.run.in_flight.fetch_add(1, Ordering::AcqRel);
        } else {
            self.run.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Clears both marks (the workload is done or gone).
    pub fn clear(&self) {
        self.set_in_flight(false);
        self.set_awaiting(false);
    }
}

impl Drop for Marks {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_count_once_per_thread_and_clear_on_drop() {
        let run = Exchanges::new();
        let a = Marks::new(Arc::clone(&run));
        let b = Marks::new(Arc::clone(&run));
        assert!(a.set_awaiting(true), "off to on");
        assert!(!a.set_awaiting(true), "already on: no second count");
        a.set_in_flight(true);
        a.set_in_flight(true);
        assert_eq!(run.awaiting.load(Ordering::Relaxed), 1);
        assert_eq!(run.in_flight.load(Ordering::Relaxed), 1);
        b.set_awaiting(true);
        a.clear();
        assert!(run.awaiting() && !run.in_flight(), "b still awaits");
        drop(b);
        assert!(!run.awaiting(), "a dropped mark is cleared");
    }
}
