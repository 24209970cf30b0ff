//! Runs with one end here and the other elsewhere: `ttcp -t HOST` and
//! `ttcp -r` on the kernel's stack, and on a reference host attached to
//! links to the operating system (`--link tap|packet --iface NAME`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use stack::iface::host::Host;

use super::host;
use super::kernel::drive;
use super::role::{Job, Outcome};
use super::{address_grace, transfer_roles, EndPlan};
use crate::env::Environment;
use crate::error::TrafficError;
use crate::kernel::net::KernelNet;
use crate::meter::{IntervalRecorder, Meter};
use crate::program::Rendezvous;
use crate::reference::realtime::{run_host, RUNNER_WAIT};
use crate::report::{Timestamp, TransferReport};
use crate::spec::{Protocol, StackKind, TransferSpec};
use crate::transport::Peer;

/// Which end runs here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneEnd {
    /// Send to this address (`-t HOST`).
    Transmit(IpAddr),
    /// Receive one transfer on the spec's port (`-r`).
    Receive,
}

/// This end's job, its meter and rendezvous (where a sender's receiver is
/// already known).
fn job(
    spec: &TransferSpec,
    end: OneEnd,
    bind: IpAddr,
    stack: StackKind,
) -> (Job, Arc<Meter>, Arc<Rendezvous>) {
    let meter = Arc::new(Meter::default());
    let rendezvous = Arc::new(match end {
        OneEnd::Transmit(dest) => {
            Rendezvous::with_receiver(Peer::Ip(SocketAddr::new(dest, spec.port)))
        }
        OneEnd::Receive => Rendezvous::default(),
    });
    let plan = EndPlan {
        bind: SocketAddr::new(bind, spec.port),
        receiver_interface: String::new(),
        sender_interface: String::new(),
        receiver_grace: address_grace(stack),
        sender_grace: address_grace(stack),
        read_len: match stack {
            StackKind::Kernel => spec.len,
            StackKind::Ref => spec.len.max(64 * 1024),
        },
    };
    let (receiving, sending) = transfer_roles(spec, &plan, &meter, &rendezvous);
    let job = Job::new(match end {
        OneEnd::Transmit(_) => sending,
        OneEnd::Receive => receiving,
    });
    (job, meter, rendezvous)
}

fn refuse_raw(spec: &TransferSpec) -> Result<(), TrafficError> {
    spec.validate()?;
    if spec.protocol == Protocol::Raw {
        return Err(TrafficError::Unsupported(
            "raw link-level frames need both ends here: use --pair with --netns (kernel) or \
             --stack ref"
                .into(),
        ));
    }
    Ok(())
}

/// The report of the end that ran.
fn report(
    spec: &TransferSpec,
    job: &Job,
    mut target: Environment,
    timestamp: Timestamp,
    intervals: Vec<crate::meter::Interval>,
    what: &str,
) -> Result<TransferReport, TrafficError> {
    Ok(match job.take(what)? {
        Outcome::Sent(sent) => {
            target.sockbuf_granted = sent.facts.granted;
            target.congestion_control = sent.facts.congestion_control;
            TransferReport::new(spec, target, timestamp, intervals, Some(&sent.side), None)
        }
        Outcome::Received(received) => {
            target.sockbuf_granted.recv = received.facts.granted.recv;
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
    })
}

/// `-t` or `-r` on the kernel's stack, in this thread. A receiver takes
/// traffic on `bind` (the unspecified address: any).
pub fn kernel(
    spec: &TransferSpec,
    end: OneEnd,
    bind: IpAddr,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    refuse_raw(spec)?;
    let (job, meter, _) = job(spec, end, bind, StackKind::Kernel);
    let timestamp = Timestamp::now();
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter, every, print_intervals));
    let mut program = job.role.clone().build::<KernelNet>();
    job.finish(drive(&mut KernelNet::new(), &mut program));
    let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
    let path = match end {
        OneEnd::Transmit(dest) => format!("this host to {dest}"),
        OneEnd::Receive => format!("any sender to {bind} port {} on this host", spec.port),
    };
    let target = Environment::detect(StackKind::Kernel, path);
    report(spec, &job, target, timestamp, intervals, "kernel end")
}

/// One end on `host`, a reference host on links to the operating
/// system, on the real-time runner in this thread; `path` describes the
/// link for the report (e.g. "reference stack on AF_PACKET veth0"). A
/// receiver says `ttcp-r: ready: ADDR port P` on stderr once it listens.
pub fn attached(
    spec: &TransferSpec,
    host: &mut Host,
    end: OneEnd,
    path: String,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    refuse_raw(spec)?;
    let any = spec.family.unspecified();
    let (job, meter, rendezvous) = job(spec, end, any, StackKind::Ref);
    let timestamp = Timestamp::now();
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter, every, print_intervals));
    let mut said_ready = end != OneEnd::Receive;
    let program = job.role.clone().build::<Host>();
    let finished = job.clone();
    let work = host::workload(program, move |result| finished.finish(result));
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
    let what = match end {
        OneEnd::Transmit(_) => "sender",
        OneEnd::Receive => "receiver",
    };
    Ok(report(spec, &job, target, timestamp, intervals, what)?.with_runner_wait(RUNNER_WAIT))
}

/// Runs any `program` on `host` (a reference host on links to the
/// operating system) on the real-time runner in this thread, until it is
/// done: `stackscope iperf --stack ref`.
pub fn program_attached<P>(host: &mut Host, program: P) -> Result<P::Output, TrafficError>
where
    P: crate::program::Program<Host> + Send + 'static,
    P::Output: Send + 'static,
{
    let slot = Arc::new(std::sync::Mutex::new(None));
    let filled = slot.clone();
    let work = host::workload(program, move |result| {
        *filled.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    });
    run_host(host, work, |_| {});
    let result = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    result.unwrap_or_else(|| Err(TrafficError::Invalid("the program did not finish".into())))
}

/// Runs any `program` on the kernel's stack in this thread until it is
/// done: `stackscope iperf --stack kernel`.
pub fn program_on_kernel<P>(program: &mut P) -> Result<P::Output, TrafficError>
where
    P: crate::program::Program<KernelNet>,
{
    drive(&mut KernelNet::new(), program)
}
