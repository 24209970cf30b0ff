//! Transfers on the reference stack: the run of one or more flows, and
//! the datagram flows — UDP, or link-level frames of Ethertype 0x88B5 —
//! with the same datagrams, sentinels and checks as
//! the kernel target (`kernel::udp`), sent and received by workloads on
//! the sender's and receiver's host threads.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use stack::iface::host::Host;
use stack::runner::threaded::{self, Progress, Workload, WorkloadFactory};
use stack::topology::Topology;

use super::drive;
use super::tally::{self, Accounts};
use super::{take, Endpoints, Outcome, Shared};
use crate::env::Environment;
use crate::error::TrafficError;
use crate::meter::{IntervalRecorder, Meter};
use crate::pattern::Pattern;
use crate::program::datagrams::{self, DatagramReceiver, DatagramSender};
use crate::program::stream::{self, StreamReceiver, StreamSender};
use crate::report::{Timestamp, TransferReport};
use crate::spec::{Family, Protocol, TransferSpec};
use crate::transport::StreamOptions;

/// How long the hosts may take to configure their addresses (SLAAC, DAD)
/// on top of the spec's timeout.
pub(super) const ADDRESS_GRACE: Duration = Duration::from_secs(10);

/// One transfer of a run: what, between which ends, described how.
pub(super) struct Flow {
    pub spec: TransferSpec,
    pub ends: Endpoints,
    pub target: Environment,
}

/// Runs `flows` at the same time on one network, each with its own
/// sockets (UDP ports or circuit numbers keep them apart), and reports
/// each. A flow's failure fails the run.
pub(super) fn run(
    flows: Vec<Flow>,
    topology: &Topology,
    print_intervals: bool,
) -> Result<Vec<TransferReport>, TrafficError> {
    let mut per_host: BTreeMap<String, Vec<WorkloadFactory>> = BTreeMap::new();
    let mut running = Vec::with_capacity(flows.len());
    for mut flow in flows {
        let spec = flow.spec.clone();
        let pattern = Arc::new(crate::kernel::pattern_for(spec.len));
        let meter = Arc::new(Meter::default());
        let outcome: Shared = Arc::new(Outcome::default());
        let (receiving, sending) = if spec.protocol == Protocol::Tcp {
            let options = StreamOptions {
                buffer: spec.sockbuf,
                nodelay: spec.nodelay,
            };
            let planned = super::net::stream_facts_for(options);
            flow.target.sockbuf_granted = planned.granted;
            flow.target.congestion_control = planned.congestion_control;
            stream_workloads(&spec, pattern, meter.clone(), &outcome)
        } else {
            flow.target.sockbuf_granted = super::net::datagram_granted(&spec);
            datagram_workloads(&spec, pattern, meter.clone(), &outcome, &flow.ends)
        };
        per_host
            .entry(flow.ends.receiver.clone())
            .or_default()
            .push(receiving);
        per_host
            .entry(flow.ends.sender.clone())
            .or_default()
            .push(sending);
        let recorder = spec
            .interval
            .map(|every| IntervalRecorder::start(meter.clone(), every, print_intervals));
        running.push((flow, outcome, recorder));
    }
    // Every node counts its drops over the data of the datagram flows.
    let datagram_flows: Vec<Shared> = running
        .iter()
        .filter(|(flow, _, _)| flow.spec.protocol != Protocol::Tcp)
        .map(|(_, outcome, _)| outcome.clone())
        .collect();
    let accounts = (!datagram_flows.is_empty()).then(|| Arc::new(Accounts::new(datagram_flows)));
    if let Some(accounts) = &accounts {
        for node in topology.nodes() {
            per_host
                .entry(node.name.clone())
                .or_default()
                .push(tally::monitor(accounts.clone()));
        }
    }
    let flows: Vec<&Flow> = running.iter().map(|(flow, _, _)| flow).collect();
    let pins = super::pinned::Pins::plan(&flows, topology)?;
    let workloads = per_host
        .into_iter()
        .map(|(host, factories)| {
            let work = pins.wrap(&host, together(factories));
            (host, work)
        })
        .collect();
    let timestamp = Timestamp::now();
    // Each workload ends itself (done or timed out); the limit is a
    // backstop only.
    let limit = Duration::from_secs(24 * 3600);
    let ran = threaded::run(topology, Duration::ZERO, limit, workloads);
    let mut reports = Vec::with_capacity(running.len());
    let mut first_error = None;
    for (mut flow, outcome, recorder) in running {
        flow.target.placement = pins.placement();
        let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
        let receiver_side = take(&outcome.receiver, "receiver");
        let sender_side = take(&outcome.sender, "sender");
        // The first failure is the cause; the other side's is a
        // consequence.
        match (sender_side, receiver_side) {
            (Err(e), other) => {
                first_error.get_or_insert(super::cause(e, other.err()));
            }
            (Ok(_), Err(e)) => {
                first_error.get_or_insert(e);
            }
            (Ok(s), Ok(mut r)) => {
                // With one datagram flow every drop of the run is its own;
                // with several, the counters cannot tell whose it was.
                if flow.spec.protocol != Protocol::Tcp {
                    r.drops = accounts.as_ref().and_then(|a| a.drops_if_alone());
                }
                reports.push(
                    TransferReport::new(
                        &flow.spec,
                        flow.target,
                        timestamp.clone(),
                        intervals,
                        Some(&s),
                        Some(&r),
                    )
                    .with_runner_wait(threaded::Poll::Spin.as_str()),
                );
            }
        }
    }
    ran.map_err(|e| TrafficError::Invalid(format!("the network did not start: {e}")))?;
    match first_error {
        Some(e) => Err(e),
        None => Ok(reports),
    }
}

