//! Waking a host's thread when a frame is pushed towards it (DESIGN.md,
//! "Runners"): each host thread of the threaded runner has a
//! [`HostWaker`]; the sending end of a virtual wire wakes the receiving
//! end's host ([`WireEnd::wake_on_arrival`](crate::phy::WireEnd::wake_on_arrival)),
//! and a thread with nothing to do parks until woken or its next deadline.
//!
//! Built on the thread's park token (`Thread::unpark`): a wake that comes
//! between the thread's last look at its queues and its `park` leaves the
//! token set, so the park returns at once and no wake-up is lost.

use std::sync::{Arc, OnceLock};
use std::task::{Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

/// Wakes one thread, once it has [`register`](HostWaker::register)ed.
#[derive(Debug, Default)]
pub struct HostWaker {
    thread: OnceLock<Thread>,
}

impl HostWaker {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Makes the calling thread the one woken. Call it before the thread
    /// first looks at its queues: a wake before that is not needed (the
    /// look finds the frame), one after it sets the park token.
    pub fn register(&self) {
        let _ = self.thread.set(std::thread::current());
    }

    /// Wakes the thread, or makes its next park return at once.
    pub fn wake(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }

    /// A [`Waker`] for links, which know nothing of runners.
    pub fn waker(self: &Arc<Self>) -> Waker {
        Waker::from(Arc::clone(self))
    }
}

impl Wake for HostWaker {
    fn wake(self: Arc<Self>) {
        HostWaker::wake(&self);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        HostWaker::wake(self);
    }
}

/// Blocks the calling (registered) thread until it is woken or `timeout`
/// passes (`None`: until woken). It may also return early for no reason;
/// the caller looks at everything again anyway.
pub fn park(timeout: Option<Duration>) {
    match timeout {
        Some(timeout) => std::thread::park_timeout(timeout),
        None => std::thread::park(),
    }
}

/// Asks the kernel to end the calling thread's timed waits on time: by
/// default Linux lets them run up to 50 µs late (timer slack) to batch
/// wake-ups, which would add 50 µs to every wait for a frame still on a
/// rate-limited wire.
pub fn precise_timers() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument (nanoseconds)
    // and changes only the calling thread's slack; nothing is read from or
    // written to our memory. Failure leaves the default slack, which is
    // harmless.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_before_the_park_is_not_lost() {
        let waker = HostWaker::new();
        waker.register();
        // Woken before parking: the token makes the park return at once,
        // whereas a lost wake would block this test forever.
        waker.waker().wake_by_ref();
        park(None);
    }

    #[test]
    fn a_wake_from_another_thread_ends_the_park() {
        let waker = HostWaker::new();
        waker.register();
        let other = Arc::clone(&waker);
        let t = std::thread::spawn(move || other.wake());
        // Without the wake this would wait for ever (no timeout).
        park(None);
        t.join().unwrap();
    }
}
