//! Transfers on the reference stack: the run of one or more flows, and
//! the datagram flows — UDP, or link-level frames of Ethertype 0x88B5 —
//! with the same datagrams, sentinels and checks as
//! the kernel target (`kernel::udp`), sent and received by workloads on
//! the sender's and receiver's host threads.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stack::iface::host::{Host, LinkHandle, UdpHandle};
use stack::runner::threaded::{self, Progress, Workload, WorkloadFactory};
use stack::socket::udp::UdpConfig;
use stack::socket::{LinkConfig, SendError};
use stack::topology::Topology;

use super::drive;
use super::tally::{self, Accounts};
use super::{address_of, take, Endpoints, Outcome, Shared};
use crate::cpu::{CpuMeter, CpuUsage};
use crate::datagram::{self, Kind};
use crate::env::{Environment, GrantedBuffers};
use crate::error::TrafficError;
use crate::kernel::udp::{END_WAIT, SENTINEL_GAP, SENTINEL_REPEATS};
use crate::meter::{IntervalRecorder, Meter};
use crate::pace::Pacer;
use crate::pattern::Pattern;
use crate::program::stream::{self, StreamReceiver, StreamSender};
use crate::report::{ReceiverSide, SenderSide, Timestamp, TransferReport};
use crate::session::ReceiveSession;
use crate::spec::{Family, Protocol, TransferSpec, RAW_ETHERTYPE};
use crate::transport::StreamOptions;
use crate::verify::Arrival;

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
            let (transport, granted) = Transport::for_spec(&spec);
            flow.target.sockbuf_granted = granted;
            (
                receiver(
                    spec.clone(),
                    transport,
                    flow.ends.receiver_interface.clone(),
                    pattern.clone(),
                    meter.clone(),
                    outcome.clone(),
                ),
                sender(
                    spec.clone(),
                    transport,
                    flow.ends.sender_interface.clone(),
                    pattern,
                    meter.clone(),
                    outcome.clone(),
                ),
            )
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

pub(super) fn receiver(
    spec: TransferSpec,
    transport: Transport,
    interface: String,
    pattern: Arc<Pattern>,
    meter: Arc<Meter>,
    outcome: Shared,
) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let channel = match transport.open(host, &spec, &interface, true) {
            Ok(channel) => channel,
            Err(e) => return failed(&outcome.receiver, e),
        };
        let mut state = Receiving {
            channel,
            interface,
            buf: vec![0u8; 65_536],
            began: Instant::now(),
            session: None,
        };
        Box::new(move |host: &mut Host, _now| {
            match state.step(host, &spec, &pattern, &meter, &outcome) {
                Ok(None) => Progress::WAITING,
                Ok(Some(side)) => {
                    *outcome.receiver.lock().unwrap_or_else(|e| e.into_inner()) = Some(Ok(side));
                    stack::runner::threaded::wake_peers();
                    Progress::Done
                }
                Err(e) => {
                    *outcome.receiver.lock().unwrap_or_else(|e| e.into_inner()) = Some(Err(e));
                    stack::runner::threaded::wake_peers();
                    Progress::Done
                }
            }
        })
    })
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

struct Receiving {
    channel: Channel,
    interface: String,
    buf: Vec<u8>,
    began: Instant,
    /// Once the receiver's address is usable and published.
    session: Option<ReceiveSession>,
}

impl Receiving {
    /// One turn: publish the address once there is one, drain the socket,
    /// check the deadlines. `Some` when the transfer is over.
    fn step(
        &mut self,
        host: &mut Host,
        spec: &TransferSpec,
        pattern: &Pattern,
        meter: &Meter,
        outcome: &Outcome,
    ) -> Result<Option<ReceiverSide>, TrafficError> {
        let Some(session) = self.session.as_mut() else {
            if let Some(addr) = self.channel.address(host, spec, &self.interface) {
                outcome.rendezvous.publish(addr);
                stack::runner::threaded::wake_peers();
                self.session = Some(ReceiveSession::new(spec.circuit));
            } else if self.began.elapsed() > spec.timeout + ADDRESS_GRACE {
                return Err(TrafficError::timeout(
                    spec.timeout + ADDRESS_GRACE,
                    format!(
                        "waiting for the receiving host to get an {} address",
                        spec.family
                    ),
                ));
            }
            return Ok(None);
        };
        let mut over = outcome.failed();
        while let Some((n, _from)) = self.channel.recv(host, &mut self.buf) {
            if let Arrival::End { .. } = session.arrival(pattern, &self.buf[..n], meter) {
                over = true;
                break;
            }
        }
        if over || session.quiet(spec.timeout, "waiting for the first datagram")? {
            return Ok(self.session.take().map(ReceiveSession::finish));
        }
        Ok(None)
    }
}

