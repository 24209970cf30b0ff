//! A connection's cached path: the next hop, path MTU and link-layer
//! address its last packet went to, reused for the next one while the
//! routing table, the destination cache and the interface's neighbour
//! cache are unchanged (issue 22).
//!
//! This is the MSR IPv6 stack's design: its TCP sends with the Route Cache
//! Entry it holds, and "sending a packet using a cached RCE does not
//! require the acquisition of the route lock"; only the neighbour's state
//! is checked per packet (Draves et al. 1998, §3). Linux's `sk_dst_cache`
//! with its generation check is the same idea. A packet sent on a cached
//! path makes no route or neighbour lookup, so it records no
//! `route.lookup` or `neighbor.lookup` span: none took place.
//!
//! A path is kept only where the full path would hand the packet straight
//! to an Ethernet link: not for our own addresses (looped back), tunnels,
//! links that carry bare IP, multicast, link-local or broadcast
//! destinations, nor a neighbour the next lookup would change (STALE goes
//! to DELAY when used, RFC 4861 §7.3.3) or cannot send to yet.

use std::net::IpAddr;

use wire::ethernet::EthernetAddress;

use super::ipv4::Ipv4Route;
use super::ipv6_output::Ipv6Route;
use super::Host;
use crate::iface::neighbor::NeighborState;
use crate::iface::route::{DestinationView, InterfaceId};
use crate::phy::Medium;
use crate::time::Instant;

/// The state of the three tables a path was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PathStamp {
    routes: u64,
    destinations: u64,
    neighbors: u64,
}

/// Where packets to one destination go, as the lookups found it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CachedPath {
    dst: IpAddr,
    interface: InterfaceId,
    neighbor: IpAddr,
    mtu: usize,
    /// `None`: this path needs the full output path every time (see the
    /// module docs), known so until a table changes, so that such packets
    /// do not try to learn a path each.
    lladdr: Option<EthernetAddress>,
    stamp: PathStamp,
    /// When a lowered PMTU returns to the link MTU (RFC 8201 §4).
    pmtu_expires: Option<Instant>,
}

impl CachedPath {
    /// The route an IPv6 packet takes on this path.
    pub fn ipv6_route(&self) -> Option<Ipv6Route> {
        let IpAddr::V6(neighbor) = self.neighbor else {
            return None;
        };
        Some(Ipv6Route {
            interface: self.interface,
            neighbor,
            mtu: self.mtu,
            lladdr: Some(self.lladdr?),
        })
    }
}

/// The cached path of each socket, by its slot number. A slot reused by
/// another socket keeps the old path only for the same destination, where
/// it is as good as for the socket that learnt it.
#[derive(Debug, Default)]
pub(crate) struct SocketPaths {
    paths: Vec<Option<CachedPath>>,
}

impl SocketPaths {
    pub fn get(&self, slot: usize) -> Option<CachedPath> {
        self.paths.get(slot).copied().flatten()
    }

    /// Keeps `path` for `slot` (at most one per socket slot).
    pub fn set(&mut self, slot: usize, path: Option<CachedPath>) {
        if slot >= self.paths.len() {
            if path.is_none() {
                return;
            }
            self.paths.resize(slot + 1, None);
        }
        self.paths[slot] = path;
    }
}

impl Host {
    /// `path`, if it leads to `dst` and nothing it was read from changed.
    pub(super) fn current_path(
        &self,
        now: Instant,
        path: Option<CachedPath>,
        dst: IpAddr,
    ) -> Option<CachedPath> {
        let path = path?;
        let current = path.dst == dst
            && path.pmtu_expires.is_none_or(|at| now < at)
            && self.path_stamp(path.interface, dst) == Some(path.stamp);
        current.then_some(path)
    }

    /// The route an IPv4 packet takes on `path` (from the interface's
    /// address, as [`ipv4_route`](Self::ipv4_route) gives it).
    pub(super) fn cached_ipv4_route(&self, path: &CachedPath) -> Option<Ipv4Route> {
        let IpAddr::V4(neighbor) = path.neighbor else {
            return None;
        };
        Some(Ipv4Route {
            interface: path.interface,
            neighbor,
            source: self.interfaces.get(path.interface.0)?.v4.as_ref()?.address,
            mtu: path.mtu,
            lladdr: Some(path.lladdr?),
        })
    }

