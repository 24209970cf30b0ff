//! Programs on the reference stack's runners (its host is their
//! transport: [`crate::reference::net`]): a [`Program`] over the
//! [`Host`] becomes a workload of the threaded runner (and of the
//! real-time runner, which takes the same workloads), stepped by the
//! host's thread between its polls; or runs on the simulator's virtual
//! clock ([`simulate`]).

use stack::iface::host::Host;
use stack::runner::threaded::{wake_peers, Progress, Workload, WorkloadFactory};
use stack::runner::{Next, Simulator};
use stack::time::Instant;

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

/// Most steps one program takes at one instant before the simulator's
/// clock must move: a bound against a program that keeps saying
/// `Again` without waiting.
const MAX_STEPS_PER_INSTANT: usize = 10_000;

/// Runs `programs` (each on its host, by name) on the simulator until all
/// are done or `limit` of virtual time has passed: every program steps at
/// every instant with work, its own deadlines move the virtual clock like
/// the hosts' timers. Their results in order; `None` for one still
/// running at the limit.
pub fn simulate<O>(
    sim: &mut Simulator,
    mut programs: Vec<(String, Box<dyn Program<Host, Output = O> + Send>)>,
    limit: std::time::Duration,
) -> Vec<Option<Result<O, TrafficError>>> {
    let mut results: Vec<Option<Result<O, TrafficError>>> = programs.iter().map(|_| None).collect();
    sim.drive(limit, |sim| {
        let now = sim.now();
        let mut next: Option<Instant> = None;
        let mut running = false;
        for ((name, program), result) in programs.iter_mut().zip(&mut results) {
            if result.is_some() {
                continue;
            }
            let Some(host) = sim.host_mut(name) else {
                *result = Some(Err(TrafficError::Invalid(format!(
                    "the topology has no host {name}"
                ))));
                continue;
            };
            // The host's clock is the simulator's now (a host with no
            // work at this instant was not polled at it).
            host.poll(now);
            let mut due = None;
            for _ in 0..MAX_STEPS_PER_INSTANT {
                match program.step(host) {
                    Step::Again => due = Some(now),
                    Step::Wait(None) | Step::Recheck => {
                        due = None;
                        break;
                    }
                    Step::Wait(Some(at)) => {
                        due = Some(at);
                        break;
                    }
                    Step::Done(done) => {
                        *result = Some(done);
                        break;
                    }
                }
            }
            if result.is_none() {
                running = true;
                if let Some(due) = due {
                    next = Some(next.map_or(due, |n| n.min(due)));
                }
            }
        }
        if running {
            Next::At(next)
        } else {
            Next::Done
        }
    });
    results
}
