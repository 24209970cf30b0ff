//! The reference stack at one end and the kernel's at the other, across a
//! path the tool makes ([`KernelPeer`]): the reference host on the real-
//! time runner in a thread of its own, holding every program of its end;
//! the kernel's programs each on a thread in the other end's namespace.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use stack::iface::host::Host;

use super::flow::{EchoRun, FlowRun};
use super::host;
use super::kernel::{self as kernel_end, Enter};
use super::link_path::{reference_host, KernelPeer, Path, PeerLink, RefEnd};
use super::role::Job;
use super::{address_grace, EndPlan};
use crate::affinity::SideCpus;
use crate::echo::EchoReport;
use crate::env::Environment;
use crate::error::TrafficError;
use crate::kernel::netns::{address, Side};
use crate::reference::realtime::{run_host, RUNNER_WAIT};
use crate::report::{Timestamp, TransferReport};
use crate::spec::{EchoSpec, StackKind, TransferSpec};

/// The reference stack's side: side A receives (or serves), side B
/// sends, whichever stack each is.
fn ref_side(peer: KernelPeer) -> Side {
    match peer.ref_end {
        RefEnd::Receiver => Side::A,
        RefEnd::Sender => Side::B,
    }
}

/// The ends of a flow: the reference end on its host's one interface,
/// the kernel's on its end of `path`.
fn plan(
    path: &Path,
    peer: KernelPeer,
    spec_port: u16,
    family: crate::spec::Family,
    len: usize,
) -> EndPlan {
    let (kernel_grace, ref_grace) = (
        address_grace(StackKind::Kernel),
        address_grace(StackKind::Ref),
    );
    let ref_receives = peer.ref_end == RefEnd::Receiver;
    EndPlan {
        bind: SocketAddr::new(address(Side::A, family), spec_port),
        receiver_interface: if ref_receives {
            String::new()
        } else {
            path.interface(Side::A).to_string()
        },
        sender_interface: if ref_receives {
            path.interface(Side::B).to_string()
        } else {
            String::new()
        },
        receiver_grace: if ref_receives {
            ref_grace
        } else {
            kernel_grace
        },
        sender_grace: if ref_receives {
            kernel_grace
        } else {
            ref_grace
        },
        read_len: if ref_receives {
            len.max(64 * 1024)
        } else {
            len
        },
    }
}

/// Where one end's programs run.
enum EndThreads {
    Reference(JoinHandle<bool>),
    Kernel(Vec<(JoinHandle<kernel_end::KernelEnd>, Job)>),
}

impl EndThreads {
    /// Waits for the end; whether its pin held.
    fn join(self) -> bool {
        match self {
            EndThreads::Reference(thread) => thread.join().unwrap_or(false),
            EndThreads::Kernel(threads) => {
                // Every thread joined, then whether every pin held.
                let pins: Vec<bool> = threads
                    .into_iter()
                    .map(|(thread, job)| kernel_end::join(thread, &job).pinned)
                    .collect();
                pins.into_iter().all(|pinned| pinned)
            }
        }
    }
}

/// Starts `jobs` at `side`: on the reference host when it is the
/// reference stack's end, else each on a kernel thread.
fn start(
    path: &Arc<Path>,
    peer: KernelPeer,
    side: Side,
    jobs: Vec<Job>,
    cpu: Option<usize>,
) -> EndThreads {
    if side == ref_side(peer) {
        let path = path.clone();
        return EndThreads::Reference(std::thread::spawn(move || {
            let pinned = cpu.is_some_and(crate::affinity::pin_current_checked);
            let mut host = match reference_host(&path, side, peer.offload) {
                Ok(host) => host,
                Err(e) => {
                    let mut e = Some(e);
                    for job in &jobs {
                        job.finish(Err(e.take().unwrap_or(TrafficError::PeerFailed)));
                    }
                    return pinned;
                }
            };
            let work = jobs
                .into_iter()
                .map(|job| {
                    let program = job.role.clone().build::<Host>();
                    host::workload(program, move |result| job.finish(result))
                })
                .collect();
            run_host(&mut host, host::together(work), |_| {});
            pinned
        }));
    }
    let enter: Enter = {
        let path = path.clone();
        Arc::new(move || path.enter(side))
    };
    EndThreads::Kernel(
        jobs.into_iter()
            .map(|job| {
                let thread = kernel_end::spawn(enter.clone(), job.clone(), cpu, false);
                (thread, job)
            })
            .collect(),
    )
}

