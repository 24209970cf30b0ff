//! A cross-stack transfer in one process: the kernel's stack at one end of
//! a veth pair between two namespaces the tool makes, the reference stack
//! at the other (AF_PACKET on its veth end, the kernel taken off that end
//! first). The same veth path as the kernel's `--netns` pair, so kernel ->
//! kernel, kernel -> reference and reference -> kernel compare like for
//! like (`stackscope ttcp --pair --stack ref --link packet`, `stackscope
//! sweep --stack kernel,ref --netns --link packet`).

use std::net::{IpAddr, SocketAddr};
use std::sync::{mpsc, Arc};

use stack::buffer::PoolConfig;
use stack::iface::host::{Host, HostConfig, InterfaceConfig};
use stack::phy::packet::PacketLink;
use stack::phy::Link;
use stack::topology::{Ipv4Cidr, Ipv6Cidr};

use super::attached::{run_side, Ended, Role};
use crate::env::{Environment, GrantedBuffers};
use crate::error::TrafficError;
use crate::kernel::netns::{Side, VethPair};
use crate::kernel::{self, joined, not_ready, Ready};
use crate::meter::{IntervalRecorder, Meter};
use crate::report::{Timestamp, TransferReport};
use crate::spec::{Family, StackKind, TransferSpec};

/// Which end of the transfer the reference stack is; the kernel is the
/// other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefEnd {
    /// kernel -> reference.
    Receiver,
    /// reference -> kernel.
    Sender,
}

impl RefEnd {
    pub fn name(self) -> &'static str {
        match self {
            RefEnd::Receiver => "receiver",
            RefEnd::Sender => "sender",
        }
    }
}

/// Runs `spec` across a new veth pair of `mtu`, the reference stack being
/// `ref_end`. Needs root.
pub fn run_pair(
    spec: &TransferSpec,
    mtu: u32,
    ref_end: RefEnd,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    spec.validate()?;
    kernel::refuse_raw(spec)?;
    let veth = Arc::new(VethPair::create(mtu)?);
    // Side A receives, side B sends (as in the kernel's pair).
    let ref_side = match ref_end {
        RefEnd::Receiver => Side::A,
        RefEnd::Sender => Side::B,
    };
    veth.hand_over(ref_side)?;
    let pattern = Arc::new(kernel::pattern_for(spec.len));
    let meter = Arc::new(Meter::default());
    let timestamp = Timestamp::now();
    let receiver_addr = SocketAddr::new(veth.addr(Side::A, spec.family), spec.port);

    // The receiver first; the sender starts once it listens.
    let (ready_tx, ready_rx) = mpsc::channel();
    let receiver = {
        let (spec, pattern, meter, veth) =
            (spec.clone(), pattern.clone(), meter.clone(), veth.clone());
        std::thread::spawn(move || match ref_end {
            RefEnd::Receiver => {
                let mut host = reference_host(&veth, Side::A)?;
                let ready = |_| {
                    let _ = ready_tx.send(Some(GrantedBuffers::default()));
                };
                run_side(&spec, &mut host, Role::Receive, &pattern, &meter, ready)
                    .map(|(ended, facts)| (ended, Some(facts), None))
            }
            RefEnd::Sender => {
                veth.enter(Side::A)?;
                let ready = match Ready::bind(&spec, receiver_addr) {
                    Ok(ready) => ready,
                    Err(e) => {
                        let _ = ready_tx.send(None);
                        return Err(e);
                    }
                };
                let facts = ready.facts();
                let _ = ready_tx.send(Some(facts.granted));
                let side = ready.receive(&spec, &pattern, &meter)?;
                Ok((Ended::Received(side), None, Some(facts)))
            }
        })
    };
    let Ok(Some(_)) = ready_rx.recv() else {
        return Err(not_ready(receiver));
    };
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter.clone(), every, print_intervals));
    let sender = {
        let (spec, pattern, meter, veth) =
            (spec.clone(), pattern.clone(), meter.clone(), veth.clone());
        std::thread::spawn(move || match ref_end {
            RefEnd::Receiver => {
                veth.enter(Side::B)?;
                let (side, facts) = kernel::transmit_side(&spec, receiver_addr, &pattern, &meter)?;
                Ok((Ended::Sent(side), None, Some(facts)))
            }
            RefEnd::Sender => {
                let mut host = reference_host(&veth, Side::B)?;
                let role = Role::Transmit(receiver_addr.ip());
                run_side(&spec, &mut host, role, &pattern, &meter, |_| {})
                    .map(|(ended, facts)| (ended, Some(facts), None))
            }
        })
    };
    let sent = joined(sender, "sender");
    let received = joined(receiver, "receiver");
    let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
    let (sent, sender_ref, sender_kernel) = sent?;
    let (received, receiver_ref, receiver_kernel) = received?;
    let (Ended::Sent(sent), Ended::Received(received)) = (sent, received) else {
        return Err(TrafficError::Invalid(
            "the sides ended the wrong way round".into(),
        ));
    };

    let path = format!(
        "{}: {} -> {} (AF_PACKET)",
        veth.describe(),
        if ref_end == RefEnd::Sender {
            "reference stack"
        } else {
            "kernel"
        },
        if ref_end == RefEnd::Receiver {
            "reference stack"
        } else {
            "kernel"
        },
    );
    let mut target = Environment::detect(StackKind::Ref, path);
    if let Some(facts) = receiver_ref.as_ref().or(sender_ref.as_ref()) {
        facts.describe(&mut target);
    }
    target.sockbuf_granted = GrantedBuffers {
        send: sender_ref
            .map(|f| f.granted.send)
            .unwrap_or_else(|| sender_kernel.as_ref().and_then(|f| f.granted.send)),
        recv: receiver_ref
            .map(|f| f.granted.recv)
            .unwrap_or_else(|| receiver_kernel.as_ref().and_then(|f| f.granted.recv)),
    };
    if let Some(cc) = sender_kernel.and_then(|f| f.congestion_control) {
        target.congestion_control = Some(format!("{cc} (kernel sender)"));
    }
    target.mtu = Some(veth.mtu());
    Ok(TransferReport::new(
        spec,
        target,
        timestamp,
        intervals,
        Some(&sent),
        Some(&received),
    ))
}

/// A reference host on `side`'s veth end (entering its namespace: call it
/// on the host's own thread), with the addresses the kernel had there.
fn reference_host(veth: &VethPair, side: Side) -> Result<Host, TrafficError> {
    veth.enter(side)?;
    let name = veth.interface(side);
    let link =
        PacketLink::open(name).map_err(|e| TrafficError::io(format!("AF_PACKET on {name}"), e))?;
    let (mac, mtu) = (link.mac(), link.mtu());
    let (IpAddr::V4(v4), IpAddr::V6(v6)) =
        (veth.addr(side, Family::V4), veth.addr(side, Family::V6))
    else {
        unreachable!("addr gives the family asked for");
    };
    let interface = InterfaceConfig {
        name: name.to_string(),
        link: Box::new(link),
        mac,
        ipv4: Some(Ipv4Cidr {
            address: v4,
            prefix_len: 24,
        }),
        ipv6: vec![Ipv6Cidr {
            address: v6,
            prefix_len: 64,
        }],
        advertise: Vec::new(),
        // The kernel's addresses there were configured without DAD too.
        dad_transmits: Some(0),
    };
    let mut config = HostConfig::new("reference", false);
    config.pool = PoolConfig::for_mtu(mtu);
    config.seed = stack::random::os_seed();
    Host::new(config, vec![interface], &[])
        .map_err(|e| TrafficError::Invalid(format!("the reference host on {name}: {e}")))
}
