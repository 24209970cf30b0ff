//! A host (or router): interfaces, routing, sockets and timers, driven by
//! [`Host::poll`] (DESIGN.md, "The reference stack": poll-driven and
//! single-threaded per host, sharing nothing with other hosts).
//!
//! One poll, at `now`:
//!
//! 1. starts the interfaces on the first call (link-local address, DAD,
//!    router solicitation, MLD joins);
//! 2. receives every frame the links have for `now`, answers ARP at once,
//!    hands frames of a link socket's EtherType to it and puts IP packets
//!    on the **IP input queue**;
//! 3. drains the IP input queue through IPv6/IPv4 input (extension
//!    headers, reassembly, forwarding, ICMP, Neighbor Discovery, UDP and
//!    raw delivery to the **receive socket queues**);
//! 4. drains the **send socket queues** through UDP/raw output and IP
//!    output (route and destination cache, fragmentation, neighbour
//!    resolution), and link sockets' frames straight, onto the **interface
//!    queues**;
//! 5. fires the timers that are due;
//! 6. hands the interface queues to the links.
//!
//! [`Host::next_deadline`] says when the next poll has work.
//!
//! Malformed or unwanted packets are dropped and counted per reason
//! ([`Host::drops`]), never panicking and never growing memory: every
//! table and queue is bounded.

mod dump;
mod fragment_flows;
mod fragmentation;
mod gro;
mod icmpv4;
mod icmpv6;
mod igmp;
mod ipv4;
mod ipv6_input;
mod ipv6_output;
mod link_sockets;
mod memory;
mod multicast;
mod ndisc;
mod path;
mod tcp;
mod tcp_api;
mod transport;
mod tunnel;
mod xtp;
mod xtp_api;
mod xtp_driver;
mod xtp_group;
mod xtp_group_api;

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use probe::Flow;
use wire::ethernet::EthernetAddress;
use wire::ip::IpProtocol;

pub use crate::socket::tcp::sockets::TcpHandle;
pub use dump::{HostState, InterfaceState, TunnelState};
pub use fragmentation::Fragmentation;
pub use gro::{GroCounters, OffloadError};
use link_sockets::FrameAddresses;
pub use link_sockets::LinkOpenError;
pub use multicast::{
    ipv4_multicast_mac, ipv6_multicast_mac, Memberships, MulticastError, ALL_HOSTS_V4,
    MAX_GROUPS_PER_INTERFACE,
};
pub use tcp_api::{TcpError, TcpReadiness};
pub use xtp_api::{XtpError, XtpReadiness};
pub use xtp_group::{XtpGroupHandle, MAX_GROUP_SOCKETS};
pub use xtp_group_api::{XtpGroupError, XtpGroupStatus};

use crate::buffer::{Packet, Pool, PoolConfig, PoolConfigError};
use crate::iface::address::{AddressConfig, InterfaceAddresses};
use crate::iface::arp::{ArpAddress, ArpCache, ArpConfig};
use crate::iface::interface::{
    AdvertisedPrefix, Advertiser, Interface, Ipv4Interface, Ipv6Interface,
};
use crate::iface::mld::{MldConfig, MldListener};
use crate::iface::neighbor::{NeighborCache, NeighborConfig};
use crate::iface::reassembly::{Reassembler, ReassemblyConfig};
use crate::iface::route::{
    DestinationCache, DestinationConfig, IcmpRateLimiter, InterfaceId, Origin, Route, RoutingTable,
    DEFAULT_TABLE_CAPACITY,
};
use crate::phy::Link;
use crate::random::SplitMix64;
use crate::socket::tcp::isn::IsnGenerator;
use crate::socket::tcp::rules::ChallengeLimiter;
use crate::socket::tcp::sockets::TcpSockets;
use crate::socket::xtp::sockets::XtpSockets;
use crate::socket::{
    LinkConfig, LinkSocket, RawConfig, RawFamily, RawSocket, SendError, UdpConfig, UdpSocket,
};
use crate::time::Instant;
use crate::topology::{IpCidr, Ipv4Cidr, Ipv6Cidr};

/// Frames received per interface per poll at most, so one busy link cannot
/// starve the others (and the IP input queue stays bounded).
pub const RECEIVE_BUDGET: usize = 256;
/// Packets the IP input queue holds at most.
pub const INPUT_QUEUE_LIMIT: usize = 1024;
/// First port of the ephemeral range (RFC 6335 §6: 49152–65535).
const EPHEMERAL_PORTS: std::ops::RangeInclusive<u16> = 49152..=65535;
/// The default hop limit / TTL of packets this host originates.
pub const DEFAULT_HOP_LIMIT: u8 = 64;

/// How to build a host.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub name: String,
    /// Router mode: forwards, sends Router Advertisements and redirects.
    pub router: bool,
    pub pool: PoolConfig,
    /// Seeds every random choice of the host (DAD and RS delays, fragment
    /// identifications, ephemeral ports), so a run replays exactly.
    pub seed: u64,
    /// Added to every flow id the host hands out, so flows of different
    /// hosts stay apart in one trace.
    pub flow_base: u32,
    pub neighbor: NeighborConfig,
    pub fragmentation: Fragmentation,
}

impl HostConfig {
    pub fn new(name: &str, router: bool) -> Self {
        Self {
            name: name.to_string(),
            router,
            pool: PoolConfig::default(),
            seed: 0,
            flow_base: 0,
            neighbor: NeighborConfig::default(),
            fragmentation: Fragmentation::default(),
        }
    }
}

/// One interface to build.
pub struct InterfaceConfig {
    pub name: String,
    pub link: Box<dyn Link + Send>,
    pub mac: EthernetAddress,
    pub ipv4: Option<Ipv4Cidr>,
    /// Manually configured IPv6 addresses (SLAAC adds more).
    pub ipv6: Vec<Ipv6Cidr>,
    /// Prefixes to advertise (router mode).
    pub advertise: Vec<AdvertisedPrefix>,
    /// DupAddrDetectTransmits (RFC 4862 §5.1) when not the default of 1;
    /// 0 disables DAD, so addresses are usable at once.
    pub dad_transmits: Option<u32>,
}

/// A static route: `to` via the neighbour `via`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticRoute {
    pub to: IpCidr,
    pub via: IpAddr,
}

