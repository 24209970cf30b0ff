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

use super::datagrams::{self, PeerAddr, Transport};
use super::{stream, take, Outcome, Shared};
use crate::env::Environment;
use crate::error::TrafficError;
use crate::meter::{IntervalRecorder, Meter};
use crate::report::{Timestamp, TransferReport};
use crate::spec::{Protocol, StackKind, TransferSpec};

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
/// The longest sleep of the runner between looks at the workload.
const MAX_SLEEP: Duration = Duration::from_millis(5);

/// Runs `role`'s side of `spec` on `host`; `path` describes the link for
/// the report (e.g. "reference stack on AF_PACKET veth0").
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
            "raw frames need both ends on the reference stack: use --pair".into(),
        ));
    }
    let pattern = Arc::new(crate::kernel::pattern_for(spec.len));
    let meter = Arc::new(Meter::default());
    let outcome: Shared = Arc::new(Outcome::default());
    let mut target = Environment::detect(StackKind::Ref, path);
    target.mtu = host.interfaces().first().map(|i| i.link.mtu() as u32);
    let factory: WorkloadFactory = match (spec.protocol, role) {
        (Protocol::Tcp, role) => {
            let (config, granted) = stream::tcp_config(spec);
            target.sockbuf_granted = granted;
            target.congestion_control = Some(stream::algorithm_name(&config).into());
            let (spec, pattern, meter, outcome) = (
                spec.clone(),
                pattern.clone(),
                meter.clone(),
                outcome.clone(),
            );
            match role {
                Role::Transmit(_) => stream::sender(spec, config, pattern, meter, outcome),
                Role::Receive => stream::receiver(spec, config, pattern, meter, outcome),
            }
        }
        (_, role) => {
            let (transport, granted) = Transport::for_spec(spec);
            target.sockbuf_granted = granted;
            let (spec, pattern, meter, outcome) = (
                spec.clone(),
                pattern.clone(),
                meter.clone(),
                outcome.clone(),
            );
            match role {
                Role::Transmit(_) => {
                    datagrams::sender(spec, transport, String::new(), pattern, meter, outcome)
                }
                Role::Receive => {
                    datagrams::receiver(spec, transport, String::new(), pattern, meter, outcome)
                }
            }
        }
    };
    if let Role::Transmit(dest) = role {
        // The peer is given, not discovered: publish it for the sender.
        let _ = outcome
            .receiver_addr
            .set(PeerAddr::Ip(SocketAddr::new(dest, spec.port)));
    }
    let timestamp = Timestamp::now();
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter.clone(), every, print_intervals));
    let runner = RealTime::new(MAX_SLEEP);
    let mut workload = Some(factory(host));
    let mut done_at = None;
    let mut said_ready = false;
    runner.run(host, |host, now| {
        if !said_ready && role == Role::Receive {
            if let Some(PeerAddr::Ip(addr)) = outcome.receiver_addr.get() {
                // Said on stderr (stdout is the report): the sender may go.
                said_ready = true;
                eprintln!(
                    "ttcp-r: ready: {} port {} ({} buffers of {} bytes expected)",
                    addr.ip(),
                    addr.port(),
                    spec.count,
                    spec.len
                );
            }
        }
        if let Some(work) = workload.as_mut() {
            if work(host, now) == Progress::Done {
                workload = None;
                done_at = Some(std::time::Instant::now());
            }
            return Turn::Idle;
        }
        match done_at {
            Some(at) if at.elapsed() < LINGER => Turn::Idle,
            _ => Turn::Stop,
        }
    });
    let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
    let report = match role {
        Role::Transmit(_) => {
            let side = take(&outcome.sender, "sender")?;
            TransferReport::new(spec, target, timestamp, intervals, Some(&side), None)
        }
        Role::Receive => {
            let side = take(&outcome.receiver, "receiver")?;
            TransferReport::new(spec, target, timestamp, intervals, None, Some(&side))
        }
    };
    Ok(report)
}
