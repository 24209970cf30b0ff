//! The `kernel` target: the operating system's own sockets, over loopback
//! or across a veth pair between two network namespaces the tool makes
//! (`--netns`). Each side runs on its own thread (in its own namespace),
//! or in its own process with `-t` / `-r`.

pub mod drops;
pub mod net;
pub mod netns;
mod packet;
pub mod pipeline;
pub mod pipeline_summary;
mod socket;
pub mod stream;
pub mod udp;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use crate::env::Environment;
use crate::error::TrafficError;
use crate::meter::{IntervalRecorder, Meter};
use crate::pattern::Pattern;
use crate::report::{ReceiverSide, SenderSide, Timestamp, TransferReport};
use crate::spec::{Family, Protocol, StackKind, TransferSpec};
use netns::{Side, VethPair};

pub use crate::transport::SocketFacts;

/// The path between the two sides of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelPath {
    /// `::1` / `127.0.0.1`.
    Loopback,
    /// A veth pair between two namespaces, with this MTU.
    Netns { mtu: u32 },
}

/// The pattern table a spec needs: any write or datagram is one slice.
pub fn pattern_for(len: usize) -> Pattern {
    Pattern::new(len.max(64 * 1024))
}

fn loopback(family: Family) -> IpAddr {
    match family {
        Family::V4 => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Family::V6 => IpAddr::V6(Ipv6Addr::LOCALHOST),
    }
}

/// The unspecified address of `family`, for a receiver that takes
/// traffic on any address (`-r`).
pub fn any(family: Family) -> IpAddr {
    match family {
        Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// A receiver bound and ready, of either protocol.
pub(crate) enum Ready {
    Tcp(Box<stream::Receiving>),
    Udp(Box<udp::Bound>),
}

impl Ready {
    pub(crate) fn bind(
        spec: &TransferSpec,
        addr: SocketAddr,
        pattern: &Arc<Pattern>,
        meter: &Arc<Meter>,
    ) -> Result<Self, TrafficError> {
        match spec.protocol {
            Protocol::Tcp => {
                stream::listen(spec, addr, pattern, meter).map(|r| Ready::Tcp(Box::new(r)))
            }
            Protocol::Udp => {
                udp::bind_receiver(spec, addr, pattern, meter).map(|b| Ready::Udp(Box::new(b)))
            }
            Protocol::Raw => unreachable!("raw frames run over AF_PACKET"),
        }
    }

    pub(crate) fn facts(&self) -> SocketFacts {
        match self {
            Ready::Tcp(l) => l.facts(),
            Ready::Udp(b) => b.facts(),
        }
    }

    pub(crate) fn receive(self) -> Result<ReceiverSide, TrafficError> {
        match self {
            Ready::Tcp(l) => stream::receive(*l).map(|(side, _)| side),
            Ready::Udp(b) => udp::receive(*b),
        }
    }
}

pub(crate) fn transmit_side(
    spec: &TransferSpec,
    dest: SocketAddr,
    pattern: &Arc<Pattern>,
    meter: &Arc<Meter>,
) -> Result<(SenderSide, SocketFacts), TrafficError> {
    match spec.protocol {
        Protocol::Tcp => stream::transmit(spec, dest, pattern, meter),
        Protocol::Udp => udp::transmit(spec, dest, pattern, meter),
        Protocol::Raw => unreachable!("raw frames run over AF_PACKET"),
    }
}

pub(crate) fn refuse_raw(spec: &TransferSpec) -> Result<(), TrafficError> {
    if spec.protocol == Protocol::Raw {
        return Err(TrafficError::Unsupported(
            "raw link-level frames need a link: use --netns (kernel) or --stack ref".into(),
        ));
    }
    Ok(())
}

/// The path of a run once made: loopback, or the namespaces and veth pair
/// (removed when the last clone is dropped).
#[derive(Debug, Clone)]
pub struct PathSetup {
    veth: Option<Arc<VethPair>>,
}

impl PathSetup {
    pub fn new(path: KernelPath) -> Result<Self, TrafficError> {
        Ok(Self {
            veth: match path {
                KernelPath::Loopback => None,
                KernelPath::Netns { mtu } => Some(Arc::new(VethPair::create(mtu)?)),
            },
        })
    }

    /// The receiver's (server's) address in `family`.
    pub fn receiver_ip(&self, family: Family) -> IpAddr {
        self.veth
            .as_ref()
            .map_or(loopback(family), |v| v.addr(Side::A, family))
    }

    /// Moves the calling thread to `side`'s namespace (nothing on
    /// loopback).
    pub fn enter(&self, side: Side) -> Result<(), TrafficError> {
        match &self.veth {
            Some(veth) => veth.enter(side),
            None => Ok(()),
        }
    }

    /// The interface of `side` (none on loopback).
    pub fn interface(&self, side: Side) -> Option<&str> {
        self.veth.as_ref().map(|v| v.interface(side))
    }

    pub fn description(&self) -> String {
        match &self.veth {
            None => "loopback".to_string(),
            Some(v) => v.describe(),
        }
    }

    /// True when the two sides run in namespaces of their own (their
    /// drop counters are apart).
    pub fn separate_namespaces(&self) -> bool {
        self.veth.is_some()
    }

    pub fn mtu(&self) -> u32 {
        self.veth.as_ref().map_or_else(loopback_mtu, |v| v.mtu())
    }
}

/// `lo`'s MTU as the kernel reports it (65536 on Linux by default).
fn loopback_mtu() -> u32 {
    std::fs::read_to_string("/sys/class/net/lo/mtu")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(65_536)
}

/// `-t`: sends to `dest` (another process or host runs `-r`).
pub fn transmit(
    spec: &TransferSpec,
    dest: IpAddr,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    spec.validate()?;
    refuse_raw(spec)?;
    let pattern = Arc::new(pattern_for(spec.len));
    let meter = Arc::new(Meter::default());
    let timestamp = Timestamp::now();
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter.clone(), every, print_intervals));
    let sent = transmit_side(spec, SocketAddr::new(dest, spec.port), &pattern, &meter);
    let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
    let (side, facts) = sent?;
    let mut target = Environment::detect(StackKind::Kernel, format!("this host to {dest}"));
    target.sockbuf_granted = facts.granted;
    target.congestion_control = facts.congestion_control;
    Ok(TransferReport::new(
        spec,
        target,
        timestamp,
        intervals,
        Some(&side),
        None,
    ))
}

/// `-r`: receives one transfer on `bind` (the unspecified address takes
/// any).
pub fn receive(
    spec: &TransferSpec,
    bind: IpAddr,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    spec.validate()?;
    refuse_raw(spec)?;
    let pattern = Arc::new(pattern_for(spec.len));
    let meter = Arc::new(Meter::default());
    let timestamp = Timestamp::now();
    let ready = Ready::bind(spec, SocketAddr::new(bind, spec.port), &pattern, &meter)?;
    let facts = ready.facts();
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter.clone(), every, print_intervals));
    let received = ready.receive();
    let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
    let side = received?;
    let mut target = Environment::detect(
        StackKind::Kernel,
        format!("any sender to {bind} port {} on this host", spec.port),
    );
    target.sockbuf_granted = facts.granted;
    Ok(TransferReport::new(
        spec,
        target,
        timestamp,
        intervals,
        None,
        Some(&side),
    ))
}
