//! The `ref` target: the reference stack, in this process. The transfer
//! runs from the first host of a topology (default: host-a — router —
//! host-b) to the last, each node on its own thread of the threaded
//! runner, on the real clock. The sender waits until the receiver has an
//! address of the family (SLAAC and DAD take about a second), so no
//! warm-up has to be guessed.

mod udp;

use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use stack::topology::{NodeKind, Topology};

use crate::env::Environment;
use crate::error::TrafficError;
use crate::report::{ReceiverSide, SenderSide, TransferReport};
use crate::spec::{Family, Protocol, StackKind, TransferSpec};

/// The two hosts a transfer runs between.
#[derive(Debug, Clone)]
pub struct Endpoints {
    pub sender: String,
    pub receiver: String,
}

/// Loads `path` (or the default network) and picks the first and last
/// hosts.
pub fn endpoints(path: Option<&Path>) -> Result<(Topology, Endpoints), TrafficError> {
    let topology = match path {
        Some(path) => Topology::load(path)
            .map_err(|e| TrafficError::Invalid(format!("{}: {e}", path.display())))?,
        None => Topology::default_network(),
    };
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
    let endpoints = Endpoints {
        sender: first.to_string(),
        receiver: last.to_string(),
    };
    Ok((topology, endpoints))
}

/// What the two sides' workloads hand back across threads.
#[derive(Default)]
struct Outcome {
    /// The receiver's address, once it has one of the family.
    receiver_addr: OnceLock<IpAddr>,
    sender: Mutex<Option<Result<SenderSide, TrafficError>>>,
    receiver: Mutex<Option<Result<ReceiverSide, TrafficError>>>,
}

impl Outcome {
    /// True once either side has failed: the other stops too.
    fn failed(&self) -> bool {
        failed(&self.sender) || failed(&self.receiver)
    }
}

fn failed<T>(slot: &Mutex<Option<Result<T, TrafficError>>>) -> bool {
    matches!(
        *slot.lock().unwrap_or_else(|e| e.into_inner()),
        Some(Err(_))
    )
}

/// Runs a transfer between the topology's first and last host.
pub fn run_pair(
    spec: &TransferSpec,
    topology: Option<&Path>,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    spec.validate()?;
    if spec.protocol == Protocol::Tcp {
        return Err(TrafficError::Unsupported(
            "the reference stack has no TCP yet: use -u (UDP) or --raw (link-level frames), \
             or --stack kernel for TCP"
                .into(),
        ));
    }
    let (topology, ends) = endpoints(topology)?;
    let mut target = Environment::detect(
        StackKind::Ref,
        format!(
            "reference stack: {} -> {} ({} nodes, threaded runner)",
            ends.sender,
            ends.receiver,
            topology.nodes().len()
        ),
    );
    target.mtu = topology
        .node(&ends.sender)
        .and_then(|n| n.interfaces.first())
        .map(|i| i.mtu as u32);
    match spec.protocol {
        Protocol::Udp => udp::run(spec, &topology, &ends, target, print_intervals),
        Protocol::Raw => Err(TrafficError::Unsupported(
            "raw link-level frames on the reference stack are not available yet".into(),
        )),
        Protocol::Tcp => unreachable!("refused above"),
    }
}

/// The first address of `family` a host has (global IPv6 only once DAD
/// is done).
fn address_of(host: &stack::iface::host::Host, family: Family) -> Option<IpAddr> {
    match family {
        Family::V6 => host
            .global_ipv6_addresses()
            .first()
            .copied()
            .map(IpAddr::V6),
        Family::V4 => host.ipv4_addresses().first().copied().map(IpAddr::V4),
    }
}

fn take<T>(slot: &Mutex<Option<Result<T, TrafficError>>>, side: &str) -> Result<T, TrafficError> {
    slot.lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_else(|| {
            Err(TrafficError::Invalid(format!(
                "the {side} did not finish (its host failed to start?)"
            )))
        })
}

type Shared = Arc<Outcome>;
