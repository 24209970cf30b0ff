//! Ends on the kernel's stack: each program on a thread of its own, in
//! its end's namespace (loopback: this one), pinned to a CPU when the run
//! asks, with the namespace's drop counters read around datagram
//! receivers and senders.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::role::Job;
use crate::affinity;
use crate::error::TrafficError;
use crate::kernel::drops;
use crate::kernel::net::KernelNet;
use crate::program::{Program, Step};

/// Moves the calling thread to where an end's stack is.
pub type Enter = Arc<dyn Fn() -> Result<(), TrafficError> + Send + Sync>;

/// What a kernel end's thread learned besides its program's result.
#[derive(Debug, Default)]
pub struct KernelEnd {
    /// Whether the pin to the asked CPU held.
    pub pinned: bool,
    /// The namespace's drop counters' growth over the program, when
    /// counted.
    pub drops: Option<BTreeMap<String, u64>>,
}

/// Starts `job` on a thread of its own.
pub fn spawn(
    enter: Enter,
    job: Job,
    cpu: Option<usize>,
    count_drops: bool,
) -> JoinHandle<KernelEnd> {
    std::thread::spawn(move || {
        if let Err(e) = enter() {
            job.finish(Err(e));
            return KernelEnd::default();
        }
        // Before the socket exists, so all of its work is on the CPU.
        let pinned = cpu.is_some_and(affinity::pin_current_checked);
        let before = count_drops.then(drops::snapshot);
        let mut program = job.role.clone().build::<KernelNet>();
        let result = drive(&mut KernelNet::new(), &mut program);
        let drops = before.map(|b| crate::losses::delta(&b, &drops::snapshot()));
        job.finish(result);
        KernelEnd { pinned, drops }
    })
}

/// Waits for an end's thread (a panic is its program's error).
pub fn join(thread: JoinHandle<KernelEnd>, job: &Job) -> KernelEnd {
    thread.join().unwrap_or_else(|_| {
        job.finish(Err(TrafficError::Invalid(
            "an end's thread panicked".into(),
        )));
        KernelEnd::default()
    })
}

/// Runs `program` on `net` until it is done, waiting for readiness
/// between steps.
pub fn drive<P: Program<KernelNet>>(
    net: &mut KernelNet,
    program: &mut P,
) -> Result<P::Output, TrafficError> {
    loop {
        match program.step(net) {
            Step::Again => {}
            Step::Wait(until) => net.wait(until),
            Step::Recheck => std::thread::yield_now(),
            Step::Done(result) => return result,
        }
    }
}