/// The stream programs of a TCP flow as the receiver's and the sender's
/// workloads.
pub(super) fn stream_workloads(
    spec: &TransferSpec,
    pattern: Arc<Pattern>,
    meter: Arc<Meter>,
    outcome: &Shared,
) -> (WorkloadFactory, WorkloadFactory) {
    let shared = stream::Shared {
        spec: spec.clone(),
        pattern,
        meter,
        rendezvous: outcome.rendezvous.clone(),
        address_grace: ADDRESS_GRACE,
    };
    let bind = SocketAddr::new(unspecified(spec.family), spec.port);
    // Whatever the host has, at least 64 KiB a call: each step reads
    // what arrived since the last.
    let read_len = spec.len.max(64 * 1024);
    let receiver = StreamReceiver::new(shared.clone(), bind, read_len);
    let sender = StreamSender::new(shared);
    let (r, s) = (outcome.clone(), outcome.clone());
    (
        drive::workload(receiver, move |ended| {
            r.receiver_done(ended.map(|e| e.side))
        }),
        drive::workload(sender, move |ended| s.sender_done(ended.map(|e| e.side))),
    )
}

/// The datagram programs of a UDP or raw flow as the receiver's and the
/// sender's workloads.
pub(super) fn datagram_workloads(
    spec: &TransferSpec,
    pattern: Arc<Pattern>,
    meter: Arc<Meter>,
    outcome: &Shared,
    ends: &Endpoints,
) -> (WorkloadFactory, WorkloadFactory) {
    let shared = |interface: &str| datagrams::Shared {
        spec: spec.clone(),
        pattern: pattern.clone(),
        meter: meter.clone(),
        rendezvous: outcome.rendezvous.clone(),
        address_grace: ADDRESS_GRACE,
        interface: interface.to_string(),
    };
    let bind = SocketAddr::new(unspecified(spec.family), spec.port);
    let receiver = DatagramReceiver::new(shared(&ends.receiver_interface), bind);
    let sender = DatagramSender::new(shared(&ends.sender_interface));
    let (r, s) = (outcome.clone(), outcome.clone());
    (
        drive::workload(receiver, move |ended| {
            r.receiver_done(ended.map(|e| e.side))
        }),
        drive::workload(sender, move |ended| s.sender_done(ended.map(|e| e.side))),
    )
}

/// Several workloads on one host, run in turn; done when all are.
fn together(factories: Vec<WorkloadFactory>) -> WorkloadFactory {
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
            super::checking_timeouts(now, progress)
        })
    })
}

/// The unspecified address of `family`: a receiver's wildcard bind.
pub(super) fn unspecified(family: Family) -> IpAddr {
    match family {
        Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}
