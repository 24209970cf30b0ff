//! The `ref` target: the reference stack, in this process. The transfer
//! runs from the first host of a topology (default: host-a — router —
//! host-b) to the last, each node on its own thread of the threaded
//! runner, on the real clock. The sender waits until the receiver has an
//! address of the family (SLAAC and DAD take about a second), so no
//! warm-up has to be guessed.

pub mod messages;
pub mod net;
pub(crate) mod pinned;
pub(crate) mod realtime;
pub(crate) mod tally;

use std::path::Path;

use stack::runner::threaded::{Progress, WorkloadFactory};
use stack::topology::{NodeKind, Topology};

use crate::env::Environment;
use crate::error::TrafficError;
use crate::spec::{Protocol, StackKind};

/// The two nodes a transfer runs between, and for link-level frames the
/// interfaces (the wire between them).
#[derive(Debug, Clone)]
pub struct Endpoints {
    pub sender: String,
    pub receiver: String,
    pub sender_interface: String,
    pub receiver_interface: String,
}

/// Loads `path` (or the default network).
pub fn load(path: Option<&Path>) -> Result<Topology, TrafficError> {
    match path {
        Some(path) => Topology::load(path).map_err(|e| TrafficError::Invalid(e.in_file(path))),
        None => Ok(Topology::default_network()),
    }
}

/// The first and last hosts of `topology`: IP traffic runs between them.
pub fn hosts(topology: &Topology) -> Result<Endpoints, TrafficError> {
    let hosts: Vec<&str> = topology
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Host)
        .map(|n| n.name.as_str())
        .collect();
    let (Some(first), Some(last)) = (hosts.first(), hosts.last()) else {
        return Err(TrafficError::Invalid(
            "the topology has no hosts: traffic runs between its first and last host".into(),
        ));
    };
    if hosts.len() < 2 {
        return Err(TrafficError::Invalid(format!(
            "the topology has one host ({first}): traffic needs two, it runs from the first to the last"
        )));
    }
    Ok(Endpoints {
        sender: first.to_string(),
        receiver: last.to_string(),
        sender_interface: String::new(),
        receiver_interface: String::new(),
    })
}

/// The first host and the node at the other end of its first wire: link-
/// level frames do not cross routers.
pub fn neighbours(topology: &Topology) -> Result<Endpoints, TrafficError> {
    let first = hosts(topology)?.sender;
    let wire = topology
        .wires()
        .iter()
        .find(|w| w.a.node == first || w.b.node == first)
        .ok_or_else(|| {
            TrafficError::Invalid(format!("{first} has no wire: raw frames need a neighbour"))
        })?;
    let (near, far) = if wire.a.node == first {
        (&wire.a, &wire.b)
    } else {
        (&wire.b, &wire.a)
    };
    Ok(Endpoints {
        sender: near.node.clone(),
        receiver: far.node.clone(),
        sender_interface: near.interface.clone(),
        receiver_interface: far.interface.clone(),
    })
}

/// How often a waiting workload of the threaded runner looks at its
/// failure time-outs (seconds long: the peer stopped answering, an address
/// never came), which no frame or peer wakes it for. The events of the
/// measurement itself (a paced send, an answer given up on) are precise.
const TIMEOUT_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// `progress`, due again within [`TIMEOUT_CHECK`] if it is running.
fn checking_timeouts(now: stack::time::Instant, progress: Progress) -> Progress {
    match progress {
        Progress::Done => Progress::Done,
        running => running.and(Progress::after(now, TIMEOUT_CHECK)),
    }
}

/// `factory`'s workload, looking at its time-outs at least every
/// [`TIMEOUT_CHECK`].
pub(crate) fn with_timeouts(factory: WorkloadFactory) -> WorkloadFactory {
    Box::new(move |host| {
        let mut work = factory(host);
        Box::new(move |host, now| checking_timeouts(now, work(host, now)))
    })
}

/// Loads the topology, picks the two ends for `protocol` and describes
/// the run; refuses what the reference stack cannot do.
pub(crate) fn plan(
    protocol: Protocol,
    len: usize,
    topology: &Topology,
) -> Result<(Endpoints, Environment), TrafficError> {
    let (ends, path) = if protocol == Protocol::Raw {
        let ends = neighbours(topology)?;
        let path = format!(
            "reference stack: link-level frames, Ethertype 0x88B5, {} {} -> {} {} \
             (threaded runner)",
            ends.sender, ends.sender_interface, ends.receiver, ends.receiver_interface
        );
        (ends, path)
    } else {
        let ends = hosts(topology)?;
        let path = format!(
            "reference stack: {} -> {} ({} nodes, threaded runner)",
            ends.sender,
            ends.receiver,
            topology.nodes().len()
        );
        (ends, path)
    };
    let mut target = Environment::detect(StackKind::Ref, path);
    let sender_mtu = topology.node(&ends.sender).and_then(|n| {
        n.interfaces
            .iter()
            .find(|i| ends.sender_interface.is_empty() || i.name == ends.sender_interface)
            .map(|i| i.mtu)
    });
    if let (Protocol::Raw, Some(mtu)) = (protocol, sender_mtu) {
        if len > mtu {
            return Err(TrafficError::Invalid(format!(
                "-l {} exceeds the link MTU of {mtu}: a raw frame is one link payload",
                len
            )));
        }
    }
    target.mtu = sender_mtu.map(|m| m as u32);
    // Raw frames cross one wire; IP traffic runs along a chain from the
    // first host to the last, so every wire is on its path and the
    // slowest bounds every rate.
    target.link_rate_bps = topology
        .wires()
        .iter()
        .filter(|w| {
            protocol != Protocol::Raw
                || [&w.a.node, &w.b.node].contains(&&ends.sender)
                    && [&w.a.node, &w.b.node].contains(&&ends.receiver)
        })
        .filter_map(|w| w.params.rate_bits_per_s)
        .min();
    Ok((ends, target))
}