/// Runs receivers then senders; whether the receiving end's and the
/// sending end's pins held.
fn run_ends(
    path: &Arc<Path>,
    peer: KernelPeer,
    receivers: Vec<Job>,
    senders: Vec<Job>,
    cpus: Option<SideCpus>,
    until_listening: impl FnOnce(),
) -> (bool, bool) {
    let receiving = start(path, peer, Side::A, receivers, cpus.map(|c| c.receiver));
    until_listening();
    let sending = start(path, peer, Side::B, senders, cpus.map(|c| c.sender));
    let sender_pinned = sending.join();
    let receiver_pinned = receiving.join();
    (receiver_pinned, sender_pinned)
}

fn description(path: &Path, peer: KernelPeer) -> String {
    let (from, to) = match peer.ref_end {
        RefEnd::Sender => ("reference stack", "kernel"),
        RefEnd::Receiver => ("kernel", "reference stack"),
    };
    let link = match peer.link {
        PeerLink::Packet => "AF_PACKET",
        PeerLink::Tap => "TAP",
    };
    format!("{}: {from} -> {to} ({link})", path.describe())
}

/// Runs `flows` between the kernel and the reference stack as `peer`
/// says. Needs root.
pub fn transfer(
    flows: &[TransferSpec],
    peer: KernelPeer,
    print_intervals: bool,
) -> Result<Vec<TransferReport>, TrafficError> {
    let path = Arc::new(Path::create(
        peer.link,
        peer.mtu,
        ref_side(peer),
        peer.offload.tso,
    )?);
    let timestamp = Timestamp::now();
    let mut runs: Vec<FlowRun> = flows
        .iter()
        .map(|spec| FlowRun::new(spec, &plan(&path, peer, spec.port, spec.family, spec.len)))
        .collect();
    let receivers = runs.iter().map(|r| r.receiver.clone()).collect();
    let senders = runs.iter().map(|r| r.sender.clone()).collect();
    let cpus = flows.iter().find_map(|f| f.cpus);
    let grace = address_grace(StackKind::Ref);
    let (receiver_pinned, sender_pinned) = run_ends(&path, peer, receivers, senders, cpus, || {
        for run in &mut runs {
            run.wait_until_listening(grace, print_intervals);
        }
    });
    let mut reports = Vec::with_capacity(runs.len());
    for mut run in runs {
        let target = Environment::detect(StackKind::Ref, description(&path, peer));
        let cpus = run.spec.cpus;
        let report = run.report(target, &timestamp, |target, sent, _| {
            if peer.ref_end == RefEnd::Receiver {
                if let Some(cc) = &sent.facts.congestion_control {
                    target.congestion_control = Some(format!("{cc} (kernel sender)"));
                }
            }
            target.mtu = Some(path.mtu());
            target.placement = cpus.map(|c| c.placement(receiver_pinned, sender_pinned));
        })?;
        reports.push(report.with_runner_wait(RUNNER_WAIT));
    }
    Ok(reports)
}

/// Runs echo series at the same time between the kernel and the
/// reference stack: each server at the receiving end, each client at
/// the sending one; one report per flow.
pub fn echo(flows: &[EchoSpec], peer: KernelPeer) -> Result<Vec<EchoReport>, TrafficError> {
    let path = Arc::new(Path::create(
        peer.link,
        peer.mtu,
        ref_side(peer),
        peer.offload.tso,
    )?);
    let runs: Vec<EchoRun> = flows
        .iter()
        .map(|spec| EchoRun::new(spec, &plan(&path, peer, spec.port, spec.family, spec.len)))
        .collect();
    let grace = address_grace(StackKind::Ref);
    run_ends(
        &path,
        peer,
        runs.iter().map(|r| r.server.clone()).collect(),
        runs.iter().map(|r| r.client.clone()).collect(),
        None,
        || {
            for run in &runs {
                run.rendezvous.wait_for_receiver(run.spec.timeout + grace);
            }
        },
    );
    runs.iter()
        .map(|run| {
            let mut target = Environment::detect(StackKind::Ref, description(&path, peer));
            target.mtu = Some(path.mtu());
            run.report(target)
        })
        .collect()
}
