//! Transfers and echo series on any target: the flows' ends are planned
//! for the target, started where it puts them, and their results turned
//! into reports with what the target records.

use std::net::SocketAddr;
use std::sync::Arc;

use super::flow::{EchoRun, FlowRun};
use super::kernel::{self as kernel_end, Enter, KernelEnd};
use super::network::{self, NetworkEnd};
use super::role::Job;
use super::{cross, EndPlan, Target};
use crate::congestion::Congestion;
use crate::echo::EchoReport;
use crate::env::Environment;
use crate::error::TrafficError;
use crate::kernel::netns::Side;
use crate::kernel::{KernelPath, PathSetup};
use crate::reference::pinned::Pins;
use crate::report::{Timestamp, TransferReport};
use crate::spec::{EchoSpec, Protocol, StackKind, TransferSpec, RAW_ETHERTYPE};

/// Most flows one run takes.
pub const MAX_CIRCUITS: usize = 64;

/// Runs `flows` at the same time on `target`, one report per flow in
/// order. With several flows, flow `i` gets port `port + i` and circuit
/// number `i`, so the flows stay apart whatever they share.
/// `print_intervals` prints `-i` reports to stderr as they come.
pub fn transfer(
    flows: &[TransferSpec],
    target: &Target,
    print_intervals: bool,
) -> Result<Vec<TransferReport>, TrafficError> {
    let flows = numbered(flows)?;
    for flow in &flows {
        refuse_raw_without_link(flow.protocol, flow.len, target)?;
        refuse_unknown_congestion(flow.congestion, target)?;
    }
    match target {
        Target::Kernel(path) => kernel_transfer(&flows, *path, print_intervals),
        Target::Reference(topology) => {
            network_transfer(&flows, topology.as_deref(), print_intervals)
        }
        Target::Simulated(topology) => simulated_transfer(&flows, topology.as_deref()),
        Target::Cross(peer) => cross::transfer(&flows, *peer, print_intervals),
    }
}

/// Runs one transfer on `target`.
pub fn pair(
    spec: &TransferSpec,
    target: &Target,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    transfer(std::slice::from_ref(spec), target, print_intervals)?
        .pop()
        .ok_or_else(|| TrafficError::Invalid("the transfer produced no report".into()))
}

/// Runs `flows` echo series (delay mode) at the same time on `target`,
/// one report per flow in order, each timing its own exchanges: the
/// XTP study's `dela` on several virtual circuits at once. Flows are
/// numbered apart as [`transfer`]'s are (port `port + i`, circuit `i`).
pub fn echoes(flows: &[EchoSpec], target: &Target) -> Result<Vec<EchoReport>, TrafficError> {
    let flows = numbered(flows)?;
    for flow in &flows {
        refuse_raw_without_link(flow.protocol, flow.len, target)?;
        refuse_unknown_congestion(flow.congestion, target)?;
    }
    // The echo server answers whatever arrives on its Ethertype, so raw
    // circuits would answer each other's requests.
    if flows.len() > 1 && flows.iter().any(|f| f.protocol == Protocol::Raw) {
        return Err(TrafficError::Unsupported(
            "raw echo series share one Ethertype and would answer each other: run raw echo \
             one circuit at a time"
                .into(),
        ));
    }
    match target {
        Target::Kernel(path) => kernel_echo(&flows, *path),
        Target::Reference(topology) => network_echo(&flows, topology.as_deref()),
        Target::Simulated(topology) => simulated_echo(&flows, topology.as_deref()),
        Target::Cross(peer) => cross::echo(&flows, *peer),
    }
}

/// Runs one echo series (delay mode) on `target`.
pub fn echo(spec: &EchoSpec, target: &Target) -> Result<EchoReport, TrafficError> {
    echoes(std::slice::from_ref(spec), target)?
        .pop()
        .ok_or_else(|| TrafficError::Invalid("the echo series produced no report".into()))
}