pub(super) fn sender(
    spec: TransferSpec,
    transport: Transport,
    interface: String,
    pattern: Arc<Pattern>,
    meter: Arc<Meter>,
    outcome: Shared,
) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let channel = match transport.open(host, &spec, &interface, false) {
            Ok(channel) => channel,
            Err(e) => return failed(&outcome.sender, e),
        };
        let mut state = Sending {
            channel,
            interface,
            ended: None,
            buf: vec![0u8; spec.len],
            phase: Phase::WaitingForPeer {
                since: Instant::now(),
            },
            seq: 0,
            started: None,
            elapsed: Duration::ZERO,
            cpu: None,
            cpu_usage: CpuUsage::default(),
            pacer: None,
            stalled_since: None,
        };
        Box::new(move |host: &mut Host, now| {
            match state.step(host, &spec, &pattern, &meter, &outcome) {
                Ok(false) => state
                    .next_event()
                    .map_or(Progress::WAITING, |at| Progress::at(now, at)),
                Ok(true) => {
                    let side = SenderSide {
                        bytes: state.seq * spec.len as u64,
                        datagrams: state.seq,
                        elapsed: state.elapsed,
                        cpu: state.cpu_usage,
                        retransmits: None,
                    };
                    *outcome.sender.lock().unwrap_or_else(|e| e.into_inner()) = Some(Ok(side));
                    stack::runner::threaded::wake_peers();
                    Progress::Done
                }
                Err(e) => {
                    *outcome.sender.lock().unwrap_or_else(|e| e.into_inner()) = Some(Err(e));
                    stack::runner::threaded::wake_peers();
                    Progress::Done
                }
            }
        })
    })
}

enum Phase {
    WaitingForPeer {
        since: Instant,
    },
    Start {
        dest: PeerAddr,
        sent: usize,
        next: Instant,
    },
    Data {
        dest: PeerAddr,
    },
    End {
        dest: PeerAddr,
        sent: usize,
        next: Instant,
    },
}

struct Sending {
    channel: Channel,
    interface: String,
    /// When the last data datagram was queued.
    ended: Option<Instant>,
    buf: Vec<u8>,
    phase: Phase,
    seq: u64,
    started: Option<Instant>,
    elapsed: Duration,
    cpu: Option<CpuMeter>,
    cpu_usage: CpuUsage,
    pacer: Option<Pacer>,
    /// Since when the socket's send queue has refused every datagram.
    stalled_since: Option<Instant>,
}

impl Sending {
    /// When the sender next has something to do that no frame or peer
    /// will wake it for: the next sentinel, or the pacer's next datagram.
    /// (A full send queue drains at the next poll, which moves packets.)
    fn next_event(&self) -> Option<Instant> {
        match self.phase {
            Phase::WaitingForPeer { .. } => None,
            Phase::Start { next, .. } | Phase::End { next, .. } => Some(next),
            Phase::Data { .. } => self.pacer.as_ref().map(Pacer::due),
        }
    }