/// Why a host could not be built.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("buffer pool: {0}")]
    Pool(#[from] PoolConfigError),
    #[error("route to {to:?}: no interface has {via} on-link")]
    NextHopNotOnLink { to: IpCidr, via: IpAddr },
    #[error("route to {to:?}: the destination and next hop are of different families")]
    FamilyMismatch { to: IpCidr },
    #[error("route: {0}")]
    Route(#[from] crate::iface::route::RouteError),
}

/// A UDP socket of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpHandle(usize);

/// A raw IP socket of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawHandle(usize);

/// A link-level (EtherType) socket of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkHandle(usize);

/// Packet and datagram counters of a host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HostCounters {
    pub ipv6_received: u64,
    pub ipv6_delivered: u64,
    pub ipv6_sent: u64,
    pub ipv6_forwarded: u64,
    pub ipv6_fragments_sent: u64,
    pub ipv4_received: u64,
    pub ipv4_delivered: u64,
    pub ipv4_sent: u64,
    pub ipv4_forwarded: u64,
    pub ipv4_fragments_sent: u64,
    pub icmpv6_errors_sent: u64,
    pub icmpv4_errors_sent: u64,
    pub icmp_errors_suppressed: u64,
    pub echo_replies_sent: u64,
    pub router_advertisements_sent: u64,
    pub redirects_sent: u64,
    pub udp_received: u64,
    pub udp_sent: u64,
    /// Frames handed to link-level sockets (before their queue's check).
    pub link_received: u64,
    /// Frames taken from link-level sockets' send queues.
    pub link_sent: u64,
    /// TCP segments that passed the checksum and header checks.
    pub tcp_received: u64,
    /// TCP segments sent (every kind, retransmissions included).
    pub tcp_sent: u64,
    /// Resets sent for segments that found no socket.
    pub tcp_resets_sent: u64,
    /// SYNs whose MSS option was below the floor and was raised to it
    /// ([`MIN_PEER_MSS`](crate::socket::tcp::options::MIN_PEER_MSS)).
    pub tcp_mss_clamped: u64,
    /// Packets to one of this host's own addresses, handed back to its IP
    /// input instead of a link (Linux's loopback route).
    pub looped_back: u64,
}

impl HostCounters {
    /// Packets taken in, sent out or forwarded so far: while this changes,
    /// the host is busy (runners nap when it has not for a while). TCP
    /// segments are IP packets too, so they count here.
    pub fn packets_moved(&self) -> u64 {
        self.ipv6_received
            + self.ipv4_received
            + self.link_received
            + self.ipv6_sent
            + self.ipv4_sent
            + self.link_sent
            + self.ipv6_forwarded
            + self.ipv4_forwarded
            + self.looped_back
    }
}

/// When a frame given to link input arrived.
enum Arrival {
    /// As its receiver was told.
    Known(Option<Instant>),
    /// As the interface's link says of the frame it received last.
    AskLink,
}

/// A packet on the IP input queue.
struct Received {
    interface: InterfaceId,
    packet: Packet,
    /// Arrived as link-layer multicast or broadcast (RFC 4443 §2.4 e.3).
    link_multicast: bool,
}

/// The IPv6 reassembly key (RFC 8200 §4.5: source, destination and
/// identification).
type FragKey6 = (Ipv6Addr, Ipv6Addr, u32);
/// The IPv4 reassembly key (RFC 791: source, destination, protocol, ident).
type FragKey4 = (Ipv4Addr, Ipv4Addr, u8, u16);

/// What reassembly keeps of the first fragment: the unfragmentable part
/// and how the datagram continues.
pub(crate) struct FirstFragment {
    interface: InterfaceId,
    /// The IP header and the headers before the fragment header (IPv6),
    /// or the IPv4 header: prepended to the reassembled payload.
    header: Vec<u8>,
    /// The protocol of the first header of the fragmentable part.
    next: IpProtocol,
    flow: Flow,
    /// The start of the first fragment, for a Time Exceeded error.
    invoking: Vec<u8>,
    /// IPv6: the offset in `header` of the Next Header field that named
    /// the Fragment header; reassembly writes `next` there.
    next_field: usize,
}

/// A host or router.
pub struct Host {
    name: String,
    router: bool,
    pool: Pool,
    interfaces: Vec<Interface>,
    routes6: RoutingTable<Ipv6Addr>,
    dest6: DestinationCache<Ipv6Addr>,
    routes4: RoutingTable<Ipv4Addr>,
    dest4: DestinationCache<Ipv4Addr>,
    reassembly6: Reassembler<FragKey6, FirstFragment>,
    /// The traced flow of later IPv6 fragments, from their first.
    fragment_flows: fragment_flows::FragmentFlows,
    fragmentation: Fragmentation,
    reassembly4: Reassembler<FragKey4, FirstFragment>,
    icmp6_limiter: IcmpRateLimiter,
    icmp4_limiter: IcmpRateLimiter,
    input: VecDeque<Received>,
    udp: Vec<UdpSocket>,
    raw: Vec<RawSocket>,
    link: Vec<LinkSocket>,
    tcp: TcpSockets,
    /// The RFC 6528 secret behind ISNs and SYN cookies.
    tcp_isn: IsnGenerator,
    /// RFC 5961 §7: one challenge-ACK budget for the host.
    tcp_challenges: ChallengeLimiter,
    /// An application call or a spent output budget left TCP segments to
    /// send: the next poll is due now.
    tcp_output_pending: bool,
    /// Each TCP connection's cached path, by socket slot (`path`).
    tcp_paths: path::SocketPaths,
    /// XTP listeners and associations, their key tables (`socket::xtp`).
    xtp: XtpSockets,
    /// XTP multicast senders and receivers (`socket::xtp::multicast`).
    xtp_groups: xtp_group::XtpGroups,
    /// Packet Too Big / Fragmentation Needed messages taken: a TCP
    /// connection rechecks its path MTU when this moves.
    path_mtu_changes: u64,
    /// The time of the latest poll: what application calls between polls
    /// take as "now".
    clock: Instant,
    /// Reads the runner's clock, where time passes during a poll (the
    /// threaded and real-time runners): frames are handed to the links at
    /// the time they really are, not at the poll's start, so a device's
    /// serialisation and transmit complete start from the handover. `None`
    /// on the simulator, whose virtual time stands still within a poll.
    wall: Option<Box<dyn Fn() -> Instant>>,
    rng: SplitMix64,
    next_flow: u32,
    flow_base: u32,
    ipv4_ident: u16,
    started: bool,
    drops: BTreeMap<&'static str, u64>,
    counters: HostCounters,
    /// Reused for building ICMP messages and pulling up headers.
    scratch: Vec<u8>,
    /// Pressure seen, for giving memory back after it (`memory`).
    reclaim: memory::Reclaim,
    /// Tunnels over this host's own IPv4 (`iface::tunnel`), each with its
    /// interface in `interfaces`.
    tunnels: Vec<crate::iface::tunnel::Tunnel>,
    /// The packet receive coalescing holds (`gro`).
    gro: Option<gro::Held>,
    gro_counters: GroCounters,
}