/// What several concurrent flows of one run are told apart by.
trait Circuit: Clone {
    fn port_mut(&mut self) -> &mut u16;
    fn set_circuit(&mut self, circuit: u8);
    fn validate(&self) -> Result<(), TrafficError>;
}

impl Circuit for TransferSpec {
    fn port_mut(&mut self) -> &mut u16 {
        &mut self.port
    }
    fn set_circuit(&mut self, circuit: u8) {
        self.circuit = circuit;
    }
    fn validate(&self) -> Result<(), TrafficError> {
        TransferSpec::validate(self)
    }
}

impl Circuit for EchoSpec {
    fn port_mut(&mut self) -> &mut u16 {
        &mut self.port
    }
    fn set_circuit(&mut self, circuit: u8) {
        self.circuit = circuit;
    }
    fn validate(&self) -> Result<(), TrafficError> {
        EchoSpec::validate(self)
    }
}

/// The flows checked, and numbered apart when there are several.
fn numbered<F: Circuit>(flows: &[F]) -> Result<Vec<F>, TrafficError> {
    if flows.is_empty() || flows.len() > MAX_CIRCUITS {
        return Err(TrafficError::Invalid(format!(
            "{} concurrent flows is impossible: use 1 to {MAX_CIRCUITS}",
            flows.len()
        )));
    }
    let alone = flows.len() == 1;
    flows
        .iter()
        .enumerate()
        .map(|(i, flow)| {
            let mut flow = flow.clone();
            if !alone {
                let port = flow.port_mut();
                *port = port.checked_add(i as u16).ok_or_else(|| {
                    TrafficError::Invalid(format!(
                        "port {port} + {i} circuits runs past 65535: pick a lower -p"
                    ))
                })?;
                flow.set_circuit(i as u8);
            }
            flow.validate()?;
            Ok(flow)
        })
        .collect()
}

fn merge_drops(
    into: &mut Option<std::collections::BTreeMap<String, u64>>,
    more: Option<std::collections::BTreeMap<String, u64>>,
) {
    if let Some(more) = more {
        crate::losses::add(into.get_or_insert_with(Default::default), &more);
    }
}

fn kernel_plan(
    spec_port: u16,
    family: crate::spec::Family,
    len: usize,
    setup: &PathSetup,
) -> EndPlan {
    EndPlan {
        bind: SocketAddr::new(setup.receiver_ip(family), spec_port),
        receiver_interface: setup.interface(Side::A).unwrap_or_default().to_string(),
        sender_interface: setup.interface(Side::B).unwrap_or_default().to_string(),
        receiver_grace: std::time::Duration::ZERO,
        sender_grace: std::time::Duration::ZERO,
        read_len: len,
    }
}

fn enter(setup: &PathSetup, side: Side) -> Enter {
    let setup = setup.clone();
    Arc::new(move || setup.enter(side))
}

