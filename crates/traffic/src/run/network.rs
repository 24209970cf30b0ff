//! Ends on the reference stack's own network: every program a workload
//! of its host on the threaded runner (a thread per node), with a drop
//! monitor on every node when datagrams flow and the two hosts pinned
//! when the run asks.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use stack::iface::host::Host;
use stack::runner::threaded::{self, WorkloadFactory};
use stack::runner::Simulator;
use stack::topology::Topology;

use super::host;
use super::role::Job;
use crate::affinity::Placement;
use crate::error::TrafficError;
use crate::reference::pinned::Pins;
use crate::reference::tally::{self, Accounts};
use crate::reference::with_timeouts;

/// What the network's run learned besides the programs' results.
#[derive(Debug, Default)]
pub struct NetworkEnd {
    pub placement: Option<Placement>,
    /// Drops by place over the run, when one datagram flow ran (with
    /// several, the counters cannot tell whose a drop was).
    pub drops_if_alone: Option<BTreeMap<String, u64>>,
}

/// Runs `jobs` (each on its host) on `topology` until all are done.
/// `datagram_receivers` are the jobs whose ends the drop monitors wait
/// for.
pub fn run(
    topology: &Topology,
    jobs: Vec<(String, Job)>,
    datagram_receivers: Vec<Job>,
    pins: Pins,
) -> Result<NetworkEnd, TrafficError> {
    let mut per_host: BTreeMap<String, Vec<WorkloadFactory>> = BTreeMap::new();
    for (host, job) in jobs {
        let program = job.role.clone().build::<Host>();
        let work = host::workload(program, move |result| job.finish(result));
        per_host.entry(host).or_default().push(work);
    }
    let accounts = (!datagram_receivers.is_empty()).then(|| {
        let flows = datagram_receivers.len();
        let over = move || {
            datagram_receivers
                .iter()
                .any(|job| job.role.rendezvous().failed())
                || datagram_receivers.iter().all(Job::finished)
        };
        Arc::new(Accounts::new(flows, Box::new(over)))
    });
    if let Some(accounts) = &accounts {
        for node in topology.nodes() {
            per_host
                .entry(node.name.clone())
                .or_default()
                .push(tally::monitor(accounts.clone()));
        }
    }
    let workloads = per_host
        .into_iter()
        .map(|(host, factories)| {
            let work = pins.wrap(&host, with_timeouts(host::together(factories)));
            (host, work)
        })
        .collect();
    // Each workload ends itself (done or timed out); the limit is a
    // backstop only.
    let limit = Duration::from_secs(24 * 3600);
    threaded::run(topology, Duration::ZERO, limit, workloads)
        .map_err(|e| TrafficError::Invalid(format!("the network did not start: {e}")))?;
    Ok(NetworkEnd {
        placement: pins.placement(),
        drops_if_alone: accounts.and_then(|a| a.drops_if_alone()),
    })
}

/// The longest virtual time a simulated run may take: every program ends
/// itself (done or timed out on the simulator's clock) long before.
const SIMULATED_LIMIT: Duration = Duration::from_secs(3600);

/// Runs `jobs` (each on its host) on `topology` in the simulator: one
/// thread, a virtual clock, every random choice seeded, so the same
/// topology and jobs replay the same run packet for packet.
pub fn simulate(topology: &Topology, jobs: Vec<(String, Job)>) -> Result<(), TrafficError> {
    let mut sim = Simulator::new(topology, None)
        .map_err(|e| TrafficError::Invalid(format!("the network did not start: {e}")))?;
    let programs = jobs
        .iter()
        .map(|(host, job)| (host.clone(), job.role.clone().build::<Host>()))
        .collect();
    let results = host::simulate(&mut sim, programs, SIMULATED_LIMIT);
    for ((_, job), result) in jobs.iter().zip(results) {
        job.finish(result.unwrap_or_else(|| {
            Err(TrafficError::timeout(
                SIMULATED_LIMIT,
                "of virtual time: the simulated run did not end",
            ))
        }));
    }
    Ok(())
}