impl Host {
    /// Builds a host from its interfaces and static routes. Nothing is sent
    /// until the first [`poll`](Self::poll).
    pub fn new(
        config: HostConfig,
        interfaces: Vec<InterfaceConfig>,
        routes: &[StaticRoute],
    ) -> Result<Host, HostError> {
        let pool = Pool::new(config.pool)?;
        let mut rng = SplitMix64::new(config.seed);
        let mut built = Vec::with_capacity(interfaces.len());
        for (index, spec) in interfaces.into_iter().enumerate() {
            let id = InterfaceId(index);
            let interface_id = spec
                .link
                .interface_id()
                .unwrap_or_else(|| wire_interface_id(spec.mac));
            let address_config = AddressConfig {
                random_seed: Some(rng.next_u64()),
                // Routers do not solicit (RFC 4861 §6.3.7 is for hosts).
                solicit_routers: !config.router,
                dup_addr_detect_transmits: spec
                    .dad_transmits
                    .unwrap_or(AddressConfig::default().dup_addr_detect_transmits),
                ..AddressConfig::default()
            };
            let neighbor = NeighborConfig {
                random_seed: Some(rng.next_u64()),
                ..config.neighbor
            };
            let mld = MldListener::new(MldConfig {
                random_seed: rng.next_u64(),
                ..MldConfig::default()
            });
            let advertiser = (config.router && !spec.advertise.is_empty()).then(|| Advertiser {
                prefixes: spec.advertise.clone(),
                sent: 0,
                next: None,
                last: None,
            });
            let mtu = spec.link.mtu();
            let v6 = Ipv6Interface {
                addresses: InterfaceAddresses::new(address_config, interface_id),
                neighbors: NeighborCache::new(neighbor),
                mld,
                mtu,
                hop_limit: DEFAULT_HOP_LIMIT,
                advertiser,
            };
            let v4 = spec.ipv4.map(|cidr| Ipv4Interface {
                address: cidr.address,
                prefix_len: cidr.prefix_len,
                arp: ArpCache::new(ArpConfig {
                    hardware_addr: spec.mac,
                    addresses: vec![ArpAddress::new(cidr.address, cidr.prefix_len)],
                    neighbor: NeighborConfig {
                        random_seed: Some(rng.next_u64()),
                        ..config.neighbor
                    },
                }),
                igmp: crate::iface::igmp::IgmpMember::new(rng.next_u64()),
                querier: None,
            });
            let mut interface = Interface::new(id, spec.name, spec.link, spec.mac, v6, v4);
            // Manual addresses wait for `start` to run DAD; remember them.
            interface.pending_manual = spec.ipv6;
            built.push(interface);
        }
        let mut host = Host {
            name: config.name,
            router: config.router,
            pool,
            interfaces: built,
            routes6: RoutingTable::new(DEFAULT_TABLE_CAPACITY),
            dest6: DestinationCache::new(DestinationConfig::default()),
            routes4: RoutingTable::new(DEFAULT_TABLE_CAPACITY),
            dest4: DestinationCache::new(DestinationConfig::default()),
            reassembly6: Reassembler::new(ReassemblyConfig::ipv6()),
            fragment_flows: fragment_flows::FragmentFlows::default(),
            reassembly4: Reassembler::new(ReassemblyConfig::ipv4()),
            icmp6_limiter: IcmpRateLimiter::default(),
            icmp4_limiter: IcmpRateLimiter::default(),
            input: VecDeque::new(),
            udp: Vec::new(),
            raw: Vec::new(),
            link: Vec::new(),
            tcp: TcpSockets::default(),
            tcp_isn: IsnGenerator::new([0, 0]),
            tcp_challenges: ChallengeLimiter::default(),
            tcp_output_pending: false,
            tcp_paths: path::SocketPaths::default(),
            xtp: XtpSockets::new(config.seed),
            xtp_groups: xtp_group::XtpGroups::new(config.seed),
            path_mtu_changes: 0,
            clock: Instant::ZERO,
            wall: None,
            rng,
            next_flow: 1,
            flow_base: config.flow_base,
            fragmentation: config.fragmentation,
            ipv4_ident: 0,
            started: false,
            drops: BTreeMap::new(),
            counters: HostCounters::default(),
            scratch: vec![0; 65_536 + 64],
            reclaim: memory::Reclaim::default(),
            tunnels: Vec::new(),
            gro: None,
            gro_counters: GroCounters::default(),
        };
        host.ipv4_ident = host.rng.next_u64() as u16;
        host.tcp_isn = IsnGenerator::new([host.rng.next_u64(), host.rng.next_u64()]);
        host.add_connected_routes()?;
        for route in routes {
            host.add_static_route(*route)?;
        }
        Ok(host)
    }

    fn add_connected_routes(&mut self) -> Result<(), HostError> {
        for interface in &self.interfaces {
            // Every interface has fe80::/64 on-link (RFC 4291 §2.5.6).
            self.routes6.insert(Route {
                prefix: Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
                prefix_len: 64,
                next_hop: None,
                interface: interface.id,
                metric: 256,
                origin: Origin::Connected,
            })?;
            for cidr in &interface.pending_manual {
                self.routes6.insert(Route {
                    prefix: cidr.network(),
                    prefix_len: cidr.prefix_len,
                    next_hop: None,
                    interface: interface.id,
                    metric: 0,
                    origin: Origin::Connected,
                })?;
            }
            if let Some(v4) = &interface.v4 {
                let cidr = Ipv4Cidr {
                    address: v4.address,
                    prefix_len: v4.prefix_len,
                };
                self.routes4.insert(Route {
                    prefix: cidr.network(),
                    prefix_len: cidr.prefix_len,
                    next_hop: None,
                    interface: interface.id,
                    metric: 0,
                    origin: Origin::Connected,
                })?;
            }
        }
        Ok(())
    }

    fn add_static_route(&mut self, route: StaticRoute) -> Result<(), HostError> {
        let not_on_link = HostError::NextHopNotOnLink {
            to: route.to,
            via: route.via,
        };
        match (route.to, route.via) {
            (IpCidr::V6(to), IpAddr::V6(via)) => {
                let interface = if via.is_unicast_link_local() {
                    self.interfaces.first().map(|i| i.id)
                } else {
                    self.interfaces
                        .iter()
                        .find(|i| i.pending_manual.iter().any(|c| c.contains(via)))
                        .map(|i| i.id)
                };
                let interface = interface.ok_or(not_on_link)?;
                self.routes6.insert(Route {
                    prefix: to.network(),
                    prefix_len: to.prefix_len,
                    next_hop: Some(via),
                    interface,
                    metric: if to.prefix_len == 0 { 1024 } else { 0 },
                    origin: Origin::Static,
                })?;
            }
            (IpCidr::V4(to), IpAddr::V4(via)) => {
                let interface = self
                    .interfaces
                    .iter()
                    .find(|i| i.v4.as_ref().is_some_and(|v4| v4.contains(via)))
                    .map(|i| i.id)
                    .ok_or(not_on_link)?;
                self.routes4.insert(Route {
                    prefix: to.network(),
                    prefix_len: to.prefix_len,
                    next_hop: Some(via),
                    interface,
                    metric: 0,
                    origin: Origin::Static,
                })?;
            }
            (to, _) => return Err(HostError::FamilyMismatch { to }),
        }
        Ok(())
    }

    // ----- Accessors -------------------------------------------------------

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn is_router(&self) -> bool {
        self.router
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    pub fn interface_mut(&mut self, id: InterfaceId) -> Option<&mut Interface> {
        self.interfaces.get_mut(id.0)
    }

    /// The interface called `name`.
    pub fn interface_id(&self, name: &str) -> Option<InterfaceId> {
        self.interfaces
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.id)
    }

    /// An interface's own MAC address (the source of what it sends).
    pub fn interface_mac(&self, id: InterfaceId) -> Option<EthernetAddress> {
        self.interfaces.get(id.0).map(|i| i.mac)
    }

