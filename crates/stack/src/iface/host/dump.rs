//! The state dump of the MSR `ipv6` tool: interfaces with their NTEs and
//! ADEs, neighbour caches, routes, the destination cache with path MTUs,
//! prefix and router lists, counters and drops per reason. Serializes to
//! JSON and prints as text.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::{Host, HostCounters};
use crate::iface::address::Expiry;
use crate::iface::device::DeviceCounters;
use crate::iface::interface::InterfaceCounters;
use crate::iface::route::{DestinationCache, RouteAddress, RoutingTable};
use crate::time::Instant;

/// Seconds left until `expiry`, `None` for infinite.
fn seconds_left(expiry: Expiry, now: Instant) -> Option<f64> {
    expiry.remaining(now).map(|d| d.as_secs_f64())
}

fn seconds_until(at: Instant, now: Instant) -> f64 {
    (at - now).as_secs_f64()
}

#[derive(Debug, Clone, Serialize)]
pub struct HostState {
    pub name: String,
    pub router: bool,
    /// The clock the state was read at, in seconds since the run began.
    pub time_s: f64,
    pub interfaces: Vec<InterfaceState>,
    pub ipv6_routes: Vec<RouteState>,
    pub ipv4_routes: Vec<RouteState>,
    pub ipv6_destinations: Vec<DestinationState>,
    pub ipv4_destinations: Vec<DestinationState>,
    pub reassembly: ReassemblyState,
    pub buffers: BufferState,
    pub counters: HostCounters,
    pub drops: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct InterfaceState {
    pub index: usize,
    pub name: String,
    pub mac: String,
    pub link_mtu: usize,
    pub ipv6_mtu: usize,
    pub hop_limit: u8,
    pub ipv4: Option<String>,
    /// Net Table Entries: addresses usable as sources.
    pub ntes: Vec<NteState>,
    /// Address Entries: every address the interface receives for.
    pub ades: Vec<AdeState>,
    pub neighbors: Vec<NeighborState>,
    pub arp: Vec<NeighborState>,
    pub prefixes: Vec<PrefixState>,
    pub routers: Vec<RouterState>,
    pub advertising: bool,
    pub counters: InterfaceCounters,
    pub link: LinkState,
    /// The device's transmit ring: its size and counters.
    pub device: DeviceState,
    /// Set on a tunnel over the host's own IPv4 (`iface::tunnel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tunnel: Option<TunnelState>,
    /// IPv4 groups the interface reports by IGMP (RFC 2236 §3).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub igmp_groups: Vec<String>,
    /// A router's IGMP querier on the interface: `querier` or
    /// `non-querier`, and the groups it has members of with the seconds
    /// their membership has left (§7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub igmp_querier: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub igmp_members: Vec<(String, f64)>,
}

/// A tunnel interface's tunnel (`iface::tunnel`).
#[derive(Debug, Clone, Serialize)]
pub struct TunnelState {
    /// `configured`, `automatic` or `6over4`.
    pub kind: &'static str,
    pub local: String,
    /// A configured tunnel's endpoint.
    pub remote: Option<String>,
    /// A configured tunnel's MTU mode (RFC 4213 §3.2): static or dynamic.
    pub mtu_mode: Option<&'static str>,
    pub ttl: u8,
    pub counters: crate::iface::tunnel::TunnelCounters,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceState {
    pub ring_frames: usize,
    pub in_ring: usize,
    #[serde(flatten)]
    pub counters: DeviceCounters,
}

#[derive(Debug, Clone, Serialize)]
pub struct NteState {
    pub address: String,
    pub prefix_len: u8,
    pub origin: &'static str,
    pub state: &'static str,
    /// Seconds; `null` is infinite.
    pub valid_lifetime_s: Option<f64>,
    pub preferred_lifetime_s: Option<f64>,
    pub dad_transmits: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct AdeState {
    pub address: String,
    /// `unicast` or `multicast`.
    pub kind: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct NeighborState {
    pub address: String,
    pub state: &'static str,
    pub lladdr: Option<String>,
    pub is_router: bool,
    /// Seconds to the entry's next timer, if it has one.
    pub timer_s: Option<f64>,
    pub queued: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct PrefixState {
    pub prefix: String,
    pub valid_lifetime_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RouterState {
    pub address: String,
    pub lifetime_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RouteState {
    pub prefix: String,
    pub next_hop: Option<String>,
    pub interface: usize,
    pub metric: u32,
    pub origin: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct DestinationState {
    pub destination: String,
    pub next_hop: String,
    pub interface: usize,
    pub source: Option<String>,
    pub path_mtu: u32,
    /// Seconds until a lowered PMTU is tried at the link MTU again.
    pub pmtu_expires_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReassemblyState {
    pub ipv6_datagrams: usize,
    pub ipv6_bytes: usize,
    pub ipv4_datagrams: usize,
    pub ipv4_bytes: usize,
    pub ipv6_reassembled: u64,
    pub ipv4_reassembled: u64,
    pub ipv6_timed_out: u64,
    pub ipv4_timed_out: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BufferState {
    pub buffers: usize,
    pub in_use: usize,
    pub high_water: usize,
    pub exhausted: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkState {
    pub tx_frames: u64,
    pub rx_frames: u64,
    pub dropped_loss: u64,
    pub dropped_queue_full: u64,
    pub dropped_too_big: u64,
}

impl Host {
    /// The host's state at `now`.
    pub fn state(&self, now: Instant) -> HostState {
        let interfaces = self
            .interfaces
            .iter()
            .map(|i| {
                let v6 = &i.v6;
                let ntes = v6
                    .addresses
                    .entries()
                    .map(|n| NteState {
                        address: n.address().to_string(),
                        prefix_len: n.prefix_len(),
                        origin: n.origin().name(),
                        state: n.state().name(),
                        valid_lifetime_s: seconds_left(n.valid_until(), now),
                        preferred_lifetime_s: seconds_left(n.preferred_until(), now),
                        dad_transmits: n.dad_transmits_sent(),
                    })
                    .collect();
                let mut ades: Vec<AdeState> = v6
                    .addresses
                    .entries()
                    .filter(|n| n.is_assigned())
                    .map(|n| AdeState {
                        address: n.address().to_string(),
                        kind: "unicast",
                    })
                    .collect();
                ades.extend(
                    v6.mld
                        .groups()
                        .into_iter()
                        .filter(|g| g.refcount > 0)
                        .map(|g| AdeState {
                            address: g.group.to_string(),
                            kind: "multicast",
                        }),
                );
                let neighbor =
                    |e: crate::iface::neighbor::EntryView<_, wire::ethernet::EthernetAddress>,
                     address: String| NeighborState {
                        address,
                        state: e.state.name(),
                        lladdr: e.lladdr.map(|m| m.to_string()),
                        is_router: e.is_router,
                        timer_s: e.deadline.map(|d| seconds_until(d, now)),
                        queued: e.queued,
                    };
                let mut neighbors: Vec<NeighborState> = v6
                    .neighbors
                    .entries()
                    .map(|e| {
                        let address = e.addr.to_string();
                        neighbor(e, address)
                    })
                    .collect();
                let tunnel = self.tunnels.iter().find(|t| t.interface == i.id);
                // A configured tunnel's endpoint: the NCE whose state
                // inhibits ND, its link-layer address the IPv4 endpoint.
                if let Some((t, nce)) = tunnel.and_then(|t| t.endpoint.map(|nce| (t, nce))) {
                    neighbors.push(NeighborState {
                        address: nce.neighbor.to_string(),
                        state: "PERMANENT (no ND)",
                        lladdr: Some(nce.link_address.to_string()),
                        is_router: t.config.default_route,
                        timer_s: None,
                        queued: 0,
                    });
                }
                let arp =
                    i.v4.as_ref()
                        .map(|v4| {
                            v4.arp
                                .entries()
                                .map(|e| {
                                    let address = e.addr.to_string();
                                    NeighborState {
                                        address,
                                        state: e.state.name(),
                                        lladdr: e.lladdr.map(|m| m.to_string()),
                                        is_router: e.is_router,
                                        timer_s: e.deadline.map(|d| seconds_until(d, now)),
                                        queued: e.queued,
                                    }
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                let link = i.link.stats();
                InterfaceState {
                    index: i.id.0,
                    name: i.name.clone(),
                    mac: i.mac.to_string(),
                    link_mtu: i.link_mtu(),
                    ipv6_mtu: v6.mtu,
                    hop_limit: v6.hop_limit,
                    ipv4: i
                        .v4
                        .as_ref()
                        .map(|v4| format!("{}/{}", v4.address, v4.prefix_len)),
                    ntes,
                    ades,
                    neighbors,
                    arp,
                    prefixes: v6
                        .addresses
                        .prefixes()
                        .map(|p| PrefixState {
                            prefix: format!("{}/{}", p.prefix, p.prefix_len),
                            valid_lifetime_s: seconds_left(p.valid_until, now),
                        })
                        .collect(),
                    routers: v6
                        .addresses
                        .routers()
                        .map(|r| RouterState {
                            address: r.address.to_string(),
                            lifetime_s: seconds_until(r.expires, now),
                        })
                        .collect(),
                    advertising: v6.advertiser.is_some(),
                    counters: i.counters,
                    link: LinkState {
                        tx_frames: link.tx_frames,
                        rx_frames: link.rx_frames,
                        dropped_loss: link.dropped_loss,
                        dropped_queue_full: link.dropped_queue_full,
                        dropped_too_big: link.dropped_too_big,
                    },
                    device: DeviceState {
                        ring_frames: i.device.capacity(),
                        in_ring: i.device.len(),
                        counters: i.device.counters,
                    },
                    tunnel: tunnel.map(tunnel_state),
                    igmp_groups: i.v4.as_ref().map_or(Vec::new(), |v4| {
                        v4.igmp
                            .groups()
                            .iter()
                            .map(|g| g.group.to_string())
                            .collect()
                    }),
                    igmp_querier: i.v4.as_ref().and_then(|v4| v4.querier.as_ref()).map(|q| {
                        if q.is_querier(now) {
                            "querier"
                        } else {
                            "non-querier"
                        }
                        .to_string()
                    }),
                    igmp_members: i.v4.as_ref().and_then(|v4| v4.querier.as_ref()).map_or(
                        Vec::new(),
                        |q| {
                            q.groups()
                                .iter()
                                .map(|g| (g.group.to_string(), seconds_until(g.expires, now)))
                                .collect()
                        },
                    ),
                }
            })
            .collect();
        let ipv6_routes = routes_state(&self.routes6);
        let ipv4_routes = routes_state(&self.routes4);
        let ipv6_destinations = destinations_state(&self.dest6, now);
        let ipv4_destinations = destinations_state(&self.dest4, now);
        let pool = self.pool.stats();
        HostState {
            name: self.name.clone(),
            router: self.router,
            time_s: now.as_nanos() as f64 / 1e9,
            interfaces,
            ipv6_routes,
            ipv4_routes,
            ipv6_destinations,
            ipv4_destinations,
            reassembly: ReassemblyState {
                ipv6_datagrams: self.reassembly6.len(),
                ipv6_bytes: self.reassembly6.held_bytes(),
                ipv4_datagrams: self.reassembly4.len(),
                ipv4_bytes: self.reassembly4.held_bytes(),
                ipv6_reassembled: self.reassembly6.stats().reassembled,
                ipv4_reassembled: self.reassembly4.stats().reassembled,
                ipv6_timed_out: self.reassembly6.stats().timed_out,
                ipv4_timed_out: self.reassembly4.stats().timed_out,
            },
            buffers: BufferState {
                buffers: self.pool.config().buffers,
                in_use: self.pool.in_use(),
                high_water: pool.high_water,
                exhausted: pool.exhausted,
            },
            counters: self.counters,
            drops: self
                .drops
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
        }
    }
}

/// A routing table as the dump shows it.
fn routes_state<A: RouteAddress>(table: &RoutingTable<A>) -> Vec<RouteState> {
    table
        .routes()
        .into_iter()
        .map(|r| RouteState {
            prefix: format!("{}/{}", r.prefix, r.prefix_len),
            next_hop: r.next_hop.map(|h| h.to_string()),
            interface: r.interface.0,
            metric: r.metric,
            origin: r.origin.name(),
        })
        .collect()
}

/// A destination cache as the dump shows it.
fn destinations_state<A: RouteAddress>(
    cache: &DestinationCache<A>,
    now: Instant,
) -> Vec<DestinationState> {
    cache
        .entries(now)
        .into_iter()
        .map(|v| DestinationState {
            destination: v.destination.to_string(),
            next_hop: v.next_hop.neighbor.to_string(),
            interface: v.next_hop.interface.0,
            source: v.next_hop.source.map(|s| s.to_string()),
            path_mtu: v.pmtu,
            pmtu_expires_s: v.pmtu_expires.map(|t| seconds_until(t, now)),
        })
        .collect()
}

fn lifetime(seconds: Option<f64>) -> String {
    match seconds {
        Some(s) => format!("{s:.0}s"),
        None => "infinite".to_string(),
    }
}

fn tunnel_state(tunnel: &crate::iface::tunnel::Tunnel) -> TunnelState {
    use crate::iface::tunnel::TunnelKind;
    let (remote, mtu_mode) = match tunnel.config.kind {
        TunnelKind::Configured { remote, mtu_mode } => {
            (Some(remote.to_string()), Some(mtu_mode.name()))
        }
        TunnelKind::Automatic | TunnelKind::SixOverFour => (None, None),
    };
    TunnelState {
        kind: tunnel.config.kind.name(),
        local: tunnel.config.local.to_string(),
        remote,
        mtu_mode,
        ttl: tunnel.config.ttl,
        counters: tunnel.counters,
    }
}

impl fmt::Display for HostState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let role = if self.router { "router" } else { "host" };
        writeln!(f, "{} ({role}) at {:.3} s", self.name, self.time_s)?;
        for i in &self.interfaces {
            writeln!(
                f,
                "\nInterface {}: {}  mac {}  mtu {} (ipv6 {})  hop limit {}{}",
                i.index,
                i.name,
                i.mac,
                i.link_mtu,
                i.ipv6_mtu,
                i.hop_limit,
                if i.advertising { "  advertising" } else { "" }
            )?;
            if let Some(v4) = &i.ipv4 {
                writeln!(f, "  ipv4 {v4}")?;
            }
            if !i.igmp_groups.is_empty() {
                writeln!(f, "  IGMP member of {}", i.igmp_groups.join(", "))?;
            }
            if let Some(role) = &i.igmp_querier {
                let members: Vec<String> = i
                    .igmp_members
                    .iter()
                    .map(|(g, left)| format!("{g} ({left:.1}s)"))
                    .collect();
                writeln!(
                    f,
                    "  IGMP {role}; members of {}",
                    if members.is_empty() {
                        "no group".into()
                    } else {
                        members.join(", ")
                    }
                )?;
            }
            if let Some(t) = &i.tunnel {
                let c = &t.counters;
                writeln!(
                    f,
                    "  tunnel {} from {}{}{}  ttl {}: {} encapsulated, {} decapsulated, \
                     {} ingress drops, {} ICMPv4 errors relayed, {} too big",
                    t.kind,
                    t.local,
                    t.remote
                        .as_ref()
                        .map_or(String::new(), |r| format!(" to {r}")),
                    t.mtu_mode.map_or(String::new(), |m| format!("  mtu {m}")),
                    t.ttl,
                    c.encapsulated,
                    c.decapsulated,
                    c.ingress_dropped,
                    c.icmpv4_relayed,
                    c.too_big
                )?;
            }
            for n in &i.ntes {
                writeln!(
                    f,
                    "  NTE {}/{}  {} {}  valid {}  preferred {}",
                    n.address,
                    n.prefix_len,
                    n.origin,
                    n.state,
                    lifetime(n.valid_lifetime_s),
                    lifetime(n.preferred_lifetime_s)
                )?;
            }
            for a in &i.ades {
                writeln!(f, "  ADE {} ({})", a.address, a.kind)?;
            }
            for n in i.neighbors.iter().chain(&i.arp) {
                writeln!(
                    f,
                    "  NCE {}  {}  {}{}{}",
                    n.address,
                    n.lladdr.as_deref().unwrap_or("(none)"),
                    n.state,
                    if n.is_router { "  router" } else { "" },
                    n.timer_s
                        .map_or(String::new(), |t| format!("  timer {t:.1}s"))
                )?;
            }
            for p in &i.prefixes {
                writeln!(
                    f,
                    "  PLE {}  valid {}",
                    p.prefix,
                    lifetime(p.valid_lifetime_s)
                )?;
            }
            for r in &i.routers {
                writeln!(f, "  RLE {}  lifetime {:.0}s", r.address, r.lifetime_s)?;
            }
            let (l, d) = (&i.link, &i.device);
            writeln!(
                f,
                "  link: {} frames out, {} in; dropped {} lost, {} queue full, {} too big",
                l.tx_frames, l.rx_frames, l.dropped_loss, l.dropped_queue_full, l.dropped_too_big
            )?;
            writeln!(
                f,
                "  device ring: {} of {} slots in use (high water {}), {} completed, full {} times",
                d.in_ring,
                d.ring_frames,
                d.counters.high_water,
                d.counters.completed,
                d.counters.ring_full
            )?;
        }
        writeln!(f, "\nRoutes:")?;
        for r in self.ipv6_routes.iter().chain(&self.ipv4_routes) {
            writeln!(
                f,
                "  {}  {}  if {}  metric {}  {}",
                r.prefix,
                r.next_hop
                    .as_deref()
                    .map_or("on-link".to_string(), |h| format!("via {h}")),
                r.interface,
                r.metric,
                r.origin
            )?;
        }
        writeln!(f, "\nDestination cache (RCEs):")?;
        for d in self.ipv6_destinations.iter().chain(&self.ipv4_destinations) {
            writeln!(
                f,
                "  {}  via {}  if {}  src {}  pmtu {}",
                d.destination,
                d.next_hop,
                d.interface,
                d.source.as_deref().unwrap_or("-"),
                d.path_mtu
            )?;
        }
        writeln!(
            f,
            "\nBuffers: {} of {} in use (high water {}, exhausted {})",
            self.buffers.in_use,
            self.buffers.buffers,
            self.buffers.high_water,
            self.buffers.exhausted
        )?;
        if !self.drops.is_empty() {
            writeln!(f, "\nDrops:")?;
            for (reason, count) in &self.drops {
                writeln!(f, "  {reason}: {count}")?;
            }
        }
        Ok(())
    }
}