fn kernel_transfer(
    flows: &[TransferSpec],
    path: KernelPath,
    print_intervals: bool,
) -> Result<Vec<TransferReport>, TrafficError> {
    let setup = PathSetup::new(path)?;
    let timestamp = Timestamp::now();
    let mut runs: Vec<FlowRun> = flows
        .iter()
        .map(|spec| FlowRun::new(spec, &kernel_plan(spec.port, spec.family, spec.len, &setup)))
        .collect();
    // Receivers first; each sender once its receiver listens.
    let mut threads = Vec::with_capacity(runs.len());
    for run in &mut runs {
        let datagrams = !run.spec.protocol.is_stream();
        let cpus = run.spec.cpus;
        let receiving = kernel_end::spawn(
            enter(&setup, Side::A),
            run.receiver.clone(),
            cpus.map(|c| c.receiver),
            datagrams,
        );
        run.wait_until_listening(std::time::Duration::ZERO, print_intervals);
        let sending = kernel_end::spawn(
            enter(&setup, Side::B),
            run.sender.clone(),
            cpus.map(|c| c.sender),
            datagrams && setup.separate_namespaces(),
        );
        threads.push((receiving, sending));
    }
    let ends: Vec<(KernelEnd, KernelEnd)> = threads
        .into_iter()
        .zip(&runs)
        .map(|((r, s), run)| {
            (
                kernel_end::join(r, &run.receiver),
                kernel_end::join(s, &run.sender),
            )
        })
        .collect();
    let datagram_flows = flows.iter().filter(|f| !f.protocol.is_stream()).count();
    let mut reports = Vec::with_capacity(runs.len());
    for (mut run, (receiving, sending)) in runs.into_iter().zip(ends) {
        let description = match run.spec.protocol {
            Protocol::Raw => format!(
                "AF_PACKET frames, Ethertype 0x{RAW_ETHERTYPE:04X}, {}",
                setup.description()
            ),
            _ => setup.description(),
        };
        let cpus = run.spec.cpus;
        let datagrams = !run.spec.protocol.is_stream();
        let target = Environment::detect(StackKind::Kernel, description);
        let mut report = run.report(target, &timestamp, |target, _, received| {
            target.mtu = Some(setup.mtu());
            target.placement = cpus.map(|c| c.placement(receiving.pinned, sending.pinned));
            if datagrams {
                merge_drops(&mut received.side.drops, receiving.drops);
                merge_drops(&mut received.side.drops, sending.drops);
            }
        })?;
        // The kernel's counters are the namespace's: with several
        // datagram flows each would see the others' drops, so none says
        // where.
        if datagram_flows > 1 {
            if let Some(d) = report
                .end
                .sum_received
                .as_mut()
                .and_then(|r| r.datagrams.as_mut())
            {
                d.lost_where = None;
                d.drops_counted = None;
            }
        }
        reports.push(report);
    }
    Ok(reports)
}

fn network_plan(spec: &TransferSpec, ends: &crate::reference::Endpoints) -> EndPlan {
    let grace = super::address_grace(StackKind::Ref);
    EndPlan {
        bind: SocketAddr::new(spec.family.unspecified(), spec.port),
        receiver_interface: ends.receiver_interface.clone(),
        sender_interface: ends.sender_interface.clone(),
        receiver_grace: grace,
        sender_grace: grace,
        read_len: spec.len.max(64 * 1024),
    }
}

fn network_transfer(
    flows: &[TransferSpec],
    topology: Option<&std::path::Path>,
    print_intervals: bool,
) -> Result<Vec<TransferReport>, TrafficError> {
    let topology = crate::reference::load(topology)?;
    let mut runs = Vec::with_capacity(flows.len());
    let mut targets = Vec::with_capacity(flows.len());
    let mut ends_of = Vec::with_capacity(flows.len());
    for spec in flows {
        let (ends, target) = crate::reference::plan(spec.protocol, spec.len, &topology)?;
        runs.push(FlowRun::new(spec, &network_plan(spec, &ends)));
        targets.push(target);
        ends_of.push(ends);
    }
    let pins = Pins::plan(
        &flows
            .iter()
            .zip(&ends_of)
            .map(|(f, e)| (f.cpus, e))
            .collect::<Vec<_>>(),
        &topology,
    )?;
    let mut jobs = Vec::new();
    let mut datagram_receivers = Vec::new();
    for (run, ends) in runs.iter().zip(&ends_of) {
        jobs.push((ends.receiver.clone(), run.receiver.clone()));
        jobs.push((ends.sender.clone(), run.sender.clone()));
        if !run.spec.protocol.is_stream() {
            datagram_receivers.push(run.receiver.clone());
        }
    }
    let timestamp = Timestamp::now();
    let network = {
        let topology = topology.clone();
        std::thread::spawn(move || network::run(&topology, jobs, datagram_receivers, pins))
    };
    let grace = super::address_grace(StackKind::Ref);
    for run in &mut runs {
        run.wait_until_listening(grace, print_intervals);
    }
    let NetworkEnd {
        placement,
        drops_if_alone,
    } = network.join().unwrap_or_else(|_| {
        Err(TrafficError::Invalid(
            "the network's thread panicked".into(),
        ))
    })?;
    let mut reports = Vec::with_capacity(runs.len());
    for (mut run, target) in runs.into_iter().zip(targets) {
        let datagrams = !run.spec.protocol.is_stream();
        let report = run.report(target, &timestamp, |target, _, received| {
            target.placement = placement;
            // With one datagram flow every drop of the run is its own.
            if datagrams {
                received.side.drops = drops_if_alone.clone();
            }
        })?;
        reports.push(report.with_runner_wait(stack::runner::threaded::Poll::Spin.as_str()));
    }
    Ok(reports)
}

