//! Raw link-level frames over AF_PACKET, the XTP study's "NIT" raw test:
//! the datagram programs ([`crate::program::datagrams`]) carried directly
//! in Ethernet frames of the local experimental Ethertype 0x88B5 across
//! the veth pair between the tool's two namespaces, so the run measures
//! the link path without IP or UDP.

use std::net::SocketAddr;
use std::sync::{mpsc, Arc};

use super::net::{drive, KernelNet};
use super::netns::{Side, VethPair};
use super::pattern_for;
use crate::env::{Environment, GrantedBuffers};
use crate::error::TrafficError;
use crate::meter::{IntervalRecorder, Meter};
use crate::program::datagrams::DatagramSender;
use crate::program::Rendezvous;
use crate::report::{Timestamp, TransferReport};
use crate::spec::{Protocol, StackKind, TransferSpec, RAW_ETHERTYPE};

/// Runs both sides in this process over a new veth pair with `mtu`: the
/// receiver on a thread in namespace A, the sender on a thread in
/// namespace B, frames from B's veth end to A's. `print_intervals` prints
/// `-i` reports to stderr as they come.
pub fn run_pair(
    spec: &TransferSpec,
    mtu: u32,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    spec.validate()?;
    if spec.protocol != Protocol::Raw {
        return Err(TrafficError::Invalid(format!(
            "AF_PACKET frames carry raw traffic, not {}",
            spec.protocol
        )));
    }
    // Checked before the namespaces exist: a frame longer than the MTU is
    // refused by the kernel (EMSGSIZE) on every send.
    if spec.len > mtu as usize {
        return Err(TrafficError::Invalid(format!(
            "-l {} does not fit one frame on a link with MTU {mtu}: use -l {mtu} or less, \
             or raise --mtu",
            spec.len
        )));
    }
    let veth = Arc::new(VethPair::create(mtu)?);
    let pattern = Arc::new(pattern_for(spec.len));
    let meter = Arc::new(Meter::default());
    let timestamp = Timestamp::now();

    // The receiver opens its socket first and publishes its interface's
    // MAC address (only readable inside its namespace), or says why it
    // cannot. It also says when it is done: the sender repeats the end
    // sentinel until then.
    let rendezvous = Arc::new(Rendezvous::default());
    let (ready_tx, ready_rx) = mpsc::channel();
    let receiver = {
        let (spec, pattern, meter, veth, rendezvous) = (
            spec.clone(),
            pattern.clone(),
            meter.clone(),
            veth.clone(),
            rendezvous.clone(),
        );
        std::thread::spawn(move || {
            let ifname = veth.interface(Side::A);
            let shared = super::udp::shared(&spec, &pattern, &meter, rendezvous.clone(), ifname);
            // The address is unused: frames are addressed by interface.
            let unused = SocketAddr::new(super::any(spec.family), 0);
            let bound = veth
                .enter(Side::A)
                .and_then(|()| super::udp::bind(shared, unused));
            let bound = match bound {
                Ok(bound) => {
                    let _ = ready_tx.send(Some(bound.facts()));
                    bound
                }
                Err(e) => {
                    let _ = ready_tx.send(None);
                    return Err(e);
                }
            };
            let before = super::drops::snapshot();
            let mut side = rendezvous.watch(super::udp::receive(bound))?;
            let mut drops = crate::losses::delta(&before, &super::drops::snapshot());
            if let Some(queue) = side.drops.take() {
                crate::losses::add(&mut drops, &queue);
            }
            side.drops = Some(drops);
            Ok(side)
        })
    };
    let receiver_facts = match ready_rx.recv() {
        Ok(Some(facts)) => facts,
        _ => return Err(super::not_ready(receiver)),
    };
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter.clone(), every, print_intervals));
    let sender = {
        let (spec, pattern, meter, veth, rendezvous) = (
            spec.clone(),
            pattern.clone(),
            meter.clone(),
            veth.clone(),
            rendezvous.clone(),
        );
        std::thread::spawn(move || {
            veth.enter(Side::B)?;
            let ifname = veth.interface(Side::B);
            let shared = super::udp::shared(&spec, &pattern, &meter, rendezvous.clone(), ifname);
            let before = super::drops::snapshot();
            let ended = rendezvous.watch(drive(
                &mut KernelNet::new(),
                &mut DatagramSender::new(shared),
            ))?;
            Ok((
                (ended.side, ended.facts),
                crate::losses::delta(&before, &super::drops::snapshot()),
            ))
        })
    };
    let sent = super::joined(sender, "sender");
    let received = super::joined(receiver, "receiver");
    let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
    let ((sender_side, sender_facts), sender_drops) = sent?;
    let mut receiver_side = received?;
    if let Some(drops) = &mut receiver_side.drops {
        crate::losses::add(drops, &sender_drops);
    }

    let mut target = Environment::detect(
        StackKind::Kernel,
        format!(
            "AF_PACKET frames, Ethertype 0x{RAW_ETHERTYPE:04X}, {}",
            veth.describe()
        ),
    );
    target.sockbuf_granted = GrantedBuffers {
        send: sender_facts.granted.send,
        recv: receiver_facts.granted.recv,
    };
    target.mtu = Some(veth.mtu());
    Ok(TransferReport::new(
        spec,
        target,
        timestamp,
        intervals,
        Some(&sender_side),
        Some(&receiver_side),
    ))
}
