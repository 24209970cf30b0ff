//! One end of a transfer on a reference host attached to links to the
//! operating system (a TAP, AF_PACKET on a veth end or NIC), the other end
//! anywhere else — typically the kernel's stack running `stackscope ttcp`
//! (`stackscope ttcp --stack ref --link tap|packet -t HOST` or `-r`). The
//! same programs, checks and report as every other run; the host runs on
//! the real-time runner in the calling thread ([`run_host`], which the
//! cross-stack runs use too).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use stack::iface::host::Host;
use stack::runner::realtime::{RealTime, Turn};
use stack::runner::threaded::{Progress, WorkloadFactory};

use super::drive;
use crate::env::Environment;
use crate::error::TrafficError;
use crate::meter::{IntervalRecorder, Meter};
use crate::program::Rendezvous;
use crate::report::{Timestamp, TransferReport};
use crate::run::role::{Job, Outcome};
use crate::run::{address_grace, transfer_roles, EndPlan};
use crate::spec::{Protocol, StackKind, TransferSpec};
use crate::transport::Peer;

/// Which end the attached host is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Send to this address (`-t HOST`).
    Transmit(IpAddr),
    /// Receive one transfer on the spec's port (`-r`).
    Receive,
}

/// How long the host keeps answering after its programs are done, so the
/// last ACKs and FINs leave.
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
    if spec.protocol == Protocol::Raw {
        return Err(TrafficError::Invalid(
            "raw frames need both ends on the reference stack: use --pair without --link".into(),
        ));
    }
    let meter = Arc::new(Meter::default());
    let rendezvous = Arc::new(match role {
        // The peer is given, not discovered.
        Role::Transmit(dest) => {
            Rendezvous::with_receiver(Peer::Ip(SocketAddr::new(dest, spec.port)))
        }
        Role::Receive => Rendezvous::default(),
    });
    let plan = EndPlan {
        bind: SocketAddr::new(crate::kernel::any(spec.family), spec.port),
        receiver_interface: String::new(),
        sender_interface: String::new(),
        receiver_grace: address_grace(StackKind::Ref),
        sender_grace: address_grace(StackKind::Ref),
        read_len: spec.len.max(64 * 1024),
    };
    let (receiving, sending) = transfer_roles(spec, &plan, &meter, &rendezvous);
    let job = Job::new(match role {
        Role::Transmit(_) => sending,
        Role::Receive => receiving,
    });
    let timestamp = Timestamp::now();
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter.clone(), every, print_intervals));
    let mut said_ready = role != Role::Receive;
    let program = job.role.clone().build::<Host>();
    let finished = job.clone();
    let work = drive::workload(program, move |result| finished.finish(result));
    run_host(host, work, |_| {
        if !said_ready {
            if let Some(Peer::Ip(addr)) = rendezvous.receiver() {
                said_ready = true;
                // stderr: stdout is the report. The sender may go now.
                eprintln!(
                    "ttcp-r: ready: {} port {} ({} buffers of {} bytes expected)",
                    addr.ip(),
                    addr.port(),
                    spec.count,
                    spec.len
                );
            }
        }
    });
    let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
    let mut target = Environment::detect(StackKind::Ref, path);
    target.mtu = host.interfaces().first().map(|i| i.link.mtu() as u32);
    let report = match job.take(role_name(role))? {
        Outcome::Sent(sent) => {
            target.sockbuf_granted = sent.facts.granted;
            target.congestion_control = sent.facts.congestion_control;
            TransferReport::new(spec, target, timestamp, intervals, Some(&sent.side), None)
        }
        Outcome::Received(received) => {
            target.sockbuf_granted = received.facts.granted;
            target.congestion_control = received.facts.congestion_control;
            TransferReport::new(
                spec,
                target,
                timestamp,
                intervals,
                None,
                Some(&received.side),
            )
        }
        _ => {
            return Err(TrafficError::Invalid(
                "a transfer's end ended as an echo".into(),
            ))
        }
    };
    Ok(report.with_runner_wait(RUNNER_WAIT))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Transmit(_) => "sender",
        Role::Receive => "receiver",
    }
}

/// Runs `work` on `host` on the real-time runner in the calling thread
/// until it is done and [`LINGER`] has passed; `turn` is called before
/// each look at it. Returns the frames the operating system dropped
/// before the host read them (and says so on stderr).
pub(crate) fn run_host(
    host: &mut Host,
    work: WorkloadFactory,
    mut turn: impl FnMut(&mut Host),
) -> u64 {
    let runner = RealTime::new(MAX_SLEEP);
    let mut workload = Some(super::with_timeouts(work)(host));
    let mut done_at = None;
    runner.run(host, |host, now| {
        turn(host);
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
    let rx_overrun = host
        .interfaces()
        .iter()
        .map(|i| i.link.stats().dropped_rx_overrun)
        .sum();
    if rx_overrun > 0 {
        eprintln!(
            "note: the operating system dropped {rx_overrun} frames for the reference host \
             before it read them (its queue for the link was full): the host fell behind"
        );
    }
    rx_overrun
}
