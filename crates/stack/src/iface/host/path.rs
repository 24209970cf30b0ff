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
//! `route.lookup` or `neighbor.lookup` span: none took place. Once a
//! second ([`PATH_REFRESH`]) a connection's packet takes the full path
//! again, so its entries count as in use for the caches' eviction order.
//! Only TCP keeps paths: UDP, raw and XTP look up every packet's.
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
    /// When the path is looked up again: after [`PATH_REFRESH`], or when
    /// a lowered PMTU returns to the link MTU (RFC 8201 §4) if sooner.
    until: Instant,
}

/// How long a path is used before the full lookups run again. They touch
/// the destination and neighbour entries (most recently used, last use),
/// so a busy connection's entries are never the first evicted from full
/// caches, nor a PMTU it learnt thrown away while in use (RFC 8201 §5.2);
/// once a second costs nothing against a connection's packets.
pub(crate) const PATH_REFRESH: std::time::Duration = std::time::Duration::from_secs(1);

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
    /// Socket slot `slot`'s path, if it leads to `dst` and nothing it was
    /// read from changed. Read where it is kept: a segment's route is
    /// built from it without the path (about 100 bytes) copied out twice
    /// first (issue 22).
    #[inline]
    pub(super) fn current_path_at(
        &self,
        now: Instant,
        slot: usize,
        dst: IpAddr,
    ) -> Option<&CachedPath> {
        let path = self.tcp_paths.paths.get(slot)?.as_ref()?;
        self.is_current(now, path, dst).then_some(path)
    }

    #[inline]
    fn is_current(&self, now: Instant, path: &CachedPath, dst: IpAddr) -> bool {
        path.dst == dst
            && now < path.until
            && self.path_stamp(path.interface, dst) == Some(path.stamp)
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
                let routes = self.routes6.generation();
                let view = self.dest6.peek(now, dst);
                next_hop(view.filter(|v| v.generation == routes)?, IpAddr::V6)
            }
            IpAddr::V4(dst) => {
                if dst.is_broadcast() || dst.is_multicast() {
                    return None;
                }
                let routes = self.routes4.generation();
                let view = self.dest4.peek(now, dst);
                next_hop(view.filter(|v| v.generation == routes)?, IpAddr::V4)
            }
        };
        Some(CachedPath {
            dst,
            interface,
            neighbor,
            mtu: pmtu as usize,
            lladdr: self.direct_lladdr(interface, neighbor),
            stamp: self.path_stamp(interface, dst)?,
            until: pmtu_expires.map_or(now + PATH_REFRESH, |at| at.min(now + PATH_REFRESH)),
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
                let arp = &iface.v4.as_ref()?.arp;
                // ARP's own rules first, as its lookup applies them before
                // its cache: broadcasts (directed ones included) and
                // multicast have fixed addresses, and some are refused.
                if local || arp.is_fixed_or_refused(neighbor) {
                    return None;
                }
                let entry = arp.get(neighbor)?;
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

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use super::*;
    use crate::iface::host::TcpHandle;
    use crate::runner::{blocking, Simulator};
    use crate::socket::tcp::connection::TcpConfig;
    use crate::socket::tcp::listener::ListenerConfig;
    use crate::topology::Topology;

    const LIMIT: Duration = Duration::from_secs(10);

    /// A change to one of host-a's tables, for a path to `dst`.
    type Change = fn(&mut Host, IpAddr);

    /// Two hosts on a wire, host-a connected to `remote` on host-b.
    fn connected(remote: &str) -> (Simulator, TcpHandle, TcpHandle) {
        let text = include_str!("../../../../../topologies/unlimited.toml");
        let mut sim = Simulator::new(&Topology::from_toml_str(text).unwrap(), None).unwrap();
        sim.run_for(Duration::from_secs(3));
        let remote: SocketAddr = remote.parse().unwrap();
        let any = SocketAddr::new(
            if remote.is_ipv6() { "::" } else { "0.0.0.0" }
                .parse()
                .unwrap(),
            remote.port(),
        );
        let config = TcpConfig::default();
        let b = sim.host_mut("host-b").unwrap();
        let listener = b
            .tcp_listen(any, config, ListenerConfig::default())
            .unwrap();
        let client = blocking::connect(&mut sim, "host-a", remote, config, LIMIT).unwrap();
        let server = blocking::accept(&mut sim, "host-b", listener, LIMIT).unwrap();
        (sim, client, server)
    }

    /// Moves `bytes` from host-a to host-b: segments that take, and learn,
    /// host-a's path.
    fn send(sim: &mut Simulator, client: TcpHandle, server: TcpHandle, bytes: usize) {
        blocking::write_all(sim, "host-a", client, &vec![7; bytes], LIMIT).unwrap();
        let mut got = 0;
        let mut buf = vec![0; 64 * 1024];
        let done = sim.run_until_with(LIMIT, |sim| {
            let b = sim.host_mut("host-b").unwrap();
            while let Ok(n @ 1..) = b.tcp_recv(server, &mut buf) {
                got += n;
            }
            got >= bytes
        });
        let a = sim.host("host-a").unwrap();
        let b = sim.host("host-b").unwrap();
        assert!(
            done,
            "{got} of {bytes} bytes arrived; a: {:?} {:?}; b: {:?}",
            a.tcp_connection(client).map(|c| (c.state(), c.counters())),
            a.drops(),
            b.tcp_connection(server).map(|c| (c.state(), c.counters())),
        );
    }

    /// Host-a's path for its connection, if current.
    fn path(sim: &mut Simulator, client: TcpHandle, dst: IpAddr) -> Option<CachedPath> {
        let a = sim.host_mut("host-a").unwrap();
        let slot = a.tcp.index(client).unwrap();
        a.current_path_at(a.now(), slot, dst).copied()
    }

    /// Each table a path is read from, and time, makes it stale when it
    /// changes; the next segments learn it again.
    #[test]
    fn a_path_is_current_until_a_table_it_came_from_changes() {
        for remote in ["[2001:db8:1::b]:5001", "192.0.2.2:5001"] {
            let (mut sim, client, server) = connected(remote);
            let dst = remote.parse::<SocketAddr>().unwrap().ip();
            send(&mut sim, client, server, 20_000);
            let learnt = path(&mut sim, client, dst).expect("a path after the transfer");
            assert!(learnt.lladdr.is_some(), "{remote}: {learnt:?}");
            assert_eq!(learnt.mtu, 1500, "{remote}");
            let changes: [(&str, Change); 3] = [
                ("a lowered path MTU", |a, dst| {
                    // As a Packet Too Big does (`icmpv6`, `icmpv4`): TCP
                    // rechecks its MSS when this count moves.
                    a.path_mtu_changes += 1;
                    let now = a.now();
                    match dst {
                        IpAddr::V6(d) => drop(a.dest6.on_packet_too_big(now, d, 1400)),
                        IpAddr::V4(d) => drop(a.dest4.on_packet_too_big(now, d, 1400)),
                    }
                }),
                ("a route taken out and put back", |a, dst| match dst {
                    IpAddr::V6(d) => {
                        let route = *a.routes6.lookup(d).unwrap();
                        a.routes6.remove(&route.key()).unwrap();
                        a.routes6.insert(route).unwrap();
                    }
                    IpAddr::V4(d) => {
                        let route = *a.routes4.lookup(d).unwrap();
                        a.routes4.remove(&route.key()).unwrap();
                        a.routes4.insert(route).unwrap();
                    }
                }),
                ("the neighbour's entry removed", |a, dst| {
                    let interface = &mut a.interfaces[0];
                    match dst {
                        IpAddr::V6(d) => drop(interface.v6.neighbors.remove(d)),
                        IpAddr::V4(d) => drop(interface.v4.as_mut().unwrap().arp.remove(d)),
                    }
                }),
            ];
            for (what, change) in changes {
                assert!(
                    path(&mut sim, client, dst).is_some(),
                    "{remote}: before {what}"
                );
                change(sim.host_mut("host-a").unwrap(), dst);
                assert!(
                    path(&mut sim, client, dst).is_none(),
                    "{remote}: after {what}"
                );
                send(&mut sim, client, server, 20_000);
                let again = path(&mut sim, client, dst);
                assert!(
                    again.is_some_and(|p| p.lladdr.is_some()),
                    "{remote}: {what}"
                );
            }
            // The lowered PMTU is the path's; and a second on, the path is
            // looked up again whatever the tables say.
            let last = path(&mut sim, client, dst).unwrap();
            assert_eq!(last.mtu, 1400, "{remote}");
            let a = sim.host_mut("host-a").unwrap();
            let later = a.now() + PATH_REFRESH;
            let slot = a.tcp.index(client).unwrap();
            assert!(a.current_path_at(later, slot, dst).is_none(), "{remote}");
        }
    }
}
