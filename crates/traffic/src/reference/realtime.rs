//! A reference host on the real-time runner in the calling thread: the
//! host attached to links to the operating system (a TAP, AF_PACKET on a
//! veth end or NIC), its programs as workloads, polled as fast as packets
//! move and asleep in `ppoll` otherwise.

use std::time::Duration;

use stack::iface::host::Host;
use stack::runner::realtime::{RealTime, Turn};
use stack::runner::threaded::{Progress, WorkloadFactory};

/// How long the host keeps answering after its programs are done, so the
/// last ACKs and FINs leave.
const LINGER: Duration = Duration::from_millis(50);
/// How the real-time runner waits: it polls for a moment after each
/// packet, then sleeps in `ppoll`.
pub(crate) const RUNNER_WAIT: &str = "spin-then-block";
/// The longest sleep of the runner between looks at the workload.
const MAX_SLEEP: Duration = Duration::from_millis(5);

/// Runs `work` on `host` on the real-time runner in the calling thread
/// until it is done and [`LINGER`] has passed; `turn` is called before
/// each look at it. Returns the frames the operating system dropped
/// before the host read them (and says so on stderr).
pub(crate) fn run_host(
    host: &mut Host,
    work: WorkloadFactory,
    mut turn: impl FnMut(&mut Host),
) -> u64 {
    let runner = RealTime::new(MAX_SLEEP);
    let mut workload = Some(super::with_timeouts(work)(host));
    let mut done_at = None;
    runner.run(host, |host, now| {
        turn(host);
        if let Some(work) = workload.as_mut() {
            return match work(host, now) {
                Progress::Done => {
                    workload = None;
                    done_at = Some(std::time::Instant::now());
                    Turn::Busy
                }
                Progress::Running { next: Some(at) } if at > now => Turn::Until(at),
                Progress::Running { next: Some(_) } => Turn::Busy,
                // Only frames wake it.
                Progress::Running { next: None } => Turn::Idle,
            };
        }
        match done_at {
            Some(at) if at.elapsed() < LINGER => {
                Turn::Until(now + LINGER.saturating_sub(at.elapsed()))
            }
            _ => Turn::Stop,
        }
    });
    let rx_overrun = host
        .interfaces()
        .iter()
        .map(|i| i.link.stats().dropped_rx_overrun)
        .sum();
    if rx_overrun > 0 {
        eprintln!(
            "note: the operating system dropped {rx_overrun} frames for the reference host \
             before it read them (its queue for the link was full): the host fell behind"
        );
    }
    rx_overrun
}
