//! Transfers on the reference stack: the run of one or more flows, and
//! the datagram flows — UDP, or link-level frames of Ethertype 0x88B5 —
//! with the same datagrams, sentinels and checks as
//! the kernel target (`kernel::udp`), sent and received by workloads on
//! the sender's and receiver's host threads.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use stack::iface::host::{Host, LinkHandle, UdpHandle};
use stack::runner::threaded::{self, Progress, Workload, WorkloadFactory};
use stack::socket::udp::UdpConfig;
use stack::socket::{LinkConfig, SendError};
use stack::topology::Topology;

use super::drive;
use super::tally::{self, Accounts};
use super::{address_of, take, Endpoints, Outcome, Shared};
use crate::env::{Environment, GrantedBuffers};
use crate::error::TrafficError;
use crate::meter::{IntervalRecorder, Meter};
use crate::pattern::Pattern;
use crate::program::datagrams::{self, DatagramReceiver, DatagramSender};
use crate::program::stream::{self, StreamReceiver, StreamSender};
use crate::report::{Timestamp, TransferReport};
use crate::spec::{Family, Protocol, TransferSpec, RAW_ETHERTYPE};
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
            let config = super::net::tcp_config(options);
            flow.target.sockbuf_granted = GrantedBuffers {
                send: Some(config.send_buffer),
                recv: Some(config.recv_buffer),
            };
            flow.target.congestion_control = Some(super::net::algorithm_name(&config).into());
            stream_workloads(&spec, pattern, meter.clone(), &outcome)
        } else {
            let (_, granted) = Transport::for_spec(&spec);
            flow.target.sockbuf_granted = granted;
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

/// Datagrams a sender's socket queues before sends are refused.
pub(super) const SEND_QUEUE: usize = 256;

/// What carries the datagrams.
#[derive(Debug, Clone, Copy)]
pub(super) enum Transport {
    Udp(UdpConfig),
    /// Link-level frames of [`RAW_ETHERTYPE`] between neighbours.
    Link(LinkConfig),
}

/// Where the receiver takes datagrams.
pub(super) use crate::transport::Peer as PeerAddr;

/// A host's open end of the transfer.
#[derive(Debug, Clone, Copy)]
pub(super) enum Channel {
    Udp(UdpHandle),
    Link(LinkHandle),
}

impl Transport {
    /// UDP or link sockets sized by the spec's `-b` (default 4 MiB of
    /// receive queue), and what that grants.
    pub(super) fn for_spec(spec: &TransferSpec) -> (Self, GrantedBuffers) {
        let recv_bytes = spec.sockbuf.unwrap_or(4 << 20);
        let recv_entries = (recv_bytes / spec.len.max(1)).clamp(64, 1 << 16);
        let transport = match spec.protocol {
            Protocol::Udp => Transport::Udp(UdpConfig {
                send_queue_datagrams: SEND_QUEUE,
                recv_queue_datagrams: recv_entries,
                recv_queue_bytes: recv_bytes,
                ..UdpConfig::default()
            }),
            _ => Transport::Link(LinkConfig {
                send_queue_frames: SEND_QUEUE,
                recv_queue_frames: recv_entries,
                recv_queue_bytes: recv_bytes,
            }),
        };
        let granted = GrantedBuffers {
            send: Some(SEND_QUEUE * spec.len),
            recv: Some(recv_bytes),
        };
        (transport, granted)
    }

    /// Opens the channel on `host`: UDP bound to the spec's port (the
    /// receiver) or unbound (the sender); a link socket on `interface`.
    pub(super) fn open(
        self,
        host: &mut Host,
        spec: &TransferSpec,
        interface: &str,
        receiving: bool,
    ) -> Result<Channel, TrafficError> {
        match self {
            Transport::Udp(config) => {
                let socket = host.udp_open(config);
                if receiving {
                    host.udp_bind(socket, SocketAddr::new(unspecified(spec.family), spec.port));
                }
                Ok(Channel::Udp(socket))
            }
            Transport::Link(config) => {
                let id = host.interface_id(interface).ok_or_else(|| {
                    TrafficError::Invalid(format!("{} has no interface {interface}", host.name()))
                })?;
                host.link_open_with(id, RAW_ETHERTYPE, config)
                    .map(Channel::Link)
                    .map_err(|e| TrafficError::Invalid(format!("{}: {e}", host.name())))
            }
        }
    }
}

impl Channel {
    /// The address the peer sends to, once this end has one.
    pub(super) fn address(
        self,
        host: &Host,
        spec: &TransferSpec,
        interface: &str,
    ) -> Option<PeerAddr> {
        match self {
            Channel::Udp(_) => {
                address_of(host, spec.family).map(|ip| PeerAddr::Ip(SocketAddr::new(ip, spec.port)))
            }
            Channel::Link(_) => host
                .interface_id(interface)
                .and_then(|id| host.interface_mac(id))
                .map(PeerAddr::Mac),
        }
    }

    pub(super) fn send(self, host: &mut Host, data: &[u8], to: PeerAddr) -> Result<(), SendError> {
        match (self, to) {
            (Channel::Udp(h), PeerAddr::Ip(dest)) => host.udp_send_to(h, data, dest),
            (Channel::Link(h), PeerAddr::Mac(dest)) => host.link_send_to(h, data, dest),
            _ => Err(SendError::FamilyMismatch),
        }
    }

    /// The next datagram into `buf` (truncated to it), with its sender.
    pub(super) fn recv(self, host: &mut Host, buf: &mut [u8]) -> Option<(usize, PeerAddr)> {
        match self {
            Channel::Udp(h) => host
                .udp(h)
                .recv_from(buf)
                .map(|(n, from)| (n, PeerAddr::Ip(from))),
            Channel::Link(h) => host
                .link(h)
                .recv_from(buf)
                .map(|(n, from)| (n, PeerAddr::Mac(from))),
        }
    }
}

/// The unspecified address of `family`: a receiver's wildcard bind.
pub(super) fn unspecified(family: Family) -> IpAddr {
    match family {
        Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// A workload that records `error` as its side's outcome and is done.
pub(super) fn failed<T: Send + 'static>(
    slot: &std::sync::Mutex<Option<Result<T, TrafficError>>>,
    error: TrafficError,
) -> Workload {
    *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(Err(error));
    stack::runner::threaded::wake_peers();
    Box::new(|_: &mut Host, _| Progress::Done)
}