fn kernel_echo(flows: &[EchoSpec], path: KernelPath) -> Result<Vec<EchoReport>, TrafficError> {
    let setup = PathSetup::new(path)?;
    let runs: Vec<EchoRun> = flows
        .iter()
        .map(|spec| EchoRun::new(spec, &kernel_plan(spec.port, spec.family, spec.len, &setup)))
        .collect();
    let servers: Vec<_> = runs
        .iter()
        .map(|run| kernel_end::spawn(enter(&setup, Side::A), run.server.clone(), None, false))
        .collect();
    // Every server listens before any client starts, so the series run
    // at the same time from their first exchange.
    let listening: Vec<bool> = runs
        .iter()
        .map(|run| run.rendezvous.wait_for_receiver(run.spec.timeout).is_some())
        .collect();
    let clients: Vec<_> = runs
        .iter()
        .zip(listening)
        .map(|(run, listening)| {
            if listening {
                Some(kernel_end::spawn(
                    enter(&setup, Side::B),
                    run.client.clone(),
                    None,
                    false,
                ))
            } else {
                run.client.finish(Err(TrafficError::PeerFailed));
                None
            }
        })
        .collect();
    for (client, run) in clients.into_iter().zip(&runs) {
        if let Some(client) = client {
            kernel_end::join(client, &run.client);
        }
    }
    for (server, run) in servers.into_iter().zip(&runs) {
        kernel_end::join(server, &run.server);
    }
    runs.iter()
        .map(|run| {
            let mut target = Environment::detect(StackKind::Kernel, setup.description());
            target.mtu = Some(setup.mtu());
            run.report(target)
        })
        .collect()
}

/// Echo runs on the reference stack: each flow's run, every end's job on
/// its host (servers on the last host, clients on the first), and each
/// flow's report target.
type NetworkEchoes = (Vec<EchoRun>, Vec<(String, Job)>, Vec<Environment>);

fn network_echo_runs(
    flows: &[EchoSpec],
    topology: &stack::topology::Topology,
) -> Result<NetworkEchoes, TrafficError> {
    let mut runs = Vec::with_capacity(flows.len());
    let mut jobs = Vec::with_capacity(2 * flows.len());
    let mut targets = Vec::with_capacity(flows.len());
    for spec in flows {
        let (ends, target) = crate::reference::plan(spec.protocol, spec.len, topology)?;
        let run = EchoRun::new(spec, &network_plan(&spec.as_transfer(), &ends));
        jobs.push((ends.receiver.clone(), run.server.clone()));
        jobs.push((ends.sender.clone(), run.client.clone()));
        runs.push(run);
        targets.push(target);
    }
    Ok((runs, jobs, targets))
}

fn network_echo(
    flows: &[EchoSpec],
    topology: Option<&std::path::Path>,
) -> Result<Vec<EchoReport>, TrafficError> {
    let topology = crate::reference::load(topology)?;
    let (runs, jobs, targets) = network_echo_runs(flows, &topology)?;
    network::run(&topology, jobs, Vec::new(), Pins::plan(&[], &topology)?)?;
    runs.iter()
        .zip(targets)
        .map(|(run, target)| run.report(target))
        .collect()
}