    pub fn counters(&self) -> &HostCounters {
        &self.counters
    }

    /// Packets dropped, per reason.
    pub fn drops(&self) -> &BTreeMap<&'static str, u64> {
        &self.drops
    }

    pub fn routes6(&self) -> &RoutingTable<Ipv6Addr> {
        &self.routes6
    }

    pub fn routes4(&self) -> &RoutingTable<Ipv4Addr> {
        &self.routes4
    }

    pub fn destinations6(&self) -> &DestinationCache<Ipv6Addr> {
        &self.dest6
    }

    /// The host's preferred global IPv6 addresses, first interface first.
    pub fn global_ipv6_addresses(&self) -> Vec<Ipv6Addr> {
        self.interfaces
            .iter()
            .flat_map(|i| i.v6.addresses.entries())
            .filter(|nte| nte.is_assigned() && !nte.address().is_unicast_link_local())
            .map(|nte| nte.address())
            .collect()
    }

    /// The host's IPv4 addresses.
    pub fn ipv4_addresses(&self) -> Vec<Ipv4Addr> {
        self.interfaces
            .iter()
            .filter_map(|i| i.v4.as_ref().map(|v4| v4.address))
            .collect()
    }

    /// Counts datagrams a reassembler evicted to make room (its counter went
    /// from `before` to `after`): their fragments are dropped.
    fn count_evictions(&mut self, reason: &'static str, before: u64, after: u64) {
        if after > before {
            *self.drops.entry(reason).or_insert(0) += after - before;
        }
    }

    fn count_drop(&mut self, reason: &'static str) {
        *self.drops.entry(reason).or_insert(0) += 1;
    }

    fn new_flow(&mut self) -> Flow {
        let id = self.flow_base.wrapping_add(self.next_flow);
        self.next_flow = self.next_flow.wrapping_add(1);
        Flow::untraced(id)
    }

    // ----- Sockets ---------------------------------------------------------

    /// Opens a UDP socket (unbound until [`udp_bind`](Self::udp_bind) or
    /// the first send, which binds an ephemeral port).
    pub fn udp_open(&mut self, config: UdpConfig) -> UdpHandle {
        let flow = self.new_flow();
        self.udp.push(UdpSocket::new(config, flow));
        UdpHandle(self.udp.len() - 1)
    }

    /// Binds a UDP socket; port 0 picks a free ephemeral port. Returns the
    /// bound address.
    pub fn udp_bind(&mut self, handle: UdpHandle, mut local: SocketAddr) -> SocketAddr {
        if local.port() == 0 {
            local.set_port(self.ephemeral_port());
        }
        self.udp[handle.0].bind(local);
        local
    }

    pub fn udp(&mut self, handle: UdpHandle) -> &mut UdpSocket {
        &mut self.udp[handle.0]
    }

    /// Queues a datagram on a UDP socket (binding an ephemeral port first
    /// if it is unbound); it leaves at the next poll.
    pub fn udp_send_to(
        &mut self,
        handle: UdpHandle,
        data: &[u8],
        remote: SocketAddr,
    ) -> Result<(), SendError> {
        if self.udp[handle.0].local().is_none() {
            let any = match remote {
                SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            };
            self.udp_bind(handle, SocketAddr::new(any, 0));
        }
        let pool = self.pool.clone();
        self.udp[handle.0].send_to(&pool, data, remote)
    }

    /// Opens a raw IP socket for `protocol`: it receives a copy of every
    /// packet of that protocol the host accepts (ICMP included) and sends
    /// upper-layer messages the host wraps in IP.
    pub fn raw_open(&mut self, family: RawFamily, protocol: IpProtocol) -> RawHandle {
        let flow = self.new_flow();
        self.raw
            .push(RawSocket::new(RawConfig::default(), family, protocol, flow));
        RawHandle(self.raw.len() - 1)
    }

    pub fn raw(&mut self, handle: RawHandle) -> &mut RawSocket {
        &mut self.raw[handle.0]
    }

    /// Queues a message on a raw socket; it leaves at the next poll.
    pub fn raw_send_to(
        &mut self,
        handle: RawHandle,
        data: &[u8],
        remote: IpAddr,
        hop_limit: Option<u8>,
    ) -> Result<(), SendError> {
        let pool = self.pool.clone();
        self.raw[handle.0].send_to(&pool, data, remote, hop_limit)
    }

    /// Opens a link-level socket on `interface` for `ethertype` with the
    /// default bounds (see [`link_open_with`](Self::link_open_with)).
    pub fn link_open(
        &mut self,
        interface: InterfaceId,
        ethertype: u16,
    ) -> Result<LinkHandle, LinkOpenError> {
        self.link_open_with(interface, ethertype, LinkConfig::default())
    }

    /// Opens a link-level socket, like `AF_PACKET` bound to one EtherType
    /// on one interface: it receives the payload of every frame of
    /// `ethertype` arriving on `interface` for the interface's MAC address
    /// or broadcast, and sends payloads of up to the interface's MTU in
    /// frames of that type. Refused for an interface that does not exist
    /// or is not Ethernet, and for EtherTypes the stack handles itself
    /// (IPv4, ARP, IPv6), the 802.1Q tag, and 802.3 lengths.
    pub fn link_open_with(
        &mut self,
        interface: InterfaceId,
        ethertype: u16,
        config: LinkConfig,
    ) -> Result<LinkHandle, LinkOpenError> {
        let mtu = self.check_link_open(interface, ethertype)?;
        let flow = self.new_flow();
        self.link
            .push(LinkSocket::new(config, interface, ethertype, mtu, flow));
        Ok(LinkHandle(self.link.len() - 1))
    }

    pub fn link(&mut self, handle: LinkHandle) -> &mut LinkSocket {
        &mut self.link[handle.0]
    }

    /// Queues a frame carrying `payload` for `destination` on a link
    /// socket; it leaves at the next poll, from the interface's MAC
    /// address. A payload over the interface's MTU is refused.
    pub fn link_send_to(
        &mut self,
        handle: LinkHandle,
        payload: &[u8],
        destination: EthernetAddress,
    ) -> Result<(), SendError> {
        let pool = self.pool.clone();
        self.link[handle.0].send_to(&pool, payload, destination)
    }

    fn ephemeral_port(&mut self) -> u16 {
        let span = u64::from(EPHEMERAL_PORTS.end() - EPHEMERAL_PORTS.start()) + 1;
        for _ in 0..span {
            let port = EPHEMERAL_PORTS.start() + (self.rng.next_u64() % span) as u16;
            if !self
                .udp
                .iter()
                .any(|s| s.local().is_some_and(|l| l.port() == port))
                && !self.tcp.port_in_use(port)
            {
                return port;
            }
        }
        0
    }

    // ----- The poll loop ---------------------------------------------------

    /// Does everything due at `now` (see the module docs).
    pub fn poll(&mut self, now: Instant) {
        self.clock = self.clock.max(now);
        if !self.started {
            self.start(now);
        }
        self.receive_frames(now);
        // After a packet whose IP input was recorded, the next dequeue
        // shares that input's end's counter read if that is the last
        // record: nothing worth timing lies between.
        let mut previous: &[probe::Loc] = &[];
        while let Some(received) = self.input.pop_front() {
            // Queued a batch ago, the next packet's buffer is cold.
            if let Some(next) = self.input.front() {
                next.packet.prefetch();
            }
            // The dequeue and IP input's start share a counter read.
            let mut dequeued = probe::Stamp::new();
            dequeued.record_after(
                previous,
                crate::probes::IP_INPUT_QUEUE_DEQUEUE,
                received.packet.flow(),
                || (received.packet.len() as u32, received.interface.0 as u64),
            );
            self.ip_input(now, received, &mut dequeued);
            previous = if dequeued.is_read() {
                &[
                    crate::probes::IPV6_INPUT_EXIT,
                    crate::probes::IPV4_INPUT_EXIT,
                ]
            } else {
                &[]
            };
        }
        self.socket_output(now);
        self.poll_timers(now);
        // The poll's work takes time on a real clock: each frame is handed
        // over when the interface reaches it.
        let wall = self.wall.as_deref();
        for interface in &mut self.interfaces {
            interface.transmit_queued(now, wall);
        }
    }

    /// The host's time: its runner's clock read now where it runs on the
    /// real one (see [`set_wall_clock`](Self::set_wall_clock)), else the
    /// time of its last poll (a simulator's virtual time).
    pub fn now(&self) -> Instant {
        self.wall
            .as_ref()
            .map_or(self.clock, |wall| wall().max(self.clock))
    }

    /// Gives the host the runner's clock, read when the poll hands frames
    /// to the links (see the `wall` field); runners on the real clock set
    /// it.
    pub fn set_wall_clock(&mut self, wall: impl Fn() -> Instant + 'static) {
        self.wall = Some(Box::new(wall));
    }

    /// When the host next has work: a frame arriving, a transmission
    /// completing, a timer, or a socket with data to send (then `now`).
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        if !self.started
            || !self.input.is_empty()
            || self.udp.iter().any(|s| s.send_queue_len() > 0)
            || self.raw.iter().any(|s| s.send_queue_len() > 0)
            || self.link.iter().any(|s| s.send_queue_len() > 0)
            || self.interfaces.iter().any(|i| i.can_transmit())
            || self.tcp_output_pending
            || self.xtp.output_pending
        {
            return Some(now);
        }
        let mut next: Option<Instant> = None;
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        };
        for interface in &self.interfaces {
            consider(interface.link.next_arrival());
            consider(interface.next_completion());
            consider(interface.v6.addresses.next_deadline());
            consider(interface.v6.neighbors.next_deadline());
            consider(interface.v6.mld.next_deadline());
            consider(interface.v6.advertiser.as_ref().and_then(|a| a.next));
            consider(interface.v4.as_ref().and_then(|v4| v4.arp.next_deadline()));
            consider(
                interface
                    .v4
                    .as_ref()
                    .and_then(|v4| v4.igmp.next_deadline(now)),
            );
            consider(
                interface
                    .v4
                    .as_ref()
                    .and_then(|v4| v4.querier.as_ref()?.next_deadline(now)),
            );
        }
        consider(self.reassembly6.next_deadline());
        consider(self.reassembly4.next_deadline());
        consider(self.routes6.next_deadline());
        consider(self.routes4.next_deadline());
        consider(self.dest6.next_deadline());
        consider(self.dest4.next_deadline());
        consider(self.tcp_next_deadline());
        consider(self.xtp_next_deadline());
        consider(self.reclaim_deadline());
        next.map(|t| t.max(now))
    }

    fn start(&mut self, now: Instant) {
        self.started = true;
        for index in 0..self.interfaces.len() {
            let id = InterfaceId(index);
            // All-nodes is joined on every interface (RFC 4291 §2.8), and
            // all-routers on a router's; neither is reported (RFC 3810 §6).
            let _ = self.interfaces[index]
                .v6
                .mld
                .join(now, wire::ipv6::ALL_NODES);
            if self.router {
                let _ = self.interfaces[index]
                    .v6
                    .mld
                    .join(now, wire::ipv6::ALL_ROUTERS);
            }
            let actions = self.interfaces[index].v6.addresses.enable(now);
            self.address_actions(now, id, actions);
            let manual = std::mem::take(&mut self.interfaces[index].pending_manual);
            for cidr in manual {
                let result = self.interfaces[index].v6.addresses.add_manual(
                    now,
                    cidr.address,
                    cidr.prefix_len,
                    u32::MAX,
                    u32::MAX,
                );
                match result {
                    Ok(actions) => self.address_actions(now, id, actions),
                    Err(_) => self.count_drop("manual_address_refused"),
                }
            }
            // Announce the IPv4 address (RFC 5227 §2.3 ARP announcement),
            // on links that have ARP: one that carries bare IP (loopback,
            // a tunnel) has no link addresses to announce.
            let interface = &self.interfaces[index];
            if let (Some(v4), crate::phy::Medium::Ethernet) = (&interface.v4, interface.medium) {
                let message = v4.arp.announcement(v4.address);
                self.send_arp(id, &message);
            }
            self.igmp_start(now, id);
        }
    }

    fn receive_frames(&mut self, now: Instant) {
        let pool = self.pool.clone();
        for index in 0..self.interfaces.len() {
            // A link that carries super-frames whole hands them so to an
            // interface that merges; any other gets wire-sized frames.
            let whole =
                self.interfaces[index].link.carries_gso() && self.merges(InterfaceId(index));
            for _ in 0..RECEIVE_BUDGET {
                let interface = &mut self.interfaces[index];
                let link = &mut interface.link;
                if !link.may_receive(now) {
                    break;
                }
                if whole {
                    if !self.receive_whole(now, InterfaceId(index)) {
                        break;
                    }
                    continue;
                }
                // The link copies the frame into the buffer, or a virtual
                // wire exchanges the memory it crossed in for the buffer's.
                let received =
                    Packet::receive_into(&pool, Flow::NONE, |buf| link.receive_into(now, buf));
                let packet = match received {
                    Ok(Some(packet)) => packet,
                    Ok(None) => break,
                    Err(_) => {
                        // No buffer: leave the frame on the link for later.
                        self.count_drop("rx_no_buffer");
                        break;
                    }
                };
                interface.counters.rx_frames += 1;
                interface.counters.rx_bytes += packet.len() as u64;
                self.link_input_from(now, InterfaceId(index), packet, Arrival::AskLink);
            }
            // The end of the link's batch: what GRO holds goes on.
            self.gro_flush();
        }
    }

    fn socket_output(&mut self, now: Instant) {
        for index in 0..self.udp.len() {
            while let Some(datagram) = self.udp[index].dequeue_outgoing() {
                let flow = self.udp[index].flow();
                self.udp_output(now, flow, datagram);
            }
        }
        for index in 0..self.raw.len() {
            while let Some(packet) = self.raw[index].dequeue_outgoing() {
                let flow = self.raw[index].flow();
                let protocol = self.raw[index].protocol();
                self.raw_output(now, flow, protocol, packet);
            }
        }
        for index in 0..self.link.len() {
            self.link_socket_output(index);
        }
        self.tcp_output(now);
        self.xtp_output(now);
    }

    fn poll_timers(&mut self, now: Instant) {
        for index in 0..self.interfaces.len() {
            let id = InterfaceId(index);
            let actions = self.interfaces[index].v6.addresses.poll(now);
            self.address_actions(now, id, actions);
            let actions = self.interfaces[index].v6.neighbors.poll(now);
            self.neighbor_actions(now, id, actions);
            let actions = self.interfaces[index].v6.mld.poll(now);
            self.mld_actions(now, id, actions);
            self.poll_advertiser(now, id);
            if let Some(v4) = &mut self.interfaces[index].v4 {
                let actions = v4.arp.poll(now);
                self.arp_actions(now, id, actions);
            }
            self.igmp_poll(now, id);
        }
        for expired in self.reassembly6.poll(now) {
            self.reassembly6_expired(now, expired);
        }
        for expired in self.reassembly4.poll(now) {
            self.reassembly4_expired(now, expired);
        }
        let _ = self.routes6.poll(now);
        let _ = self.routes4.poll(now);
        let _ = self.dest6.poll(now);
        let _ = self.dest4.poll(now);
        self.tcp_timers(now);
        self.xtp_timers(now);
        self.reclaim_memory(now);
        // What the timers made due (retransmissions, delayed ACKs, probes)
        // leaves in this poll.
        self.tcp_output(now);
        self.xtp_output(now);
    }

    // ----- Link input ------------------------------------------------------

    /// Takes a frame from interface `interface` that arrived whole at
    /// `arrived`, if its link says.
    fn link_input(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        packet: Packet,
        arrived: Option<Instant>,
    ) {
        self.link_input_from(now, interface, packet, Arrival::Known(arrived));
    }

    /// [`link_input`](Self::link_input) of the frame the interface's link
    /// received last, whose arrival the link is asked for only if it is
    /// recorded (a call into the link per frame saved: issue 22). Inline
    /// always: the straight path is short, and the packet is then queued
    /// from where the link's receive built it.
    #[inline(always)]
    fn link_input_from(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        mut packet: Packet,
        arrived: Arrival,
    ) {
        let ours = &self.interfaces[interface.0];
        if ours.medium == crate::phy::Medium::Ethernet
            && plain_unicast_ipv6(packet.head_bytes(), ours.mac)
        {
            // The data path's frame, straight through (issue 22): what the
            // general path below would do with it, without its checks that
            // `plain_unicast_ipv6` answered already. It carries no trace
            // option (nor is a fragment), so its flow stays.
            let span = self.link_receive_span(now, interface, &packet, arrived);
            if packet.strip(wire::ethernet::HEADER_LEN).is_err() {
                // Not reached: the head holds a whole IPv6 header.
                self.count_drop("ethernet_truncated");
                return;
            }
            if self.gro.is_none() && !self.merges(interface) {
                // What `gro_input` does with it when the interface merges
                // nothing and GRO holds nothing: queued as it is, here,
                // without the packet's two moves through the calls.
                self.queue_ip_input(interface, packet, false);
                // Queueing it for IP input was the receive's last work.
                span.end_after(&[crate::probes::IP_INPUT_QUEUE_ENQUEUE]);
            } else {
                self.gro_input(interface, packet, false);
                drop(span);
            }
            return;
        }
        self.link_input_general(now, interface, packet, arrived);
    }

    /// The link receive's arrival event (if recorded) and its span, whose
    /// start shares the arrival's counter read.
    #[inline(always)]
    fn link_receive_span(
        &self,
        now: Instant,
        interface: InterfaceId,
        packet: &Packet,
        arrived: Arrival,
    ) -> probe::SpanGuard {
        let arrived = if probe::would_record(crate::probes::LINK_RECEIVE_ARRIVAL, packet.flow()) {
            match arrived {
                Arrival::Known(arrived) => arrived,
                Arrival::AskLink => self.interfaces[interface.0].link.received_at(),
            }
        } else {
            None
        };
        // The arrival and the receive's start share a counter read.
        let mut taken = probe::Stamp::new();
        if let Some(arrived) = arrived {
            // The runner's clock now, as the wire's arrival is on it: read
            // only for a frame whose arrival is recorded.
            let looked = self.wall.as_ref().map_or(now, |wall| wall().max(now));
            let waited = looked.saturating_duration_since(arrived);
            taken.record_with(crate::probes::LINK_RECEIVE_ARRIVAL, packet.flow(), || {
                (
                    packet.len() as u32,
                    u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX),
                )
            });
        }
        taken.span_with(
            crate::probes::LINK_RECEIVE_ENTER,
            crate::probes::LINK_RECEIVE_EXIT,
            packet.flow(),
            || (packet.len() as u32, interface.0 as u64),
        )
    }

    /// [`link_input_from`](Self::link_input_from) of any frame: every
    /// medium and EtherType, multicast, the traced and the fragmented.
    #[inline(never)]
    fn link_input_general(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        mut packet: Packet,
        arrived: Arrival,
    ) {
        let medium = self.interfaces[interface.0].medium;
        let flows = &mut self.fragment_flows;
        let traced = packet
            .parts()
            .next()
            .filter(|frame| carries_ip(medium, frame))
            .and_then(|frame| frame.get(medium.header_len()..))
            .and_then(|ip| flows.classify(now, ip, traced_flow(ip)));
        if let Some(flow) = traced {
            packet.set_flow(flow);
        }
        let _span = self.link_receive_span(now, interface, &packet, arrived);
        let mut link_multicast = false;
        let mut addresses = None;
        let ethertype = match medium {
            crate::phy::Medium::Ethernet => {
                let Some(frame) = packet.parts().next() else {
                    self.count_drop("ethernet_truncated");
                    return;
                };
                let Ok(frame) = wire::ethernet::EthernetFrame::new_checked(frame) else {
                    self.count_drop("ethernet_truncated");
                    return;
                };
                let dst = frame.dst_addr();
                let ours = &self.interfaces[interface.0];
                if dst != ours.mac
                    && !dst.is_broadcast()
                    && !self.accepts_multicast_mac(interface, dst)
                {
                    self.count_drop("ethernet_not_for_us");
                    return;
                }
                // The host is on no VLAN, and a tagged frame's payload starts
                // 4 bytes later than every protocol below expects.
                if frame.is_tagged() {
                    self.count_drop("ethernet_vlan_unsupported");
                    return;
                }
                link_multicast = dst.is_multicast();
                addresses = Some(FrameAddresses {
                    src: frame.src_addr(),
                    dst,
                });
                let ethertype = frame.ethertype();
                if packet.strip(wire::ethernet::HEADER_LEN).is_err() {
                    self.count_drop("ethernet_truncated");
                    return;
                }
                ethertype
            }
            crate::phy::Medium::Ip => match packet.parts().next().and_then(|p| p.first()) {
                Some(byte) if byte >> 4 == 6 => wire::ethernet::EtherType::Ipv6,
                Some(byte) if byte >> 4 == 4 => wire::ethernet::EtherType::Ipv4,
                _ => {
                    self.count_drop("ip_bad_version");
                    return;
                }
            },
        };
        match ethertype {
            wire::ethernet::EtherType::Arp => self.arp_input(now, interface, &packet),
            wire::ethernet::EtherType::Ipv6 | wire::ethernet::EtherType::Ipv4 => {
                // The EtherType names the protocol (RFC 894; RFC 2464 §3):
                // a Version field that disagrees (RFC 791 §3.1, RFC 8200
                // §3) makes the packet malformed, not the other protocol,
                // which ip_input would otherwise take it for. (Linux's
                // ip_rcv and ipv6_rcv drop it too.) An empty payload goes
                // on, to be counted truncated.
                let expected = if ethertype == wire::ethernet::EtherType::Ipv6 {
                    6
                } else {
                    4
                };
                let version = packet
                    .parts()
                    .next()
                    .and_then(|p| p.first())
                    .map(|b| b >> 4);
                if version.is_some_and(|v| v != expected) {
                    self.count_drop("ip_bad_version");
                    return;
                }
                self.gro_input(interface, packet, link_multicast);
            }
            other => match addresses {
                Some(addresses) if u16::from(other) == wire::xtp::ETHERTYPE => {
                    let ends = (addresses.src, addresses.dst);
                    self.xtp_link_input(now, interface, ends, packet);
                }
                Some(addresses) => {
                    self.link_socket_input(interface, other.into(), addresses, packet)
                }
                None => self.count_drop("ethertype_unsupported"),
            },
        }
    }

    fn ip_input(&mut self, now: Instant, received: Received, dequeued: &mut probe::Stamp) {
        let version = received
            .packet
            .parts()
            .next()
            .and_then(|p| p.first())
            .map(|b| b >> 4);
        match version {
            Some(6) => self.ipv6_input(now, received, dequeued),
            Some(4) => self.ipv4_input(now, received, dequeued),
            _ => self.count_drop("ip_bad_version"),
        }
    }
}