    fn path_stamp(&self, interface: InterfaceId, dst: IpAddr) -> Option<PathStamp> {
        let iface = self.interfaces.get(interface.0)?;
        Some(match dst {
            IpAddr::V6(_) => PathStamp {
                routes: self.routes6.generation(),
                destinations: self.dest6.changes(),
                neighbors: iface.v6.neighbors.generation(),
            },
            IpAddr::V4(_) => PathStamp {
                routes: self.routes4.generation(),
                destinations: self.dest4.changes(),
                neighbors: iface.v4.as_ref()?.arp.generation(),
            },
        })
    }

    /// The path a packet to `dst` just took through the full route and
    /// neighbour lookups, read without touching any table: with the
    /// neighbour's link-layer address where the next packet may go
    /// straight to it, without where it needs the full path (see the
    /// module docs). `None` where no destination cache entry stands behind
    /// it.
    pub(super) fn learn_path(&self, now: Instant, dst: IpAddr) -> Option<CachedPath> {
        let (interface, neighbor, pmtu, pmtu_expires) = match dst {
            IpAddr::V6(dst) => {
                if dst.is_multicast() || dst.is_unicast_link_local() {
                    return None;
                }
                next_hop(self.dest6.peek(now, dst).filter(|v| v.valid)?, IpAddr::V6)
            }
            IpAddr::V4(dst) => {
                if dst.is_broadcast() || dst.is_multicast() {
                    return None;
                }
                next_hop(self.dest4.peek(now, dst).filter(|v| v.valid)?, IpAddr::V4)
            }
        };
        Some(CachedPath {
            dst,
            interface,
            neighbor,
            mtu: pmtu as usize,
            lladdr: self.direct_lladdr(interface, neighbor),
            stamp: self.path_stamp(interface, dst)?,
            pmtu_expires,
        })
    }

    /// The link-layer address a packet for `neighbor` out of `interface`
    /// may go to without the full output path, if any.
    fn direct_lladdr(&self, interface: InterfaceId, neighbor: IpAddr) -> Option<EthernetAddress> {
        let iface = self.interfaces.get(interface.0)?;
        if iface.medium != Medium::Ethernet || self.tunnel_index(interface).is_some() {
            return None;
        }
        let (state, lladdr) = match neighbor {
            IpAddr::V6(neighbor) => {
                if neighbor.is_multicast() || self.is_local_ipv6(interface, neighbor) {
                    return None;
                }
                let entry = iface.v6.neighbors.get(neighbor)?;
                (entry.state, entry.lladdr)
            }
            IpAddr::V4(neighbor) => {
                let local = self
                    .interfaces
                    .iter()
                    .any(|i| i.v4.as_ref().is_some_and(|v4| v4.address == neighbor));
                if neighbor.is_multicast() || neighbor.is_broadcast() || local {
                    return None;
                }
                let entry = iface.v4.as_ref()?.arp.get(neighbor)?;
                (entry.state, entry.lladdr)
            }
        };
        sendable(state, lladdr)
    }
}

/// A destination cache entry's interface, neighbour (as `ip` makes it an
/// address of either family), path MTU and its aging time.
fn next_hop<A: Copy>(
    view: DestinationView<A>,
    ip: fn(A) -> IpAddr,
) -> (InterfaceId, IpAddr, u32, Option<Instant>) {
    let hop = view.next_hop;
    (
        hop.interface,
        ip(hop.neighbor),
        view.pmtu,
        view.pmtu_expires,
    )
}

/// The link-layer address a lookup would send to without changing the
/// entry: REACHABLE, DELAY and PROBE (RFC 4861 §7.3.3).
fn sendable(state: NeighborState, lladdr: Option<EthernetAddress>) -> Option<EthernetAddress> {
    match state {
        NeighborState::Reachable | NeighborState::Delay | NeighborState::Probe => lladdr,
        NeighborState::Incomplete | NeighborState::Stale => None,
    }
}
