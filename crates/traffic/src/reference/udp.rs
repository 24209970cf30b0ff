//! UDP on the reference stack: the same datagrams, sentinels and checks as
//! the kernel target (`kernel::udp`), sent and received by workloads on
//! the sender's and receiver's host threads.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stack::iface::host::{Host, UdpHandle};
use stack::runner::threaded::{self, Progress, Workload, WorkloadFactory};
use stack::socket::udp::UdpConfig;
use stack::socket::SendError;
use stack::topology::Topology;

use super::{address_of, take, Endpoints, Outcome, Shared};
use crate::cpu::{CpuMeter, CpuUsage};
use crate::datagram::{self, Kind};
use crate::env::{Environment, GrantedBuffers};
use crate::error::TrafficError;
use crate::kernel::udp::{SENTINEL_GAP, SENTINEL_REPEATS};
use crate::meter::{IntervalRecorder, Meter};
use crate::pace::Pacer;
use crate::pattern::Pattern;
use crate::report::{Received, ReceiverSide, SenderSide, Timestamp, TransferReport};
use crate::spec::{Family, TransferSpec};
use crate::verify::{Arrival, DatagramVerifier};

/// How long the hosts may take to configure their addresses (SLAAC, DAD)
/// on top of the spec's timeout.
const ADDRESS_GRACE: Duration = Duration::from_secs(10);

pub(super) fn run(
    spec: &TransferSpec,
    topology: &Topology,
    ends: &Endpoints,
    mut target: Environment,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    let pattern = Arc::new(crate::kernel::pattern_for(spec.len));
    let meter = Arc::new(Meter::default());
    let outcome: Shared = Arc::new(Outcome::default());
    let recv_bytes = spec.sockbuf.unwrap_or(4 << 20);
    let config = UdpConfig {
        send_queue_datagrams: 256,
        recv_queue_datagrams: (recv_bytes / spec.len.max(1)).clamp(64, 1 << 16),
        recv_queue_bytes: recv_bytes,
        ..UdpConfig::default()
    };
    target.sockbuf_granted = GrantedBuffers {
        send: Some(config.send_queue_datagrams * spec.len),
        recv: Some(config.recv_queue_bytes),
    };
    let mut workloads: BTreeMap<String, WorkloadFactory> = BTreeMap::new();
    workloads.insert(
        ends.receiver.clone(),
        receiver(
            spec.clone(),
            config,
            pattern.clone(),
            meter.clone(),
            outcome.clone(),
        ),
    );
    workloads.insert(
        ends.sender.clone(),
        sender(
            spec.clone(),
            config,
            pattern,
            meter.clone(),
            outcome.clone(),
        ),
    );
    let timestamp = Timestamp::now();
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter.clone(), every, print_intervals));
    // Each workload ends itself (done or timed out); the limit is a
    // backstop only.
    let limit = Duration::from_secs(24 * 3600);
    let ran = threaded::run(topology, Duration::ZERO, limit, workloads);
    let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
    ran.map_err(|e| TrafficError::Invalid(format!("the network did not start: {e}")))?;
    let receiver_side = take(&outcome.receiver, "receiver");
    let sender_side = take(&outcome.sender, "sender");
    // The first failure is the cause; the other side's is a consequence.
    let (sender_side, receiver_side) = match (sender_side, receiver_side) {
        (Err(e), _) | (_, Err(e)) => return Err(e),
        (Ok(s), Ok(r)) => (s, r),
    };
    Ok(TransferReport::new(
        spec,
        target,
        timestamp,
        intervals,
        Some(&sender_side),
        Some(&receiver_side),
    ))
}

fn unspecified(family: Family) -> IpAddr {
    match family {
        Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

fn receiver(
    spec: TransferSpec,
    config: UdpConfig,
    pattern: Arc<Pattern>,
    meter: Arc<Meter>,
    outcome: Shared,
) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let socket = host.udp_open(config);
        host.udp_bind(socket, SocketAddr::new(unspecified(spec.family), spec.port));
        let mut state = Receiving {
            socket,
            buf: vec![0u8; 65_536],
            verifier: DatagramVerifier::new(),
            began: Instant::now(),
            ready_at: None,
            first: None,
            last: Instant::now(),
            cpu: None,
        };
        Box::new(move |host: &mut Host, _now| {
            match state.step(host, &spec, &pattern, &meter, &outcome) {
                Ok(None) => Progress::Running,
                Ok(Some(side)) => {
                    *outcome.receiver.lock().unwrap_or_else(|e| e.into_inner()) = Some(Ok(side));
                    Progress::Done
                }
                Err(e) => {
                    *outcome.receiver.lock().unwrap_or_else(|e| e.into_inner()) = Some(Err(e));
                    Progress::Done
                }
            }
        })
    })
}