/// Whether `frame` (a received Ethernet frame's first part) is an IPv6
/// packet unicast to `mac` with neither the trace option nor a Fragment
/// header first: the data path's frame, which link input takes straight
/// through. Untagged (a VLAN tag would stand where the EtherType is
/// read), of version 6 (RFC 2464 §3, RFC 8200 §3), its fixed header in
/// the part.
#[inline(always)]
fn plain_unicast_ipv6(frame: &[u8], mac: EthernetAddress) -> bool {
    const IP: usize = wire::ethernet::HEADER_LEN;
    if frame.len() < IP + wire::ipv6::HEADER_LEN {
        return false;
    }
    let next_header = frame[IP + 6];
    frame[12..14] == u16::from(wire::ethernet::EtherType::Ipv6).to_be_bytes()
        && frame[IP] >> 4 == 6
        && next_header != u8::from(IpProtocol::Ipv6Opts)
        && next_header != u8::from(IpProtocol::Ipv6Frag)
        && frame[..6] == mac.0
        && mac.is_unicast()
}

/// Whether a received frame carries IP (any frame of an IP link, an
/// Ethernet frame of type IPv4 or IPv6): only then may its payload be read
/// for the trace option.
fn carries_ip(medium: crate::phy::Medium, frame: &[u8]) -> bool {
    match medium {
        crate::phy::Medium::Ip => true,
        crate::phy::Medium::Ethernet => {
            matches!(frame.get(12..14), Some([0x08, 0x00] | [0x86, 0xdd]))
        }
    }
}

