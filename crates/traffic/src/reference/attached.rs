//! One end of a transfer on a reference host attached to links to the
//! operating system (a TAP, AF_PACKET on a veth end or NIC), the other end
//! anywhere else — typically the kernel's stack running `stackscope ttcp`
//! (`stackscope ttcp --stack ref --link tap|packet -t HOST` or `-r`). The
//! same workloads, checks and report as the in-process pair; the host runs
//! on the real-time runner in the calling thread.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use stack::iface::host::Host;
use stack::runner::realtime::{RealTime, Turn};
use stack::runner::threaded::{Progress, WorkloadFactory};

use super::datagrams;
use super::{take, Outcome, Shared};
use crate::env::{Environment, GrantedBuffers};
use crate::error::TrafficError;
use crate::meter::{IntervalRecorder, Meter};
use crate::pattern::Pattern;
use crate::report::{ReceiverSide, SenderSide, Timestamp, TransferReport};
use crate::spec::{Protocol, StackKind, TransferSpec};
use crate::transport::Peer as PeerAddr;
use crate::transport::StreamOptions;

/// Which end the attached host is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Send to this address (`-t HOST`).
    Transmit(IpAddr),
    /// Receive one transfer on the spec's port (`-r`).
    Receive,
}

/// How long the host keeps answering after its side is done, so the last
/// ACKs and FINs leave.
const LINGER: Duration = Duration::from_millis(50);
/// How the real-time runner waits: it polls for a moment after each
/// packet, then sleeps in `ppoll`.
pub(crate) const RUNNER_WAIT: &str = "spin-then-block";
/// The longest sleep of the runner between looks at the workload.
const MAX_SLEEP: Duration = Duration::from_millis(5);

/// Runs `role`'s side of `spec` on `host`; `path` describes the link for
/// the report (e.g. "reference stack on AF_PACKET veth0"). A receiver says
/// `ttcp-r: ready: ADDR port P` on stderr once it listens.
pub fn run(
    spec: &TransferSpec,
    host: &mut Host,
    role: Role,
    path: String,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    spec.validate()?;
    let pattern = Arc::new(crate::kernel::pattern_for(spec.len));
    let meter = Arc::new(Meter::default());
    let timestamp = Timestamp::now();
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter.clone(), every, print_intervals));
    let announce = |addr: SocketAddr| {
        // stderr: stdout is the report. The sender may go now.
        eprintln!(
            "ttcp-r: ready: {} port {} ({} buffers of {} bytes expected)",
            addr.ip(),
            addr.port(),
            spec.count,
            spec.len
        );
    };
    let ran = run_side(spec, host, role, &pattern, &meter, announce);
    let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
    let (side, facts) = ran?;
    let mut target = Environment::detect(StackKind::Ref, path);
    facts.describe(&mut target);
    Ok(match side {
        Ended::Sent(s) => TransferReport::new(spec, target, timestamp, intervals, Some(&s), None),
        Ended::Received(r) => {
            TransferReport::new(spec, target, timestamp, intervals, None, Some(&r))
        }
    }
    .with_runner_wait(RUNNER_WAIT))
}

/// What one side's run gives back.
pub(crate) enum Ended {
    Sent(SenderSide),
    Received(ReceiverSide),
}

/// What the reference host's side was configured with, for the record.
pub(crate) struct SideFacts {
    pub granted: GrantedBuffers,
    pub congestion_control: Option<String>,
    pub mtu: Option<u32>,
    /// Frames the operating system dropped before the host read them.
    pub rx_overrun: u64,
}

impl SideFacts {
    pub(crate) fn describe(&self, target: &mut Environment) {
        target.sockbuf_granted = self.granted;
        target.congestion_control = self.congestion_control.clone();
        target.mtu = self.mtu;
    }
}

/// Runs `role`'s side of `spec` on `host` until it is done, counting into
/// `meter`; `ready` is called once with the address a receiver listens on.
pub(crate) fn run_side(
    spec: &TransferSpec,
    host: &mut Host,
    role: Role,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
    mut ready: impl FnMut(SocketAddr),
) -> Result<(Ended, SideFacts), TrafficError> {
    if spec.protocol == Protocol::Raw {
        return Err(TrafficError::Invalid(
            "raw frames need both ends on the reference stack: use --pair without --link".into(),
        ));
    }
    let outcome: Shared = Arc::new(Outcome::default());
    let mut facts = SideFacts {
        granted: GrantedBuffers::default(),
        congestion_control: None,
        mtu: host.interfaces().first().map(|i| i.link.mtu() as u32),
        rx_overrun: 0,
    };
    let (spec_c, pattern_c, meter_c, outcome_c) = (
        spec.clone(),
        pattern.clone(),
        meter.clone(),
        outcome.clone(),
    );
    let factory: WorkloadFactory = if spec.protocol == Protocol::Tcp {
        let planned = super::net::stream_facts_for(StreamOptions {
            buffer: spec.sockbuf,
            nodelay: spec.nodelay,
        });
        facts.granted = planned.granted;
        facts.congestion_control = planned.congestion_control;
        let (receiving, sending) =
            datagrams::stream_workloads(&spec_c, pattern_c, meter_c, &outcome_c);
        match role {
            Role::Transmit(_) => sending,
            Role::Receive => receiving,
        }
    } else {
        facts.granted = super::net::datagram_granted(spec);
        let ends = super::Endpoints {
            sender: String::new(),
            receiver: String::new(),
            sender_interface: String::new(),
            receiver_interface: String::new(),
        };
        let (receiving, sending) =
            datagrams::datagram_workloads(&spec_c, pattern_c, meter_c, &outcome_c, &ends);
        match role {
            Role::Transmit(_) => sending,
            Role::Receive => receiving,
        }
    };
    if let Role::Transmit(dest) = role {
        // The peer is given, not discovered: publish it for the sender.
        outcome
            .rendezvous
            .publish(PeerAddr::Ip(SocketAddr::new(dest, spec.port)));
    }
    let runner = RealTime::new(MAX_SLEEP);
    let mut workload = Some(super::with_timeouts(factory)(host));
    let mut done_at = None;
    let mut said_ready = role != Role::Receive;
    runner.run(host, |host, now| {
        if !said_ready {
            if let Some(PeerAddr::Ip(addr)) = outcome.rendezvous.receiver() {
                said_ready = true;
                ready(addr);
            }
        }
        if let Some(work) = workload.as_mut() {
            return match work(host, now) {
                Progress::Done => {
                    workload = None;
                    done_at = Some(std::time::Instant::now());
                    Turn::Busy
                }
                Progress::Running { next: Some(at) } if at > now => Turn::Until(at),
                Progress::Running { next: Some(_) } => Turn::Busy,
                // Only frames wake it.
                Progress::Running { next: None } => Turn::Idle,
            };
        }
        match done_at {
            Some(at) if at.elapsed() < LINGER => {
                Turn::Until(now + LINGER.saturating_sub(at.elapsed()))
            }
            _ => Turn::Stop,
        }
    });
    facts.rx_overrun = host
        .interfaces()
        .iter()
        .map(|i| i.link.stats().dropped_rx_overrun)
        .sum();
    if facts.rx_overrun > 0 {
        eprintln!(
            "note: the operating system dropped {} frames for the reference host before it \
             read them (its queue for the link was full): the host fell behind",
            facts.rx_overrun
        );
    }
    let ended = match role {
        Role::Transmit(_) => Ended::Sent(take(&outcome.sender, "sender")?),
        Role::Receive => Ended::Received(take(&outcome.receiver, "receiver")?),
    };
    Ok((ended, facts))
}