struct Receiving {
    socket: UdpHandle,
    buf: Vec<u8>,
    verifier: DatagramVerifier,
    began: Instant,
    /// When the receiver's address became usable.
    ready_at: Option<Instant>,
    first: Option<Instant>,
    last: Instant,
    cpu: Option<CpuMeter>,
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
        let Some(ready_at) = self.ready_at else {
            if let Some(addr) = address_of(host, spec.family) {
                let _ = outcome.receiver_addr.set(addr);
                self.ready_at = Some(Instant::now());
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
        if outcome.failed() {
            return Ok(Some(self.finish()));
        }
        while let Some((n, _from)) = host.udp(self.socket).recv_from(&mut self.buf) {
            let now = Instant::now();
            match self.verifier.check(pattern, &self.buf[..n]) {
                Arrival::Data { .. } => {
                    self.first.get_or_insert(now);
                    self.cpu.get_or_insert_with(CpuMeter::start);
                    self.last = now;
                    meter.add_received(n as u64);
                }
                Arrival::End { .. } => return Ok(Some(self.finish())),
                _ => {}
            }
        }
        if !self.verifier.started() {
            if ready_at.elapsed() > spec.timeout {
                return Err(TrafficError::timeout(
                    spec.timeout,
                    "waiting for the first datagram",
                ));
            }
        } else if self.first.map_or(ready_at, |_| self.last).elapsed() > spec.timeout {
            // Every end sentinel was lost.
            return Ok(Some(self.finish()));
        }
        Ok(None)
    }

    fn finish(&mut self) -> ReceiverSide {
        let counts = self.verifier.finish();
        ReceiverSide {
            bytes: counts.bytes,
            elapsed: self
                .first
                .map_or(Duration::ZERO, |f| self.last.saturating_duration_since(f)),
            cpu: self.cpu.map_or(CpuUsage::default(), |c| c.stop()),
            checks: Received::Datagrams(counts),
        }
    }
}

fn sender(
    spec: TransferSpec,
    config: UdpConfig,
    pattern: Arc<Pattern>,
    meter: Arc<Meter>,
    outcome: Shared,
) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let socket = host.udp_open(config);
        let mut state = Sending {
            socket,
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
        Box::new(move |host: &mut Host, _now| {
            match state.step(host, &spec, &pattern, &meter, &outcome) {
                Ok(false) => Progress::Running,
                Ok(true) => {
                    let side = SenderSide {
                        bytes: state.seq * spec.len as u64,
                        datagrams: state.seq,
                        elapsed: state.elapsed,
                        cpu: state.cpu_usage,
                    };
                    *outcome.sender.lock().unwrap_or_else(|e| e.into_inner()) = Some(Ok(side));
                    Progress::Done
                }
                Err(e) => {
                    *outcome.sender.lock().unwrap_or_else(|e| e.into_inner()) = Some(Err(e));
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
        dest: SocketAddr,
        sent: usize,
        next: Instant,
    },
    Data {
        dest: SocketAddr,
    },
    End {
        dest: SocketAddr,
        sent: usize,
        next: Instant,
    },
}

struct Sending {
    socket: UdpHandle,
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
                let own = address_of(host, spec.family);
                match (own, outcome.receiver_addr.get()) {
                    (Some(_), Some(&addr)) => {
                        self.phase = Phase::Start {
                            dest: SocketAddr::new(addr, spec.port),
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
                    datagram::write(&mut self.buf, kind, seq, pattern);
                    // A refused sentinel is retried at the next gap.
                    let ok = host.udp_send_to(self.socket, &self.buf, dest).is_ok();
                    let sent = sent + usize::from(ok);
                    let next = now + SENTINEL_GAP;
                    self.phase = match (ending, sent >= SENTINEL_REPEATS) {
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
                if self.seq == spec.count {
                    self.elapsed = self.started.map_or(Duration::ZERO, |s| s.elapsed());
                    self.cpu_usage = self.cpu.map_or(CpuUsage::default(), |c| c.stop());
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
    /// pacer says wait, or all are sent.
    fn send_data(
        &mut self,
        host: &mut Host,
        spec: &TransferSpec,
        pattern: &Pattern,
        meter: &Meter,
        dest: SocketAddr,
    ) -> Result<(), TrafficError> {
        while self.seq < spec.count {
            if let Some(pacer) = &self.pacer {
                if Instant::now() < pacer.due() {
                    return Ok(());
                }
            }
            datagram::write(&mut self.buf, Kind::Data, self.seq, pattern);
            match host.udp_send_to(self.socket, &self.buf, dest) {
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