    /// One turn of the sender; true when it is done.
    fn step(
        &mut self,
        host: &mut Host,
        spec: &TransferSpec,
        pattern: &Pattern,
        meter: &Meter,
        outcome: &Outcome,
    ) -> Result<bool, TrafficError> {
        let now = Instant::now();
        match self.phase {
            Phase::WaitingForPeer { since } => {
                let own = self.channel.address(host, spec, &self.interface);
                match (own, outcome.rendezvous.receiver()) {
                    (Some(_), Some(dest)) => {
                        self.phase = Phase::Start {
                            dest,
                            sent: 0,
                            next: now,
                        };
                    }
                    _ if outcome.failed() => return Ok(true),
                    _ if since.elapsed() > spec.timeout + ADDRESS_GRACE => {
                        return Err(TrafficError::timeout(
                            spec.timeout + ADDRESS_GRACE,
                            format!("waiting for both hosts to get an {} address", spec.family),
                        ))
                    }
                    _ => {}
                }
            }
            Phase::Start { dest, sent, next } | Phase::End { dest, sent, next } => {
                let ending = matches!(self.phase, Phase::End { .. });
                if now >= next {
                    let (kind, seq) = if ending {
                        (Kind::End, self.seq)
                    } else {
                        (Kind::Start, spec.count)
                    };
                    datagram::write(&mut self.buf, kind, seq, spec.circuit, pattern);
                    // A refused sentinel is retried at the next gap.
                    let ok = self.channel.send(host, &self.buf, dest).is_ok();
                    let sent = sent + usize::from(ok);
                    let next = now + SENTINEL_GAP;
                    // End sentinels go on until the receiver has them (it
                    // is in this process), or END_WAIT has passed.
                    let received = outcome
                        .receiver
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .is_some();
                    let enough = if ending {
                        received || self.ended.is_some_and(|t| t.elapsed() > END_WAIT)
                    } else {
                        sent >= SENTINEL_REPEATS
                    };
                    self.phase = match (ending, enough) {
                        (true, true) => return Ok(true),
                        (false, true) => {
                            self.started = Some(Instant::now());
                            self.cpu = Some(CpuMeter::start());
                            self.pacer = spec.rate_bps.map(Pacer::new);
                            Phase::Data { dest }
                        }
                        (true, false) => Phase::End { dest, sent, next },
                        (false, false) => Phase::Start { dest, sent, next },
                    };
                }
            }
            Phase::Data { dest } => {
                if outcome.failed() {
                    return Ok(true);
                }
                self.send_data(host, spec, pattern, meter, dest)?;
                let since_start = self.started.map_or(Duration::ZERO, |s| s.elapsed());
                if !spec.keep_sending(self.seq, since_start) {
                    self.elapsed = self.started.map_or(Duration::ZERO, |s| s.elapsed());
                    self.cpu_usage = self.cpu.map_or(CpuUsage::default(), |c| c.stop());
                    self.ended = Some(Instant::now());
                    self.phase = Phase::End {
                        dest,
                        sent: 0,
                        next: Instant::now() + SENTINEL_GAP,
                    };
                }
            }
        }
        Ok(false)
    }

    /// Queues data datagrams until the socket's send queue is full, the
    /// pacer says wait, or all are sent (`count`, and the minimum
    /// duration passed).
    fn send_data(
        &mut self,
        host: &mut Host,
        spec: &TransferSpec,
        pattern: &Pattern,
        meter: &Meter,
        dest: PeerAddr,
    ) -> Result<(), TrafficError> {
        let started = self.started.unwrap_or_else(Instant::now);
        while spec.keep_sending(self.seq, started.elapsed()) {
            if let Some(pacer) = &self.pacer {
                if Instant::now() < pacer.due() {
                    return Ok(());
                }
            }
            datagram::write(&mut self.buf, Kind::Data, self.seq, spec.circuit, pattern);
            match self.channel.send(host, &self.buf, dest) {
                Ok(()) => {
                    self.stalled_since = None;
                    self.seq += 1;
                    meter.add_sent(spec.len as u64);
                    if let Some(pacer) = &mut self.pacer {
                        pacer.sent(spec.len);
                    }
                }
                Err(SendError::QueueFull | SendError::PoolExhausted) => {
                    // Back-pressure: the host drains the queue at its
                    // next poll. A queue that never drains is a fault.
                    let since = *self.stalled_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > spec.timeout {
                        return Err(TrafficError::timeout(
                            spec.timeout,
                            "the sending host stopped taking datagrams",
                        ));
                    }
                    return Ok(());
                }
                Err(e) => return Err(TrafficError::Invalid(format!("send: {e}"))),
            }
        }
        Ok(())
    }
}