/// The flow a received packet belongs to when it carries the trace option
/// where senders put it: an IPv6 Destination Options header right after
/// the fixed header (or after the Fragment header of a first fragment)
/// with the option first, or an IPv4 header whose options start with it. Classifying at the link lets every receive-side probe,
/// the IP input queue's included, record the traced flow; IP input still
/// parses the option properly.
#[inline]
fn traced_flow(ip: &[u8]) -> Option<Flow> {
    // Inline, for every received packet: an IPv6 one whose first header
    // after the fixed one is neither Destination Options nor Fragment
    // (the common case) has none.
    const OPTS: u8 = 60;
    const FRAG: u8 = 44;
    if let [first, _, _, _, _, _, next, ..] = ip {
        if first >> 4 == 6 && *next != OPTS && *next != FRAG {
            return None;
        }
    }
    trace_option_flow(ip)
}

/// [`traced_flow`] of a packet that may carry the option.
fn trace_option_flow(ip: &[u8]) -> Option<Flow> {
    const FRAGMENT_HEADER_LEN: usize = 8;
    let first_fragment = |ip: &[u8]| {
        // The option is in the fragmentable part (RFC 8200 §4.5), so of a
        // fragmented datagram only the first fragment shows it (the later
        // ones get its flow from `FragmentFlows`).
        let fragment =
            ip.get(wire::ipv6::HEADER_LEN..wire::ipv6::HEADER_LEN + FRAGMENT_HEADER_LEN)?;
        let offset = u16::from_be_bytes([fragment[2], fragment[3]]) >> 3;
        (offset == 0 && fragment[0] == u8::from(IpProtocol::Ipv6Opts)).then_some(())
    };
    let (version, at) = match ip.first()? >> 4 {
        6 if ip.get(6) == Some(&u8::from(IpProtocol::Ipv6Opts)) => (6, wire::ipv6::HEADER_LEN + 2),
        6 if ip.get(6) == Some(&u8::from(IpProtocol::Ipv6Frag)) && first_fragment(ip).is_some() => {
            (6, wire::ipv6::HEADER_LEN + FRAGMENT_HEADER_LEN + 2)
        }
        // IPv6 in IPv4 (protocol 41, a first or only fragment): the
        // option is the inner packet's, the tunnel header having none.
        4 if ip.first()? & 0x0f == 5
            && ip.get(9) == Some(&u8::from(IpProtocol::Ipv6))
            && u16::from_be_bytes([*ip.get(6)?, *ip.get(7)?]) & 0x1fff == 0
            && ip.get(wire::ipv4::HEADER_LEN).map(|b| b >> 4) == Some(6) =>
        {
            return trace_option_flow(ip.get(wire::ipv4::HEADER_LEN..)?);
        }
        4 if ip.first()? & 0x0f > 5 => (4, wire::ipv4::HEADER_LEN),
        _ => return None,
    };
    // An IPv6 option's length counts its data (RFC 8200 §4.2), an IPv4
    // option's the whole option, type and length octets too (RFC 791).
    let (kind, length) = if version == 6 {
        (
            wire::trace_option::IPV6_OPTION_TYPE,
            wire::trace_option::DATA_LEN,
        )
    } else {
        (
            wire::trace_option::IPV4_OPTION_TYPE,
            2 + wire::trace_option::DATA_LEN,
        )
    };
    let option = ip.get(at..at + 2 + wire::trace_option::DATA_LEN)?;
    if option[0] != kind || usize::from(option[1]) != length {
        return None;
    }
    let id = u32::from_be_bytes([option[2], option[3], option[4], option[5]]);
    Some(Flow::traced(id))
}