/// How a simulated run names its path.
fn simulated(mut target: Environment) -> Environment {
    target.path = target
        .path
        .replace("threaded runner", "simulator, virtual clock");
    target
}

fn simulated_transfer(
    flows: &[TransferSpec],
    topology: Option<&std::path::Path>,
) -> Result<Vec<TransferReport>, TrafficError> {
    let topology = crate::reference::load(topology)?;
    let mut runs = Vec::with_capacity(flows.len());
    let mut jobs = Vec::new();
    let mut targets = Vec::with_capacity(flows.len());
    for spec in flows {
        if spec.cpus.is_some() {
            return Err(TrafficError::Unsupported(
                "the simulator runs every host on one thread: nothing to pin".into(),
            ));
        }
        let (ends, target) = crate::reference::plan(spec.protocol, spec.len, &topology)?;
        let run = FlowRun::new(spec, &network_plan(spec, &ends));
        jobs.push((ends.receiver.clone(), run.receiver.clone()));
        jobs.push((ends.sender.clone(), run.sender.clone()));
        runs.push(run);
        targets.push(simulated(target));
    }
    let timestamp = Timestamp::now();
    network::simulate(&topology, jobs)?;
    let mut reports = Vec::with_capacity(runs.len());
    for (mut run, target) in runs.into_iter().zip(targets) {
        // Interval reports sample the real clock: none in virtual time.
        let report = run.report(target, &timestamp, |_, _, _| {})?;
        reports.push(report.with_runner_wait("simulated"));
    }
    Ok(reports)
}

fn simulated_echo(
    flows: &[EchoSpec],
    topology: Option<&std::path::Path>,
) -> Result<Vec<EchoReport>, TrafficError> {
    let topology = crate::reference::load(topology)?;
    let (runs, jobs, targets) = network_echo_runs(flows, &topology)?;
    network::simulate(&topology, jobs)?;
    runs.iter()
        .zip(targets)
        .map(|(run, target)| run.report(simulated(target)))
        .collect()
}

/// A congestion control some stack of `target` lacks, refused before
/// any end starts (each end's socket is the authority, and checks again).
fn refuse_unknown_congestion(
    congestion: Option<Congestion>,
    target: &Target,
) -> Result<(), TrafficError> {
    match congestion {
        Some(c) => target
            .stacks()
            .iter()
            .try_for_each(|&stack| crate::congestion::check(c, stack)),
        None => Ok(()),
    }
}

/// Refuses what `target` cannot do with `protocol` and `len`, before any
/// path is made.
fn refuse_raw_without_link(
    protocol: Protocol,
    len: usize,
    target: &Target,
) -> Result<(), TrafficError> {
    match (protocol, target) {
        // A frame longer than the MTU is refused by the kernel (EMSGSIZE)
        // on every send.
        (Protocol::Raw, Target::Kernel(KernelPath::Netns { mtu })) if len > *mtu as usize => {
            Err(TrafficError::Invalid(format!(
                "-l {len} does not fit one frame on a link with MTU {mtu}: use -l {mtu} or \
                 less, or raise --mtu"
            )))
        }
        (Protocol::Raw, Target::Kernel(KernelPath::Loopback)) => Err(TrafficError::Unsupported(
            "raw link-level frames need a link: use --netns (kernel) or --stack ref".into(),
        )),
        (Protocol::Raw, Target::Cross(peer)) if len > peer.mtu as usize => {
            Err(TrafficError::Invalid(format!(
                "-l {len} does not fit one frame on a link with MTU {}: use -l {} or less",
                peer.mtu, peer.mtu
            )))
        }
        _ => Ok(()),
    }
}
