//! The real-time runner: one host on links to the operating system (TAP,
//! AF_PACKET, tunnel) in the calling thread, on the real clock. It polls
//! as fast as it can while packets move; once nothing has moved for a
//! moment and no timer is due, it sleeps in `ppoll` on the links'
//! descriptors ([`Link::readable_fd`](crate::phy::Link::readable_fd))
//! until a frame arrives, the next timer is due or the caller's step has
//! its own next event ([`Turn::Until`]), so an idle host costs no CPU and
//! a busy one pays no system call to wait.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::time::Duration;

use crate::iface::host::Host;
use crate::time::Instant;

/// What the caller's step did this turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// It did work (wrote, read, answered): poll again at once.
    Busy,
    /// Nothing to do now and no event of its own known: the runner may
    /// sleep once the host is idle too, for at most its `max_sleep`.
    Idle,
    /// Nothing to do before this instant (the runner's time) unless a
    /// frame arrives: the runner sleeps until then, however long.
    Until(Instant),
    /// The run is over.
    Stop,
}

/// After this long with nothing moving and nothing due, the runner sleeps
/// instead of spinning: a frame that arrives within it costs no wake-up.
const SPIN_BEFORE_SLEEP: Duration = Duration::from_micros(50);

thread_local! {
    /// Whether the workload on this thread awaits answers ([`awaiting`]).
    static AWAITING: Cell<bool> = const { Cell::new(false) };
}

/// Says whether the calling thread's workload awaits answers from the
/// other end: a series of request/response exchanges, or a bulk sender
/// whose window the peer's ACKs open. While it does, [`RealTime::run`]
/// does not sleep in `ppoll` once idle but keeps polling, yielding the
/// CPU between polls, so no answer waits for this thread to be woken (a
/// reference sender over AF_PACKET to the kernel moved 0.4 Gbit/s
/// sleeping between ACKs). The run clears it when it ends; outside a
/// real-time run it has no effect.
pub fn awaiting(on: bool) {
    AWAITING.with(|awaiting| awaiting.set(on));
}

/// Drives one host on the real clock.
#[derive(Debug, Clone, Copy)]
pub struct RealTime {
    clock: std::time::Instant,
    max_sleep: Duration,
}

impl RealTime {
    /// A clock starting now; after a [`Turn::Idle`] sleeps last at most
    /// `max_sleep` (how late the caller's step may run when nothing
    /// happens and it cannot say when it will have something to do).
    pub fn new(max_sleep: Duration) -> Self {
        Self {
            clock: std::time::Instant::now(),
            max_sleep,
        }
    }

    /// The host's time: nanoseconds since [`RealTime::new`].
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.clock.elapsed().as_nanos() as u64)
    }

    /// Time since [`RealTime::new`].
    pub fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    /// Runs `step` and then `host.poll` until `step` says [`Turn::Stop`].
    pub fn run(&self, host: &mut Host, mut step: impl FnMut(&mut Host, Instant) -> Turn) {
        let clock = self.clock;
        host.set_wall_clock(move || Instant::from_nanos(clock.elapsed().as_nanos() as u64));
        let fds: Vec<RawFd> = host
            .interfaces()
            .iter()
            .filter_map(|i| i.link.readable_fd())
            .collect();
        super::wake::precise_timers();
        let mut seen = host.counters().packets_moved();
        let mut last_busy = std::time::Instant::now();
        loop {
            let t = self.now();
            let turn = step(host, t);
            if turn == Turn::Stop {
                awaiting(false);
                return;
            }
            host.poll(t);
            let moved = host.counters().packets_moved();
            let deadline = host.next_deadline(t);
            let (deadline, cap) = match turn {
                Turn::Until(at) => (Some(deadline.map_or(at, |d| d.min(at))), None),
                _ => (deadline, Some(self.max_sleep)),
            };
            if turn == Turn::Busy || moved != seen || deadline.is_some_and(|d| d <= t) {
                seen = moved;
                last_busy = std::time::Instant::now();
                continue;
            }
            if last_busy.elapsed() < SPIN_BEFORE_SLEEP || AWAITING.with(Cell::get) {
                // Yield, not a bare spin: the process at the other end of
                // the link may be waiting for this CPU.
                std::thread::yield_now();
                continue;
            }
            // `None`: no deadline and no cap, sleep until a frame arrives.
            let until_due = match (deadline, cap) {
                (Some(d), cap) => {
                    let left = d.saturating_duration_since(self.now());
                    Some(cap.map_or(left, |c| left.min(c)))
                }
                (None, cap) => cap,
            };
            wait(&fds, until_due);
        }
    }
}

/// Sleeps until one of `fds` is readable, a signal arrives or `timeout`
/// passes (nanosecond resolution, unlike `poll`'s milliseconds).
pub fn wait_readable(fds: &[RawFd], timeout: Duration) {
    wait(fds, Some(timeout));
}

/// [`wait_readable`]; `None` waits without a time limit.
fn wait(fds: &[RawFd], timeout: Option<Duration>) {
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let timeout = timeout.map(|timeout| libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    });
    let timeout_ptr = timeout
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `polled` is a live array of `polled.len()` pollfds that
    // ppoll may write `revents` into; `timeout_ptr` is null (no limit) or
    // points to a valid timespec that outlives the call; a null signal
    // mask keeps the current one. The
    // result (ready count, timeout or EINTR) needs no handling: the caller
    // looks at everything again anyway.
    unsafe {
        libc::ppoll(
            polled.as_mut_ptr(),
            polled.len() as libc::nfds_t,
            timeout_ptr,
            std::ptr::null(),
        );
    }
}
