//! A cross-stack transfer in one process, the kernel's stack at one end
//! and the reference stack at the other, over a path the tool makes:
//!
//! * `packet`: a veth pair between two namespaces, the reference host on
//!   one veth end over AF_PACKET (the kernel taken off that end first).
//!   The same veth path as the kernel's `--netns` pair, so kernel ->
//!   kernel, kernel -> reference and reference -> kernel compare like for
//!   like (`stackscope ttcp --pair --stack ref --link packet`,
//!   `stackscope sweep --stack kernel,ref --netns --link packet`).
//! * `tap`: one namespace holding a TAP; the kernel's end is the TAP's
//!   kernel side, the reference host holds its descriptor.

use std::net::IpAddr;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use stack::buffer::PoolConfig;
use stack::iface::host::{Host, HostConfig, InterfaceConfig};
use stack::iface::offload::Offload;
use stack::phy::packet::PacketLink;
use stack::phy::tap::Tap;
use stack::phy::Link;
use stack::topology::{derived_mac, Ipv4Cidr, Ipv6Cidr};
use wire::ethernet::EthernetAddress;

use crate::error::TrafficError;
use crate::kernel::netns::{address, Side, TapNamespace, VethPair};
use crate::spec::Family;

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

/// What the reference host's end is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerLink {
    /// AF_PACKET on one end of a veth pair.
    Packet,
    /// A TAP whose kernel side is the kernel's end.
    Tap,
}

/// A transfer between the kernel and the reference stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelPeer {
    pub link: PeerLink,
    /// The path's MTU.
    pub mtu: u32,
    pub ref_end: RefEnd,
    /// The reference host's interface offloads (`ethtool -K`); a TAP is
    /// opened with virtio-net headers when TSO is on.
    pub offload: Offload,
}

/// The path made for one transfer. Side A receives, side B sends (as in
/// the kernel's pair), whichever stack each is.
pub(crate) enum Path {
    Veth(VethPair),
    /// The namespace, and the TAP until the reference host takes it.
    Tap(TapNamespace, Mutex<Option<Tap>>),
}

impl Path {
    /// Makes the path with the kernel's end configured and up; `ref_side`
    /// is the reference stack's.
    /// `vnet_header` opens a TAP with virtio-net headers (for TSO).
    pub(crate) fn create(
        link: PeerLink,
        mtu: u32,
        ref_side: Side,
        vnet_header: bool,
    ) -> Result<Self, TrafficError> {
        match link {
            PeerLink::Packet => {
                let veth = VethPair::create(mtu)?;
                veth.hand_over(ref_side)?;
                Ok(Path::Veth(veth))
            }
            PeerLink::Tap => {
                let ns = TapNamespace::create(mtu)?;
                // The TAP is made in the namespace (a thread enters it);
                // its descriptor then works from anywhere.
                let tap = std::thread::scope(|scope| {
                    scope
                        .spawn(|| {
                            ns.enter()?;
                            Tap::open_with(ns.interface(), mtu as usize, vnet_header).map_err(|e| {
                                TrafficError::io(format!("create TAP {}", ns.interface()), e)
                            })
                        })
                        .join()
                        .unwrap_or_else(|_| {
                            Err(TrafficError::Invalid("creating the TAP panicked".into()))
                        })
                })?;
                ns.configure_kernel_side(other(ref_side))?;
                wait_until_up(&tap)?;
                Ok(Path::Tap(ns, Mutex::new(Some(tap))))
            }
        }
    }

    /// Moves the calling thread to where the kernel's end of `side` is.
    pub(crate) fn enter(&self, side: Side) -> Result<(), TrafficError> {
        match self {
            Path::Veth(veth) => veth.enter(side),
            Path::Tap(ns, _) => ns.enter(),
        }
    }

    /// The interface the kernel's end of `side` uses (raw frames open
    /// their packet socket on it).
    pub(crate) fn interface(&self, side: Side) -> &str {
        match self {
            Path::Veth(veth) => veth.interface(side),
            Path::Tap(ns, _) => ns.interface(),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Path::Veth(veth) => veth.describe(),
            Path::Tap(ns, _) => ns.describe(),
        }
    }

    pub(crate) fn mtu(&self) -> u32 {
        match self {
            Path::Veth(veth) => veth.mtu(),
            Path::Tap(ns, _) => ns.mtu(),
        }
    }

    /// The reference host's link at `side`, its name and MAC (call it on
    /// the host's thread: AF_PACKET opens in the veth end's namespace).
    fn reference_link(
        &self,
        side: Side,
    ) -> Result<(Box<dyn Link + Send>, String, EthernetAddress), TrafficError> {
        match self {
            Path::Veth(veth) => {
                veth.enter(side)?;
                let name = veth.interface(side);
                let link = PacketLink::open(name)
                    .map_err(|e| TrafficError::io(format!("AF_PACKET on {name}"), e))?;
                let mac = link.mac();
                Ok((Box::new(link), name.to_string(), mac))
            }
            Path::Tap(ns, tap) => {
                let tap = tap
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .ok_or_else(|| TrafficError::Invalid("the TAP is taken already".into()))?;
                let name = ns.interface().to_string();
                let mac = derived_mac("stackscope-ref", &name);
                Ok((Box::new(tap), name, mac))
            }
        }
    }
}

fn other(side: Side) -> Side {
    match side {
        Side::A => Side::B,
        Side::B => Side::A,
    }
}

/// Waits (briefly) for the TAP's kernel side to be up: frames are refused
/// before.
fn wait_until_up(tap: &Tap) -> Result<(), TrafficError> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match tap.is_up() {
            Ok(true) => return Ok(()),
            Ok(false) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(false) => {
                return Err(TrafficError::Invalid(format!(
                    "TAP {} did not come up",
                    tap.name()
                )))
            }
            Err(e) => return Err(TrafficError::io(format!("TAP {}", tap.name()), e)),
        }
    }
}

/// A reference host at `side` of the path (on the host's own thread),
/// with the addresses of that side and the interface's `offload`.
pub(crate) fn reference_host(
    path: &Path,
    side: Side,
    offload: Offload,
) -> Result<Host, TrafficError> {
    let (link, name, mac) = path.reference_link(side)?;
    let mtu = link.mtu();
    let (IpAddr::V4(v4), IpAddr::V6(v6)) = (address(side, Family::V4), address(side, Family::V6))
    else {
        unreachable!("address gives the family asked for");
    };
    let interface = InterfaceConfig {
        name: name.clone(),
        link,
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
        // The kernel's addresses were configured without DAD too.
        dad_transmits: Some(0),
    };
    let mut config = HostConfig::new("reference", false);
    config.pool = PoolConfig::for_mtu(mtu);
    config.seed = stack::random::os_seed();
    let mut host = Host::new(config, vec![interface], &[])
        .map_err(|e| TrafficError::Invalid(format!("the reference host on {name}: {e}")))?;
    host.set_offload(stack::iface::route::InterfaceId(0), offload)
        .map_err(|e| TrafficError::Invalid(format!("offload on {name}: {e}")))?;
    Ok(host)
}