/// The modified EUI-64 interface identifier of a MAC (RFC 4291 §2.5.1).
fn wire_interface_id(mac: EthernetAddress) -> [u8; 8] {
    crate::iface::address::modified_eui64(mac.0)
}

/// Draws a duration uniformly from `[0, max)`.
fn random_delay(rng: &mut SplitMix64, max: Duration) -> Duration {
    let nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
    if nanos == 0 {
        return Duration::ZERO;
    }
    Duration::from_nanos(rng.next_u64() % nanos)
}

impl Host {
    /// Queues an IP packet for IP input (the IP input queue's enqueue
    /// event), or counts it dropped when the queue is full.
    pub(super) fn enqueue_ip_input(
        &mut self,
        interface: InterfaceId,
        packet: Packet,
        link_multicast: bool,
    ) {
        self.queue_ip_input(interface, packet, link_multicast);
    }

    /// [`enqueue_ip_input`](Self::enqueue_ip_input) inline, for link
    /// input's data path: the queue's entry is built from the packet where
    /// the caller has it.
    #[inline(always)]
    fn queue_ip_input(&mut self, interface: InterfaceId, packet: Packet, link_multicast: bool) {
        if self.input.len() >= INPUT_QUEUE_LIMIT {
            self.count_drop("ip_input_queue_full");
            return;
        }
        // Recorded once the packet is in the queue: the link receive that
        // queued it ends at this record.
        let enqueued = probe::defer(crate::probes::IP_INPUT_QUEUE_ENQUEUE, packet.flow(), || {
            (packet.len() as u32, interface.0 as u64)
        });
        self.input.push_back(Received {
            interface,
            packet,
            link_multicast,
        });
        enqueued.record();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 header with the trace option first in its options, as
    /// `wire::ipv4` writes it (option length 6: type, length and data).
    fn ipv4_with_trace(length: u8, id: u32) -> Vec<u8> {
        let mut ip = vec![0u8; wire::ipv4::HEADER_LEN + wire::trace_option::IPV4_OPTIONS_LEN];
        ip[0] = 0x47;
        ip[20] = wire::trace_option::IPV4_OPTION_TYPE;
        ip[21] = length;
        ip[22..26].copy_from_slice(&id.to_be_bytes());
        ip
    }

    #[test]
    fn the_link_sees_the_trace_option_of_both_families() {
        let v4 = ipv4_with_trace(2 + wire::trace_option::DATA_LEN as u8, 42);
        assert_eq!(traced_flow(&v4), Some(Flow::traced(42)));
        // IPv6's length convention in an IPv4 option is no trace option.
        let v4_short = ipv4_with_trace(wire::trace_option::DATA_LEN as u8, 42);
        assert_eq!(traced_flow(&v4_short), None);

        let mut v6 = vec![0u8; wire::ipv6::HEADER_LEN + wire::trace_option::IPV6_HEADER_LEN];
        v6[0] = 0x60;
        v6[6] = u8::from(IpProtocol::Ipv6Opts);
        v6[42] = wire::trace_option::IPV6_OPTION_TYPE;
        v6[43] = wire::trace_option::DATA_LEN as u8;
        v6[44..48].copy_from_slice(&7u32.to_be_bytes());
        assert_eq!(traced_flow(&v6), Some(Flow::traced(7)));
    }

    /// Link input's straight path takes only what the general path would
    /// take the same way: an untagged IPv6 frame to the interface's own
    /// unicast MAC, of version 6, neither traced nor a fragment.
    #[test]
    fn the_straight_path_takes_only_plain_unicast_ipv6() {
        let mac = EthernetAddress([0x02, 0, 0, 0, 0, 1]);
        let mut frame = vec![0u8; wire::ethernet::HEADER_LEN + wire::ipv6::HEADER_LEN];
        frame[..6].copy_from_slice(&mac.0);
        frame[12..14].copy_from_slice(&[0x86, 0xdd]);
        frame[14] = 0x60;
        frame[20] = u8::from(IpProtocol::Tcp);
        assert!(plain_unicast_ipv6(&frame, mac));
        for next in 0..=u8::MAX {
            frame[20] = next;
            let ip = &frame[wire::ethernet::HEADER_LEN..];
            let plain = traced_flow(ip).is_none() && next != u8::from(IpProtocol::Ipv6Frag);
            // A packet whose first header may carry the option goes the
            // general way, which parses it.
            assert_eq!(
                plain_unicast_ipv6(&frame, mac),
                plain && next != u8::from(IpProtocol::Ipv6Opts),
                "next header {next}"
            );
        }
        frame[20] = u8::from(IpProtocol::Tcp);
        let general = |change: &dyn Fn(&mut Vec<u8>)| {
            let mut other = frame.clone();
            change(&mut other);
            !plain_unicast_ipv6(&other, mac)
        };
        assert!(general(&|f| f[5] = 2)); // another's MAC
        assert!(general(&|f| f[..6].fill(0xff))); // broadcast
        assert!(general(&|f| f[12..14].copy_from_slice(&[0x81, 0x00]))); // VLAN
        assert!(general(&|f| f[12..14].copy_from_slice(&[0x08, 0x00]))); // IPv4
        assert!(general(&|f| f[14] = 0x40)); // version 4 in an IPv6 frame
        assert!(general(&|f| f.truncate(53))); // short of the fixed header

        // A multicast MAC the interface were given still goes the general
        // way (its frames count as link-layer multicast).
        let group = EthernetAddress([0x33, 0x33, 0, 0, 0, 1]);
        let mut to_group = frame.clone();
        to_group[..6].copy_from_slice(&group.0);
        assert!(!plain_unicast_ipv6(&to_group, group));
    }

    /// `traced_flow` answers most IPv6 packets from their Next Header alone
    /// (inline); whatever that field says, it must agree with the full
    /// look for the option.
    #[test]
    fn the_quick_look_for_the_trace_option_agrees_with_the_full_one() {
        // The option right after the fixed header, and after a first
        // fragment's Fragment header (naming Destination Options next).
        let mut traced = 0;
        for at in [wire::ipv6::HEADER_LEN, wire::ipv6::HEADER_LEN + 8] {
            let mut v6 = vec![0u8; at + wire::trace_option::IPV6_HEADER_LEN];
            v6[0] = 0x60;
            v6[wire::ipv6::HEADER_LEN] = u8::from(IpProtocol::Ipv6Opts);
            v6[at + 2] = wire::trace_option::IPV6_OPTION_TYPE;
            v6[at + 3] = wire::trace_option::DATA_LEN as u8;
            v6[at + 4..at + 8].copy_from_slice(&9u32.to_be_bytes());
            for next in 0..=u8::MAX {
                v6[6] = next;
                let flow = traced_flow(&v6);
                assert_eq!(flow, trace_option_flow(&v6), "next header {next}");
                traced += usize::from(flow.is_some());
            }
        }
        // Destination Options and Fragment, and nothing else.
        assert_eq!(traced, 2);
    }
}
