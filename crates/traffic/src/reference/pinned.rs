//! A transfer's two hosts on CPUs of their own (a sweep's `--load-on
//! server|client`): the receiver's host thread on one CPU, the sender's on
//! the other, each pinned by its workload factory — which the threaded
//! runner calls on the host's own thread before the measured part — and
//! read back, so the report says whether the pins held.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use stack::runner::threaded::WorkloadFactory;
use stack::topology::Topology;

use super::Endpoints;
use crate::affinity::{self, Placement, SideCpus};
use crate::error::TrafficError;

/// The pins a run makes: none, or the two hosts of its one flow.
pub(crate) struct Pins {
    plan: Option<Plan>,
}

struct Plan {
    cpus: SideCpus,
    receiver: String,
    sender: String,
    /// Whether each host's pin held: receiver, sender.
    held: Arc<[AtomicBool; 2]>,
}

impl Pins {
    /// The pins `flows` ask for. Refused when they cannot all be kept:
    /// several flows, or a topology with nodes besides the two hosts
    /// (a router's thread would run wherever the scheduler put it).
    pub(crate) fn plan(
        flows: &[(Option<SideCpus>, &Endpoints)],
        topology: &Topology,
    ) -> Result<Self, TrafficError> {
        let Some(cpus) = flows.iter().find_map(|f| f.0) else {
            return Ok(Self { plan: None });
        };
        let refuse = |why: String| {
            Err(TrafficError::Unsupported(format!(
                "pinning the sides to CPUs (--load-on server or client) on the reference \
                 stack {why}"
            )))
        };
        if flows.len() != 1 {
            return refuse(format!("runs one flow, not {}", flows.len()));
        }
        let nodes = topology.nodes().len();
        if nodes != 2 {
            return refuse(format!(
                "needs a topology of two hosts on one wire (every node is a thread); this \
                 one has {nodes} nodes"
            ));
        }
        Ok(Self {
            plan: Some(Plan {
                cpus,
                receiver: flows[0].1.receiver.clone(),
                sender: flows[0].1.sender.clone(),
                held: Arc::new([AtomicBool::new(false), AtomicBool::new(false)]),
            }),
        })
    }

    /// `host`'s factory, pinning its thread first when it is one of the
    /// two ends.
    pub(crate) fn wrap(&self, host: &str, factory: WorkloadFactory) -> WorkloadFactory {
        let Some(plan) = &self.plan else {
            return factory;
        };
        let (cpu, slot) = if host == plan.receiver {
            (plan.cpus.receiver, 0)
        } else if host == plan.sender {
            (plan.cpus.sender, 1)
        } else {
            return factory;
        };
        pinning(factory, cpu, Arc::clone(&plan.held), slot)
    }

    /// The run's record, once the hosts have run.
    pub(crate) fn placement(&self) -> Option<Placement> {
        self.plan.as_ref().map(|p| {
            p.cpus.placement(
                p.held[0].load(Ordering::Acquire),
                p.held[1].load(Ordering::Acquire),
            )
        })
    }
}

/// `factory`, pinning the calling (host) thread to `cpu` before it makes
/// the workload and noting in `held[slot]` whether the pin held.
pub(super) fn pinning(
    factory: WorkloadFactory,
    cpu: usize,
    held: Arc<[AtomicBool; 2]>,
    slot: usize,
) -> WorkloadFactory {
    Box::new(move |host| {
        held[slot].store(affinity::pin_current_checked(cpu), Ordering::Release);
        factory(host)
    })
}
