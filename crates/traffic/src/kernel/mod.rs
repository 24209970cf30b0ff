//! The `kernel` target: the operating system's own sockets, over loopback
//! or across a veth pair between two network namespaces the tool makes
//! (`--netns`). Each side runs on its own thread (in its own namespace),
//! or in its own process with `-t` / `-r`.

pub mod congestion;
pub mod drops;
pub mod net;
pub mod netns;
mod packet;
pub mod pipeline;
pub mod pipeline_summary;
mod socket;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use crate::error::TrafficError;
use crate::pattern::Pattern;
use crate::spec::Family;
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
