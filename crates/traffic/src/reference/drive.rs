//! Programs on the reference stack's runners: a [`Program`] over the
//! [`Host`] becomes a workload of the threaded runner (and of the
//! real-time runner, which takes the same workloads), stepped by the
//! host's thread between its polls.

use stack::iface::host::Host;
use stack::runner::threaded::{wake_peers, Progress, Workload, WorkloadFactory};

use crate::error::TrafficError;
use crate::program::{Program, Step};

/// The workload that steps `program` until it is done, then hands its
/// result to `done`.
pub fn workload<P>(
    program: P,
    done: impl FnOnce(Result<P::Output, TrafficError>) + Send + 'static,
) -> WorkloadFactory
where
    P: Program<Host> + Send + 'static,
{
    Box::new(move |_host: &mut Host| -> Workload {
        let mut program = program;
        let mut done = Some(done);
        Box::new(move |host: &mut Host, now| match program.step(host) {
            Step::Again => Progress::Running { next: Some(now) },
            // Frames, host timers and other hosts' news wake it.
            Step::Wait(None) | Step::Recheck => Progress::WAITING,
            // The program reads the host's clock, which is the runner's.
            Step::Wait(Some(at)) => Progress::Running { next: Some(at) },
            Step::Done(result) => {
                if let Some(done) = done.take() {
                    done(result);
                }
                wake_peers();
                Progress::Done
            }
        })
    })
}

/// Several workloads on one host, run in turn; done when all are.
pub fn together(factories: Vec<WorkloadFactory>) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let mut workloads: Vec<Option<Workload>> =
            factories.into_iter().map(|f| Some(f(host))).collect();
        Box::new(move |host: &mut Host, now| {
            let mut progress = Progress::Done;
            for slot in &mut workloads {
                if let Some(work) = slot {
                    match work(host, now) {
                        Progress::Done => *slot = None,
                        running => progress = progress.and(running),
                    }
                }
            }
            progress
        })
    })
}
